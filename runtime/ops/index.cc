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
std::vector<int64_t> host_indices(const Tensor& index) {
  NoGradGuard no_grad;
  return index.to(Device(DeviceType::CPU)).to(DType::Int64).contiguous().to_vector<int64_t>();
}

void check_bounds(const Tensor& index, int64_t dim, int64_t size) {
  for (int64_t i : host_indices(index)) {
    EMBER_ENFORCE(i >= 0 && i < size, Status::OutOfRange, "index ", i, " is out of bounds for dimension ", dim,
                " with size ", size);
  }
}

int64_t dim_size(const Tensor& x, int64_t d) { return x.dim() == 0 ? 1 : x.size(d); }

// The GatherElements kernel, without checks or autograd (index int64/int32, checked).
Tensor gather_kernel(const Tensor& x, int64_t d, const Tensor& index) {
  Tensor out = empty(index.sizes(), TensorOptions(x.dtype()).device(x.device()));
  if (out.numel() > 0) unwrap(run_kernel(OpKind::GatherElements, {x, index}, {out}, AxisParams{d}));
  return out;
}

}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  EMBER_ENFORCE(index.dtype() == DType::Int64, Status::DTypeMismatch, "gather(): Expected dtype int64 for index");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1));
  unwrap(check_same_device({x, index}));
  EMBER_ENFORCE(index.dim() == x.dim(), Status::ShapeMismatch,
              "Index tensor must have the same number of dimensions as input tensor");
  for (int64_t k = 0; k < x.dim(); ++k) {
    EMBER_ENFORCE(k == d || index.size(k) <= x.size(k), Status::ShapeMismatch, "Size does not match at dimension ", k,
                " expected index ", shape_str(index.sizes()), " to be smaller than self ", shape_str(x.sizes()),
                " apart from dimension ", d);
  }
  check_bounds(index, d, dim_size(x, d));
  Tensor out = gather_kernel(x, d, index);
  if (Node* n = autograd::record(GradRule::Gather, out, {x})) {
    n->save(index);
    n->ints = {d};
  }
  return out;
}

namespace {

Tensor scatter_impl(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, bool is_value,
                    ScatterReduction reduction, GradRule rule, const char* name) {
  EMBER_ENFORCE(index.dtype() == DType::Int64, Status::DTypeMismatch, name, "(): Expected dtype int64 for index");
  EMBER_ENFORCE(src.dtype() == x.dtype(), Status::DTypeMismatch, name,
              "(): Expected self.dtype to be equal to src.dtype");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1));
  unwrap(check_same_device({x, index, src}));
  EMBER_ENFORCE(index.dim() == x.dim(), Status::ShapeMismatch,
              "Index tensor must have the same number of dimensions as self tensor");
  EMBER_ENFORCE(is_value || src.dim() == x.dim(), Status::ShapeMismatch,
              "Index tensor must have the same number of dimensions as src tensor");
  bool ok = true;
  for (int64_t k = 0; k < x.dim(); ++k) {
    ok = ok && (k == d || index.size(k) <= x.size(k)) && (is_value || index.size(k) <= src.size(k));
  }
  EMBER_ENFORCE(ok, Status::ShapeMismatch, "Expected index ", shape_str(index.sizes()), " to be smaller than self ",
              shape_str(x.sizes()), " apart from dimension ", d,
              is_value ? std::string() : str_cat(" and to be smaller size than src ", shape_str(src.sizes())));
  check_bounds(index, d, dim_size(x, d));
  Tensor out = empty(x.sizes(), TensorOptions(x.dtype()).device(x.device()));
  if (out.numel() > 0) unwrap(run_kernel(OpKind::ScatterElements, {x, index, src}, {out}, ScatterParams{d, reduction}));
  const Tensor none;
  if (Node* n = autograd::record(rule, out, {x, is_value ? none : src})) {
    n->save(index);
    n->ints = {d, reduction == ScatterReduction::None ? 0 : 1};
  }
  return out;
}

ScatterReduction scatter_reduction(std::string_view reduce) {
  if (reduce.empty()) return ScatterReduction::None;
  if (reduce == "add") return ScatterReduction::Add;
  if (reduce == "multiply") return ScatterReduction::Mul;
  raise_error(Status::InvalidArgument, "reduce argument must be either add or multiply.");
}

}  // namespace

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) {
  return scatter_impl(x, dim, index, src, false, scatter_reduction(reduce), GradRule::Scatter, "scatter");
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value, std::string_view reduce) {
  const Tensor v = scalar_tensor(value, TensorOptions(x.dtype()).device(x.device())).expand(index.sizes());
  return scatter_impl(x, dim, index, v, true, scatter_reduction(reduce), GradRule::ScatterValue, "scatter");
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl(x, dim, index, src, false, ScatterReduction::Add, GradRule::ScatterAdd, "scatter_add");
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  EMBER_ENFORCE(index.dim() <= 1, Status::OutOfRange, "index_select(): Index is supposed to be a vector");
  EMBER_ENFORCE(index.dtype() == DType::Int64 || index.dtype() == DType::Int32, Status::DTypeMismatch,
              "index_select(): Expected dtype int32 or int64 for index");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1));
  unwrap(check_same_device({x, index}));
  const int64_t size = dim_size(x, d);
  for (int64_t i : host_indices(index)) {
    EMBER_ENFORCE(i >= 0 && i < size, Status::OutOfRange, "index out of range in self");
  }
  const Tensor x1 = x.dim() == 0 ? x.reshape({1}) : x;
  Shape at(static_cast<size_t>(x1.dim()), 1), out_shape = x1.sizes();
  at[static_cast<size_t>(d)] = out_shape[static_cast<size_t>(d)] = index.numel();
  Tensor out;
  {
    NoGradGuard no_grad;
    out = gather_kernel(x1, d, index.reshape(at).expand(out_shape));
    if (x.dim() == 0) out = out.reshape(index.sizes());
  }
  if (Node* n = autograd::record(GradRule::IndexSelect, out, {x})) {
    n->save(index);
    n->ints = {d};
  }
  return out;
}

namespace {

Tensor masked_fill_impl(const Tensor& x, const Tensor& mask, const Tensor& value) {
  EMBER_ENFORCE(mask.dtype() == DType::Bool, Status::DTypeMismatch,
              "masked_fill_ only supports boolean masks, but got mask with dtype ", dtype_name(mask.dtype()));
  unwrap(check_same_device({x, mask}));
  const Shape shape = broadcast_shapes(x.sizes(), mask.sizes());
  Tensor out;
  {
    NoGradGuard no_grad;
    out = where(mask, value.to(x.dtype()).to(x.device()), x).expand(shape).contiguous();
  }
  if (Node* n = autograd::record(GradRule::MaskedFill, out, {x, value})) n->save(mask);
  return out;
}

}  // namespace

Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  return masked_fill_impl(x, mask, scalar_tensor(value, TensorOptions(x.dtype())));
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  EMBER_ENFORCE(value.dim() == 0, Status::InvalidArgument,
              "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ", value.dim(),
              " dimension(s).");
  return masked_fill_impl(x, mask, value);
}

Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim) {
  EMBER_ENFORCE(indices.dtype() == DType::Int64, Status::DTypeMismatch,
              "torch.take_along_dim(): dtype of indices should be Long but got ", dtype_legacy_name(indices.dtype()));
  if (!dim) return gather(x.reshape({-1}), 0, indices.reshape({-1}));
  const int64_t d = wrap_dim(*dim, std::max<int64_t>(x.dim(), 1));
  EMBER_ENFORCE(x.dim() == indices.dim(), Status::ShapeMismatch,
              "torch.take_along_dim(): input and indices should have the same number of dimensions, but got ",
              x.dim(), " dimensions for input, and ", indices.dim(), " dimensions for indices");
  if (x.dim() == 0) return gather(x, d, indices);
  Shape s = x.sizes();
  s[static_cast<size_t>(d)] = indices.size(d);
  Shape shape = broadcast_shapes(s, indices.sizes());
  const Tensor idx = indices.expand(shape);
  shape[static_cast<size_t>(d)] = x.size(d);
  return gather(x.expand(shape), d, idx);
}

// --- ONNX's GatherElements and ScatterElements (ops.def RT_OP_P: the executor's front-ends) ---

namespace {

int64_t onnx_axis_of(int64_t axis, int64_t rank, const char* what) {
  EMBER_ENFORCE(axis >= -rank && axis < rank, Status::OutOfRange, what, " ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

// index with negative entries wrapped by `size` and each checked, as an int64
// tensor on `device` (the data's: the executor reads indices on the host).
Tensor wrapped_index(const Tensor& index, int64_t size, Device device, const char* op) {
  EMBER_ENFORCE(index.dtype() == DType::Int64 || index.dtype() == DType::Int32, Status::DTypeMismatch, op,
              " indices must be int64 or int32, got ", dtype_name(index.dtype()));
  Tensor host = index.to(Device(DeviceType::CPU)).to(DType::Int64).contiguous();
  if (host.is_alias_of(index)) host = host.clone();
  int64_t* p = host.data_ptr<int64_t>();
  for (int64_t i = 0; i < host.numel(); ++i) {
    EMBER_ENFORCE(p[i] >= -size && p[i] < size, Status::OutOfRange, op, " index ", p[i],
                " is out of range for an axis of size ", size);
    if (p[i] < 0) p[i] += size;
  }
  return host.to(device);
}

}  // namespace

Tensor gather_elements(const Tensor& data, const Tensor& index, const AxisParams& params) {
  EMBER_ENFORCE(data.dim() >= 1, Status::InvalidArgument, "GatherElements needs data of rank >= 1");
  const int64_t a = onnx_axis_of(params.axis, data.dim(), "GatherElements axis");
  return gather(data, a, wrapped_index(index, data.size(a), data.device(), "GatherElements"));
}

Tensor scatter_elements(const Tensor& data, const Tensor& index, const Tensor& updates, const ScatterParams& params) {
  EMBER_ENFORCE(data.dim() >= 1, Status::InvalidArgument, "ScatterElements needs data of rank >= 1");
  const int64_t a = onnx_axis_of(params.axis, data.dim(), "ScatterElements axis");
  const Tensor idx = wrapped_index(index, data.size(a), data.device(), "ScatterElements");
  EMBER_ENFORCE(updates.sizes() == index.sizes(), Status::ShapeMismatch, "ScatterElements updates ",
              shape_str(updates.sizes()), " and indices ", shape_str(index.sizes()), " differ in shape");
  EMBER_ENFORCE(updates.dtype() == data.dtype(), Status::DTypeMismatch, "ScatterElements updates are ",
              dtype_name(updates.dtype()), ", data ", dtype_name(data.dtype()));
  for (int64_t d = 0; d < data.dim(); ++d) {
    EMBER_ENFORCE(index.dim() == data.dim() && (d == a || index.size(d) <= data.size(d)), Status::ShapeMismatch,
                "ScatterElements indices ", shape_str(index.sizes()), " do not fit data ", shape_str(data.sizes()));
  }
  // The kernel itself: the eager scatter has no max/min reduction.
  Tensor out = empty(data.sizes(), TensorOptions(data.dtype()).device(data.device()));
  if (out.numel() > 0) unwrap(run_kernel(OpKind::ScatterElements, {data, idx, updates}, {out}, ScatterParams{a, params.reduction}));
  return out;
}

}  // namespace ember
