// Reductions on CUDA: Sum, Mean, Prod, Var, Norm, Max/Min (values and int64
// indices), ArgMax/ArgMin, with kernels/ref/reduce.cc's semantics. Each output
// element reduces one row (the reduced dims, any strides) with a group of
// lanes (reduce_rows.h); a few long rows are split over many blocks, their
// partial states combined by a second kernel in a fixed order (the
// workspace holds them). Floating values accumulate in float (double for
// double), as PyTorch's CUDA reductions; integers in wrapping 64 bits. Var is
// Welford's per lane, combined with Chan's formula (PyTorch's WelfordOps);
// max/min keep the first extreme and the first NaN, as the reference.
#include "kernels/cuda/reduce_rows.h"

namespace ember::cuda {
namespace {

// The kept (outer) dims with the input's and up to two outputs' strides, and
// the reduced (inner) dims with the input's.
struct ReduceGeom {
  Dims<3> outer;
  Dims<1> inner;
};

const ReduceParams* reduce_params(const OpParams& params) { return std::get_if<ReduceParams>(&params); }

Status make_geom(const TensorView& in, Span<TensorView> out, uint32_t dims, ReduceGeom& g) {
  EMBER_CHECK(!out.empty() && out.size() <= 2, Status::InvalidArgument);
  for (const TensorView& o : out) {
    EMBER_CHECK(o.rank == in.rank, Status::ShapeMismatch);
    for (int d = 0; d < in.rank; ++d)
      EMBER_CHECK(o.sizes[d] == (((dims >> d) & 1u) ? 1 : in.sizes[d]), Status::ShapeMismatch);
  }
  const TensorView* v3[3] = {&in, &out[0], &out[out.size() - 1]};
  g.outer = make_dims<3>(v3, [&](int d) { return ((dims >> d) & 1u) == 0; });
  const TensorView* v1[1] = {&in};
  g.inner = make_dims<1>(v1, [&](int d) { return ((dims >> d) & 1u) != 0; });
  return Status::Ok;
}

// Rows are adjacent in memory when the innermost kept dim is the input's
// contiguous one and the innermost reduced dim is not.
RowLayout layout_for(const ReduceGeom& g) {
  const bool rows_contiguous = g.outer.rank > 0 && g.outer.strides[0][g.outer.rank - 1] == 1 &&
                               g.inner.rank > 0 && g.inner.strides[0][g.inner.rank - 1] != 1;
  return choose_layout(g.outer.numel, g.inner.numel, rows_contiguous);
}

// The accumulator of T for Sum/Prod: wrapping uint64 for integers.
template <typename T>
using sum_acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t, float_acc_t<T>>;

template <typename A, typename T>
__device__ A to_acc(T v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<A>(static_cast<int64_t>(v));
  } else {
    return convert<A>(v);
  }
}

template <typename T, typename A>
__device__ T from_acc(A a) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<int64_t>(a));
  } else {
    return convert<T>(a);
  }
}

// An accumulation: element -> A (load), combine (operator()), A -> output (finish).
template <typename A>
struct SumRed {
  __device__ A identity() const { return A(0); }
  __device__ A load(A v) const { return v; }
  __device__ A operator()(A a, A b) const { return a + b; }
  __device__ A finish(A a, int64_t) const { return a; }
};

template <typename A>
struct MeanRed : SumRed<A> {
  __device__ A finish(A a, int64_t n) const { return a / static_cast<A>(n); }
};

template <typename A>
struct ProdRed {
  __device__ A identity() const { return A(1); }
  __device__ A load(A v) const { return v; }
  __device__ A operator()(A a, A b) const { return a * b; }
  __device__ A finish(A a, int64_t) const { return a; }
};

enum class NormKind : int { Max, Min, Count, Abs, Square, Pow };

template <typename A>
struct NormRed {
  NormKind kind;
  A p;
  __device__ A identity() const { return kind == NormKind::Min ? A(INFINITY) : A(0); }
  __device__ A load(A v) const {
    switch (kind) {
      case NormKind::Count: return v != A(0) ? A(1) : A(0);
      case NormKind::Square: return v * v;
      case NormKind::Pow: return std::pow(std::fabs(v), p);
      default: return std::fabs(v);
    }
  }
  __device__ A operator()(A a, A b) const {
    if (kind == NormKind::Max) return PickNanOp<A, true>{}(a, b);
    if (kind == NormKind::Min) return PickNanOp<A, false>{}(a, b);
    return a + b;
  }
  __device__ A finish(A a, int64_t n) const {
    if (n == 0) return A(0);
    if (kind == NormKind::Square) return std::sqrt(a);
    if (kind == NormKind::Pow) return std::pow(a, A(1) / p);
    return a;
  }
};

// The reducers the kernels run: State (per lane, shuffled, combined),
// identity(), load(element, index), operator() (commutative), and
// write(state, n, values, indices) for a row's outputs.

// Sum, Mean, Prod, Norm over the accumulator A.
template <typename T, typename A, typename Red>
struct Accumulate {
  using State = A;
  Red red;
  __device__ State identity() const { return red.identity(); }
  __device__ State load(T v, int64_t) const { return red.load(to_acc<A>(v)); }
  __device__ State operator()(State a, State b) const { return red(a, b); }
  __device__ void write(State s, int64_t n, T* values, int64_t*) const { *values = from_acc<T>(red.finish(s, n)); }
};

// Var: Welford per lane, Chan's formula to combine (PyTorch's WelfordOps).
template <typename A>
struct Welford {
  int64_t n;
  A mean, m2;
};

template <typename A>
__device__ inline Welford<A> shfl_xor(Welford<A> w, int m) {
  return Welford<A>{shfl_xor_i64(w.n, m), cuda::shfl_xor(w.mean, m), cuda::shfl_xor(w.m2, m)};
}

template <typename T>
struct VarRed {
  using A = float_acc_t<T>;
  using State = Welford<A>;
  int64_t correction;
  __device__ State identity() const { return State{0, A(0), A(0)}; }
  __device__ State load(T v, int64_t) const { return State{1, convert<A>(v), A(0)}; }
  __device__ State operator()(State a, State b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    const int64_t n = a.n + b.n;
    const A delta = b.mean - a.mean, fb = static_cast<A>(b.n) / static_cast<A>(n);
    return State{n, a.mean + delta * fb, a.m2 + b.m2 + delta * delta * static_cast<A>(a.n) * fb};
  }
  __device__ void write(State s, int64_t n, T* values, int64_t*) const {
    const A divisor = n > correction ? static_cast<A>(n - correction) : A(0);
    // A NaN or an infinity in the row: NaN, as the reference's two passes give (inf - inf).
    const bool finite = s.mean - s.mean == A(0);
    *values = convert<T>(finite ? s.m2 / divisor : static_cast<A>(NAN));
  }
};

// The key max/min compare on: float (double for double) or long long.
template <typename T>
using key_t = std::conditional_t<std::is_integral_v<T>, long long, compute_t<T>>;

// Max/Min, ArgMax/ArgMin: the first extreme; the first NaN wins.
template <typename T, bool kMax>
struct Extreme {
  using K = key_t<T>;
  using State = Best<K>;
  __device__ State identity() const { return State{K(0), kNoIndex}; }
  __device__ State load(T v, int64_t j) const { return State{static_cast<K>(static_cast<compute_t<T>>(v)), j}; }
  __device__ State operator()(State a, State b) const {
    if (b.i == kNoIndex) return a;
    if (a.i == kNoIndex) return b;
    const bool an = ref::is_nan(a.v), bn = ref::is_nan(b.v);
    if (an || bn) return an && bn ? (a.i < b.i ? a : b) : (an ? a : b);
    if (a.v != b.v) return (kMax ? a.v > b.v : a.v < b.v) ? a : b;
    return a.i < b.i ? a : b;
  }
  __device__ void write(State s, int64_t, T* values, int64_t* indices) const {
    if (values != nullptr) *values = convert<T>(s.v);
    *indices = s.i;
  }
};

// Rows too long for one block (few rows, many elements) are split in
// `splits` slices of `chunk` elements, one block each; the slices' states go
// to the workspace and reduce_finish_kernel combines them in slice order.
struct Split {
  int64_t splits, chunk;
};
constexpr int64_t kSplitMinInner = 16384, kSplitMaxRows = 32, kSplitChunk = 4096;
constexpr size_t kSplitStateBytes = 32;  // sizeof any reducer's State, at most

Split split_for(const ReduceGeom& g) {
  const int64_t n = g.inner.numel;
  if (n < kSplitMinInner || g.outer.numel > kSplitMaxRows) return Split{1, n};
  const int64_t splits = std::min<int64_t>((n + kSplitChunk - 1) / kSplitChunk, 1024);
  return Split{splits, (n + splits - 1) / splits};
}

// Items are (row, slice) pairs; `partial` null: no split, the outputs are written.
template <typename T, typename R>
__global__ void reduce_kernel(const T* x, T* values, int64_t* indices, ReduceGeom g, RowLayout l, R red, Split sp,
                              typename R::State* partial) {
  using S = typename R::State;
  __shared__ S smem[kRowThreads];
  const int lane = l.lane();
  const int64_t per_block = l.rows_per_block(), items = g.outer.numel * sp.splits;
  for (int64_t base = blockIdx.x * per_block; base < items; base += gridDim.x * per_block) {
    const int64_t item = base + l.group();
    const int64_t row = item / sp.splits, lo = (item % sp.splits) * sp.chunk;
    const int64_t hi = lo + sp.chunk < g.inner.numel ? lo + sp.chunk : g.inner.numel;
    S s = red.identity();
    if (item < items) {
      const T* xr = x + g.outer.offset(0, row);
      for (int64_t j = lo + lane; j < hi; j += l.G) s = red(s, red.load(xr[g.inner.offset(0, j)], j));
    }
    s = group_reduce(s, red, l, smem);
    if (item >= items || lane != 0) continue;
    if (partial != nullptr) {
      partial[item] = s;
    } else {
      red.write(s, g.inner.numel, values == nullptr ? nullptr : values + g.outer.offset(1, row),
                indices == nullptr ? nullptr : indices + g.outer.offset(2, row));
    }
  }
}

// A thread per row: the row's slices in order.
template <typename T, typename R>
__global__ void reduce_finish_kernel(T* values, int64_t* indices, ReduceGeom g, R red, Split sp,
                                     const typename R::State* partial) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= g.outer.numel) return;
  typename R::State s = red.identity();
  for (int64_t k = 0; k < sp.splits; ++k) s = red(s, partial[row * sp.splits + k]);
  red.write(s, g.inner.numel, values == nullptr ? nullptr : values + g.outer.offset(1, row),
            indices == nullptr ? nullptr : indices + g.outer.offset(2, row));
}

// Launches the reduction of `g` with reducer `red` (one pass, or split in two).
template <typename T, typename R>
Status run_reduce(const KernelContext& ctx, const ReduceGeom& g, const T* x, T* values, int64_t* indices, R red,
                  const char* what) {
  static_assert(sizeof(typename R::State) <= kSplitStateBytes, "a reducer state over kSplitStateBytes");
  if (g.outer.numel == 0) return Status::Ok;
  EMBER_ASSIGN_OR_RETURN(Context * c, Context::get());
  const Split sp = split_for(g);
  auto* k = &reduce_kernel<T, R>;
  if (sp.splits == 1) {
    const RowLayout l = layout_for(g);
    EMBER_LAUNCH(k, dim3(row_blocks(g.outer.numel, l)), dim3(kRowThreads), 0, c->stream(), x, values, indices, g, l,
                 red, sp, static_cast<typename R::State*>(nullptr));
    return Context::check(cudaGetLastError(), what);
  }
  const size_t bytes = static_cast<size_t>(g.outer.numel * sp.splits) * sizeof(typename R::State);
  EMBER_CHECK(ctx.scratch != nullptr && ctx.scratch_bytes >= bytes, Status::InvalidArgument);
  auto* partial = static_cast<typename R::State*>(ctx.scratch);
  const RowLayout l{kRowThreads, 1};
  EMBER_LAUNCH(k, dim3(row_blocks(g.outer.numel * sp.splits, l)), dim3(kRowThreads), 0, c->stream(), x, values,
               indices, g, l, red, sp, partial);
  EMBER_TRY(Context::check(cudaGetLastError(), what));
  auto* finish = &reduce_finish_kernel<T, R>;
  EMBER_LAUNCH(finish, dim3(1), dim3(kRowThreads), 0, c->stream(), values, indices, g, red, sp,
               static_cast<const typename R::State*>(partial));
  return Context::check(cudaGetLastError(), what);
}

// Sum, Mean, Prod, Norm: `Red<A>` built by `make(params, TypeTag<A>)`.
template <DTypeSet kTypes, template <typename> class Red, typename Make>
Status accumulate(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params,
                  Make&& make, const char* what) {
  const ReduceParams* p = reduce_params(params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  EMBER_CHECK(in[0].dtype == out[0].dtype, Status::DTypeMismatch);
  ReduceGeom g;
  EMBER_TRY(make_geom(in[0], out, p->dims, g));
  return on_dtype<kTypes & kCudaNumeric>(in[0].dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using A = sum_acc_t<T>;
    const Accumulate<T, A, Red<A>> red{make(*p, TypeTag<A>{})};
    return run_reduce<T>(ctx, g, in[0].ptr<const T>(), out[0].ptr<T>(), nullptr, red, what);
  });
}

template <bool kMax>
Status extreme(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params,
               bool want_values) {
  const ReduceParams* p = reduce_params(params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == (want_values ? 2u : 1u),
                     Status::InvalidArgument);
  const TensorView& indices = out[want_values ? 1 : 0];
  EMBER_CHECK(indices.dtype == DType::Int64, Status::DTypeMismatch);
  EMBER_CHECK(!want_values || out[0].dtype == in[0].dtype, Status::DTypeMismatch);
  ReduceGeom g;
  EMBER_TRY(make_geom(in[0], out, p->dims, g));
  EMBER_CHECK(g.inner.numel > 0 || g.outer.numel == 0, Status::InvalidArgument);
  return on_dtype<kCudaAll>(in[0].dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T* values = want_values ? out[0].ptr<T>() : nullptr;
    return run_reduce<T>(ctx, g, in[0].ptr<const T>(), values, indices.ptr<int64_t>(), Extreme<T, kMax>{},
                         kMax ? "max kernel" : "min kernel");
  });
}

// The kernel table's signature, with the context (the workspace) named.
#define EMBER_CUDA_REDUCE(name)                                                               \
  Status name(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, \
              const OpParams& params)

}  // namespace

// The workspace of every reduction: the slices' states when rows are split.
size_t reduce_workspace(Span<const TensorView> in, Span<const TensorView> out, const OpParams& params) {
  const ReduceParams* p = reduce_params(params);
  if (p == nullptr || in.size() != 1 || out.empty() || out.size() > 2) return 0;
  TensorView views[2] = {out[0], out[out.size() - 1]};
  ReduceGeom g;
  if (make_geom(in[0], Span<TensorView>(views, out.size()), p->dims, g) != Status::Ok) return 0;
  const Split sp = split_for(g);
  return sp.splits == 1 ? 0 : static_cast<size_t>(g.outer.numel * sp.splits) * kSplitStateBytes;
}

EMBER_CUDA_REDUCE(sum) {
  return accumulate<kNumericTypes, SumRed>(
      ctx, in, out, params, [](const ReduceParams&, auto tag) { return SumRed<typename decltype(tag)::type>{}; },
      "sum kernel");
}

EMBER_CUDA_REDUCE(mean) {
  return accumulate<kFloatingTypes, MeanRed>(
      ctx, in, out, params, [](const ReduceParams&, auto tag) { return MeanRed<typename decltype(tag)::type>{}; },
      "mean kernel");
}

EMBER_CUDA_REDUCE(prod) {
  return accumulate<kNumericTypes, ProdRed>(
      ctx, in, out, params, [](const ReduceParams&, auto tag) { return ProdRed<typename decltype(tag)::type>{}; },
      "prod kernel");
}

EMBER_CUDA_REDUCE(norm) {
  auto make = [](const ReduceParams& p, auto tag) {
    using A = typename decltype(tag)::type;
    NormKind kind = NormKind::Pow;
    if (std::isinf(p.p)) kind = p.p > 0 ? NormKind::Max : NormKind::Min;
    else if (p.p == 0.0) kind = NormKind::Count;
    else if (p.p == 1.0) kind = NormKind::Abs;
    else if (p.p == 2.0) kind = NormKind::Square;
    return NormRed<A>{kind, static_cast<A>(p.p)};
  };
  return accumulate<kFloatingTypes, NormRed>(ctx, in, out, params, make, "norm kernel");
}

EMBER_CUDA_REDUCE(var) {
  const ReduceParams* p = reduce_params(params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  EMBER_CHECK(in[0].dtype == out[0].dtype, Status::DTypeMismatch);
  ReduceGeom g;
  EMBER_TRY(make_geom(in[0], out, p->dims, g));
  return on_dtype<kCudaFloat>(in[0].dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    return run_reduce<T>(ctx, g, in[0].ptr<const T>(), out[0].ptr<T>(), nullptr, VarRed<T>{p->correction},
                         "var kernel");
  });
}

EMBER_CUDA_REDUCE(max_reduce) { return extreme<true>(ctx, in, out, params, /*want_values=*/true); }
EMBER_CUDA_REDUCE(min_reduce) { return extreme<false>(ctx, in, out, params, /*want_values=*/true); }
EMBER_CUDA_REDUCE(argmax) { return extreme<true>(ctx, in, out, params, /*want_values=*/false); }
EMBER_CUDA_REDUCE(argmin) { return extreme<false>(ctx, in, out, params, /*want_values=*/false); }

}  // namespace ember::cuda
