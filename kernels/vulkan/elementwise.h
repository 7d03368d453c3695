// Shared by the Vulkan elementwise kernels (copy, fill, unary, binary, where):
// the shaders' element types, coalescing strided operands to at most 4 dims,
// and one dispatch of a shader of shaders/elementwise.glsl's family.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "kernels/vulkan/dispatch.h"

namespace ember::vk {

// Element types as shaders/elementwise.glsl numbers them (DT_*).
enum class ElemType : uint32_t { F32 = 0, F16 = 1, I32 = 2, I64 = 3, U8 = 4, I8 = 5, Bool = 6 };

// The shader element type of `t`; false for dtypes the shaders lack
// (float64, bfloat16, int16). *ext: set when `t` needs the ext variant
// (everything but float32 and int32: 8/16-bit storage and shaderInt64).
inline bool elem_type(DType t, uint32_t* code, bool* ext) {
  ElemType e;
  switch (t) {
    case DType::Float32: e = ElemType::F32; break;
    case DType::Int32: e = ElemType::I32; break;
    case DType::Float16: e = ElemType::F16; break;
    case DType::Int64: e = ElemType::I64; break;
    case DType::UInt8: e = ElemType::U8; break;
    case DType::Int8: e = ElemType::I8; break;
    case DType::Bool: e = ElemType::Bool; break;
    default: return false;
  }
  *code = static_cast<uint32_t>(e);
  if (e != ElemType::F32 && e != ElemType::I32) *ext = true;
  return true;
}

// The push constants every elementwise shader starts with (elementwise.glsl's
// Push): the element count, the sizes of dims 1..3 of the padded 4-D shape,
// each operand's first element and its 4 strides. Operand 0 is the output.
template <int K>
struct ElemLayout {
  uint32_t n = 0;
  uint32_t size[3] = {1, 1, 1};
  uint32_t first[K] = {};
  int32_t stride[4 * K] = {};
};

template <int K>
struct MergedDim {
  int64_t size;
  int64_t stride[K];
};

// The dims of operands `v` (the output's shape) with size-1 dims dropped and
// adjacent dims merged where every operand is contiguous across them; returns
// how many are left (0 for one element).
template <int K>
int merge_dims(const std::array<const TensorView*, K>& v, MergedDim<K> dims[kMaxRank]) {
  const TensorView& o = *v[0];
  int m = 0;
  for (int d = 0; d < o.rank; ++d) {
    if (o.sizes[d] == 1) continue;
    bool merge = m > 0;
    for (int k = 0; merge && k < K; ++k) merge = dims[m - 1].stride[k] == v[k]->strides[d] * o.sizes[d];
    if (merge) {
      dims[m - 1].size *= o.sizes[d];
      for (int k = 0; k < K; ++k) dims[m - 1].stride[k] = v[k]->strides[d];
    } else {
      dims[m].size = o.sizes[d];
      for (int k = 0; k < K; ++k) dims[m].stride[k] = v[k]->strides[d];
      ++m;
    }
  }
  return m;
}

// Fills `layout` (all but `first`) for operands of one shape: size-1 dims
// dropped, adjacent dims merged where every operand is contiguous across them
// (broadcast operands: stride 0 in both). *rank: the dims left (1..4); more is
// NotSupported. *n: the element count.
template <int K>
Status coalesce(const char* op, const std::array<const TensorView*, K>& v, ElemLayout<K>* layout, uint32_t* rank,
                int64_t* n) {
  const TensorView& o = *v[0];
  for (int k = 1; k < K; ++k) {
    bool same = v[k]->rank == o.rank;
    for (int d = 0; same && d < o.rank; ++d) same = v[k]->sizes[d] == o.sizes[d];
    if (!same) {
      Context::set_why(std::string("vulkan ") + op + ": operand " + std::to_string(k) +
                       " does not have the output's shape");
      return Status::ShapeMismatch;
    }
  }
  *n = o.numel();
  MergedDim<K> dims[kMaxRank] = {};
  int m = merge_dims<K>(v, dims);
  if (m == 0) {  // one element (or a 0-dim tensor)
    dims[0].size = 1;
    m = 1;
  }
  if (m > 4) {
    Context::set_why(std::string("vulkan ") + op + " indexes at most 4 dimensions after merging contiguous ones; " +
                     "these strides leave " + std::to_string(m) + " (make an operand contiguous first)");
    return Status::NotSupported;
  }
  if (*n > int64_t{std::numeric_limits<uint32_t>::max()}) {
    Context::set_why(std::string("vulkan ") + op + " handles at most 2^32 - 1 elements, got " + std::to_string(*n));
    return Status::NotSupported;
  }
  for (int j = 0; j < m; ++j) {
    for (int k = 0; k < K; ++k) {
      if (dims[j].stride[k] > std::numeric_limits<int32_t>::max()) {
        Context::set_why(std::string("vulkan ") + op + ": a stride of " + std::to_string(dims[j].stride[k]) +
                         " elements exceeds 2^31 - 1");
        return Status::NotSupported;
      }
    }
  }
  // Pad to 4 dims in front: dims[j] is dim 4 - m + j.
  layout->n = static_cast<uint32_t>(*n);
  for (int d = 0; d < 4; ++d) {
    const int j = d - (4 - m);
    const bool real = j >= 0;
    if (d > 0) layout->size[d - 1] = real ? static_cast<uint32_t>(dims[j].size) : 1u;
    for (int k = 0; k < K; ++k) layout->stride[4 * k + d] = real ? static_cast<int32_t>(dims[j].stride[k]) : 0;
  }
  *rank = static_cast<uint32_t>(m);
  return Status::Ok;
}

// One dispatch of `shader` (or `ext_shader` when an operand's dtype needs it,
// or always when `base` is null) over the operands `v` (output first, binding
// order). `push` starts with an ElemLayout<K> named `layout`; `op` names the
// kernel in messages, `op_code` is the shader's OP.
template <int K, typename Push>
Status run_elementwise(const char* op, const ShaderCode* base, const ShaderCode& ext_shader, uint32_t op_code,
                       const std::array<const TensorView*, K>& v, Push& push) {
  static_assert(K <= 4, "the elementwise shaders take at most 4 operands");
  static_assert(offsetof(Push, layout) == 0, "the layout comes first in the push constants");
  uint32_t dt[4] = {0, 0, 0, 0};
  bool ext = base == nullptr;
  for (int k = 0; k < K; ++k) {
    if (!elem_type(v[k]->dtype, &dt[k], &ext)) {
      Context::set_why(std::string("vulkan ") + op + " does not support " + std::string(dtype_name(v[k]->dtype)));
      return Status::NotSupported;
    }
  }
  EMBER_ASSIGN_OR_RETURN(Context * c, Context::get());
  const Capabilities& caps = c->caps();
  if (ext && !(caps.float16 && caps.int8 && caps.int64)) {
    Context::set_why(std::string("vulkan ") + op +
                     " on these dtypes needs 8-bit and 16-bit storage buffers and shaderInt64, which " +
                     caps.device_name + " lacks (float32 and int32 work without)");
    return Status::NotSupported;
  }
  // More than 4 dims left after merging (the shaders index 4): one dispatch
  // per index of the leading dim, each over a slice with one dim fewer.
  MergedDim<K> merged[kMaxRank] = {};
  if (merge_dims<K>(v, merged) > 4) {
    std::array<TensorView, K> slice;
    std::array<const TensorView*, K> slices;
    for (int k = 0; k < K; ++k) {
      slice[k] = *v[k];
      slice[k].rank = v[k]->rank - 1;
      for (int d = 0; d < slice[k].rank; ++d) {
        slice[k].sizes[d] = v[k]->sizes[d + 1];
        slice[k].strides[d] = v[k]->strides[d + 1];
      }
      slices[k] = &slice[k];
    }
    for (int64_t i = 0; i < v[0]->sizes[0]; ++i) {
      for (int k = 0; k < K; ++k) {
        const int64_t offset = i * v[k]->strides[0] * static_cast<int64_t>(element_size(v[k]->dtype));
        slice[k].data = static_cast<char*>(v[k]->data) + offset;  // device addresses do pointer arithmetic
      }
      EMBER_TRY(run_elementwise<K>(op, base, ext_shader, op_code, slices, push));
    }
    return Status::Ok;
  }
  uint32_t rank = 1;
  int64_t n = 0;
  EMBER_TRY(coalesce<K>(op, v, &push.layout, &rank, &n));
  if (n == 0) return Status::Ok;
  Dispatch d(ext ? ext_shader : *base);
  for (int k = 0; k < K; ++k) push.layout.first[k] = d.bind(*v[k]);
  const Grid g = grid(n, 256);
  return d.run(push, g.x, g.y, 1, {256u, op_code, rank, dt[0], dt[1], dt[2], dt[3]});
}

}  // namespace ember::vk
