// TopK along params.axis (TopKParams): the k = values.sizes[axis] largest
// (else smallest) elements of each line, in order (ties: the lower index
// first; NaN is larger than every number, as torch.sort), and their int64
// indices. The workspace holds one line's index permutation.
#include <algorithm>
#include <cmath>

#include "kernels/ref/loops.h"
#include "kernels/ref/ref_kernels.h"

namespace ember::ref {
namespace {

template <typename C>
bool is_nan_value(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  return false;
}

int64_t line_length(Span<const TensorView> in, const TopKParams& p) {
  const TensorView& x = in[0];
  if (x.rank == 0) return 1;
  return x.sizes[p.axis < 0 ? p.axis + x.rank : p.axis];
}

}  // namespace

size_t topk_workspace(Span<const TensorView> in, Span<const TensorView>, const OpParams& params) {
  const auto* p = std::get_if<TopKParams>(&params);
  if (p == nullptr || in.empty()) return 0;
  return static_cast<size_t>(std::max<int64_t>(line_length(in, *p), 0)) * sizeof(int64_t);
}

Status topk(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<TopKParams>(&params);
  EMBER_CHECK(p != nullptr && !in.empty() && out.size() == 2, Status::InvalidArgument);
  const TensorView& x = in[0];
  TensorView &values = out[0], &indices = out[1];
  EMBER_CHECK(values.dtype == x.dtype && indices.dtype == DType::Int64, Status::DTypeMismatch);
  EMBER_CHECK(values.rank == x.rank && indices.rank == x.rank, Status::ShapeMismatch);
  const int64_t axis = p->axis < 0 ? p->axis + x.rank : p->axis;
  EMBER_CHECK(axis >= 0 && axis < std::max(x.rank, 1), Status::InvalidArgument);
  const int64_t n = line_length(in, *p), k = x.rank == 0 ? values.numel() : values.sizes[axis];
  EMBER_CHECK(k <= n, Status::ShapeMismatch);
  for (int d = 0; d < x.rank; ++d) {
    EMBER_CHECK(values.sizes[d] == indices.sizes[d] && (d == axis || values.sizes[d] == x.sizes[d]),
                       Status::ShapeMismatch);
  }
  if (values.numel() == 0) return Status::Ok;
  EMBER_CHECK(ctx.scratch_bytes >= static_cast<size_t>(n) * sizeof(int64_t), Status::InvalidArgument);
  int64_t* order = static_cast<int64_t*>(ctx.scratch);
  const int64_t sx = x.rank == 0 ? 0 : x.strides[axis];
  const int64_t sv = x.rank == 0 ? 0 : values.strides[axis], si = x.rank == 0 ? 0 : indices.strides[axis];
  int64_t outer[kMaxRank] = {};
  for (int d = 0; d < x.rank; ++d) outer[d] = d == axis ? 1 : x.sizes[d];
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* xp = x.ptr<const T>();
    T* vp = values.ptr<T>();
    int64_t* ip = indices.ptr<int64_t>();
    int64_t at[kMaxRank] = {};
    do {
      const T* line = xp + offset_of(x, at);
      auto value = [&](int64_t i) { return static_cast<C>(line[i * sx]); };
      // A strict total order: by value (NaN largest), then by index.
      auto before = [&](int64_t a, int64_t b) {
        const C va = value(a), vb = value(b);
        const bool na = is_nan_value(va), nb = is_nan_value(vb);
        if (na != nb) return p->largest ? na : nb;
        if (!na && va != vb) return p->largest ? va > vb : va < vb;
        return a < b;
      };
      for (int64_t i = 0; i < n; ++i) order[i] = i;
      std::partial_sort(order, order + k, order + n, before);
      T* vl = vp + offset_of(values, at);
      int64_t* il = ip + offset_of(indices, at);
      for (int64_t j = 0; j < k; ++j) {
        vl[j * sv] = line[order[j] * sx];
        il[j * si] = order[j];
      }
    } while (next_index(at, outer, x.rank));
  });
  return Status::Ok;
}

}  // namespace ember::ref
