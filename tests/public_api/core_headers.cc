// Compiles every public header of the Core API side with the include path of cohort::core alone
// (include/ and third-party headers, no LibTorch): none of them may need an internal header.

#include "cohort/comm/comm_factory.h"
#include "cohort/comm/communicator.h"
#include "cohort/comm/topology.h"
#include "cohort/config/experiment_config.h"
#include "cohort/config/json.h"
#include "cohort/core.h"
#include "cohort/core/checkpoint_context.h"
#include "cohort/core/distributed_context.h"
#include "cohort/core/preempt_context.h"
#include "cohort/core/reporter.h"
#include "cohort/core/searcher_context.h"
#include "cohort/core/train_context.h"
#include "cohort/status.h"
