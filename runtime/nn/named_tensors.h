// An ordered list of (name, tensor): what state_dict() returns and what
// safetensors files hold.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace ember::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using StateDict = NamedTensors;

// The tensor named `name`, or an undefined tensor.
inline Tensor find_tensor(const NamedTensors& tensors, const std::string& name) {
  for (const auto& [key, value] : tensors) {
    if (key == name) return value;
  }
  return Tensor();
}

}  // namespace ember::nn
