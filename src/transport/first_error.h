// first_error.h — the error to report when several ranks of a job fail:
// the first that is a cause, else the first PeerLostError (a consequence of
// another rank's failure). Thread- and fiber-safe. Internal.
#pragma once

#include <exception>
#include <mutex>

#include "mtf/errors.h"

namespace mtf::transport {

class FirstError {
 public:
  void record(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mu_);
    bool lost = false;
    try {
      std::rethrow_exception(e);
    } catch (const PeerLostError&) {
      lost = true;
    } catch (...) {
    }
    if (lost) {
      if (!consequence_) consequence_ = e;
    } else if (!cause_) {
      cause_ = e;
    }
  }
  void rethrow_if_any() const {
    if (cause_) std::rethrow_exception(cause_);
    if (consequence_) std::rethrow_exception(consequence_);
  }

 private:
  std::mutex mu_;
  std::exception_ptr cause_, consequence_;
};

}  // namespace mtf::transport
