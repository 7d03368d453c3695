// Python's repr() of a float ("0.1", "1e-05", "2.0", "inf"), for messages
// that PyTorch formats in Python.
#pragma once

#include <string>

namespace ember::optim::detail {

std::string python_float(double value);

}  // namespace ember::optim::detail
