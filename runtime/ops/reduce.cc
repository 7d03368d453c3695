// Reduction front-ends: dim lists (negative, duplicates rejected, empty = all),
// keepdim, output dtypes and PyTorch's errors. Kernels write an output of the
// input's rank with size 1 on reduced dims; without keepdim it is then viewed
// without them.
#include <cmath>
#include <optional>

#include "runtime/amp/autocast.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {
namespace {

// Bit d set: dim d is reduced. An empty list means every dim.
uint32_t dim_mask(IntArrayRef dims, int64_t rank) {
  EMBER_ENFORCE(rank <= kMaxRank, Status::NotSupported, "reductions support up to ", kMaxRank,
              " dimensions, got ", rank);
  if (dims.empty()) return rank == 0 ? 0u : static_cast<uint32_t>((uint64_t{1} << rank) - 1);
  uint32_t seen = 0;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, rank);
    EMBER_ENFORCE(!((seen >> w) & 1u), Status::InvalidArgument, "dim ", w,
                " appears multiple times in the list of dims");
    seen |= 1u << w;
  }
  return rank == 0 ? 0u : seen;
}

uint32_t single_dim_mask(int64_t dim, int64_t rank) {
  const int64_t d[] = {dim};
  return dim_mask(IntArrayRef(d, 1), rank);
}

uint32_t all_dims(int64_t rank) { return dim_mask({}, rank); }

Shape keep_shape(const Tensor& x, uint32_t mask) {
  Shape s = x.sizes();
  for (size_t d = 0; d < s.size(); ++d) {
    if ((mask >> d) & 1u) s[d] = 1;
  }
  return s;
}

Shape drop_shape(const Tensor& x, uint32_t mask) {
  Shape s;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!((mask >> d) & 1u)) s.push_back(x.size(d));
  }
  return s;
}

Tensor finish(const Tensor& out, const Tensor& x, uint32_t mask, bool keepdim) {
  return keepdim ? out : out.view(drop_shape(x, mask));
}

void check_rank(const Tensor& x) {
  EMBER_ENFORCE(x.dim() <= kMaxRank, Status::NotSupported, "reductions support up to ", kMaxRank,
              " dimensions, got ", x.dim());
}

// Runs a one-output reduction of `in` (already in the output dtype).
Tensor reduce(OpKind op, const Tensor& in, uint32_t mask, bool keepdim, ReduceParams params = {}) {
  check_rank(in);
  params.dims = mask;
  Tensor out = empty(keep_shape(in, mask), TensorOptions(in.dtype()).device(in.device()));
  if (out.numel() > 0) unwrap(run_kernel(op, {in}, {out}, params));
  const Tensor result = finish(out.detach(), in, mask, keepdim);
  const GradRule rule = op == OpKind::Sum    ? GradRule::Sum
                        : op == OpKind::Mean ? GradRule::Mean
                        : op == OpKind::Prod ? GradRule::Prod
                        : op == OpKind::Var  ? GradRule::Var
                                             : GradRule::Norm;
  if (Node* n = autograd::record(rule, result, {in})) {
    n->ints = {mask, keepdim ? 1 : 0, params.correction};
    n->reals = {params.p};
    if (rule == GradRule::Prod || rule == GradRule::Norm) n->save(in).save(result);
    if (rule == GradRule::Var) n->save(in);
  }
  return result;
}

// sum and prod: integer and bool inputs accumulate to int64 unless told otherwise.
DType sum_dtype(const Tensor& x, std::optional<DType> dtype) {
  if (dtype) return *dtype;
  return is_integral(x.dtype(), /*include_bool=*/true) ? DType::Int64 : x.dtype();
}

DType mean_dtype(const Tensor& x, std::optional<DType> dtype) {
  if (dtype) {
    EMBER_ENFORCE(is_floating(*dtype), Status::DTypeMismatch,
                "mean(): could not infer output dtype. Optional dtype must be either a floating point or "
                "complex dtype. Got: ",
                dtype_legacy_name(*dtype));
    return *dtype;
  }
  EMBER_ENFORCE(x.is_floating_point(), Status::DTypeMismatch,
              "mean(): could not infer output dtype. Input dtype must be either a floating point or "
              "complex dtype. Got: ",
              dtype_legacy_name(x.dtype()));
  return x.dtype();
}

void check_var_dtype(const Tensor& x) {
  EMBER_ENFORCE(x.is_floating_point(), Status::DTypeMismatch,
              "std and var only support floating point and complex dtypes");
}

// max/min/argmax/argmin need a non-empty reduction.
void check_nonempty_dim(const Tensor& x, int64_t dim, const char* name) {
  if (x.dim() == 0) return;
  const int64_t w = wrap_dim(dim, x.dim());
  EMBER_ENFORCE(x.size(w) != 0, Status::OutOfRange, name, "(): Expected reduction dim ", w,
              " to have non-zero size.");
}

std::pair<Tensor, Tensor> extreme(OpKind op, const Tensor& x, uint32_t mask, bool keepdim) {
  check_rank(x);
  const Shape keep = keep_shape(x, mask);
  Tensor values = empty(keep, TensorOptions(x.dtype()).device(x.device()));
  Tensor indices = empty(keep, TensorOptions(DType::Int64).device(x.device()));
  ReduceParams params;
  params.dims = mask;
  if (values.numel() > 0) unwrap(run_kernel(op, {x}, {values, indices}, params));
  const Tensor result = finish(values.detach(), x, mask, keepdim);
  const GradRule rule = op == OpKind::Max ? GradRule::MaxDim : GradRule::MinDim;
  if (Node* n = autograd::record(rule, result, {x})) {
    int64_t dim = 0;
    while (mask != 0 && !((mask >> dim) & 1u)) ++dim;
    n->ints = {mask, keepdim ? 1 : 0, dim};
    n->save(finish(indices, x, mask, keepdim));
  }
  return {result, finish(indices, x, mask, keepdim)};
}

Tensor all_extreme(OpKind op, const Tensor& x, const char* name) {
  EMBER_ENFORCE(x.numel() > 0, Status::InvalidArgument, name,
              "(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction "
              "dim with the 'dim' argument.");
  Tensor out;
  {
    NoGradGuard no_grad;
    out = extreme(op, x, all_dims(x.dim()), /*keepdim=*/false).first;
  }
  if (Node* n = autograd::record(op == OpKind::Max ? GradRule::MaxAll : GradRule::MinAll, out, {x})) {
    n->ints = {all_dims(x.dim()), 0};
    n->save(x).save(out);
  }
  return out;
}

Tensor arg_extreme(OpKind op, const Tensor& x, std::optional<int64_t> dim, bool keepdim, const char* name) {
  check_rank(x);
  uint32_t mask;
  if (dim) {
    mask = single_dim_mask(*dim, x.dim());
    check_nonempty_dim(x, *dim, name);
  } else {
    EMBER_ENFORCE(x.numel() > 0, Status::OutOfRange, name,
                "(): Expected reduction dim to be specified for input.numel() == 0.");
    mask = all_dims(x.dim());
  }
  EMBER_ENFORCE(x.dtype() != DType::Bool, Status::NotSupported, "\"", name, "_cpu\" not implemented for '",
              dtype_legacy_name(x.dtype()), "'");
  const Shape keep = keep_shape(x, mask);
  Tensor out = empty(keep, TensorOptions(DType::Int64).device(x.device()));
  ReduceParams params;
  params.dims = mask;
  if (out.numel() > 0) {
    unwrap(run_kernel(op, {x}, {out}, params));
  }
  return finish(out, x, mask, keepdim);
}

}  // namespace

// The full reductions show torch's names for their overloads (SumBackward0, ...).
Tensor sum(const Tensor& x, std::optional<DType> dtype) {
  Tensor out = sum(x, {}, false, dtype);
  autograd::rename_grad_fn(out, GradRule::SumAll);
  return out;
}

Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  if (!dtype) {
    if (amp::Cast c = amp::autocast(amp::Op::Sum, {x})) return sum(c[0], dims, keepdim);
  }
  const uint32_t mask = dim_mask(dims, x.dim());
  return reduce(OpKind::Sum, x.to(sum_dtype(x, dtype)), mask, keepdim);
}

Tensor mean(const Tensor& x, std::optional<DType> dtype) {
  Tensor out = mean(x, {}, false, dtype);
  autograd::rename_grad_fn(out, GradRule::MeanAll);
  return out;
}

Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  const DType out_dtype = mean_dtype(x, dtype);
  const uint32_t mask = dim_mask(dims, x.dim());
  return reduce(OpKind::Mean, x.to(out_dtype), mask, keepdim);
}

Tensor prod(const Tensor& x, std::optional<DType> dtype) {
  if (!dtype) {
    if (amp::Cast c = amp::autocast(amp::Op::Prod, {x})) return prod(c[0]);
  }
  Tensor out = reduce(OpKind::Prod, x.to(sum_dtype(x, dtype)), all_dims(x.dim()), false);
  autograd::rename_grad_fn(out, GradRule::ProdAll);
  return out;
}

Tensor prod(const Tensor& x, int64_t dim, bool keepdim, std::optional<DType> dtype) {
  if (!dtype) {
    if (amp::Cast c = amp::autocast(amp::Op::Prod, {x})) return prod(c[0], dim, keepdim);
  }
  const uint32_t mask = single_dim_mask(dim, x.dim());
  return reduce(OpKind::Prod, x.to(sum_dtype(x, dtype)), mask, keepdim);
}

Tensor var(const Tensor& x, std::optional<std::vector<int64_t>> dims, int64_t correction, bool keepdim) {
  check_var_dtype(x);
  const uint32_t mask = dims ? dim_mask(*dims, x.dim()) : all_dims(x.dim());
  ReduceParams params;
  params.correction = correction;
  return reduce(OpKind::Var, x, mask, keepdim, params);
}

Tensor std(const Tensor& x, std::optional<std::vector<int64_t>> dims, int64_t correction, bool keepdim) {
  check_var_dtype(x);
  Tensor out;
  {
    NoGradGuard no_grad;
    out = sqrt(var(x, dims, correction, keepdim));
  }
  // StdBackward0 reads x and the result; its ints are Var's.
  if (Node* n = autograd::record(GradRule::Std, out, {x})) {
    n->ints = {dims ? dim_mask(*dims, x.dim()) : all_dims(x.dim()), keepdim ? 1 : 0, correction};
    n->save(x).save(out);
  }
  return out;
}

Tensor norm(const Tensor& x, double p, IntArrayRef dims, bool keepdim) {
  if (amp::Cast c = amp::autocast(amp::Op::Norm, {x})) return norm(c[0], p, dims, keepdim);
  EMBER_ENFORCE(x.is_floating_point(), Status::DTypeMismatch,
              "norm(): input dtype should be either floating point or complex. Got ",
              dtype_legacy_name(x.dtype()), " instead.");
  const uint32_t mask = dim_mask(dims, x.dim());
  ReduceParams params;
  params.p = p;
  return reduce(OpKind::Norm, x, mask, keepdim, params);
}

Tensor max(const Tensor& x) { return all_extreme(OpKind::Max, x, "max"); }
Tensor min(const Tensor& x) { return all_extreme(OpKind::Min, x, "min"); }

std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  const uint32_t mask = single_dim_mask(dim, x.dim());
  check_nonempty_dim(x, dim, "max");
  return extreme(OpKind::Max, x, mask, keepdim);
}

std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  const uint32_t mask = single_dim_mask(dim, x.dim());
  check_nonempty_dim(x, dim, "min");
  return extreme(OpKind::Min, x, mask, keepdim);
}

Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme(OpKind::ArgMax, x, dim, keepdim, "argmax");
}

Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme(OpKind::ArgMin, x, dim, keepdim, "argmin");
}

Tensor Tensor::sum(std::optional<DType> dtype) const { return ember::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dims, bool keepdim, std::optional<DType> dtype) const {
  return ember::sum(*this, dims, keepdim, dtype);
}
Tensor Tensor::mean(std::optional<DType> dtype) const { return ember::mean(*this, dtype); }
Tensor Tensor::mean(IntArrayRef dims, bool keepdim, std::optional<DType> dtype) const {
  return ember::mean(*this, dims, keepdim, dtype);
}
Tensor Tensor::max() const { return ember::max(*this); }
Tensor Tensor::min() const { return ember::min(*this); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return ember::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const { return ember::argmin(*this, dim, keepdim); }

}  // namespace ember
