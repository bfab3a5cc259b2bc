// cpus.h — the CPUs this process may use, and a pause for spin-waits.
// Internal.
#pragma once

namespace mtf {

// CPUs this process may run on (its affinity mask, which containers and
// taskset narrow), at least 1.
int available_cpus();

// One pause of a spin-wait loop: tells the CPU the loop spins (cheaper for a
// sibling hyperthread, no memory-order mis-speculation on exit). No system
// call; where spinners may outnumber CPUs, yield instead.
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace mtf
