// The indexing, selection and scan graph ops (graph_ops.h) on the ops' cores:
// ONNX's negative indices are wrapped here (PyTorch's front-ends refuse them);
// NonZero and Unique run on the host (their sizes depend on the values).
#include <algorithm>
#include <numeric>

#include "runtime/core/error.h"
#include "runtime/model/graph_ops.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {

Result<std::pair<Tensor, Tensor>> onnx_topk(const Tensor& x, int64_t k, int64_t axis, bool largest, bool sorted) {
  EMBER_CHECK(x.dim() >= 1, Status::InvalidArgument, "TopK needs an input of rank >= 1");
  EMBER_ASSIGN_OR_RETURN(const int64_t a, onnx_axis(axis, x.dim(), "TopK axis"));
  EMBER_CHECK(k >= 0 && k <= x.size(a), Status::OutOfRange, "TopK k ", k, " is out of range for an axis of size ",
              x.size(a));
  return core::topk(x, k, a, largest, sorted);
}

Result<Tensor> onnx_nonzero(const Tensor& x) {
  EMBER_ASSIGN_OR_RETURN(const Tensor nz, core::nonzero(x));  // [count, rank]
  return core::contiguous(nz.t());
}

namespace {

// The rows of a [n, m] host tensor: sorted with the first occurrence of
// each distinct row, the group of every row and the group sizes.
struct Groups {
  std::vector<int64_t> first;    // per group: its first row
  std::vector<int64_t> inverse;  // per row: its group
  std::vector<int64_t> counts;   // per group
};

Groups group_rows(const Tensor& rows, bool sorted) {
  const int64_t n = rows.size(0), m = rows.size(1);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  Groups g;
  dispatch_dtype(rows.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* p = rows.data_ptr<T>();
    auto cmp = [&](int64_t a, int64_t b) {  // -1, 0, 1 lexicographically
      for (int64_t j = 0; j < m; ++j) {
        const C va = static_cast<C>(p[a * m + j]), vb = static_cast<C>(p[b * m + j]);
        if (va < vb) return -1;
        if (vb < va) return 1;
      }
      return 0;
    };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
    std::vector<int64_t> sorted_group(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = order[static_cast<size_t>(i)];
      if (i == 0 || cmp(order[static_cast<size_t>(i - 1)], r) != 0) {
        g.first.push_back(r);
        g.counts.push_back(0);
      }
      sorted_group[static_cast<size_t>(r)] = static_cast<int64_t>(g.first.size()) - 1;
      ++g.counts.back();
    }
    g.inverse = sorted_group;
  });
  if (sorted) return g;
  // Groups in the order of their first occurrence.
  std::vector<int64_t> by_first(g.first.size());
  std::iota(by_first.begin(), by_first.end(), 0);
  std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) {
    return g.first[static_cast<size_t>(a)] < g.first[static_cast<size_t>(b)];
  });
  std::vector<int64_t> rank(by_first.size());
  Groups u;
  for (size_t i = 0; i < by_first.size(); ++i) {
    rank[static_cast<size_t>(by_first[i])] = static_cast<int64_t>(i);
    u.first.push_back(g.first[static_cast<size_t>(by_first[i])]);
    u.counts.push_back(g.counts[static_cast<size_t>(by_first[i])]);
  }
  for (int64_t r : g.inverse) u.inverse.push_back(rank[static_cast<size_t>(r)]);
  return u;
}

Tensor ints_tensor(const std::vector<int64_t>& v) { return tensor(v, {static_cast<int64_t>(v.size())}); }

}  // namespace

Result<std::vector<Tensor>> onnx_unique(const Tensor& x, const UniqueParams& p) {
  EMBER_ASSIGN_OR_RETURN(const Tensor host, core::to(x, Device(DeviceType::CPU)));
  Tensor rows;
  int64_t a = 0;
  if (p.has_axis) {
    EMBER_CHECK(x.dim() >= 1, Status::InvalidArgument, "Unique with an axis needs an input of rank >= 1");
    EMBER_ASSIGN_OR_RETURN(a, onnx_axis(p.axis, x.dim(), "Unique axis"));
    std::vector<int64_t> perm = {a};
    for (int64_t d = 0; d < x.dim(); ++d) {
      if (d != a) perm.push_back(d);
    }
    EMBER_ASSIGN_OR_RETURN(const Tensor moved, core::permute(host, perm));
    EMBER_ASSIGN_OR_RETURN(rows, core::contiguous(moved));
    EMBER_ASSIGN_OR_RETURN(rows, core::reshape(rows, {rows.size(0), rows.size(0) == 0 ? 0 : rows.numel() / rows.size(0)}));
  } else {
    EMBER_ASSIGN_OR_RETURN(rows, core::contiguous(host));
    EMBER_ASSIGN_OR_RETURN(rows, core::reshape(rows, {-1, 1}));
  }
  const Groups g = group_rows(rows, p.sorted);
  const Tensor first = ints_tensor(g.first);
  EMBER_ASSIGN_OR_RETURN(const Tensor flat, core::reshape(host, {-1}));
  EMBER_ASSIGN_OR_RETURN(const Tensor y,
                         p.has_axis ? core::index_select(host, a, first) : core::index_select(flat, 0, first));
  const Device dev = x.device();
  std::vector<Tensor> out;
  for (const Tensor& t : {y, first, ints_tensor(g.inverse), ints_tensor(g.counts)}) {
    EMBER_ASSIGN_OR_RETURN(Tensor moved, core::to(t, dev));
    out.push_back(std::move(moved));
  }
  return out;
}

}  // namespace ember
