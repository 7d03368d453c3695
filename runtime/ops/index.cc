// Indexing along a dim: gather, scatter, scatter_add, index_select,
// masked_fill, take_along_dim (PyTorch's checks and messages). gather,
// index_select and take_along_dim run the GatherElements kernel, scatter and
// scatter_add ScatterElements; indices are checked on the host first.
#include <algorithm>

#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {

namespace {

// The values of an index tensor, read on the host.
Result<std::vector<int64_t>> host_indices(const Tensor& index) {
  NoGradGuard no_grad;
  EMBER_ASSIGN_OR_RETURN(Tensor host, core::to(index, Device(DeviceType::CPU)));
  EMBER_ASSIGN_OR_RETURN(host, core::to(host, DType::Int64));
  EMBER_ASSIGN_OR_RETURN(host, core::contiguous(host));
  return host.to_vector<int64_t>();
}

Status check_bounds(const Tensor& index, int64_t dim, int64_t size) {
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> values, host_indices(index));
  for (int64_t i : values) {
    EMBER_CHECK(i >= 0 && i < size, Status::OutOfRange, "index ", i, " is out of bounds for dimension ", dim,
                " with size ", size);
  }
  return Status::Ok;
}

int64_t dim_size(const Tensor& x, int64_t d) { return x.dim() == 0 ? 1 : x.size(d); }

// The GatherElements kernel, without checks or autograd (index int64/int32, checked).
Result<Tensor> gather_kernel(const Tensor& x, int64_t d, const Tensor& index) {
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty(index.sizes(), TensorOptions(x.dtype()).device(x.device())));
  if (out.numel() > 0) EMBER_TRY(run_kernel(OpKind::GatherElements, {x, index}, {out}, AxisParams{d}));
  return out;
}

}  // namespace

Result<Tensor> core::gather(const Tensor& x, int64_t dim, const Tensor& index) {
  EMBER_CHECK(index.dtype() == DType::Int64, Status::DTypeMismatch, "gather(): Expected dtype int64 for index");
  EMBER_ASSIGN_OR_RETURN(const int64_t d, core::wrap_dim(dim, std::max<int64_t>(x.dim(), 1)));
  EMBER_TRY(check_same_device({x, index}));
  EMBER_CHECK(index.dim() == x.dim(), Status::ShapeMismatch,
              "Index tensor must have the same number of dimensions as input tensor");
  for (int64_t k = 0; k < x.dim(); ++k) {
    EMBER_CHECK(k == d || index.size(k) <= x.size(k), Status::ShapeMismatch, "Size does not match at dimension ", k,
                " expected index ", shape_str(index.sizes()), " to be smaller than self ", shape_str(x.sizes()),
                " apart from dimension ", d);
  }
  EMBER_TRY(check_bounds(index, d, dim_size(x, d)));
  EMBER_ASSIGN_OR_RETURN(Tensor out, gather_kernel(x, d, index));
  if (Node* n = autograd::record(GradRule::Gather, out, {x})) {
    n->save(index);
    n->ints = {d};
  }
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) { return unwrap(core::gather(x, dim, index)); }

namespace {

Result<Tensor> scatter_impl(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, bool is_value,
                            ScatterReduction reduction, GradRule rule, const char* name) {
  EMBER_CHECK(index.dtype() == DType::Int64, Status::DTypeMismatch, name, "(): Expected dtype int64 for index");
  EMBER_CHECK(src.dtype() == x.dtype(), Status::DTypeMismatch, name,
              "(): Expected self.dtype to be equal to src.dtype");
  EMBER_ASSIGN_OR_RETURN(const int64_t d, core::wrap_dim(dim, std::max<int64_t>(x.dim(), 1)));
  EMBER_TRY(check_same_device({x, index, src}));
  EMBER_CHECK(index.dim() == x.dim(), Status::ShapeMismatch,
              "Index tensor must have the same number of dimensions as self tensor");
  EMBER_CHECK(is_value || src.dim() == x.dim(), Status::ShapeMismatch,
              "Index tensor must have the same number of dimensions as src tensor");
  bool ok = true;
  for (int64_t k = 0; k < x.dim(); ++k) {
    ok = ok && (k == d || index.size(k) <= x.size(k)) && (is_value || index.size(k) <= src.size(k));
  }
  EMBER_CHECK(ok, Status::ShapeMismatch, "Expected index ", shape_str(index.sizes()), " to be smaller than self ",
              shape_str(x.sizes()), " apart from dimension ", d,
              is_value ? std::string() : str_cat(" and to be smaller size than src ", shape_str(src.sizes())));
  EMBER_TRY(check_bounds(index, d, dim_size(x, d)));
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty(x.sizes(), TensorOptions(x.dtype()).device(x.device())));
  if (out.numel() > 0) {
    EMBER_TRY(run_kernel(OpKind::ScatterElements, {x, index, src}, {out}, ScatterParams{d, reduction}));
  }
  const Tensor none;
  if (Node* n = autograd::record(rule, out, {x, is_value ? none : src})) {
    n->save(index);
    n->ints = {d, reduction == ScatterReduction::None ? 0 : 1};
  }
  return out;
}

Result<ScatterReduction> scatter_reduction(std::string_view reduce) {
  if (reduce.empty()) return ScatterReduction::None;
  if (reduce == "add") return ScatterReduction::Add;
  if (reduce == "multiply") return ScatterReduction::Mul;
  return fail(Status::InvalidArgument, "reduce argument must be either add or multiply.");
}

}  // namespace

Result<Tensor> core::scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                             std::string_view reduce) {
  EMBER_ASSIGN_OR_RETURN(const ScatterReduction reduction, scatter_reduction(reduce));
  return scatter_impl(x, dim, index, src, false, reduction, GradRule::Scatter, "scatter");
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) {
  return unwrap(core::scatter(x, dim, index, src, reduce));
}

Result<Tensor> core::scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value,
                             std::string_view reduce) {
  // scalar_tensor(value, options) with the dtype given is full({}, value, options).
  EMBER_ASSIGN_OR_RETURN(const Tensor scalar, core::full({}, value, TensorOptions(x.dtype()).device(x.device())));
  EMBER_ASSIGN_OR_RETURN(const Tensor v, core::expand(scalar, index.sizes()));
  EMBER_ASSIGN_OR_RETURN(const ScatterReduction reduction, scatter_reduction(reduce));
  return scatter_impl(x, dim, index, v, true, reduction, GradRule::ScatterValue, "scatter");
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value, std::string_view reduce) {
  return unwrap(core::scatter(x, dim, index, value, reduce));
}

Result<Tensor> core::scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl(x, dim, index, src, false, ScatterReduction::Add, GradRule::ScatterAdd, "scatter_add");
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return unwrap(core::scatter_add(x, dim, index, src));
}

Result<Tensor> core::index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  EMBER_CHECK(index.dim() <= 1, Status::OutOfRange, "index_select(): Index is supposed to be a vector");
  EMBER_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32, Status::DTypeMismatch,
              "index_select(): Expected dtype int32 or int64 for index");
  EMBER_ASSIGN_OR_RETURN(const int64_t d, core::wrap_dim(dim, std::max<int64_t>(x.dim(), 1)));
  EMBER_TRY(check_same_device({x, index}));
  const int64_t size = dim_size(x, d);
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> values, host_indices(index));
  for (int64_t i : values) {
    EMBER_CHECK(i >= 0 && i < size, Status::OutOfRange, "index out of range in self");
  }
  Tensor x1 = x;
  if (x.dim() == 0) {
    EMBER_ASSIGN_OR_RETURN(x1, core::reshape(x, {1}));
  }
  Shape at(static_cast<size_t>(x1.dim()), 1), out_shape = x1.sizes();
  at[static_cast<size_t>(d)] = out_shape[static_cast<size_t>(d)] = index.numel();
  Tensor out;
  {
    NoGradGuard no_grad;
    EMBER_ASSIGN_OR_RETURN(Tensor idx, core::reshape(index, at));
    EMBER_ASSIGN_OR_RETURN(idx, core::expand(idx, out_shape));
    EMBER_ASSIGN_OR_RETURN(out, gather_kernel(x1, d, idx));
    if (x.dim() == 0) {
      EMBER_ASSIGN_OR_RETURN(out, core::reshape(out, index.sizes()));
    }
  }
  if (Node* n = autograd::record(GradRule::IndexSelect, out, {x})) {
    n->save(index);
    n->ints = {d};
  }
  return out;
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  return unwrap(core::index_select(x, dim, index));
}

namespace {

Result<Tensor> masked_fill_impl(const Tensor& x, const Tensor& mask, const Tensor& value) {
  EMBER_CHECK(mask.dtype() == DType::Bool, Status::DTypeMismatch,
              "masked_fill_ only supports boolean masks, but got mask with dtype ", dtype_name(mask.dtype()));
  EMBER_TRY(check_same_device({x, mask}));
  EMBER_ASSIGN_OR_RETURN(const Shape shape, core::broadcast_shapes(x.sizes(), mask.sizes()));
  Tensor out;
  {
    NoGradGuard no_grad;
    EMBER_ASSIGN_OR_RETURN(Tensor v, core::to(value, x.dtype()));
    EMBER_ASSIGN_OR_RETURN(v, core::to(v, x.device()));
    EMBER_ASSIGN_OR_RETURN(out, core::where(mask, v, x));
    EMBER_ASSIGN_OR_RETURN(out, core::expand(out, shape));
    EMBER_ASSIGN_OR_RETURN(out, core::contiguous(out));
  }
  if (Node* n = autograd::record(GradRule::MaskedFill, out, {x, value})) n->save(mask);
  return out;
}

}  // namespace

Result<Tensor> core::masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  EMBER_ASSIGN_OR_RETURN(const Tensor scalar, core::full({}, value, TensorOptions(x.dtype())));
  return masked_fill_impl(x, mask, scalar);
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  return unwrap(core::masked_fill(x, mask, value));
}

Result<Tensor> core::masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  EMBER_CHECK(value.dim() == 0, Status::InvalidArgument,
              "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ", value.dim(),
              " dimension(s).");
  return masked_fill_impl(x, mask, value);
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  return unwrap(core::masked_fill(x, mask, value));
}

Result<Tensor> core::take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim) {
  EMBER_CHECK(indices.dtype() == DType::Int64, Status::DTypeMismatch,
              "torch.take_along_dim(): dtype of indices should be Long but got ", dtype_legacy_name(indices.dtype()));
  if (!dim) {
    EMBER_ASSIGN_OR_RETURN(const Tensor flat_x, core::reshape(x, {-1}));
    EMBER_ASSIGN_OR_RETURN(const Tensor flat_indices, core::reshape(indices, {-1}));
    return core::gather(flat_x, 0, flat_indices);
  }
  EMBER_ASSIGN_OR_RETURN(const int64_t d, core::wrap_dim(*dim, std::max<int64_t>(x.dim(), 1)));
  EMBER_CHECK(x.dim() == indices.dim(), Status::ShapeMismatch,
              "torch.take_along_dim(): input and indices should have the same number of dimensions, but got ",
              x.dim(), " dimensions for input, and ", indices.dim(), " dimensions for indices");
  if (x.dim() == 0) return core::gather(x, d, indices);
  Shape s = x.sizes();
  s[static_cast<size_t>(d)] = indices.size(d);
  EMBER_ASSIGN_OR_RETURN(Shape shape, core::broadcast_shapes(s, indices.sizes()));
  EMBER_ASSIGN_OR_RETURN(const Tensor idx, core::expand(indices, shape));
  shape[static_cast<size_t>(d)] = x.size(d);
  EMBER_ASSIGN_OR_RETURN(const Tensor expanded, core::expand(x, shape));
  return core::gather(expanded, d, idx);
}

Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim) {
  return unwrap(core::take_along_dim(x, indices, dim));
}

// --- ONNX's GatherElements and ScatterElements (ops.def RT_OP_P: the executor's front-ends) ---

namespace {

Result<int64_t> onnx_axis_of(int64_t axis, int64_t rank, const char* what) {
  EMBER_CHECK(axis >= -rank && axis < rank, Status::OutOfRange, what, " ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

// index with negative entries wrapped by `size` and each checked, as an int64
// tensor on `device` (the data's: the executor reads indices on the host).
Result<Tensor> wrapped_index(const Tensor& index, int64_t size, Device device, const char* op) {
  EMBER_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32, Status::DTypeMismatch, op,
              " indices must be int64 or int32, got ", dtype_name(index.dtype()));
  EMBER_ASSIGN_OR_RETURN(Tensor host, core::to(index, Device(DeviceType::CPU)));
  EMBER_ASSIGN_OR_RETURN(host, core::to(host, DType::Int64));
  EMBER_ASSIGN_OR_RETURN(host, core::contiguous(host));
  if (host.is_alias_of(index)) {
    EMBER_ASSIGN_OR_RETURN(host, core::clone(host));
  }
  int64_t* p = host.data_ptr<int64_t>();
  for (int64_t i = 0; i < host.numel(); ++i) {
    EMBER_CHECK(p[i] >= -size && p[i] < size, Status::OutOfRange, op, " index ", p[i],
                " is out of range for an axis of size ", size);
    if (p[i] < 0) p[i] += size;
  }
  return core::to(host, device);
}

}  // namespace

Result<Tensor> core::gather_elements(const Tensor& data, const Tensor& index, const AxisParams& params) {
  EMBER_CHECK(data.dim() >= 1, Status::InvalidArgument, "GatherElements needs data of rank >= 1");
  EMBER_ASSIGN_OR_RETURN(const int64_t a, onnx_axis_of(params.axis, data.dim(), "GatherElements axis"));
  EMBER_ASSIGN_OR_RETURN(const Tensor idx, wrapped_index(index, data.size(a), data.device(), "GatherElements"));
  return core::gather(data, a, idx);
}

Tensor gather_elements(const Tensor& data, const Tensor& index, const AxisParams& params) {
  return unwrap(core::gather_elements(data, index, params));
}

Result<Tensor> core::scatter_elements(const Tensor& data, const Tensor& index, const Tensor& updates,
                                      const ScatterParams& params) {
  EMBER_CHECK(data.dim() >= 1, Status::InvalidArgument, "ScatterElements needs data of rank >= 1");
  EMBER_ASSIGN_OR_RETURN(const int64_t a, onnx_axis_of(params.axis, data.dim(), "ScatterElements axis"));
  EMBER_ASSIGN_OR_RETURN(const Tensor idx, wrapped_index(index, data.size(a), data.device(), "ScatterElements"));
  EMBER_CHECK(updates.sizes() == index.sizes(), Status::ShapeMismatch, "ScatterElements updates ",
              shape_str(updates.sizes()), " and indices ", shape_str(index.sizes()), " differ in shape");
  EMBER_CHECK(updates.dtype() == data.dtype(), Status::DTypeMismatch, "ScatterElements updates are ",
              dtype_name(updates.dtype()), ", data ", dtype_name(data.dtype()));
  for (int64_t d = 0; d < data.dim(); ++d) {
    EMBER_CHECK(index.dim() == data.dim() && (d == a || index.size(d) <= data.size(d)), Status::ShapeMismatch,
                "ScatterElements indices ", shape_str(index.sizes()), " do not fit data ", shape_str(data.sizes()));
  }
  // The kernel itself: the eager scatter has no max/min reduction.
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty(data.sizes(), TensorOptions(data.dtype()).device(data.device())));
  if (out.numel() > 0) {
    EMBER_TRY(run_kernel(OpKind::ScatterElements, {data, idx, updates}, {out}, ScatterParams{a, params.reduction}));
  }
  return out;
}

Tensor scatter_elements(const Tensor& data, const Tensor& index, const Tensor& updates, const ScatterParams& params) {
  return unwrap(core::scatter_elements(data, index, updates, params));
}

}  // namespace ember
