// Small helpers the executor's files share to read a loaded model's
// flatbuffer tables (runtime/model/loader.h).
#pragma once

#include <cstdint>
#include <string>

#include "runtime/core/error.h"
#include "runtime/model/loader.h"

namespace ember {

template <typename T>
uint32_t vlen(const flatbuffers::Vector<T>* v) {
  return v == nullptr ? 0u : v->size();
}

inline std::string fb_str(const flatbuffers::String* s) { return s == nullptr ? std::string() : s->str(); }

// "node 'fc1' (linear)": op k as errors name it.
inline std::string op_ref(const Model& m, int k) {
  return str_cat("node '", fb_str(m.op(k).name()), "' (", op_name(m.op_kind(k)), ")");
}

}  // namespace ember
