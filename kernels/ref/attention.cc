// ScaledDotProductAttention: out = softmax(q @ k^T * scale + mask) @ v, row
// by row on strided views, in double: the scores, their maximum (NaN if one is
// NaN; a row of -inf gives NaN, as torch's softmax), exp, the sum, then the
// weighted sum of v's rows.
#include <cmath>
#include <vector>

#include "kernels/ref/ref_kernels.h"
#include "runtime/tensor/convert.h"

namespace ember::ref {

bool attention_shapes_ok(Span<const TensorView> in, const TensorView& o) {
  if (in.size() != 4) return false;
  const TensorView &q = in[0], &k = in[1], &v = in[2], &m = in[3];
  const int r = q.rank;
  if (r < 2 || k.rank != r || v.rank != r || o.rank != r || (m.data != nullptr && m.rank != r)) return false;
  if (k.dtype != q.dtype || v.dtype != q.dtype || o.dtype != q.dtype || (m.data != nullptr && m.dtype != q.dtype))
    return false;
  for (int d = 0; d < r - 2; ++d) {
    const int64_t b = q.sizes[d];
    if (k.sizes[d] != b || v.sizes[d] != b || o.sizes[d] != b || (m.data != nullptr && m.sizes[d] != b)) return false;
  }
  const int64_t L = q.sizes[r - 2], E = q.sizes[r - 1], S = k.sizes[r - 2], Ev = v.sizes[r - 1];
  return k.sizes[r - 1] == E && v.sizes[r - 2] == S && o.sizes[r - 2] == L && o.sizes[r - 1] == Ev &&
         (m.data == nullptr || (m.sizes[r - 2] == L && m.sizes[r - 1] == S));
}

Status scaled_dot_product_attention(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                                    const OpParams& params) {
  const auto* p = std::get_if<AttentionParams>(&params);
  EMBER_CHECK(p != nullptr && out.size() == 1 && attention_shapes_ok(in, out[0]), Status::InvalidArgument);
  EMBER_CHECK(is_floating(in[0].dtype), Status::DTypeMismatch);
  const TensorView &q = in[0], &k = in[1], &v = in[2], &m = in[3], &o = out[0];
  const int r = q.rank;
  const int64_t L = q.sizes[r - 2], E = q.sizes[r - 1], S = k.sizes[r - 2], Ev = v.sizes[r - 1];
  int64_t batches = 1;
  for (int d = 0; d < r - 2; ++d) batches *= q.sizes[d];
  dispatch_dtype(q.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T>) {
      std::vector<double> w(static_cast<size_t>(S));
      for (int64_t b = 0; b < batches; ++b) {
        // The batch's offsets: its index over the leading dims, last fastest.
        int64_t qo = 0, ko = 0, vo = 0, mo = 0, oo = 0;
        for (int64_t d = r - 3, rest = b; d >= 0; --d) {
          const int64_t i = rest % q.sizes[d];
          rest /= q.sizes[d];
          qo += i * q.strides[d];
          ko += i * k.strides[d];
          vo += i * v.strides[d];
          oo += i * o.strides[d];
          if (m.data != nullptr) mo += i * m.strides[d];
        }
        for (int64_t i = 0; i < L; ++i) {
          double top = -INFINITY;
          for (int64_t j = 0; j < S; ++j) {
            double s = 0;
            for (int64_t e = 0; e < E; ++e) {
              s += convert<double>(q.ptr<const T>()[qo + i * q.strides[r - 2] + e * q.strides[r - 1]]) *
                   convert<double>(k.ptr<const T>()[ko + j * k.strides[r - 2] + e * k.strides[r - 1]]);
            }
            s *= p->scale;
            if (m.data != nullptr) s += convert<double>(m.ptr<const T>()[mo + i * m.strides[r - 2] + j * m.strides[r - 1]]);
            w[static_cast<size_t>(j)] = s;
            if (s != s || top != top) {
              top = NAN;
            } else if (s > top) {
              top = s;
            }
          }
          double sum = 0;
          for (double& s : w) {
            s = std::exp(s - top);
            sum += s;
          }
          for (int64_t c = 0; c < Ev; ++c) {
            double acc = 0;
            for (int64_t j = 0; j < S; ++j) {
              acc += w[static_cast<size_t>(j)] * convert<double>(v.ptr<const T>()[vo + j * v.strides[r - 2] + c * v.strides[r - 1]]);
            }
            o.ptr<T>()[oo + i * o.strides[r - 2] + c * o.strides[r - 1]] = convert<T>(S == 0 ? 0.0 : acc / sum);  // no keys: an empty sum, as P @ v
          }
        }
      }
    }
  });
  return Status::Ok;
}

}  // namespace ember::ref
