// Golden data produced by PyTorch (tests/golden/gen_golden.py, run by Bazel at
// build time with Debian's python3-torch). Records are named "family.case.part".
#pragma once

#include <string>

#include "runtime/ember.h"

namespace ember::testing {

// The tensor record `name` (inputs and expected outputs); fails the test if absent.
Tensor golden(const std::string& name);
// A text record (e.g. what print(t) shows).
std::string golden_text(const std::string& name);
bool has_golden(const std::string& name);

}  // namespace ember::testing
