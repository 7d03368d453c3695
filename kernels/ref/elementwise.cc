// Unary and binary elementwise reference kernels, Where and Clamp.
#include "kernels/ref/elementwise.h"

#include "kernels/ref/ref_kernels.h"

namespace ember::ref {

// One kernel per RT_UNARY line of ops.def.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, dtypes, ...)                                                           \
  Status name(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams&) { \
    return unary<Name##Op, dtypes>(in, out);                                                        \
  }
#define RT_UNARY_P(Name, name, dtypes, ...)                                                                 \
  Status name(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) { \
    const auto* p = std::get_if<UnaryParams>(&params);                                                      \
    EMBER_CHECK(p != nullptr, Status::InvalidArgument);                                              \
    return unary<Name##Op, dtypes>(in, out, Name##Op{p->a, p->b});                                          \
  }
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP

Status gelu(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<GeluParams>(&params);
  EMBER_CHECK(p != nullptr, Status::InvalidArgument);
  return p->tanh_approximation ? unary<GeluTanhOp, kFloatingTypes>(in, out)
                               : unary<GeluOp, kFloatingTypes>(in, out);
}

Status clamp(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<ClampParams>(&params);
  EMBER_CHECK(p != nullptr, Status::InvalidArgument);
  Status status = Status::Ok;
  dispatch_dtype(in[0].dtype, [&](auto tag) {
    using C = compute_t<typename decltype(tag)::type>;
    const C lo = p->has_min ? p->min.to<C>() : C(0);
    const C hi = p->has_max ? p->max.to<C>() : C(0);
    auto bound = [&](C x) { return ClampOp{}(x, p->has_min, lo, p->has_max, hi); };
    status = unary<decltype(bound), kNumericTypes>(in, out, bound);
  });
  return status;
}

#define RT_BINARY_KERNEL(fn, Op, types)                                                  \
  Status fn(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,      \
            const OpParams&) {                                                           \
    return binary<Op, types>(in, out);                                                   \
  }
RT_BINARY_KERNEL(add, AddOp, kAllTypes)
RT_BINARY_KERNEL(sub, SubOp, kNumericTypes)
RT_BINARY_KERNEL(mul, MulOp, kAllTypes)
RT_BINARY_KERNEL(div, DivOp, kFloatingTypes)
RT_BINARY_KERNEL(pow, PowOp, kAllTypes)
RT_BINARY_KERNEL(maximum, MaximumOp, kAllTypes)
RT_BINARY_KERNEL(minimum, MinimumOp, kAllTypes)
RT_BINARY_KERNEL(eq, EqOp, kAllTypes)
RT_BINARY_KERNEL(ne, NeOp, kAllTypes)
RT_BINARY_KERNEL(lt, LtOp, kAllTypes)
RT_BINARY_KERNEL(le, LeOp, kAllTypes)
RT_BINARY_KERNEL(gt, GtOp, kAllTypes)
RT_BINARY_KERNEL(ge, GeOp, kAllTypes)
#undef RT_BINARY_KERNEL

// One kernel per RT_BINARY line of ops.def.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_BINARY(Name, name, dtypes, ...)                                                              \
  Status name(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams&) { \
    return binary<Name##Op, dtypes>(in, out);                                                           \
  }
#include "runtime/graph/ops.def"
#undef RT_BINARY
#undef RT_OP

Status where(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams&) {
  EMBER_CHECK(in[0].dtype == in[1].dtype && in[0].dtype == out[0].dtype && in[2].dtype == DType::Bool,
                     Status::DTypeMismatch);
  dispatch_dtype(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_row<4>({&out[0], &in[0], &in[1], &in[2]},
                    [](std::array<char*, 4> p, int64_t n, std::array<int64_t, 4> s) {
                      for (int64_t i = 0; i < n; ++i) {
                        const bool c = *reinterpret_cast<const bool*>(p[3] + i * s[3]);
                        *reinterpret_cast<T*>(p[0] + i * s[0]) =
                            *reinterpret_cast<const T*>(p[c ? 1 : 2] + i * s[c ? 1 : 2]);
                      }
                    });
  });
  return Status::Ok;
}

}  // namespace ember::ref
