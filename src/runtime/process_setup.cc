#include "runtime/process_setup.h"

#include <malloc.h>

#include "common/env.h"
#include "common/logging.h"

namespace cohort::runtime {

void PrepareTrainingProcess() {
  if (env::GetOr("COHORT_MALLOC_TUNING", "1") == "0") return;
  // Each call fails harmlessly (returns 0) on a libc without these knobs.
  const bool ok = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 &&
                  mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1 && mallopt(M_TOP_PAD, 64 << 20) == 1;
  if (!ok) {
    COHORT_LOG(DEBUG) << "malloc tuning not available; training with malloc defaults";
  }
}

}  // namespace cohort::runtime
