// transport_contract.h — the contract every Transport keeps
// (include/mtf/transport.h), as cases that run on each rank of a job of any
// size >= 2 over any transport: in-process, TCP, MPI (and any later one).
// A case's run() returns the rank's outcome ("" or "<ErrorType>: message")
// instead of throwing, so a case can check an error on one rank while its
// peers go on; check() says what each rank's outcome must be. Cases use
// their own tags and leave no message behind, so one job can run them all
// in turn (the MPI suite does).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "mtf/transport.h"

namespace mtf::testing {

struct ContractCase {
  std::string name;
  std::function<std::string(Transport&)> run;
  std::function<void(int rank, int size, const std::string& outcome)> check;
};

// Every case of the contract.
const std::vector<ContractCase>& transport_contract();

// "" when f returns; "<ErrorType>: message" when it throws.
std::string outcome_of(const std::function<void()>& f);

}  // namespace mtf::testing
