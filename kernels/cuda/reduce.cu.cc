// Reductions on CUDA: Sum, Mean, Prod, Var, Norm, Max/Min (values and int64
// indices), ArgMax/ArgMin, with kernels/ref/reduce.cc's semantics. Each output
// element reduces one row (the reduced dims, any strides) with a group of
// lanes (reduce_rows.h). Floating values accumulate in float (double for
// double), as PyTorch's CUDA reductions; integers in wrapping 64 bits. Var is
// two-pass (mean, then squared deviations); max/min keep the first extreme
// and the first NaN, as the reference.
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
  RT_CHECK_OR_RETURN(!out.empty() && out.size() <= 2, Status::InvalidArgument);
  for (const TensorView& o : out) {
    RT_CHECK_OR_RETURN(o.rank == in.rank, Status::ShapeMismatch);
    for (int d = 0; d < in.rank; ++d)
      RT_CHECK_OR_RETURN(o.sizes[d] == (((dims >> d) & 1u) ? 1 : in.sizes[d]), Status::ShapeMismatch);
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

template <typename T, typename A, typename R>
__global__ void accumulate_kernel(const T* x, T* y, ReduceGeom g, RowLayout l, R red) {
  __shared__ A smem[kRowThreads];
  const int lane = l.lane();
  const int64_t per_block = l.rows_per_block();
  for (int64_t base = blockIdx.x * per_block; base < g.outer.numel; base += gridDim.x * per_block) {
    const int64_t row = base + l.group();
    A acc = red.identity();
    if (row < g.outer.numel) {
      const T* xr = x + g.outer.offset(0, row);
      for (int64_t j = lane; j < g.inner.numel; j += l.G) acc = red(acc, red.load(to_acc<A>(xr[g.inner.offset(0, j)])));
    }
    acc = group_reduce(acc, red, l, smem);
    if (row < g.outer.numel && lane == 0) y[g.outer.offset(1, row)] = from_acc<T>(red.finish(acc, g.inner.numel));
  }
}

// Two passes over each row: the mean, then the sum of squared deviations.
template <typename T, typename A>
__global__ void var_kernel(const T* x, T* y, ReduceGeom g, RowLayout l, int64_t correction) {
  __shared__ A smem[kRowThreads];
  const int lane = l.lane();
  const int64_t n = g.inner.numel;
  const int64_t per_block = l.rows_per_block();
  for (int64_t base = blockIdx.x * per_block; base < g.outer.numel; base += gridDim.x * per_block) {
    const int64_t row = base + l.group();
    const bool live = row < g.outer.numel;
    const T* xr = x + (live ? g.outer.offset(0, row) : 0);
    A sum = 0;
    if (live)
      for (int64_t j = lane; j < n; j += l.G) sum += convert<A>(xr[g.inner.offset(0, j)]);
    sum = group_reduce(sum, AddOp<A>{}, l, smem);
    const A mean = sum / static_cast<A>(n);
    A m2 = 0;
    if (live) {
      for (int64_t j = lane; j < n; j += l.G) {
        const A d = convert<A>(xr[g.inner.offset(0, j)]) - mean;
        m2 += d * d;
      }
    }
    m2 = group_reduce(m2, AddOp<A>{}, l, smem);
    const A divisor = n > correction ? static_cast<A>(n - correction) : A(0);
    if (live && lane == 0) y[g.outer.offset(1, row)] = convert<T>(m2 / divisor);
  }
}

// The key max/min compare on: float (double for double) or long long.
template <typename T>
using key_t = std::conditional_t<std::is_integral_v<T>, long long, compute_t<T>>;

template <typename K, bool kMax>
struct BestOp {
  __device__ Best<K> operator()(Best<K> a, Best<K> b) const {
    if (b.i == kNoIndex) return a;
    if (a.i == kNoIndex) return b;
    const bool an = ref::is_nan(a.v), bn = ref::is_nan(b.v);
    if (an || bn) return an && bn ? (a.i < b.i ? a : b) : (an ? a : b);
    if (a.v != b.v) return (kMax ? a.v > b.v : a.v < b.v) ? a : b;
    return a.i < b.i ? a : b;
  }
};

// values: null for argmax/argmin (then the indices are output 1 of the geometry).
template <typename T, bool kMax>
__global__ void extreme_kernel(const T* x, T* values, int64_t* indices, ReduceGeom g, RowLayout l) {
  using K = key_t<T>;
  __shared__ Best<K> smem[kRowThreads];
  const int lane = l.lane();
  const int64_t per_block = l.rows_per_block();
  for (int64_t base = blockIdx.x * per_block; base < g.outer.numel; base += gridDim.x * per_block) {
    const int64_t row = base + l.group();
    Best<K> best{K(0), kNoIndex};
    if (row < g.outer.numel) {
      const T* xr = x + g.outer.offset(0, row);
      for (int64_t j = lane; j < g.inner.numel; j += l.G) {
        const Best<K> e{static_cast<K>(static_cast<compute_t<T>>(xr[g.inner.offset(0, j)])), j};
        best = BestOp<K, kMax>{}(best, e);
        if (ref::is_nan(best.v)) break;  // this lane's first NaN: its later elements cannot win
      }
    }
    best = group_reduce(best, BestOp<K, kMax>{}, l, smem);
    if (row < g.outer.numel && lane == 0) {
      if (values != nullptr) values[g.outer.offset(1, row)] = convert<T>(best.v);
      indices[g.outer.offset(2, row)] = best.i;
    }
  }
}

// Sum, Mean, Prod, Norm: `Red<A>` built by `make(params, TypeTag<A>)`.
template <DTypeSet kTypes, template <typename> class Red, typename Make>
Status accumulate(Span<const TensorView> in, Span<TensorView> out, const OpParams& params, Make&& make,
                  const char* what) {
  const ReduceParams* p = reduce_params(params);
  RT_CHECK_OR_RETURN(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  RT_CHECK_OR_RETURN(in[0].dtype == out[0].dtype, Status::DTypeMismatch);
  ReduceGeom g;
  RT_RETURN_IF_ERROR(make_geom(in[0], out, p->dims, g));
  return with_dtype<kTypes & kCudaNumeric>(in[0].dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using A = sum_acc_t<T>;
    if (g.outer.numel == 0) return Status::Ok;
    RT_ASSIGN_OR_RETURN(Context * c, Context::get());
    const RowLayout l = layout_for(g);
    auto* k = &accumulate_kernel<T, A, Red<A>>;
    EMBER_LAUNCH(k, dim3(row_blocks(g.outer.numel, l)), dim3(kRowThreads), 0, c->stream(), in[0].ptr<const T>(),
                 out[0].ptr<T>(), g, l, make(*p, TypeTag<A>{}));
    return Context::check(cudaGetLastError(), what);
  });
}

template <bool kMax>
Status extreme(Span<const TensorView> in, Span<TensorView> out, const OpParams& params, bool want_values) {
  const ReduceParams* p = reduce_params(params);
  RT_CHECK_OR_RETURN(p != nullptr && in.size() == 1 && out.size() == (want_values ? 2u : 1u),
                     Status::InvalidArgument);
  const TensorView& indices = out[want_values ? 1 : 0];
  RT_CHECK_OR_RETURN(indices.dtype == DType::Int64, Status::DTypeMismatch);
  RT_CHECK_OR_RETURN(!want_values || out[0].dtype == in[0].dtype, Status::DTypeMismatch);
  ReduceGeom g;
  RT_RETURN_IF_ERROR(make_geom(in[0], out, p->dims, g));
  RT_CHECK_OR_RETURN(g.inner.numel > 0 || g.outer.numel == 0, Status::InvalidArgument);
  constexpr DTypeSet kTypes = kCudaAll;
  return with_dtype<kTypes>(in[0].dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (g.outer.numel == 0) return Status::Ok;
    RT_ASSIGN_OR_RETURN(Context * c, Context::get());
    const RowLayout l = layout_for(g);
    auto* k = &extreme_kernel<T, kMax>;
    T* values = want_values ? out[0].ptr<T>() : nullptr;
    EMBER_LAUNCH(k, dim3(row_blocks(g.outer.numel, l)), dim3(kRowThreads), 0, c->stream(), in[0].ptr<const T>(),
                 values, indices.ptr<int64_t>(), g, l);
    return Context::check(cudaGetLastError(), kMax ? "max kernel" : "min kernel");
  });
}

}  // namespace

EMBER_CUDA_KERNEL(sum) {
  return accumulate<kNumericTypes, SumRed>(
      in, out, params, [](const ReduceParams&, auto tag) { return SumRed<typename decltype(tag)::type>{}; },
      "sum kernel");
}

EMBER_CUDA_KERNEL(mean) {
  return accumulate<kFloatingTypes, MeanRed>(
      in, out, params, [](const ReduceParams&, auto tag) { return MeanRed<typename decltype(tag)::type>{}; },
      "mean kernel");
}

EMBER_CUDA_KERNEL(prod) {
  return accumulate<kNumericTypes, ProdRed>(
      in, out, params, [](const ReduceParams&, auto tag) { return ProdRed<typename decltype(tag)::type>{}; },
      "prod kernel");
}

EMBER_CUDA_KERNEL(norm) {
  auto make = [](const ReduceParams& p, auto tag) {
    using A = typename decltype(tag)::type;
    NormKind kind = NormKind::Pow;
    if (std::isinf(p.p)) kind = p.p > 0 ? NormKind::Max : NormKind::Min;
    else if (p.p == 0.0) kind = NormKind::Count;
    else if (p.p == 1.0) kind = NormKind::Abs;
    else if (p.p == 2.0) kind = NormKind::Square;
    return NormRed<A>{kind, static_cast<A>(p.p)};
  };
  return accumulate<kFloatingTypes, NormRed>(in, out, params, make, "norm kernel");
}

EMBER_CUDA_KERNEL(var) {
  const ReduceParams* p = reduce_params(params);
  RT_CHECK_OR_RETURN(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  RT_CHECK_OR_RETURN(in[0].dtype == out[0].dtype, Status::DTypeMismatch);
  ReduceGeom g;
  RT_RETURN_IF_ERROR(make_geom(in[0], out, p->dims, g));
  return with_dtype<kCudaFloat>(in[0].dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (g.outer.numel == 0) return Status::Ok;
    RT_ASSIGN_OR_RETURN(Context * c, Context::get());
    const RowLayout l = layout_for(g);
    auto* k = &var_kernel<T, float_acc_t<T>>;
    EMBER_LAUNCH(k, dim3(row_blocks(g.outer.numel, l)), dim3(kRowThreads), 0, c->stream(), in[0].ptr<const T>(),
                 out[0].ptr<T>(), g, l, p->correction);
    return Context::check(cudaGetLastError(), "var kernel");
  });
}

EMBER_CUDA_KERNEL(max_reduce) { return extreme<true>(in, out, params, /*want_values=*/true); }
EMBER_CUDA_KERNEL(min_reduce) { return extreme<false>(in, out, params, /*want_values=*/true); }
EMBER_CUDA_KERNEL(argmax) { return extreme<true>(in, out, params, /*want_values=*/false); }
EMBER_CUDA_KERNEL(argmin) { return extreme<false>(in, out, params, /*want_values=*/false); }

}  // namespace ember::cuda
