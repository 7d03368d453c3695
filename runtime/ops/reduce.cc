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
Result<uint32_t> dim_mask(IntArrayRef dims, int64_t rank) {
  EMBER_CHECK(rank <= kMaxRank, Status::NotSupported, "reductions support up to ", kMaxRank,
              " dimensions, got ", rank);
  if (dims.empty()) return rank == 0 ? 0u : static_cast<uint32_t>((uint64_t{1} << rank) - 1);
  uint32_t seen = 0;
  for (int64_t d : dims) {
    EMBER_ASSIGN_OR_RETURN(const int64_t w, core::wrap_dim(d, rank));
    EMBER_CHECK(!((seen >> w) & 1u), Status::InvalidArgument, "dim ", w,
                " appears multiple times in the list of dims");
    seen |= 1u << w;
  }
  return rank == 0 ? 0u : seen;
}

Result<uint32_t> single_dim_mask(int64_t dim, int64_t rank) {
  const int64_t d[] = {dim};
  return dim_mask(IntArrayRef(d, 1), rank);
}

Result<uint32_t> all_dims(int64_t rank) { return dim_mask({}, rank); }

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

Result<Tensor> finish(const Tensor& out, const Tensor& x, uint32_t mask, bool keepdim) {
  if (keepdim) return out;
  return core::view(out, drop_shape(x, mask));
}

Status check_rank(const Tensor& x) {
  EMBER_CHECK(x.dim() <= kMaxRank, Status::NotSupported, "reductions support up to ", kMaxRank,
              " dimensions, got ", x.dim());
  return Status::Ok;
}

// Runs a one-output reduction of `in` (already in the output dtype).
Result<Tensor> reduce(OpKind op, const Tensor& in, uint32_t mask, bool keepdim, ReduceParams params = {}) {
  EMBER_TRY(check_rank(in));
  params.dims = mask;
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty(keep_shape(in, mask), TensorOptions(in.dtype()).device(in.device())));
  if (out.numel() > 0) EMBER_TRY(run_kernel(op, {in}, {out}, params));
  EMBER_ASSIGN_OR_RETURN(const Tensor result, finish(out.detach(), in, mask, keepdim));
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

Result<DType> mean_dtype(const Tensor& x, std::optional<DType> dtype) {
  if (dtype) {
    EMBER_CHECK(is_floating(*dtype), Status::DTypeMismatch,
                "mean(): could not infer output dtype. Optional dtype must be either a floating point or "
                "complex dtype. Got: ",
                dtype_legacy_name(*dtype));
    return *dtype;
  }
  EMBER_CHECK(x.is_floating_point(), Status::DTypeMismatch,
              "mean(): could not infer output dtype. Input dtype must be either a floating point or "
              "complex dtype. Got: ",
              dtype_legacy_name(x.dtype()));
  return x.dtype();
}

Status check_var_dtype(const Tensor& x) {
  EMBER_CHECK(x.is_floating_point(), Status::DTypeMismatch,
              "std and var only support floating point and complex dtypes");
  return Status::Ok;
}

// max/min/argmax/argmin need a non-empty reduction.
Status check_nonempty_dim(const Tensor& x, int64_t dim, const char* name) {
  if (x.dim() == 0) return Status::Ok;
  EMBER_ASSIGN_OR_RETURN(const int64_t w, core::wrap_dim(dim, x.dim()));
  EMBER_CHECK(x.size(w) != 0, Status::OutOfRange, name, "(): Expected reduction dim ", w,
              " to have non-zero size.");
  return Status::Ok;
}

Result<std::pair<Tensor, Tensor>> extreme(OpKind op, const Tensor& x, uint32_t mask, bool keepdim) {
  EMBER_TRY(check_rank(x));
  const Shape keep = keep_shape(x, mask);
  EMBER_ASSIGN_OR_RETURN(Tensor values, core::empty(keep, TensorOptions(x.dtype()).device(x.device())));
  EMBER_ASSIGN_OR_RETURN(Tensor indices, core::empty(keep, TensorOptions(DType::Int64).device(x.device())));
  ReduceParams params;
  params.dims = mask;
  if (values.numel() > 0) EMBER_TRY(run_kernel(op, {x}, {values, indices}, params));
  EMBER_ASSIGN_OR_RETURN(const Tensor result, finish(values.detach(), x, mask, keepdim));
  const GradRule rule = op == OpKind::Max ? GradRule::MaxDim : GradRule::MinDim;
  if (Node* n = autograd::record(rule, result, {x})) {
    int64_t dim = 0;
    while (mask != 0 && !((mask >> dim) & 1u)) ++dim;
    n->ints = {mask, keepdim ? 1 : 0, dim};
    EMBER_ASSIGN_OR_RETURN(const Tensor saved, finish(indices, x, mask, keepdim));
    n->save(saved);
  }
  EMBER_ASSIGN_OR_RETURN(Tensor out_indices, finish(indices, x, mask, keepdim));
  return std::make_pair(result, std::move(out_indices));
}

Result<Tensor> all_extreme(OpKind op, const Tensor& x, const char* name) {
  EMBER_CHECK(x.numel() > 0, Status::InvalidArgument, name,
              "(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction "
              "dim with the 'dim' argument.");
  EMBER_ASSIGN_OR_RETURN(const uint32_t mask, all_dims(x.dim()));
  Tensor out;
  {
    NoGradGuard no_grad;
    EMBER_ASSIGN_OR_RETURN(auto values_indices, extreme(op, x, mask, /*keepdim=*/false));
    out = values_indices.first;
  }
  if (Node* n = autograd::record(op == OpKind::Max ? GradRule::MaxAll : GradRule::MinAll, out, {x})) {
    n->ints = {mask, 0};
    n->save(x).save(out);
  }
  return out;
}

Result<Tensor> arg_extreme(OpKind op, const Tensor& x, std::optional<int64_t> dim, bool keepdim,
                           const char* name) {
  EMBER_TRY(check_rank(x));
  uint32_t mask;
  if (dim) {
    EMBER_ASSIGN_OR_RETURN(mask, single_dim_mask(*dim, x.dim()));
    EMBER_TRY(check_nonempty_dim(x, *dim, name));
  } else {
    EMBER_CHECK(x.numel() > 0, Status::OutOfRange, name,
                "(): Expected reduction dim to be specified for input.numel() == 0.");
    EMBER_ASSIGN_OR_RETURN(mask, all_dims(x.dim()));
  }
  EMBER_CHECK(x.dtype() != DType::Bool, Status::NotSupported, "\"", name, "_cpu\" not implemented for '",
              dtype_legacy_name(x.dtype()), "'");
  const Shape keep = keep_shape(x, mask);
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty(keep, TensorOptions(DType::Int64).device(x.device())));
  ReduceParams params;
  params.dims = mask;
  if (out.numel() > 0) {
    EMBER_TRY(run_kernel(op, {x}, {out}, params));
  }
  return finish(out, x, mask, keepdim);
}

}  // namespace

// The full reductions show torch's names for their overloads (SumBackward0, ...).
Result<Tensor> core::sum(const Tensor& x, std::optional<DType> dtype) {
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::sum(x, {}, false, dtype));
  autograd::rename_grad_fn(out, GradRule::SumAll);
  return out;
}

Result<Tensor> core::sum(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  if (!dtype) {
    if (amp::Cast c = amp::autocast(amp::Op::Sum, {x})) return core::sum(c[0], dims, keepdim);
  }
  EMBER_ASSIGN_OR_RETURN(const uint32_t mask, dim_mask(dims, x.dim()));
  EMBER_ASSIGN_OR_RETURN(const Tensor in, core::to(x, sum_dtype(x, dtype)));
  return reduce(OpKind::Sum, in, mask, keepdim);
}

Result<Tensor> core::mean(const Tensor& x, std::optional<DType> dtype) {
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::mean(x, {}, false, dtype));
  autograd::rename_grad_fn(out, GradRule::MeanAll);
  return out;
}

Result<Tensor> core::mean(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  EMBER_ASSIGN_OR_RETURN(const DType out_dtype, mean_dtype(x, dtype));
  EMBER_ASSIGN_OR_RETURN(const uint32_t mask, dim_mask(dims, x.dim()));
  EMBER_ASSIGN_OR_RETURN(const Tensor in, core::to(x, out_dtype));
  return reduce(OpKind::Mean, in, mask, keepdim);
}

Result<Tensor> core::prod(const Tensor& x, std::optional<DType> dtype) {
  if (!dtype) {
    if (amp::Cast c = amp::autocast(amp::Op::Prod, {x})) return core::prod(c[0]);
  }
  // The mask before the conversion: the order GCC evaluated reduce()'s arguments in.
  EMBER_ASSIGN_OR_RETURN(const uint32_t mask, all_dims(x.dim()));
  EMBER_ASSIGN_OR_RETURN(const Tensor in, core::to(x, sum_dtype(x, dtype)));
  EMBER_ASSIGN_OR_RETURN(Tensor out, reduce(OpKind::Prod, in, mask, false));
  autograd::rename_grad_fn(out, GradRule::ProdAll);
  return out;
}

Result<Tensor> core::prod(const Tensor& x, int64_t dim, bool keepdim, std::optional<DType> dtype) {
  if (!dtype) {
    if (amp::Cast c = amp::autocast(amp::Op::Prod, {x})) return core::prod(c[0], dim, keepdim);
  }
  EMBER_ASSIGN_OR_RETURN(const uint32_t mask, single_dim_mask(dim, x.dim()));
  EMBER_ASSIGN_OR_RETURN(const Tensor in, core::to(x, sum_dtype(x, dtype)));
  return reduce(OpKind::Prod, in, mask, keepdim);
}

Result<Tensor> core::var(const Tensor& x, std::optional<std::vector<int64_t>> dims, int64_t correction,
                         bool keepdim) {
  EMBER_TRY(check_var_dtype(x));
  EMBER_ASSIGN_OR_RETURN(const uint32_t mask, dims ? dim_mask(*dims, x.dim()) : all_dims(x.dim()));
  ReduceParams params;
  params.correction = correction;
  return reduce(OpKind::Var, x, mask, keepdim, params);
}

Result<Tensor> core::std(const Tensor& x, std::optional<std::vector<int64_t>> dims, int64_t correction,
                         bool keepdim) {
  EMBER_TRY(check_var_dtype(x));
  Tensor out;
  {
    NoGradGuard no_grad;
    EMBER_ASSIGN_OR_RETURN(const Tensor v, core::var(x, dims, correction, keepdim));
    EMBER_ASSIGN_OR_RETURN(out, core::sqrt(v));
  }
  // var() accepted the dims, so the mask cannot fail here.
  EMBER_ASSIGN_OR_RETURN(const uint32_t mask, dims ? dim_mask(*dims, x.dim()) : all_dims(x.dim()));
  // StdBackward0 reads x and the result; its ints are Var's.
  if (Node* n = autograd::record(GradRule::Std, out, {x})) {
    n->ints = {mask, keepdim ? 1 : 0, correction};
    n->save(x).save(out);
  }
  return out;
}

Result<Tensor> core::norm(const Tensor& x, double p, IntArrayRef dims, bool keepdim) {
  if (amp::Cast c = amp::autocast(amp::Op::Norm, {x})) return core::norm(c[0], p, dims, keepdim);
  EMBER_CHECK(x.is_floating_point(), Status::DTypeMismatch,
              "norm(): input dtype should be either floating point or complex. Got ",
              dtype_legacy_name(x.dtype()), " instead.");
  EMBER_ASSIGN_OR_RETURN(const uint32_t mask, dim_mask(dims, x.dim()));
  ReduceParams params;
  params.p = p;
  return reduce(OpKind::Norm, x, mask, keepdim, params);
}

Result<Tensor> core::max(const Tensor& x) { return all_extreme(OpKind::Max, x, "max"); }
Result<Tensor> core::min(const Tensor& x) { return all_extreme(OpKind::Min, x, "min"); }

Result<std::pair<Tensor, Tensor>> core::max(const Tensor& x, int64_t dim, bool keepdim) {
  EMBER_ASSIGN_OR_RETURN(const uint32_t mask, single_dim_mask(dim, x.dim()));
  EMBER_TRY(check_nonempty_dim(x, dim, "max"));
  return extreme(OpKind::Max, x, mask, keepdim);
}

Result<std::pair<Tensor, Tensor>> core::min(const Tensor& x, int64_t dim, bool keepdim) {
  EMBER_ASSIGN_OR_RETURN(const uint32_t mask, single_dim_mask(dim, x.dim()));
  EMBER_TRY(check_nonempty_dim(x, dim, "min"));
  return extreme(OpKind::Min, x, mask, keepdim);
}

Result<Tensor> core::argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme(OpKind::ArgMax, x, dim, keepdim, "argmax");
}

Result<Tensor> core::argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme(OpKind::ArgMin, x, dim, keepdim, "argmin");
}

Tensor sum(const Tensor& x, std::optional<DType> dtype) { return unwrap(core::sum(x, dtype)); }
Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  return unwrap(core::sum(x, dims, keepdim, dtype));
}
Tensor mean(const Tensor& x, std::optional<DType> dtype) { return unwrap(core::mean(x, dtype)); }
Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  return unwrap(core::mean(x, dims, keepdim, dtype));
}
Tensor prod(const Tensor& x, std::optional<DType> dtype) { return unwrap(core::prod(x, dtype)); }
Tensor prod(const Tensor& x, int64_t dim, bool keepdim, std::optional<DType> dtype) {
  return unwrap(core::prod(x, dim, keepdim, dtype));
}
Tensor var(const Tensor& x, std::optional<std::vector<int64_t>> dims, int64_t correction, bool keepdim) {
  return unwrap(core::var(x, std::move(dims), correction, keepdim));
}
Tensor std(const Tensor& x, std::optional<std::vector<int64_t>> dims, int64_t correction, bool keepdim) {
  return unwrap(core::std(x, std::move(dims), correction, keepdim));
}
Tensor norm(const Tensor& x, double p, IntArrayRef dims, bool keepdim) {
  return unwrap(core::norm(x, p, dims, keepdim));
}
Tensor max(const Tensor& x) { return unwrap(core::max(x)); }
Tensor min(const Tensor& x) { return unwrap(core::min(x)); }
std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return unwrap(core::max(x, dim, keepdim));
}
std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return unwrap(core::min(x, dim, keepdim));
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return unwrap(core::argmax(x, dim, keepdim));
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return unwrap(core::argmin(x, dim, keepdim));
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
