// Reordering and masking copies: flip, roll, repeat, tile, tril, triu
// (PyTorch's semantics and messages), composed of index_select, cat, expand
// and where with grad mode off; each records its own backward rule.
#include <algorithm>

#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/ops.h"

namespace ember {

namespace {

// dims wrapped and checked for repeats ("dim 0 appears multiple times in the list of dims").
std::vector<int64_t> wrap_dims(IntArrayRef dims, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, std::max<int64_t>(rank, 1));
    EMBER_ENFORCE(std::find(out.begin(), out.end(), w) == out.end(), Status::InvalidArgument, "dim ", w,
                " appears multiple times in the list of dims");
    out.push_back(w);
  }
  return out;
}

}  // namespace

Tensor flip(const Tensor& x, IntArrayRef dims) {
  const std::vector<int64_t> ds = wrap_dims(dims, x.dim());
  Tensor out;
  {
    NoGradGuard no_grad;
    out = x;
    for (int64_t d : ds) {
      if (x.dim() == 0) break;
      const int64_t n = x.size(d);
      out = index_select(out, d, arange(n - 1, -1, -1, TensorOptions(DType::Int64).device(x.device())));
    }
    if (ds.empty() || x.dim() == 0) out = out.clone();
  }
  if (Node* n = autograd::record(GradRule::Flip, out, {x})) n->ints = ds;
  return out;
}

Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims) {
  EMBER_ENFORCE(!shifts.empty(), Status::InvalidArgument, "`shifts` required");
  EMBER_ENFORCE(dims.empty() || shifts.size() == dims.size(), Status::InvalidArgument,
              "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  EMBER_ENFORCE(!dims.empty() || shifts.size() == 1, Status::InvalidArgument,
              "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  Tensor out;
  std::vector<int64_t> ds;
  {
    NoGradGuard no_grad;
    Tensor t = dims.empty() ? x.reshape({-1}) : x;
    if (dims.empty()) ds = {0};
    for (int64_t d : dims) ds.push_back(wrap_dim(d, std::max<int64_t>(x.dim(), 1)));
    for (size_t i = 0; i < ds.size(); ++i) {
      const int64_t n = t.dim() == 0 ? 1 : t.size(ds[i]);
      if (n == 0 || t.dim() == 0) continue;
      const int64_t s = ((shifts[i] % n) + n) % n;
      if (s != 0) t = cat({t.narrow(ds[i], n - s, s), t.narrow(ds[i], 0, n - s)}, ds[i]);
    }
    out = (dims.empty() ? t.reshape(x.sizes()) : t).contiguous();
    if (out.is_alias_of(x)) out = out.clone();
  }
  if (Node* n = autograd::record(GradRule::Roll, out, {x})) {
    n->ints = std::vector<int64_t>(shifts.begin(), shifts.end());
    n->shapes.push_back(Shape(dims.begin(), dims.end()));
  }
  return out;
}

Tensor repeat(const Tensor& x, IntArrayRef repeats) {
  EMBER_ENFORCE(static_cast<int64_t>(repeats.size()) >= x.dim(), Status::InvalidArgument,
              "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  const size_t lead = repeats.size() - static_cast<size_t>(x.dim());
  Shape padded(lead, 1), out_shape, inter, expanded;
  for (int64_t s : x.sizes()) padded.push_back(s);
  for (size_t i = 0; i < repeats.size(); ++i) {
    out_shape.push_back(repeats[i] * padded[i]);
    inter.push_back(1);
    inter.push_back(padded[i]);
    expanded.push_back(repeats[i]);
    expanded.push_back(padded[i]);
  }
  for (size_t i = 0; i < out_shape.size(); ++i) {
    EMBER_ENFORCE(out_shape[i] >= 0, Status::InvalidArgument, "Trying to create tensor with negative dimension ",
                out_shape[i], ": ", shape_str(out_shape));
  }
  Tensor out;
  {
    NoGradGuard no_grad;
    out = x.reshape(inter).expand(expanded).contiguous().reshape(out_shape);
  }
  if (Node* n = autograd::record(GradRule::Repeat, out, {x})) n->ints = std::vector<int64_t>(repeats.begin(), repeats.end());
  return out;
}

Tensor tile(const Tensor& x, IntArrayRef reps) {
  std::vector<int64_t> r(reps.begin(), reps.end());
  while (static_cast<int64_t>(r.size()) < x.dim()) r.insert(r.begin(), 1);
  return repeat(x, r);
}

namespace {

Tensor triangle(const Tensor& x, int64_t diagonal, bool lower) {
  EMBER_ENFORCE(x.dim() >= 2, Status::InvalidArgument, lower ? "tril" : "triu",
              ": input tensor must have at least 2 dimensions");
  Tensor out;
  {
    NoGradGuard no_grad;
    const TensorOptions o = TensorOptions(DType::Int64).device(x.device());
    const Tensor rows = arange(x.size(-2), o).reshape({-1, 1}), cols = arange(x.size(-1), o).reshape({1, -1});
    const Tensor keep = lower ? (cols - rows <= diagonal) : (cols - rows >= diagonal);
    out = where(keep, x, scalar_tensor(0, TensorOptions(x.dtype()).device(x.device())));
  }
  if (Node* n = autograd::record(lower ? GradRule::Tril : GradRule::Triu, out, {x})) n->ints = {diagonal};
  return out;
}

}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false); }

}  // namespace ember
