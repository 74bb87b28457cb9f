// Compiles every public header of the Trial API side (LibTorch) with the include path of
// cohort::trial alone: none of them may need an internal header.

#include "cohort/fashion_mnist.h"
#include "cohort/optim/fused_sgd.h"
#include "cohort/optim/lamb.h"
#include "cohort/optim/lars.h"
#include "cohort/optim/lr_warmup.h"
#include "cohort/optim/moment_state.h"
#include "cohort/optim/radam.h"
#include "cohort/trial.h"
#include "cohort/trial_main.h"
