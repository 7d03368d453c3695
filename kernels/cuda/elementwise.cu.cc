// Copy, Fill, and the elementwise family on CUDA: the same scalar functors as
// the reference kernels (kernels/ref/elementwise_ops.h, host and device), so
// every backend computes each op with one formula.
#include "kernels/cuda/launch.h"
#include "kernels/ref/elementwise_ops.h"
#include "runtime/tensor/convert.h"

namespace ember::cuda {
namespace {

template <typename D, typename S>
struct CopyFn {
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<D*>(p[0]) = convert<D>(*reinterpret_cast<const S*>(p[1]));
  }
};

template <typename T>
struct FillFn {
  T value;
  __device__ void operator()(char* const* p) const { *reinterpret_cast<T*>(p[0]) = value; }
};

template <typename Op, typename T>
struct UnaryFn {
  Op op;
  __device__ void operator()(char* const* p) const {
    using C = compute_t<T>;
    *reinterpret_cast<T*>(p[0]) = T(op(static_cast<C>(*reinterpret_cast<const T*>(p[1]))));
  }
};

template <typename Op, typename T, typename O>
struct BinaryFn {
  __device__ void operator()(char* const* p) const {
    using C = compute_t<T>;
    const C a = static_cast<C>(*reinterpret_cast<const T*>(p[1]));
    const C b = static_cast<C>(*reinterpret_cast<const T*>(p[2]));
    *reinterpret_cast<O*>(p[0]) = O(Op{}(a, b));
  }
};

template <typename T>
struct WhereFn {
  __device__ void operator()(char* const* p) const {
    const bool c = *reinterpret_cast<const bool*>(p[3]);
    *reinterpret_cast<T*>(p[0]) = *reinterpret_cast<const T*>(p[c ? 1 : 2]);
  }
};

template <typename C>
struct ClampBound {
  bool has_min, has_max;
  C lo, hi;
  __device__ C operator()(C x) const { return ref::ClampOp{}(x, has_min, lo, has_max, hi); }
};

template <typename Op, DTypeSet kTypes>
Status unary(Span<const TensorView> in, Span<TensorView> out, Op op = Op{}) {
  EMBER_CHECK(in[0].dtype == out[0].dtype, Status::DTypeMismatch);
  return on_dtype<kTypes & kCudaAll>(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return for_each_element<2>({&out[0], &in[0]}, UnaryFn<Op, T>{op}, "unary kernel");
  });
}

template <typename Op, DTypeSet kTypes>
Status binary(Span<const TensorView> in, Span<TensorView> out) {
  constexpr bool kCompare = ref::is_compare<Op>::value;
  EMBER_CHECK(in[0].dtype == in[1].dtype, Status::DTypeMismatch);
  EMBER_CHECK(out[0].dtype == (kCompare ? DType::Bool : in[0].dtype), Status::DTypeMismatch);
  return on_dtype<kTypes & kCudaAll>(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = std::conditional_t<kCompare, bool, T>;
    return for_each_element<3>({&out[0], &in[0], &in[1]}, BinaryFn<Op, T, O>{}, "binary kernel");
  });
}

}  // namespace

EMBER_CUDA_KERNEL(copy) {
  (void)params;
  EMBER_CHECK(in[0].rank == out[0].rank, Status::InvalidArgument);
  return on_dtype<kCudaAll>(in[0].dtype, [&](auto src_tag) {
    using S = typename decltype(src_tag)::type;
    return on_dtype<kCudaAll>(out[0].dtype, [&](auto dst_tag) {
      using D = typename decltype(dst_tag)::type;
      return for_each_element<2>({&out[0], &in[0]}, CopyFn<D, S>{}, "copy kernel");
    });
  });
}

EMBER_CUDA_KERNEL(fill) {
  (void)in;
  const auto* p = std::get_if<ScalarParams>(&params);
  EMBER_CHECK(p != nullptr, Status::InvalidArgument);
  return on_dtype<kCudaAll>(out[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return for_each_element<1>({&out[0]}, FillFn<T>{p->value.to<T>()}, "fill kernel");
  });
}

// One kernel per RT_UNARY / RT_UNARY_P line of ops.def.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, dtypes, ...) \
  EMBER_CUDA_KERNEL(name) {               \
    (void)params;                         \
    return unary<ref::Name##Op, dtypes>(in, out); \
  }
#define RT_UNARY_P(Name, name, dtypes, ...)                              \
  EMBER_CUDA_KERNEL(name) {                                              \
    const auto* p = std::get_if<UnaryParams>(&params);                   \
    EMBER_CHECK(p != nullptr, Status::InvalidArgument);           \
    return unary<ref::Name##Op, dtypes>(in, out, ref::Name##Op{p->a, p->b}); \
  }
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP

EMBER_CUDA_KERNEL(gelu) {
  const auto* p = std::get_if<GeluParams>(&params);
  EMBER_CHECK(p != nullptr, Status::InvalidArgument);
  return p->tanh_approximation ? unary<ref::GeluTanhOp, kFloatingTypes>(in, out)
                               : unary<ref::GeluOp, kFloatingTypes>(in, out);
}

EMBER_CUDA_KERNEL(clamp) {
  const auto* p = std::get_if<ClampParams>(&params);
  EMBER_CHECK(p != nullptr && in[0].dtype == out[0].dtype, Status::InvalidArgument);
  return on_dtype<kCudaNumeric>(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const ClampBound<C> bound{p->has_min, p->has_max, p->has_min ? p->min.to<C>() : C(0),
                              p->has_max ? p->max.to<C>() : C(0)};
    return for_each_element<2>({&out[0], &in[0]}, UnaryFn<ClampBound<C>, T>{bound}, "clamp kernel");
  });
}

#define EMBER_CUDA_BINARY(fn, Op, types) \
  EMBER_CUDA_KERNEL(fn) {                \
    (void)params;                        \
    return binary<ref::Op, types>(in, out); \
  }
EMBER_CUDA_BINARY(add, AddOp, kAllTypes)
EMBER_CUDA_BINARY(sub, SubOp, kNumericTypes)
EMBER_CUDA_BINARY(mul, MulOp, kAllTypes)
EMBER_CUDA_BINARY(div, DivOp, kFloatingTypes)
EMBER_CUDA_BINARY(pow, PowOp, kAllTypes)
EMBER_CUDA_BINARY(maximum, MaximumOp, kAllTypes)
EMBER_CUDA_BINARY(minimum, MinimumOp, kAllTypes)
EMBER_CUDA_BINARY(eq, EqOp, kAllTypes)
EMBER_CUDA_BINARY(ne, NeOp, kAllTypes)
EMBER_CUDA_BINARY(lt, LtOp, kAllTypes)
EMBER_CUDA_BINARY(le, LeOp, kAllTypes)
EMBER_CUDA_BINARY(gt, GtOp, kAllTypes)
EMBER_CUDA_BINARY(ge, GeOp, kAllTypes)
// One kernel per RT_BINARY line of ops.def.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_BINARY(Name, name, dtypes, ...) EMBER_CUDA_BINARY(name, Name##Op, dtypes)
#include "runtime/graph/ops.def"
#undef RT_BINARY
#undef RT_OP

EMBER_CUDA_KERNEL(where) {
  (void)params;
  EMBER_CHECK(in[0].dtype == in[1].dtype && in[0].dtype == out[0].dtype && in[2].dtype == DType::Bool,
                     Status::DTypeMismatch);
  return on_dtype<kCudaAll>(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return for_each_element<4>({&out[0], &in[0], &in[1], &in[2]}, WhereFn<T>{}, "where kernel");
  });
}

}  // namespace ember::cuda
