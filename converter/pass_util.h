// Helpers the converter's passes share (passes.cc, fold.cc, shape_fold.cc, fuse.cc).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "converter/ir.h"

namespace ember::converter {

inline Diag fail(Status s, std::string message) { return {s, std::move(message)}; }

// The values of a constant int tensor (axes, shapes, pads...).
inline std::vector<int64_t> ints_of(const Tensor& t) {
  if (!t.defined()) return {};
  return t.to_vector<int64_t>();
}

// Sets a value's constant, dtype and static shape.
inline void set_constant(Value& v, Tensor t) {
  v.dtype = t.dtype();
  std::vector<Dim> dims;
  for (int64_t s : t.sizes()) dims.push_back(Dim::fixed(s));
  v.shape = dims;
  v.constant = std::move(t);
}

}  // namespace ember::converter
