// LayerNorm (over the trailing NormParams::normalized_rank dims, biased
// variance) and BatchNorm in its inference form (running statistics per
// channel, dim 1). Optional inputs (weight, bias) arrive with data == nullptr.
// Statistics compute in double.
#include <cmath>
#include <vector>

#include "kernels/ref/loops.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/tensor/convert.h"

namespace ember::ref {
namespace {

bool same_shape(const TensorView& a, const TensorView& b) {
  if (a.rank != b.rank) return false;
  for (int d = 0; d < a.rank; ++d) {
    if (a.sizes[d] != b.sizes[d]) return false;
  }
  return true;
}

// Row-major iteration over `rank` dims with two sets of strides.
template <typename Fn>
void for_each_index2(int rank, const int64_t* sizes, const int64_t* sa, const int64_t* sb, Fn&& fn) {
  for (int d = 0; d < rank; ++d) {
    if (sizes[d] == 0) return;
  }
  int64_t index[kMaxRank] = {};
  int64_t a = 0, b = 0;
  for (;;) {
    fn(a, b);
    int d = rank - 1;
    for (; d >= 0; --d) {
      if (++index[d] < sizes[d]) {
        a += sa[d];
        b += sb[d];
        break;
      }
      a -= sa[d] * (sizes[d] - 1);
      b -= sb[d] * (sizes[d] - 1);
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// Element `i` of a 1-D view of any dtype, as double (`fallback` when absent).
double load(const TensorView& v, int64_t i, double fallback) {
  if (v.data == nullptr) return fallback;
  return dispatch_dtype(v.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return convert<double>(v.ptr<const T>()[i * v.strides[0]]);
  });
}

}  // namespace

Status layer_norm(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<NormParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 3 && out.size() == 1, Status::InvalidArgument);
  const TensorView& x = in[0];
  const TensorView& w = in[1];
  const TensorView& b = in[2];
  TensorView& y = out[0];
  const int nr = p->normalized_rank;
  EMBER_CHECK(nr >= 1 && nr <= x.rank && same_shape(x, y), Status::ShapeMismatch);
  EMBER_CHECK(is_floating(x.dtype) && y.dtype == x.dtype, Status::DTypeMismatch);
  const int outer_rank = x.rank - nr;
  for (const TensorView* v : {&w, &b}) {
    if (v->data == nullptr) continue;
    EMBER_CHECK(v->dtype == x.dtype && v->rank == nr, Status::InvalidArgument);
    for (int d = 0; d < nr; ++d) EMBER_CHECK(v->sizes[d] == x.sizes[outer_rank + d], Status::ShapeMismatch);
  }
  const int64_t* inner_sizes = x.sizes + outer_rank;
  int64_t inner_n = 1;
  for (int d = 0; d < nr; ++d) inner_n *= inner_sizes[d];
  if (inner_n == 0) return Status::Ok;
  const int64_t zeros[kMaxRank] = {};
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T>) {
      const T* xp = x.ptr<const T>();
      const T* wp = w.ptr<const T>();
      const T* bp = b.ptr<const T>();
      T* yp = y.ptr<T>();
      const int64_t* wst = w.data ? w.strides : zeros;
      const int64_t* bst = b.data ? b.strides : zeros;
      for_each_index2(outer_rank, x.sizes, x.strides, y.strides, [&](int64_t xo, int64_t yo) {
        double sum = 0;
        for_each_index2(nr, inner_sizes, x.strides + outer_rank, zeros, [&](int64_t xi, int64_t) {
          sum += convert<double>(xp[xo + xi]);
        });
        const double mean = sum / static_cast<double>(inner_n);
        double m2 = 0;
        for_each_index2(nr, inner_sizes, x.strides + outer_rank, zeros, [&](int64_t xi, int64_t) {
          const double d = convert<double>(xp[xo + xi]) - mean;
          m2 += d * d;
        });
        const double rstd = 1.0 / std::sqrt(m2 / static_cast<double>(inner_n) + p->eps);
        // Walk x and y together; weight and bias share the inner index.
        int64_t index[kMaxRank] = {};
        for (int64_t k = 0; k < inner_n; ++k) {
          int64_t xi = 0, yi = 0, wi = 0, bi = 0;
          for (int d = 0; d < nr; ++d) {
            xi += index[d] * x.strides[outer_rank + d];
            yi += index[d] * y.strides[outer_rank + d];
            wi += index[d] * wst[d];
            bi += index[d] * bst[d];
          }
          double v = (convert<double>(xp[xo + xi]) - mean) * rstd;
          if (wp != nullptr) v *= convert<double>(wp[wi]);
          if (bp != nullptr) v += convert<double>(bp[bi]);
          yp[yo + yi] = convert<T>(v);
          (void)next_index(index, inner_sizes, nr);
        }
      });
    }
  });
  return Status::Ok;
}

// AddLayerNorm (a run-time op, ops.def): the Add kernel into a float32
// tensor of its own, as the Add op's output is, then layer_norm of it.
Status add_layer_norm(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                      const OpParams& params) {
  EMBER_CHECK(in.size() == 4 && out.size() == 1, Status::InvalidArgument);
  const TensorView &a = in[0], &b = in[1];
  EMBER_CHECK(same_shape(a, b) && a.dtype == DType::Float32 && b.dtype == DType::Float32, Status::InvalidArgument);
  TensorView sum = a;
  int64_t stride = 1;
  for (int d = a.rank - 1; d >= 0; --d) {
    sum.strides[d] = stride;
    stride *= a.sizes[d];
  }
  std::vector<float> values(static_cast<size_t>(a.numel()));
  sum.data = values.data();
  EMBER_TRY(add(ctx, Span<const TensorView>(in.data(), 2), Span<TensorView>(&sum, 1), NoParams{}));
  const TensorView norm_in[3] = {sum, in[2], in[3]};
  return layer_norm(ctx, norm_in, out, params);
}

Status batch_norm(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<NormParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 5 && out.size() == 1, Status::InvalidArgument);
  const TensorView& x = in[0];
  TensorView& y = out[0];
  EMBER_CHECK(x.rank >= 2 && same_shape(x, y), Status::ShapeMismatch);
  EMBER_CHECK(is_floating(x.dtype) && y.dtype == x.dtype, Status::DTypeMismatch);
  const int64_t channels = x.sizes[1];
  EMBER_CHECK(in[1].data != nullptr && in[2].data != nullptr, Status::InvalidArgument);
  for (size_t k = 1; k < 5; ++k) {
    if (in[k].data == nullptr) continue;
    EMBER_CHECK(in[k].rank == 1 && in[k].sizes[0] == channels, Status::ShapeMismatch);
  }
  // The other dims, iterated for each channel.
  int rank = 0;
  int64_t sizes[kMaxRank] = {}, xst[kMaxRank] = {}, yst[kMaxRank] = {};
  for (int d = 0; d < x.rank; ++d) {
    if (d == 1) continue;
    sizes[rank] = x.sizes[d];
    xst[rank] = x.strides[d];
    yst[rank++] = y.strides[d];
  }
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T>) {
      const T* xp = x.ptr<const T>();
      T* yp = y.ptr<T>();
      for (int64_t c = 0; c < channels; ++c) {
        const double mean = load(in[1], c, 0.0), var = load(in[2], c, 1.0);
        const double scale = load(in[3], c, 1.0) / std::sqrt(var + p->eps);
        const double shift = load(in[4], c, 0.0) - mean * scale;
        const T* xc = xp + c * x.strides[1];
        T* yc = yp + c * y.strides[1];
        for_each_index2(rank, sizes, xst, yst, [&](int64_t xo, int64_t yo) {
          yc[yo] = convert<T>(convert<double>(xc[xo]) * scale + shift);
        });
      }
    }
  });
  return Status::Ok;
}

}  // namespace ember::ref
