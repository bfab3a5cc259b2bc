// blas_threads.h — shares the BLAS library's threads between ranks that run
// at the same time. Internal.
//
// OpenBLAS runs every call on its own pool of threads (one per CPU by
// default). When `concurrent` ranks of an in-process mesh compute at once,
// each on its own thread, their calls would each wake the whole pool and
// oversubscribe the CPUs. While a BlasThreadsShare is alive, each BLAS call
// uses max(1, threads / concurrent) threads, where `threads` is the count in
// force when it was made; the destructor restores that count. OpenBLAS's
// count is process-wide: do not run two meshes from different threads at once.
#pragma once

namespace mtf::kernels {

// Threads (OpenMP's) that the kernels of the step running on this thread may
// use: 1 unless a KernelThreadsScope on this thread says otherwise. The step
// runner opens one per step (Step::threaded); kernels that can split their
// work without changing its bits (elementwise, reductions along kept axes)
// read it.
int kernel_threads();

class KernelThreadsScope {
 public:
  explicit KernelThreadsScope(int threads);
  ~KernelThreadsScope();
  KernelThreadsScope(const KernelThreadsScope&) = delete;
  KernelThreadsScope& operator=(const KernelThreadsScope&) = delete;

 private:
  int saved_ = 1;
};

class BlasThreadsShare {
 public:
  explicit BlasThreadsShare(int concurrent);
  ~BlasThreadsShare();
  BlasThreadsShare(const BlasThreadsShare&) = delete;
  BlasThreadsShare& operator=(const BlasThreadsShare&) = delete;

 private:
  int saved_ = 0;
};

}  // namespace mtf::kernels
