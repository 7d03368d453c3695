// Reductions: Sum, Mean, Prod, Var, Norm, Max/Min (values and int64 indices),
// ArgMax/ArgMin. The input is any strided view; every output has the input's
// rank with size 1 on the reduced dims (ReduceParams::dims). Floating values
// accumulate in double, integers in int64 (wrapping, as PyTorch's do).
// An index is the row-major position inside the reduced dims (the index along
// the dim for one dim, the flat index when all dims are reduced).
#include <cmath>
#include <limits>

#include "kernels/ref/ref_kernels.h"
#include "runtime/tensor/convert.h"

namespace ember::ref {
namespace {

// The input split into kept (outer) and reduced (inner) dims, each in order.
struct ReduceGeometry {
  int outer_rank = 0, inner_rank = 0;
  int64_t outer_sizes[kMaxRank] = {}, outer_in[kMaxRank] = {};
  int64_t outer_out[2][kMaxRank] = {};  // element strides of up to two outputs
  int64_t inner_sizes[kMaxRank] = {}, inner_in[kMaxRank] = {};
  int64_t outer_numel = 1, inner_numel = 1;
};

bool make_geometry(const TensorView& in, Span<TensorView> out, uint32_t dims, ReduceGeometry& g) {
  if (out.size() > 2) return false;
  for (const TensorView& o : out) {
    if (o.rank != in.rank) return false;
    for (int d = 0; d < in.rank; ++d) {
      const bool reduced = (dims >> d) & 1u;
      if (o.sizes[d] != (reduced ? 1 : in.sizes[d])) return false;
    }
  }
  for (int d = 0; d < in.rank; ++d) {
    if ((dims >> d) & 1u) {
      g.inner_sizes[g.inner_rank] = in.sizes[d];
      g.inner_in[g.inner_rank++] = in.strides[d];
      g.inner_numel *= in.sizes[d];
    } else {
      g.outer_sizes[g.outer_rank] = in.sizes[d];
      g.outer_in[g.outer_rank] = in.strides[d];
      for (size_t k = 0; k < out.size(); ++k) g.outer_out[k][g.outer_rank] = out[k].strides[d];
      ++g.outer_rank;
      g.outer_numel *= in.sizes[d];
    }
  }
  return true;
}

// Calls fn(value, index) for each element of the reduced sub-space at `base`,
// in row-major order; fn returns false to stop early.
template <typename T, typename Fn>
void for_each_inner(const T* base, const ReduceGeometry& g, Fn&& fn) {
  if (g.inner_numel == 0) return;
  if (g.inner_rank == 0) {
    fn(base[0], int64_t{0});
    return;
  }
  const int last = g.inner_rank - 1;
  const int64_t n = g.inner_sizes[last], s = g.inner_in[last];
  int64_t index[kMaxRank] = {};
  int64_t offset = 0, flat = 0;
  for (;;) {
    for (int64_t i = 0; i < n; ++i, ++flat) {
      if (!fn(base[offset + i * s], flat)) return;
    }
    int d = last - 1;
    for (; d >= 0; --d) {
      if (++index[d] < g.inner_sizes[d]) {
        offset += g.inner_in[d];
        break;
      }
      offset -= g.inner_in[d] * (g.inner_sizes[d] - 1);
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// Calls row(in_offset, out_offsets) for every position of the kept dims.
template <typename Fn>
void for_each_outer(const ReduceGeometry& g, Fn&& row) {
  if (g.outer_numel == 0) return;
  int64_t index[kMaxRank] = {};
  int64_t in_off = 0, out_off[2] = {0, 0};
  for (;;) {
    row(in_off, out_off);
    int d = g.outer_rank - 1;
    for (; d >= 0; --d) {
      if (++index[d] < g.outer_sizes[d]) {
        in_off += g.outer_in[d];
        for (int k = 0; k < 2; ++k) out_off[k] += g.outer_out[k][d];
        break;
      }
      in_off -= g.outer_in[d] * (g.outer_sizes[d] - 1);
      for (int k = 0; k < 2; ++k) out_off[k] -= g.outer_out[k][d] * (g.outer_sizes[d] - 1);
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

const ReduceParams* reduce_params(const OpParams& params) { return std::get_if<ReduceParams>(&params); }

template <typename T>
using acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, double>;

// A reduction whose output has the input's dtype: out = finish(fold(values), n).
template <typename Body>
Status reduce_same_dtype(Span<const TensorView> in, Span<TensorView> out, const OpParams& params,
                         DTypeSet types, Body&& body) {
  const ReduceParams* p = reduce_params(params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  EMBER_CHECK(in[0].dtype == out[0].dtype && (types & dtype_bit(in[0].dtype)), Status::DTypeMismatch);
  ReduceGeometry g;
  EMBER_CHECK(make_geometry(in[0], out, p->dims, g), Status::ShapeMismatch);
  dispatch_dtype(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* x = in[0].ptr<const T>();
      T* y = out[0].ptr<T>();
      for_each_outer(g, [&](int64_t in_off, const int64_t* out_off) {
        y[out_off[0]] = body(x + in_off, g, *p, tag);
      });
    }
  });
  return Status::Ok;
}

struct SumBody {
  template <typename T>
  T operator()(const T* x, const ReduceGeometry& g, const ReduceParams&, TypeTag<T>) const {
    acc_t<T> acc = 0;
    if constexpr (std::is_integral_v<T>) {
      uint64_t u = 0;  // wraps without undefined behaviour
      for_each_inner(x, g, [&](T v, int64_t) { u += static_cast<uint64_t>(static_cast<int64_t>(v)); return true; });
      acc = static_cast<int64_t>(u);
    } else {
      for_each_inner(x, g, [&](T v, int64_t) { acc += convert<double>(v); return true; });
    }
    return convert<T>(acc);
  }
};

struct MeanBody {
  template <typename T>
  T operator()(const T* x, const ReduceGeometry& g, const ReduceParams&, TypeTag<T>) const {
    double acc = 0;
    for_each_inner(x, g, [&](T v, int64_t) { acc += convert<double>(v); return true; });
    return convert<T>(acc / static_cast<double>(g.inner_numel));
  }
};

struct ProdBody {
  template <typename T>
  T operator()(const T* x, const ReduceGeometry& g, const ReduceParams&, TypeTag<T>) const {
    if constexpr (std::is_integral_v<T>) {
      uint64_t u = 1;
      for_each_inner(x, g, [&](T v, int64_t) { u *= static_cast<uint64_t>(static_cast<int64_t>(v)); return true; });
      return static_cast<T>(static_cast<int64_t>(u));
    } else {
      double acc = 1;
      for_each_inner(x, g, [&](T v, int64_t) { acc *= convert<double>(v); return true; });
      return convert<T>(acc);
    }
  }
};

// Two passes: the mean, then the sum of squared deviations.
struct VarBody {
  template <typename T>
  T operator()(const T* x, const ReduceGeometry& g, const ReduceParams& p, TypeTag<T>) const {
    const int64_t n = g.inner_numel;
    double sum = 0;
    for_each_inner(x, g, [&](T v, int64_t) { sum += convert<double>(v); return true; });
    const double mean = sum / static_cast<double>(n);
    double m2 = 0;
    for_each_inner(x, g, [&](T v, int64_t) {
      const double d = convert<double>(v) - mean;
      m2 += d * d;
      return true;
    });
    const double divisor = n > p.correction ? static_cast<double>(n - p.correction) : 0.0;
    return convert<T>(m2 / divisor);
  }
};

struct NormBody {
  template <typename T>
  T operator()(const T* x, const ReduceGeometry& g, const ReduceParams& rp, TypeTag<T>) const {
    const double p = rp.p;
    double acc = 0;
    if (g.inner_numel == 0) return convert<T>(0.0);
    if (std::isinf(p)) {
      const bool is_max = p > 0;
      acc = is_max ? 0.0 : std::numeric_limits<double>::infinity();
      for_each_inner(x, g, [&](T v, int64_t) {
        const double a = std::fabs(convert<double>(v));
        if (std::isnan(a)) {
          acc = a;
          return false;
        }
        acc = is_max ? (a > acc ? a : acc) : (a < acc ? a : acc);
        return true;
      });
      return convert<T>(acc);
    }
    if (p == 0.0) {
      for_each_inner(x, g, [&](T v, int64_t) { acc += convert<double>(v) != 0.0 ? 1.0 : 0.0; return true; });
      return convert<T>(acc);
    }
    if (p == 1.0) {
      for_each_inner(x, g, [&](T v, int64_t) { acc += std::fabs(convert<double>(v)); return true; });
      return convert<T>(acc);
    }
    if (p == 2.0) {
      for_each_inner(x, g, [&](T v, int64_t) {
        const double a = convert<double>(v);
        acc += a * a;
        return true;
      });
      return convert<T>(std::sqrt(acc));
    }
    for_each_inner(x, g, [&](T v, int64_t) { acc += std::pow(std::fabs(convert<double>(v)), p); return true; });
    return convert<T>(std::pow(acc, 1.0 / p));
  }
};

// The first extreme value and its index; a NaN wins (its first occurrence).
template <bool kMax, typename T>
void find_extreme(const T* x, const ReduceGeometry& g, T& best, int64_t& best_index) {
  using C = compute_t<T>;
  bool have = false;
  C best_c{};
  best_index = 0;
  for_each_inner(x, g, [&](T v, int64_t i) {
    const C c = static_cast<C>(v);
    if constexpr (std::is_floating_point_v<C>) {
      if (c != c) {
        best = v;
        best_index = i;
        return false;
      }
    }
    if (!have || (kMax ? c > best_c : c < best_c)) {
      have = true;
      best_c = c;
      best = v;
      best_index = i;
    }
    return true;
  });
}

template <bool kMax>
Status extreme(Span<const TensorView> in, Span<TensorView> out, const OpParams& params, bool want_values) {
  const ReduceParams* p = reduce_params(params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == (want_values ? 2u : 1u),
                     Status::InvalidArgument);
  const TensorView& indices = out[want_values ? 1 : 0];
  EMBER_CHECK(indices.dtype == DType::Int64, Status::DTypeMismatch);
  EMBER_CHECK(!want_values || out[0].dtype == in[0].dtype, Status::DTypeMismatch);
  ReduceGeometry g;
  EMBER_CHECK(make_geometry(in[0], out, p->dims, g), Status::ShapeMismatch);
  // An empty reduction has no extreme: the front-end rejects it.
  EMBER_CHECK(g.inner_numel > 0 || g.outer_numel == 0, Status::InvalidArgument);
  dispatch_dtype(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = in[0].ptr<const T>();
    int64_t* idx = indices.ptr<int64_t>();
    T* values = want_values ? out[0].ptr<T>() : nullptr;
    const int k = want_values ? 1 : 0;
    for_each_outer(g, [&](int64_t in_off, const int64_t* out_off) {
      T best{};
      int64_t best_index = 0;
      find_extreme<kMax>(x + in_off, g, best, best_index);
      if (values != nullptr) values[out_off[0]] = best;
      idx[out_off[k]] = best_index;
    });
  });
  return Status::Ok;
}

}  // namespace

Status sum(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return reduce_same_dtype(in, out, params, kNumericTypes, SumBody{});
}

Status mean(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return reduce_same_dtype(in, out, params, kFloatingTypes, MeanBody{});
}

Status prod(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return reduce_same_dtype(in, out, params, kNumericTypes, ProdBody{});
}

Status var(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return reduce_same_dtype(in, out, params, kFloatingTypes, VarBody{});
}

Status norm(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return reduce_same_dtype(in, out, params, kFloatingTypes, NormBody{});
}

Status max_reduce(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return extreme<true>(in, out, params, /*want_values=*/true);
}

Status min_reduce(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return extreme<false>(in, out, params, /*want_values=*/true);
}

Status argmax(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return extreme<true>(in, out, params, /*want_values=*/false);
}

Status argmin(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return extreme<false>(in, out, params, /*want_values=*/false);
}

}  // namespace ember::ref
