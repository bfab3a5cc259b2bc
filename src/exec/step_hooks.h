// step_hooks.h — an observer of the steps an executor runs. The torus
// simulator times them on its virtual clock; the profiler (step_profile.h)
// times them on the wall clock.
#pragma once

#include <cstddef>

#include "lowering/program.h"

namespace mtf {

// Sees every step a core runs, before and after it. In a dry
// run compute and split steps run no kernels and slots stay empty; the
// collectives run on a transport that carries no data, for their timing.
class StepHooks {
 public:
  virtual ~StepHooks() = default;
  virtual void before_step(const Step& step, size_t index) = 0;
  virtual void after_step(const Step& step, size_t index) = 0;
  virtual bool dry() const { return false; }
};

}  // namespace mtf
