// Reductions on Vulkan: Sum, Mean, Var, Norm, Prod, Max/Min (values and int64
// indices), ArgMax/ArgMin of float32 and float16 tensors (float16 where the
// device has shaderFloat16 and 16-bit storage), any input strides. The output
// keeps the input's rank with size 1 on the reduced dims (ReduceParams::dims)
// and must be contiguous (the front-ends allocate it). One workgroup per
// output element reduces in float32 (shaders/reduce_body.glsl); the reference
// accumulates in double, so sums of many values differ by rounding.
// Indices are written as two 32-bit words (low, high = 0): no shaderInt64 needed.
#include <string>

#include "kernels/vulkan/dispatch.h"
#include "kernels/vulkan/vk_kernels.h"

namespace ember::vk {
namespace {

constexpr int kGroupRank = 4;  // (size, stride) dims per group the shader takes

struct ReducePush {
  uint32_t x_first, y_first, i_first;
  uint32_t op;
  uint32_t flags;
  uint32_t outer_numel, inner_numel;
  uint32_t outer_rank, inner_rank;
  float p;
  float divisor;
  uint32_t pad;
  uint32_t outer_size[kGroupRank], outer_stride[kGroupRank];
  uint32_t inner_size[kGroupRank], inner_stride[kGroupRank];
};
static_assert(sizeof(ReducePush) == 112, "mirrors the push block of shaders/reduce.comp");

enum ReduceOp : uint32_t { kSum = 0, kMean = 1, kVar = 2, kNorm = 3, kMax = 4, kMin = 5, kProd = 6 };

// Dims in order, size-1 dims dropped, a dim merged into the one before it
// when that one steps exactly over it.
struct Dims {
  int rank = 0;
  int64_t size[kMaxRank] = {}, stride[kMaxRank] = {};
  void add(int64_t n, int64_t s) {
    if (n == 1) return;
    if (rank > 0 && stride[rank - 1] == s * n) {
      size[rank - 1] *= n;
      stride[rank - 1] = s;
      return;
    }
    size[rank] = n;
    stride[rank++] = s;
  }
};

constexpr int64_t kMaxIndex = int64_t{1} << 32;
// Serial mode: enough outputs to fill a device, few enough reduced elements
// per output that a float32 running sum stays accurate.
constexpr int64_t kSerialMinOutputs = 256;
constexpr int64_t kSerialMaxReduced = 16384;



// `values` and `indices` may be undefined (data == nullptr): not written.
Status reduce(const TensorView& x, const TensorView& values, const TensorView& indices, const ReduceParams& rp,
              ReduceOp op) {
  const char* name = op == kSum    ? "sum"
                     : op == kMean ? "mean"
                     : op == kVar  ? "var"
                     : op == kNorm ? "norm"
                     : op == kProd ? "prod"
                                   : "max/min";
  if ((x.dtype != DType::Float32 && x.dtype != DType::Float16) || (values.data != nullptr && values.dtype != x.dtype) ||
      (indices.data != nullptr && indices.dtype != DType::Int64)) {
    Context::set_why(std::string(name) + " on vulkan: float32 or float16 values and int64 indices only");
    return Status::DTypeMismatch;
  }
  const bool half = x.dtype == DType::Float16;
  if (half && !float16_supported(name)) return Status::NotSupported;
  for (const TensorView* o : {&values, &indices}) {
    if (o->data == nullptr) continue;
    if (o->rank != x.rank) return Status::ShapeMismatch;
    for (int d = 0; d < x.rank; ++d) {
      if (o->sizes[d] != (((rp.dims >> d) & 1u) ? 1 : x.sizes[d])) return Status::ShapeMismatch;
    }
    if (!o->is_contiguous()) {
      Context::set_why(std::string(name) + " on vulkan writes contiguous outputs only");
      return Status::NotSupported;
    }
  }
  Dims outer, inner;
  int64_t outer_numel = 1, inner_numel = 1;
  for (int d = 0; d < x.rank; ++d) {
    if ((rp.dims >> d) & 1u) {
      inner.add(x.sizes[d], x.strides[d]);
      inner_numel *= x.sizes[d];
    } else {
      outer.add(x.sizes[d], x.strides[d]);
      outer_numel *= x.sizes[d];
    }
  }
  if (outer_numel == 0) return Status::Ok;
  // Nothing reduced: the shader writes 0 (sum, norm), 1 (prod) or NaN (mean, var).
  if (inner_numel == 0 && (op == kMax || op == kMin)) return Status::InvalidArgument;  // no extreme of nothing
  if (outer.rank > kGroupRank || inner.rank > kGroupRank) {
    Context::set_why(std::string(name) + " on vulkan: the input's strides leave more than 4 kept or 4 reduced dims");
    return Status::NotSupported;
  }
  if (outer_numel >= kMaxIndex || inner_numel >= kMaxIndex) {
    Context::set_why(std::string(name) + " on vulkan: more than 2^32 elements");
    return Status::NotSupported;
  }
  ReducePush push{};
  push.op = op;
  push.flags = (values.data != nullptr ? 1u : 0u) | (indices.data != nullptr ? 2u : 0u);
  push.outer_numel = static_cast<uint32_t>(outer_numel);
  push.inner_numel = static_cast<uint32_t>(inner_numel);
  push.outer_rank = static_cast<uint32_t>(outer.rank);
  push.inner_rank = static_cast<uint32_t>(inner.rank);
  push.p = static_cast<float>(rp.p);
  push.divisor = inner_numel > rp.correction ? static_cast<float>(inner_numel - rp.correction) : 0.0f;
  for (int d = 0; d < outer.rank; ++d) {
    push.outer_size[d] = static_cast<uint32_t>(outer.size[d]);
    push.outer_stride[d] = static_cast<uint32_t>(outer.stride[d]);
  }
  for (int d = 0; d < inner.rank; ++d) {
    push.inner_size[d] = static_cast<uint32_t>(inner.size[d]);
    push.inner_stride[d] = static_cast<uint32_t>(inner.stride[d]);
  }
  // Serial mode (one invocation per output element) when the kept dims are
  // the contiguous ones and the reduced ones are not: neighbouring
  // invocations then read neighbouring elements (a column sum), where a
  // workgroup per output would read one strided column per workgroup.
  const bool serial = outer.rank > 0 && outer.stride[outer.rank - 1] == 1 &&
                      (inner.rank == 0 || inner.stride[inner.rank - 1] != 1) && outer_numel >= kSerialMinOutputs &&
                      inner_numel <= kSerialMaxReduced;
  Dispatch dsp(half ? shaders::reduce_f16 : shaders::reduce);
  push.x_first = dsp.bind(x);
  // An absent output is bound to the other one; the shader does not write it.
  push.y_first = dsp.bind_or(values, indices);
  push.i_first = dsp.bind_or(indices, values);
  if (serial) {
    push.flags |= 4u;
    const Grid g = grid(outer_numel, 64);
    return dsp.run(push, g.x, g.y, 1, {64});
  }
  const Grid g = grid(outer_numel, 1);
  return dsp.run(push, g.x, g.y, 1, {reduction_group_size(inner_numel)});
}

const ReduceParams* reduce_params(const OpParams& params) { return std::get_if<ReduceParams>(&params); }

Status reduce_one(Span<const TensorView> in, Span<TensorView> out, const OpParams& params, ReduceOp op) {
  const ReduceParams* p = reduce_params(params);
  if (p == nullptr || in.size() != 1 || out.size() != 1) return Status::InvalidArgument;
  return reduce(in[0], out[0], TensorView{}, *p, op);
}

Status extreme(Span<const TensorView> in, Span<TensorView> out, const OpParams& params, ReduceOp op,
               bool want_values) {
  const ReduceParams* p = reduce_params(params);
  if (p == nullptr || in.size() != 1 || out.size() != (want_values ? 2u : 1u)) return Status::InvalidArgument;
  return reduce(in[0], want_values ? out[0] : TensorView{}, out[want_values ? 1 : 0], *p, op);
}

}  // namespace

Status sum(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return reduce_one(in, out, params, kSum);
}

Status mean(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return reduce_one(in, out, params, kMean);
}

Status var(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return reduce_one(in, out, params, kVar);
}

Status norm(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return reduce_one(in, out, params, kNorm);
}

Status prod(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return reduce_one(in, out, params, kProd);
}

Status max_reduce(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return extreme(in, out, params, kMax, /*want_values=*/true);
}

Status min_reduce(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return extreme(in, out, params, kMin, /*want_values=*/true);
}

Status argmax(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return extreme(in, out, params, kMax, /*want_values=*/false);
}

Status argmin(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return extreme(in, out, params, kMin, /*want_values=*/false);
}

}  // namespace ember::vk
