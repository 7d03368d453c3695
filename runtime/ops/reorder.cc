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
Result<std::vector<int64_t>> wrap_dims(IntArrayRef dims, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t d : dims) {
    EMBER_ASSIGN_OR_RETURN(const int64_t w, core::wrap_dim(d, std::max<int64_t>(rank, 1)));
    EMBER_CHECK(std::find(out.begin(), out.end(), w) == out.end(), Status::InvalidArgument, "dim ", w,
                " appears multiple times in the list of dims");
    out.push_back(w);
  }
  return out;
}

}  // namespace

Result<Tensor> core::flip(const Tensor& x, IntArrayRef dims) {
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> ds, wrap_dims(dims, x.dim()));
  Tensor out;
  {
    NoGradGuard no_grad;
    out = x;
    for (int64_t d : ds) {
      if (x.dim() == 0) break;
      const int64_t n = x.size(d);
      EMBER_ASSIGN_OR_RETURN(const Tensor reversed,
                             core::arange(n - 1, -1, -1, TensorOptions(DType::Int64).device(x.device())));
      EMBER_ASSIGN_OR_RETURN(out, core::index_select(out, d, reversed));
    }
    if (ds.empty() || x.dim() == 0) {
      EMBER_ASSIGN_OR_RETURN(out, core::clone(out));
    }
  }
  if (Node* n = autograd::record(GradRule::Flip, out, {x})) n->ints = ds;
  return out;
}

Tensor flip(const Tensor& x, IntArrayRef dims) { return unwrap(core::flip(x, dims)); }

Result<Tensor> core::roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims) {
  EMBER_CHECK(!shifts.empty(), Status::InvalidArgument, "`shifts` required");
  EMBER_CHECK(dims.empty() || shifts.size() == dims.size(), Status::InvalidArgument,
              "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  EMBER_CHECK(!dims.empty() || shifts.size() == 1, Status::InvalidArgument,
              "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  Tensor out;
  std::vector<int64_t> ds;
  {
    NoGradGuard no_grad;
    Tensor t = x;
    if (dims.empty()) {
      EMBER_ASSIGN_OR_RETURN(t, core::reshape(x, {-1}));
      ds = {0};
    }
    for (int64_t d : dims) {
      EMBER_ASSIGN_OR_RETURN(const int64_t w, core::wrap_dim(d, std::max<int64_t>(x.dim(), 1)));
      ds.push_back(w);
    }
    for (size_t i = 0; i < ds.size(); ++i) {
      const int64_t n = t.dim() == 0 ? 1 : t.size(ds[i]);
      if (n == 0 || t.dim() == 0) continue;
      const int64_t s = ((shifts[i] % n) + n) % n;
      if (s != 0) {
        EMBER_ASSIGN_OR_RETURN(const Tensor tail, core::narrow(t, ds[i], n - s, s));
        EMBER_ASSIGN_OR_RETURN(const Tensor head, core::narrow(t, ds[i], 0, n - s));
        EMBER_ASSIGN_OR_RETURN(t, core::cat({tail, head}, ds[i]));
      }
    }
    if (dims.empty()) {
      EMBER_ASSIGN_OR_RETURN(t, core::reshape(t, x.sizes()));
    }
    EMBER_ASSIGN_OR_RETURN(out, core::contiguous(t));
    if (out.is_alias_of(x)) {
      EMBER_ASSIGN_OR_RETURN(out, core::clone(out));
    }
  }
  if (Node* n = autograd::record(GradRule::Roll, out, {x})) {
    n->ints = std::vector<int64_t>(shifts.begin(), shifts.end());
    n->shapes.push_back(Shape(dims.begin(), dims.end()));
  }
  return out;
}

Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims) { return unwrap(core::roll(x, shifts, dims)); }

Result<Tensor> core::repeat(const Tensor& x, IntArrayRef repeats) {
  EMBER_CHECK(static_cast<int64_t>(repeats.size()) >= x.dim(), Status::InvalidArgument,
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
    EMBER_CHECK(out_shape[i] >= 0, Status::InvalidArgument, "Trying to create tensor with negative dimension ",
                out_shape[i], ": ", shape_str(out_shape));
  }
  Tensor out;
  {
    NoGradGuard no_grad;
    EMBER_ASSIGN_OR_RETURN(out, core::reshape(x, inter));
    EMBER_ASSIGN_OR_RETURN(out, core::expand(out, expanded));
    EMBER_ASSIGN_OR_RETURN(out, core::contiguous(out));
    EMBER_ASSIGN_OR_RETURN(out, core::reshape(out, out_shape));
  }
  if (Node* n = autograd::record(GradRule::Repeat, out, {x})) n->ints = std::vector<int64_t>(repeats.begin(), repeats.end());
  return out;
}

Tensor repeat(const Tensor& x, IntArrayRef repeats) { return unwrap(core::repeat(x, repeats)); }

Result<Tensor> core::tile(const Tensor& x, IntArrayRef reps) {
  std::vector<int64_t> r(reps.begin(), reps.end());
  while (static_cast<int64_t>(r.size()) < x.dim()) r.insert(r.begin(), 1);
  return core::repeat(x, r);
}

Tensor tile(const Tensor& x, IntArrayRef reps) { return unwrap(core::tile(x, reps)); }

namespace {

Result<Tensor> triangle(const Tensor& x, int64_t diagonal, bool lower) {
  EMBER_CHECK(x.dim() >= 2, Status::InvalidArgument, lower ? "tril" : "triu",
              ": input tensor must have at least 2 dimensions");
  Tensor out;
  {
    NoGradGuard no_grad;
    const TensorOptions o = TensorOptions(DType::Int64).device(x.device());
    EMBER_ASSIGN_OR_RETURN(const Tensor row_ids, core::arange(0, x.size(-2), 1, o));
    EMBER_ASSIGN_OR_RETURN(const Tensor col_ids, core::arange(0, x.size(-1), 1, o));
    EMBER_ASSIGN_OR_RETURN(const Tensor rows, core::reshape(row_ids, {-1, 1}));
    EMBER_ASSIGN_OR_RETURN(const Tensor cols, core::reshape(col_ids, {1, -1}));
    EMBER_ASSIGN_OR_RETURN(const Tensor offset, core::sub(cols, rows));
    EMBER_ASSIGN_OR_RETURN(const Tensor keep, lower ? core::le(offset, diagonal) : core::ge(offset, diagonal));
    EMBER_ASSIGN_OR_RETURN(const Tensor zero, core::full({}, 0, TensorOptions(x.dtype()).device(x.device())));
    EMBER_ASSIGN_OR_RETURN(out, core::where(keep, x, zero));
  }
  if (Node* n = autograd::record(lower ? GradRule::Tril : GradRule::Triu, out, {x})) n->ints = {diagonal};
  return out;
}

}  // namespace

Result<Tensor> core::tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true); }
Result<Tensor> core::triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false); }

Tensor tril(const Tensor& x, int64_t diagonal) { return unwrap(core::tril(x, diagonal)); }
Tensor triu(const Tensor& x, int64_t diagonal) { return unwrap(core::triu(x, diagonal)); }

}  // namespace ember
