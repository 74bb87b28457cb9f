#pragma once
// PrepareTrainingProcess: process-wide settings a training worker wants before its first step.
// Called by TrialMain and cohort-bench train; idempotent. Not thread-safe: call it from main()
// before starting threads.
//
// glibc malloc: a training step allocates and frees the same activation tensors every step.
// With glibc's defaults, blocks from 128 KiB up are mmap'd and munmap'd each time (and freed heap
// memory is trimmed), so every step pays syscalls and a page fault per 4 KiB touched, which
// the kernel (and, on a VM, the hypervisor) serves by zeroing pages. Raising the mmap threshold
// to its maximum (32 MiB), and keeping freed memory instead of trimming it, lets steps reuse
// the heap. Measured (cohort-bench train --model cnn, 2 workers, docs/performance.md): 884-1212
// -> 1510-1571 samples/s, and the skew between workers (the gradient wait) 15-29 -> 0.5-1.7 ms.
// The cost is that the process keeps its peak heap. COHORT_MALLOC_TUNING=0 skips it.

namespace cohort::runtime {

void PrepareTrainingProcess();

}  // namespace cohort::runtime
