// Generic strided elementwise loops over the functors of elementwise_ops.h.
// Reference kernels use them directly; CPU kernels call them for the layouts
// their vector loops do not cover.
#pragma once

#include "runtime/tensor/convert.h"
#include "kernels/ref/elementwise_ops.h"
#include "kernels/ref/loops.h"
#include "runtime/backend/backend.h"

namespace ember::ref {

// out[0] = Op(in[0]) elementwise; in and out share one dtype.
template <typename Op, DTypeSet kTypes>
Status unary(Span<const TensorView> in, Span<TensorView> out, Op op = Op{}) {
  EMBER_CHECK(in[0].dtype == out[0].dtype && (kTypes & dtype_bit(in[0].dtype)),
                     Status::DTypeMismatch);
  Status status = Status::Ok;
  dispatch_dtype(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr ((kTypes & dtype_bit(dtype_of<T>::value)) != 0) {
      using C = compute_t<T>;
      for_each_row<2>({&out[0], &in[0]}, [&](std::array<char*, 2> p, int64_t n, std::array<int64_t, 2> s) {
        for (int64_t i = 0; i < n; ++i) {
          const C x = static_cast<C>(*reinterpret_cast<const T*>(p[1] + i * s[1]));
          *reinterpret_cast<T*>(p[0] + i * s[0]) = T(op(x));
        }
      });
    } else {
      status = Status::NotSupported;
    }
  });
  return status;
}

// out[0] = Op(in[0], in[1]); the inputs share one dtype and are broadcast to
// out's shape; out has that dtype, or bool for comparisons.
template <typename Op, DTypeSet kTypes>
Status binary(Span<const TensorView> in, Span<TensorView> out) {
  constexpr bool kCompare = is_compare<Op>::value;
  EMBER_CHECK(in[0].dtype == in[1].dtype && (kTypes & dtype_bit(in[0].dtype)),
                     Status::DTypeMismatch);
  EMBER_CHECK(out[0].dtype == (kCompare ? DType::Bool : in[0].dtype), Status::DTypeMismatch);
  Status status = Status::Ok;
  dispatch_dtype(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr ((kTypes & dtype_bit(dtype_of<T>::value)) != 0) {
      using C = compute_t<T>;
      using O = std::conditional_t<kCompare, bool, T>;
      for_each_row<3>({&out[0], &in[0], &in[1]},
                      [&](std::array<char*, 3> p, int64_t n, std::array<int64_t, 3> s) {
                        for (int64_t i = 0; i < n; ++i) {
                          const C a = static_cast<C>(*reinterpret_cast<const T*>(p[1] + i * s[1]));
                          const C b = static_cast<C>(*reinterpret_cast<const T*>(p[2] + i * s[2]));
                          *reinterpret_cast<O*>(p[0] + i * s[0]) = O(Op{}(a, b));
                        }
                      });
    } else {
      status = Status::NotSupported;
    }
  });
  return status;
}

}  // namespace ember::ref
