// expect_error.h — the one way the tests check a refusal: run `fn`, expect
// an exception of type E, and check that its message holds every needle
// (what was wrong, where, and what to do). A wrong exception type, or none,
// fails the test with the message it got.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <string>
#include <vector>

namespace mtf::testing {

template <typename E, typename F>
void expect_error(F&& fn, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception; none was thrown";
  } catch (const E& e) {
    const std::string message = e.what();
    for (const std::string& n : needles)
      EXPECT_NE(message.find(n), std::string::npos)
          << "message \"" << message << "\" lacks \"" << n << "\"";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected another exception type; got \"" << e.what() << "\"";
  }
}

// expect_error<E>(fn, "needle", "needle", ...)
template <typename E, typename F, typename Needle, typename... Needles>
void expect_error(F&& fn, const Needle& needle, const Needles&... more) {
  expect_error<E>(std::forward<F>(fn),
                  std::vector<std::string>{std::string(needle), std::string(more)...});
}

}  // namespace mtf::testing
