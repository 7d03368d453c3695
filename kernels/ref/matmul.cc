// Reference batched matrix product: out[b] = a[b] @ b[b] for a [B, M, K],
// b [B, K, N], out [B, M, N], any strides (stride 0 for broadcast batches).
// Accumulates as PyTorch 1.13's CPU gemm does: float32 in float, float64 in
// double, integers in their own width with wrap-around (computed in uint64 so
// that overflow is defined), and the 16-bit floats as its fallback gemm does
// by layout: when b is laid out K-contiguous (b [K, N] with stride 1 along K,
// as the transposed weight of a linear), a dot product per output in float
// with four partial sums, rounded once (gemm_transa_ / gemm_transab_);
// otherwise each product is rounded to the type, then added and rounded again
// (gemm_notrans_ / gemm_transb_). Bit-exact with PyTorch's bfloat16 mm, bmm,
// dot and linear without bias.
#include <type_traits>

#include "kernels/ref/ref_kernels.h"

namespace ember::ref {
namespace {

template <typename T>
using acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t, compute_t<T>>;

// out = a @ b for 16-bit floats with b K-contiguous: PyTorch's sum() of
// float products (four partial sums, then folded into the first), rounded once.
template <typename T>
void matmul_dot_loop(const TensorView& a, const TensorView& b, const TensorView* c, const TensorView& o) {
  const T* pa = a.ptr<const T>();
  const T* pb = b.ptr<const T>();
  const T* pc = c != nullptr ? c->ptr<const T>() : nullptr;
  T* po = o.ptr<T>();
  const int64_t batches = o.sizes[0], m = o.sizes[1], n = o.sizes[2], k = a.sizes[2];
  for (int64_t bi = 0; bi < batches; ++bi) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const T* ra = pa + bi * a.strides[0] + i * a.strides[1];
        const T* rb = pb + bi * b.strides[0] + j * b.strides[2];
        float partial[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        int64_t p = 0;
        for (; p + 4 <= k; p += 4) {
          for (int64_t q = 0; q < 4; ++q) {
            partial[q] += float(ra[(p + q) * a.strides[2]]) * float(rb[(p + q) * b.strides[1]]);
          }
        }
        for (; p < k; ++p) partial[0] += float(ra[p * a.strides[2]]) * float(rb[p * b.strides[1]]);
        for (int q = 1; q < 4; ++q) partial[0] += partial[q];
        if (pc != nullptr) partial[0] = float(pc[bi * c->strides[0] + i * c->strides[1] + j * c->strides[2]]) + partial[0];
        po[bi * o.strides[0] + i * o.strides[1] + j * o.strides[2]] = T(partial[0]);
      }
    }
  }
}

template <typename T>
void matmul_loop(const TensorView& a, const TensorView& b, const TensorView* c, const TensorView& o) {
  using A = acc_t<T>;
  const T* pa = a.ptr<const T>();
  const T* pb = b.ptr<const T>();
  const T* pc = c != nullptr ? c->ptr<const T>() : nullptr;
  T* po = o.ptr<T>();
  const int64_t batches = o.sizes[0], m = o.sizes[1], n = o.sizes[2], k = a.sizes[2];
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    if (n > 1 && k > 1 && b.strides[1] == 1 && b.strides[2] != 1) return matmul_dot_loop<T>(a, b, c, o);
  }
  for (int64_t bi = 0; bi < batches; ++bi) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        A sum = pc != nullptr ? static_cast<A>(pc[bi * c->strides[0] + i * c->strides[1] + j * c->strides[2]]) : A(0);
        for (int64_t p = 0; p < k; ++p) {
          const T x = pa[bi * a.strides[0] + i * a.strides[1] + p * a.strides[2]];
          const T y = pb[bi * b.strides[0] + p * b.strides[1] + j * b.strides[2]];
          if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
            sum = static_cast<float>(T(static_cast<float>(T(sum)) + static_cast<float>(T(float(x) * float(y)))));
          } else {
            sum += static_cast<A>(x) * static_cast<A>(y);
          }
        }
        po[bi * o.strides[0] + i * o.strides[1] + j * o.strides[2]] = static_cast<T>(sum);
      }
    }
  }
}

}  // namespace

Status matmul(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams&) {
  // An optional third input c [B, M, N] (addmm's bias, any strides) starts the
  // sum: out = c + a @ b, rounded once (PyTorch's gemm with beta = 1).
  EMBER_CHECK((in.size() == 2 || in.size() == 3) && out.size() == 1, Status::InvalidArgument);
  const TensorView &a = in[0], &b = in[1], &o = out[0];
  const TensorView* c = in.size() == 3 ? &in[2] : nullptr;
  EMBER_CHECK(c == nullptr || (c->rank == 3 && c->dtype == a.dtype && c->sizes[0] == o.sizes[0] &&
                                      c->sizes[1] == o.sizes[1] && c->sizes[2] == o.sizes[2]),
                     Status::ShapeMismatch);
  EMBER_CHECK(a.rank == 3 && b.rank == 3 && o.rank == 3, Status::InvalidArgument);
  EMBER_CHECK(a.sizes[0] == o.sizes[0] && b.sizes[0] == o.sizes[0] && a.sizes[1] == o.sizes[1] &&
                         b.sizes[2] == o.sizes[2] && a.sizes[2] == b.sizes[1],
                     Status::ShapeMismatch);
  EMBER_CHECK(a.dtype == b.dtype && a.dtype == o.dtype && (kNumericTypes & dtype_bit(a.dtype)),
                     Status::DTypeMismatch);
  dispatch_dtype(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) matmul_loop<T>(a, b, c, o);
  });
  return Status::Ok;
}

}  // namespace ember::ref
