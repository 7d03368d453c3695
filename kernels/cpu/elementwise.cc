// Vectorized float32 elementwise kernels: contiguous operands (or a scalar
// operand broadcast by stride 0) run a flat loop the compiler vectorizes for
// each ISA clone, split across threads; operands dense in another dim order
// (channels_last) take the same loops once their dims are put in the output's
// memory order (order_by_output); other layouts use the reference loops.
#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/ref/elementwise.h"
#include "kernels/ref/loops.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/core/thread_pool.h"

namespace ember::cpu {

#if RT_X86_VARIANTS
bool avx2_fma_variant() {
  static const bool yes = !__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
                          __builtin_cpu_supports("fma");
  return yes;
}
#endif

namespace {

// How an input is laid out relative to the output: contiguous, or one value.
enum class Operand { Dense, Scalar, Other };

Operand classify(const TensorView& v) {
  if (v.is_contiguous()) return Operand::Dense;
  for (int d = 0; d < v.rank; ++d) {
    if (v.sizes[d] != 1 && v.strides[d] != 0) return Operand::Other;
  }
  return Operand::Scalar;
}

// The dims of views[0] (the output) and of views[1..n) (inputs of its shape;
// broadcast dims have stride 0) put in the output's memory order, outermost
// first (strides descending, ties kept in order), size-1 dims dropped and
// neighbours that every view steps through as one dim merged: PyTorch's
// TensorIterator. An output dense in some dim order (channels_last) comes out
// contiguous, its inputs read in the same order: channels_last + channels_last
// is one flat loop, channels_last [N, C, H, W] * [N, C, 1, 1] rows of C. The
// views change, the elements they address do not. False (views unchanged)
// where the shapes differ.
constexpr int kMaxViews = 3;

bool order_by_output(TensorView* views, int n) {
  const TensorView& o = views[0];
  if (n > kMaxViews) return false;
  for (int k = 1; k < n; ++k) {
    if (views[k].rank != o.rank || !std::equal(o.sizes, o.sizes + o.rank, views[k].sizes)) return false;
  }
  int perm[kMaxRank], r = 0;
  for (int d = 0; d < o.rank; ++d) {
    if (o.sizes[d] != 1) perm[r++] = d;
  }
  std::stable_sort(perm, perm + r, [&](int a, int b) { return o.strides[a] > o.strides[b]; });
  TensorView merged[kMaxViews];
  for (int k = 0; k < n; ++k) {
    merged[k] = views[k];
    merged[k].rank = 0;
  }
  for (int i = 0; i < r; ++i) {
    const int d = perm[i];
    bool merge = i > 0;
    for (int k = 0; k < n && merge; ++k) {
      merge = merged[k].strides[merged[k].rank - 1] == views[k].strides[d] * views[k].sizes[d];
    }
    for (int k = 0; k < n; ++k) {
      TensorView& v = merged[k];
      if (merge) {
        v.sizes[v.rank - 1] *= views[k].sizes[d];
      } else {
        v.sizes[v.rank++] = views[k].sizes[d];
      }
      v.strides[v.rank - 1] = views[k].strides[d];
    }
  }
  std::copy(merged, merged + n, views);
  return true;
}

// Whether x and out are dense in the same dim order (both contiguous, or both
// channels_last...): then element i of one is element i of the other in memory,
// *xp and *op being their first elements.
bool dense_pair(const TensorView& x, const TensorView& out, const float** xp, float** op) {
  TensorView v[2] = {out, x};
  if (!(x.is_contiguous() && out.is_contiguous()) && !(order_by_output(v, 2) && v[0].is_contiguous() &&
                                                       v[1].is_contiguous())) {
    return false;
  }
  *xp = x.ptr<const float>();
  *op = out.ptr<float>();
  return true;
}

template <typename Op>
RT_SIMD_CLONES void binary_loop(float* __restrict out, const float* __restrict a, int64_t sa,
                                const float* __restrict b, int64_t sb, int64_t n) {
  const Op op;
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], b[i]);
  } else if (sa == 1) {
    const float bv = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], bv);
  } else if (sb == 1) {
    const float av = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = op(av, b[i]);
  } else {
    const float v = op(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  }
}

// Plain (non-NaN-aware) versions the vectorizer handles; NaN handling for
// maximum/minimum is kept by checking `a != a` in the loop body.
struct AddF { float operator()(float a, float b) const { return a + b; } };
struct SubF { float operator()(float a, float b) const { return a - b; } };
struct MulF { float operator()(float a, float b) const { return a * b; } };
struct DivF { float operator()(float a, float b) const { return a / b; } };
struct MaxF {
  float operator()(float a, float b) const { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
};
struct MinF {
  float operator()(float a, float b) const { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
};

// Rows of a contiguous output whose operands are, along the row, contiguous or
// broadcast (stride 0): e.g. [1000, 1000] + [1000]. Rows are split across threads.
template <typename Fast>
bool binary_rows(Span<const TensorView> in, Span<TensorView> out) {
  const ref::StridedGeometry<3> g = ref::make_geometry<3>({&out[0], &in[0], &in[1]});
  if (g.rank == 0) return false;
  const int last = g.rank - 1;
  const int64_t n = g.sizes[last];
  constexpr int64_t kF = sizeof(float);
  if (g.strides[0][last] != kF) return false;
  for (int k = 1; k < 3; ++k) {
    if (g.strides[k][last] != kF && g.strides[k][last] != 0) return false;
  }
  const int64_t rows = out[0].numel() / n;
  char* o = static_cast<char*>(out[0].data);
  const char* a = static_cast<const char*>(in[0].data);
  const char* b = static_cast<const char*>(in[1].data);
  const int64_t sa = g.strides[1][last] / kF, sb = g.strides[2][last] / kF;
  parallel_for(0, rows, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t rest = r, off[3] = {0, 0, 0};
      for (int d = last - 1; d >= 0; --d) {
        const int64_t i = rest % g.sizes[d];
        rest /= g.sizes[d];
        for (int k = 0; k < 3; ++k) off[k] += i * g.strides[k][d];
      }
      binary_loop<Fast>(reinterpret_cast<float*>(o + off[0]), reinterpret_cast<const float*>(a + off[1]), sa,
                        reinterpret_cast<const float*>(b + off[2]), sb, n);
    }
  });
  return true;
}

// With the dims in the output's memory order (order_by_output, where the
// output is not contiguous): a contiguous output with operands contiguous or
// scalar is one flat loop; rows along which the output is contiguous and the
// operands contiguous or broadcast, binary_rows; others the reference loop.
template <typename Fast, typename Ref>
Status binary_f32(Span<const TensorView> in, Span<TensorView> out) {
  TensorView v[3] = {out[0], in[0], in[1]};
  if (!v[0].is_contiguous()) order_by_output(v, 3);
  const Span<const TensorView> vin(v + 1, 2);
  const Span<TensorView> vout(v, 1);
  const Operand ka = classify(v[1]), kb = classify(v[2]);
  const bool flat = v[0].is_contiguous() && ka != Operand::Other && kb != Operand::Other &&
                    !(ka == Operand::Scalar && kb == Operand::Scalar);
  if (!flat) {
    if (v[0].numel() > 0 && binary_rows<Fast>(vin, vout)) return Status::Ok;
    return ref::binary<Ref, kAllTypes>(in, out);
  }
  float* o = v[0].ptr<float>();
  const float* a = v[1].ptr<const float>();
  const float* b = v[2].ptr<const float>();
  const int64_t sa = ka == Operand::Dense ? 1 : 0, sb = kb == Operand::Dense ? 1 : 0;
  parallel_for(0, out[0].numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    binary_loop<Fast>(o + begin, a + begin * sa, sa, b + begin * sb, sb, end - begin);
  });
  return Status::Ok;
}

}  // namespace

// The helpers the formulas of ops.def's RT_UNARY lines may call, for the
// float32 vector loops: branch-free forms GCC vectorizes (exp, erf, expm1,
// log1p, tanh: vec_math.h's polynomials; the others as the reference kernels
// compute them).
namespace math {
using std::acos;
using std::acosh;
using std::asin;
using std::asinh;
using std::atan;
using std::atanh;
using std::cos;
using std::cosh;
using std::log;
using std::sin;
using std::sinh;
using std::sqrt;
using std::tan;
using ref::wrap_sub;
using ref::math::abs_value;
using ref::math::ceil_value;
using ref::math::floor_value;
using ref::math::round_even;
using ref::math::sign_value;
inline float exp(float x) { return fast_exp(x); }
inline float erf(float x) { return fast_erf(x); }
inline float expm1(float x) { return fast_expm1(x); }
inline float log1p(float x) { return fast_log1p(x); }
inline float tanh(float x) { return fast_tanh(x); }
inline bool is_nan(float x) { return x != x; }

#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, dtypes, inputs, formula, ...) \
  struct Name##F {                                         \
    float operator()(float x) const {                      \
      using T = float;                                     \
      return static_cast<T>(formula);                      \
    }                                                      \
  };
#define RT_UNARY_P(Name, name, dtypes, formula, ...)                     \
  struct Name##F {                                                       \
    float a = 0, b = 0;                                                  \
    float operator()(float x) const {                                    \
      using T = float;                                                   \
      return static_cast<T>(formula);                                    \
    }                                                                    \
  };
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP
}  // namespace math

namespace {

// Every value goes through the same 16-wide block of code, the last n mod 16
// too (through a zero-padded copy): the loop's scalar remainder rounded some
// formulas differently (AVX-512 clone: HardSigmoid's a * x + b fused in the
// vector body, not in the remainder), so a value's result depended on its
// position (a channels_last tensor's values against the contiguous one's).
template <typename Op>
__attribute__((always_inline)) inline void unary_body(float* __restrict out, const float* __restrict x, int64_t n,
                                                      const Op op) {
  constexpr int64_t kBlock = 16;
  const int64_t body = n / kBlock * kBlock;
  for (int64_t i = 0; i < body; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) out[i + j] = op(x[i + j]);
  }
  if (body == n) return;
  float t[kBlock] = {};
  for (int64_t j = 0; j < n - body; ++j) t[j] = x[body + j];
  for (int64_t j = 0; j < kBlock; ++j) t[j] = op(t[j]);
  for (int64_t j = 0; j < n - body; ++j) out[body + j] = t[j];
}

template <typename Op>
RT_SIMD_CLONES void unary_clones(float* __restrict out, const float* __restrict x, int64_t n, const Op op) {
  unary_body(out, x, n, op);
}

#if RT_X86_VARIANTS
template <typename Op>
RT_AVX2_FMA void unary_avx2_fma(float* __restrict out, const float* __restrict x, int64_t n, const Op op) {
  unary_body(out, x, n, op);
}
#endif

// out[i] = op(x[i]). GELU's erf and division (div_rn) on AVX2 without FMA ran
// scalar: BERT's GELUs (6 x 128 x 1536, Zen 3, one thread) 9.0-10.0 -> 0.8-0.9 ms.
template <typename Op>
void unary_loop(float* __restrict out, const float* __restrict x, int64_t n, const Op op = Op{}) {
#if RT_X86_VARIANTS
  if (avx2_fma_variant()) return unary_avx2_fma(out, x, n, op);
#endif
  unary_clones(out, x, n, op);
}

// Clamp with the absent bounds at -inf / +inf: branch-free, and NaN stays NaN
// (both comparisons are false), as the reference's ClampOp computes it.
struct ClampF {
  float lo, hi;
  float operator()(float x) const {
    const float y = x < lo ? lo : x;
    return y > hi ? hi : y;
  }
};

// Float32 input and output dense in the same dim order (dense_pair:
// contiguous, channels_last): the vector loop, split across threads; anything
// else: the reference loop with the reference functor.
template <typename Fast, typename Ref>
Status unary_f32(Span<const TensorView> in, Span<TensorView> out, const Fast fast = Fast{}, const Ref slow = Ref{}) {
  const float* x = nullptr;
  float* o = nullptr;
  if (!dense_pair(in[0], out[0], &x, &o)) return ref::unary<Ref, kFloatingTypes>(in, out, slow);
  parallel_for(0, out[0].numel(), kElementwiseGrain,
               [&](int64_t begin, int64_t end) { unary_loop<Fast>(o + begin, x + begin, end - begin, fast); });
  return Status::Ok;
}

}  // namespace

#define RT_BINARY_F32(fn, Fast, Ref)                                                          \
  Status fn(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams&) { \
    return binary_f32<Fast, ref::Ref>(in, out);                                               \
  }
RT_BINARY_F32(add_f32, AddF, AddOp)
RT_BINARY_F32(sub_f32, SubF, SubOp)
RT_BINARY_F32(mul_f32, MulF, MulOp)
RT_BINARY_F32(div_f32, DivF, DivOp)
RT_BINARY_F32(maximum_f32, MaxF, MaximumOp)
RT_BINARY_F32(minimum_f32, MinF, MinimumOp)
#undef RT_BINARY_F32

// One float32 kernel per RT_UNARY line of ops.def.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, ...)                                                                       \
  Status name##_f32(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams&) { \
    return unary_f32<math::Name##F, ref::Name##Op>(in, out);                                            \
  }
#define RT_UNARY_P(Name, name, ...)                                                                          \
  Status name##_f32(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) { \
    const auto* p = std::get_if<UnaryParams>(&params);                                                       \
    if (p == nullptr) return Status::InvalidArgument;                                                        \
    const math::Name##F op{static_cast<float>(p->a), static_cast<float>(p->b)};                              \
    return unary_f32<math::Name##F, ref::Name##Op>(in, out, op, ref::Name##Op{p->a, p->b});                  \
  }
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP

// Clamp (the ReLU6 fused into convolutions runs here): float32 dense in one
// dim order (dense_pair) as a vector loop split across threads; other layouts:
// the reference kernel.
Status clamp_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<ClampParams>(&params);
  const float* x = nullptr;
  float* o = nullptr;
  if (p == nullptr || !dense_pair(in[0], out[0], &x, &o)) return ref::clamp(ctx, in, out, params);
  const ClampF op{p->has_min ? p->min.to<float>() : -INFINITY, p->has_max ? p->max.to<float>() : INFINITY};
  parallel_for(0, out[0].numel(), kElementwiseGrain,
               [&](int64_t begin, int64_t end) { unary_loop<ClampF>(o + begin, x + begin, end - begin, op); });
  return Status::Ok;
}

// Exact GELU (Gelu, approximate "none"): contiguous float32 as a vector loop
// split across threads, operation for operation the graph torch exports below
// opset 20 (Div by sqrt 2, Erf, Add 1, Mul by x, Mul by 0.5: bitwise the
// unfused ops' result here; channels_last too: dense_pair); tanh or other
// layouts: the reference kernel.
// The division is div_rn's (a single-Gelu model of BERT's 128 x 1536, one
// thread, Xeon: 84 -> 69 us; the erf's own division stays): where x / sqrt 2
// is zero or subnormal (div_rn's sign or last place may differ), erf + 1
// rounds to 1 either way.
struct GeluF {
  float operator()(float x) const {
    return x * (math::erf(div_rn(x, 1.41421354f, 1.0f / 1.41421354f)) + 1.0f) * 0.5f;
  }
};

Status gelu_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<GeluParams>(&params);
  const float* x = nullptr;
  float* o = nullptr;
  if (p == nullptr || p->tanh_approximation || !dense_pair(in[0], out[0], &x, &o)) {
    return ref::gelu(ctx, in, out, params);
  }
  parallel_for(0, out[0].numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    if (!gelu_avx512(x + begin, o + begin, end - begin)) unary_loop<GeluF>(o + begin, x + begin, end - begin);
  });
  return Status::Ok;
}

namespace {

// Whether src (copied into a contiguous dst of the same shape) reads its last
// two dims transposed: stride 1 down the rows, a row stride across them.
bool transposed_last_two(const TensorView& src) {
  const int r = src.rank;
  return r >= 2 && src.sizes[r - 2] > 1 && src.sizes[r - 1] > 1 && src.strides[r - 2] == 1 && src.strides[r - 1] != 1;
}

// d[i * cols + j] = s[i + j * cs] over [i0, i1) x [j0, j1): 4-byte elements
// in 4 x 4 blocks through SSE registers on x86 (four loads, the shuffles of
// _MM_TRANSPOSE4_PS, four stores), the edges and other sizes one at a time.
template <typename T>
void transpose_tile(const T* s, int64_t cs, T* d, int64_t cols, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  int64_t i4 = i0, j4 = j0;
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 4) {
    i4 = i0 + (i1 - i0) / 4 * 4;
    j4 = j0 + (j1 - j0) / 4 * 4;
    for (int64_t i = i0; i < i4; i += 4) {
      for (int64_t j = j0; j < j4; j += 4) {
        __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(s + i + j * cs));
        __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(s + i + (j + 1) * cs));
        __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(s + i + (j + 2) * cs));
        __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(s + i + (j + 3) * cs));
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(reinterpret_cast<float*>(d + i * cols + j), r0);
        _mm_storeu_ps(reinterpret_cast<float*>(d + (i + 1) * cols + j), r1);
        _mm_storeu_ps(reinterpret_cast<float*>(d + (i + 2) * cols + j), r2);
        _mm_storeu_ps(reinterpret_cast<float*>(d + (i + 3) * cols + j), r3);
      }
    }
    if (cols == 3) {  // NCHW RGB to channels_last: rows i..i+2 stored 4 wide (the 4th lane is the next row's
                      // first column, stored after it), row i+3 as three values
      for (int64_t i = i0; i < i4; i += 4) {
        __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(s + i));
        __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(s + i + cs));
        __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(s + i + 2 * cs));
        __m128 r3 = _mm_setzero_ps();
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(reinterpret_cast<float*>(d + i * 3), r0);
        _mm_storeu_ps(reinterpret_cast<float*>(d + (i + 1) * 3), r1);
        _mm_storeu_ps(reinterpret_cast<float*>(d + (i + 2) * 3), r2);
        float last[4];
        _mm_storeu_ps(last, r3);
        std::memcpy(d + (i + 3) * 3, last, 3 * sizeof(T));
      }
      j4 = j1;
    }
  }
#endif
  for (int64_t i = i0; i < i4; ++i) {
    for (int64_t j = j4; j < j1; ++j) d[i * cols + j] = s[i + j * cs];
  }
  for (int64_t i = i4; i < i1; ++i) {
    for (int64_t j = j0; j < j1; ++j) d[i * cols + j] = s[i + j * cs];
  }
}

// dst (contiguous) = src whose last two dims are transposed in memory (a
// .t().contiguous(), a transposed gradient accumulated into .grad, NCHW to
// channels_last per image): 32x32 tiles, so that each tile's source lines stay
// in L1 while its rows are written whole; the reference loop reads one cache
// line per element. Threads split the (leading index, block of row tiles) pairs.
// A task takes whole tiles of rows, at least about 4096 elements of them
// (NCHW [3, 224, 224] to channels_last is 50,176 rows of 3).
template <typename T>
void transpose_copy(const TensorView& src, const TensorView& dst) {
  constexpr int64_t kTile = 32;
  const int r = src.rank;
  const int64_t rows = src.sizes[r - 2], cols = src.sizes[r - 1], cs = src.strides[r - 1];
  const int64_t block = kTile * std::max<int64_t>(1, 4096 / (kTile * cols));
  const int64_t outer = dst.numel() / (rows * cols), row_blocks = (rows + block - 1) / block;
  const T* s0 = src.ptr<const T>();
  T* d0 = dst.ptr<T>();
  parallel_for(0, outer * row_blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t w = begin; w < end; ++w) {
      int64_t o = w / row_blocks, offset = 0;
      const int64_t b0 = w % row_blocks * block, b1 = std::min(rows, b0 + block);
      for (int d = r - 3; d >= 0; --d) {  // the leading index's source offset
        offset += o % src.sizes[d] * src.strides[d];
        o /= src.sizes[d];
      }
      const T* s = s0 + offset;
      T* d = d0 + w / row_blocks * rows * cols;
      for (int64_t i0 = b0; i0 < b1; i0 += kTile) {
        for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
          transpose_tile(s, cs, d, cols, i0, std::min(b1, i0 + kTile), j0, std::min(cols, j0 + kTile));
        }
      }
    }
  });
}

// x copied into y (same shape and dtype), both with a stride-1 last dim of
// at least 8 elements (a permute that keeps the last dim: attention's heads
// merged back, [B, H, S, D] -> [B, S, H, D]): one memcpy per row, the rows
// split across the threads. The reference loop copied an element at a time
// (BERT's context at batch 1: 23 us for 196 KB). False, copying nothing,
// for other layouts and for views whose bytes may overlap.
bool copy_rows(const TensorView& x, const TensorView& y, size_t es) {
  const int r = x.rank;
  if (r < 2 || y.rank != r || x.strides[r - 1] != 1 || y.strides[r - 1] != 1 || x.sizes[r - 1] < 8) return false;
  int64_t x_span = 0, y_span = 0;  // the last element's offset
  for (int d = 0; d < r; ++d) {
    if (x.sizes[d] != y.sizes[d] || x.strides[d] < 0 || y.strides[d] < 0) return false;
    x_span += (x.sizes[d] - 1) * x.strides[d];
    y_span += (y.sizes[d] - 1) * y.strides[d];
  }
  const char* xb = static_cast<const char*>(x.data);
  const char* yb = static_cast<const char*>(y.data);
  if (xb <= yb + y_span * static_cast<int64_t>(es) && yb <= xb + x_span * static_cast<int64_t>(es)) return false;
  const int64_t n = x.sizes[r - 1], rows = x.numel() / n;
  parallel_for(0, rows, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t begin, int64_t end) {
    int64_t idx[kMaxRank] = {};  // the row's index; idx[r - 1] stays 0
    for (int64_t d = r - 2, rest = begin; d >= 0; --d) {
      idx[d] = rest % x.sizes[d];
      rest /= x.sizes[d];
    }
    for (int64_t row = begin; row < end; ++row, ref::next_index(idx, x.sizes, r - 1)) {
      std::memcpy(static_cast<char*>(y.data) + ref::offset_of(y, idx) * static_cast<int64_t>(es),
                  xb + ref::offset_of(x, idx) * static_cast<int64_t>(es), static_cast<size_t>(n) * es);
    }
  });
  return true;
}

}  // namespace

// Copy, with the dims in the output's memory order (order_by_output): same-dtype
// copies dense in one order (contiguous, channels_last clones) are a parallel
// memcpy; transposed ones tiled (transpose_copy: a .t().contiguous(), NCHW to
// channels_last and back, per image [C, H*W] <-> [H*W, C]); conversions and
// other layouts the reference loop.
Status copy(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const size_t es = element_size(in[0].dtype);
  TensorView v[2] = {out[0], in[0]};
  const bool dense = in[0].dtype == out[0].dtype && order_by_output(v, 2) && v[0].is_contiguous();
  if (dense && transposed_last_two(v[1]) && in[0].data != out[0].data) {
    switch (es) {
      case 1: transpose_copy<uint8_t>(v[1], v[0]); return Status::Ok;
      case 2: transpose_copy<uint16_t>(v[1], v[0]); return Status::Ok;
      case 4: transpose_copy<uint32_t>(v[1], v[0]); return Status::Ok;
      case 8: transpose_copy<uint64_t>(v[1], v[0]); return Status::Ok;
      default: break;
    }
  }
  if (!dense || !v[1].is_contiguous()) {
    if (in[0].dtype == out[0].dtype && copy_rows(in[0], out[0], es)) return Status::Ok;
    return ref::copy(ctx, in, out, params);
  }
  const char* src = static_cast<const char*>(in[0].data);
  char* dst = static_cast<char*>(out[0].data);
  if (src == dst) return Status::Ok;
  parallel_for(0, in[0].numel(), kElementwiseGrain * 4, [&](int64_t begin, int64_t end) {
    std::memcpy(dst + begin * es, src + begin * es, static_cast<size_t>(end - begin) * es);
  });
  return Status::Ok;
}

}  // namespace ember::cpu
