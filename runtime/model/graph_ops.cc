// Graph ops with ONNX semantics (graph_ops.h): they return a Status and leave
// the message for the thread (error.h), composed from the tensor layer's and
// the ops' Status-returning cores.
#include "runtime/model/graph_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "runtime/core/error.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {
namespace {

Result<Shape> to_shape(const std::vector<int64_t>& v, const char* what) {
  for (int64_t d : v) {
    EMBER_CHECK(d >= 0, Status::InvalidArgument, "negative dim ", d, " in the ", what, " ", shape_str(v));
  }
  return v;
}

// One axis of a slice with a negative step: the picked elements, walking down
// from start, as a view in ascending order reversed by a gather.
Result<Tensor> slice_down(const Tensor& x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  const int64_t dim = x.size(axis);
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  start = std::clamp<int64_t>(start, 0, dim - 1);  // dim 0: start -1, nothing picked
  end = std::clamp<int64_t>(end, -1, dim - 1);
  if (start <= end) return core::narrow(x, axis, 0, 0);  // nothing picked
  // -INT64_MIN does not exist: Tensor::slice's refusal of the step it became.
  EMBER_CHECK(step != std::numeric_limits<int64_t>::min(), Status::InvalidArgument, "slice step must be positive");
  const int64_t count = (start - end - 1) / -step + 1;
  const int64_t lowest = start + (count - 1) * step;
  EMBER_ASSIGN_OR_RETURN(const Tensor up, core::slice(x, axis, lowest, start + 1, -step));  // `count`, ascending
  std::vector<int64_t> reversed(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) reversed[static_cast<size_t>(i)] = count - 1 - i;
  return onnx_gather(up, tensor(reversed, {count}), axis);
}

}  // namespace

Result<std::vector<int64_t>> read_ints(const Tensor& t, const char* what) {
  EMBER_CHECK(t.defined(), Status::InvalidArgument, "the ", what, " input is missing");
  EMBER_CHECK(t.device().type() == DeviceType::CPU, Status::DeviceMismatch, "the ", what,
              " input must be a CPU tensor");
  EMBER_CHECK(t.dtype() == DType::Int64 || t.dtype() == DType::Int32, Status::DTypeMismatch, "the ", what,
              " input must be int64, got ", dtype_name(t.dtype()));
  EMBER_CHECK(t.dim() <= 1, Status::ShapeMismatch, "the ", what, " input must be 1-D, got shape ",
              shape_str(t.sizes()));
  const int64_t n = t.numel();
  const int64_t stride = t.dim() == 1 ? t.stride(0) : 1;
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (t.dtype() == DType::Int64) {
      v[static_cast<size_t>(i)] = t.data_ptr<int64_t>()[i * stride];
    } else {
      v[static_cast<size_t>(i)] = t.data_ptr<int32_t>()[i * stride];
    }
  }
  return v;
}

Result<int64_t> onnx_axis(int64_t axis, int64_t rank, const char* what, bool inclusive) {
  const int64_t hi = inclusive ? rank : rank - 1;
  EMBER_CHECK(axis >= -rank && axis <= hi, Status::OutOfRange, what, " ", axis, " is out of range for rank ",
              rank);
  return axis < 0 ? axis + rank : axis;
}

Result<Tensor> onnx_reshape(const Tensor& x, const std::vector<int64_t>& spec, bool allow_zero) {
  Shape shape(spec.size());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allow_zero) {
      EMBER_CHECK(static_cast<int64_t>(i) < x.dim(), Status::ShapeMismatch, "shape entry ", i,
                  " is 0 (copy the input dim) but the input ", shape_str(x.sizes()), " has rank ", x.dim());
      d = x.size(static_cast<int64_t>(i));
    } else if (d == -1) {
      EMBER_CHECK(infer < 0, Status::InvalidArgument, "shape ", shape_str(spec), " has more than one -1");
      infer = static_cast<int>(i);
      continue;
    }
    EMBER_CHECK(d >= 0, Status::InvalidArgument, "invalid shape entry ", d, " in ", shape_str(spec));
    shape[i] = d;
    known *= d;
  }
  if (infer >= 0) {
    EMBER_CHECK(known != 0 && x.numel() % known == 0, Status::ShapeMismatch, "cannot reshape ",
                shape_str(x.sizes()), " into ", shape_str(spec));
    shape[static_cast<size_t>(infer)] = x.numel() / known;
  }
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  EMBER_CHECK(n == x.numel(), Status::ShapeMismatch, "cannot reshape ", shape_str(x.sizes()), " (",
              x.numel(), " elements) into ", shape_str(spec));
  return core::reshape(x, shape);
}

Result<Tensor> onnx_flatten(const Tensor& x, int64_t axis_param) {
  EMBER_ASSIGN_OR_RETURN(const int64_t axis, onnx_axis(axis_param, x.dim(), "flatten axis", true));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < x.dim(); ++d) (d < axis ? outer : inner) *= x.size(d);
  return core::reshape(x, {outer, inner});
}

Result<Tensor> onnx_squeeze(const Tensor& x, const std::vector<int64_t>& axes) {
  std::vector<bool> drop(static_cast<size_t>(x.dim()), false);
  for (int64_t a : axes) {
    EMBER_ASSIGN_OR_RETURN(const int64_t d, onnx_axis(a, x.dim(), "squeeze axis"));
    EMBER_CHECK(x.size(d) == 1, Status::ShapeMismatch, "cannot squeeze dim ", a, " of size ", x.size(d),
                " (shape ", shape_str(x.sizes()), ")");
    drop[static_cast<size_t>(d)] = true;
  }
  Shape shape;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const bool squeezed = axes.empty() ? x.size(d) == 1 : static_cast<bool>(drop[static_cast<size_t>(d)]);
    if (!squeezed) shape.push_back(x.size(d));
  }
  return core::reshape(x, shape);
}

Result<Tensor> onnx_unsqueeze(const Tensor& x, const std::vector<int64_t>& axes) {
  const int64_t rank = x.dim() + static_cast<int64_t>(axes.size());
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    EMBER_ASSIGN_OR_RETURN(const int64_t d, onnx_axis(a, rank, "unsqueeze axis"));
    EMBER_CHECK(!inserted[static_cast<size_t>(d)], Status::InvalidArgument, "unsqueeze axis ", a, " is repeated");
    inserted[static_cast<size_t>(d)] = true;
  }
  Shape shape;
  int64_t src = 0;
  for (int64_t d = 0; d < rank; ++d) shape.push_back(inserted[static_cast<size_t>(d)] ? 1 : x.size(src++));
  return core::reshape(x, shape);
}

Result<Tensor> onnx_transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  if (!perm.empty()) return core::permute(x, perm);
  std::vector<int64_t> reversed;
  for (int64_t d = x.dim() - 1; d >= 0; --d) reversed.push_back(d);
  return core::permute(x, reversed);
}

Result<Tensor> onnx_concat(const std::vector<Tensor>& xs, int64_t axis_param) {
  EMBER_CHECK(!xs.empty(), Status::InvalidArgument, "concat without inputs");
  EMBER_ASSIGN_OR_RETURN(const int64_t axis, onnx_axis(axis_param, xs[0].dim(), "concat axis"));
  if (xs.size() == 1) return xs[0];
  return core::cat(xs, axis);
}

Result<std::vector<Tensor>> onnx_split(const Tensor& x, int64_t axis_param, const std::vector<int64_t>* sizes,
                                       int64_t n) {
  EMBER_ASSIGN_OR_RETURN(const int64_t axis, onnx_axis(axis_param, x.dim(), "split axis"));
  std::vector<Tensor> parts;
  if (sizes != nullptr) {
    EMBER_CHECK(static_cast<int64_t>(sizes->size()) == n, Status::InvalidArgument, "split has ", sizes->size(),
                " sizes for ", n, " outputs");
    int64_t total = 0;
    for (int64_t s : *sizes) {
      EMBER_CHECK(s >= 0, Status::InvalidArgument, "negative split size ", s);
      total += s;
    }
    EMBER_CHECK(total == x.size(axis), Status::ShapeMismatch, "split sizes ", shape_str(*sizes), " sum to ", total,
                ", but axis ", axis, " has size ", x.size(axis));
    int64_t start = 0;
    for (int64_t s : *sizes) {
      EMBER_ASSIGN_OR_RETURN(Tensor part, core::narrow(x, axis, start, s));  // fails on sizes whose sum wrapped
      parts.push_back(std::move(part));
      start += s;
    }
    return parts;
  }
  EMBER_CHECK(n >= 1, Status::InvalidArgument, "split into ", n, " parts");
  const int64_t dim = x.size(axis);
  const int64_t chunk = (dim + n - 1) / n;
  EMBER_CHECK(chunk * (n - 1) < dim || (dim == 0), Status::ShapeMismatch, "cannot split axis ", axis, " of size ",
              dim, " into ", n, " parts");
  for (int64_t i = 0; i < n; ++i) {
    const int64_t start = std::min(dim, i * chunk);
    EMBER_ASSIGN_OR_RETURN(Tensor part, core::narrow(x, axis, start, std::min(chunk, dim - start)));
    parts.push_back(std::move(part));
  }
  return parts;
}

Result<Tensor> onnx_slice(const Tensor& data, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                          std::vector<int64_t> axes, std::vector<int64_t> steps) {
  EMBER_CHECK(starts.size() == ends.size(), Status::InvalidArgument, "slice has ", starts.size(), " starts but ",
              ends.size(), " ends");
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), int64_t{0});
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  EMBER_CHECK(axes.size() == starts.size() && steps.size() == starts.size(), Status::InvalidArgument, "slice has ",
              starts.size(), " starts, ", axes.size(), " axes and ", steps.size(), " steps");
  Tensor x = data;
  std::vector<bool> seen(static_cast<size_t>(x.dim()), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    EMBER_ASSIGN_OR_RETURN(const int64_t axis, onnx_axis(axes[i], x.dim(), "slice axis"));
    EMBER_CHECK(!seen[static_cast<size_t>(axis)], Status::InvalidArgument, "slice axis ", axes[i], " is repeated");
    seen[static_cast<size_t>(axis)] = true;
    const int64_t step = steps[i];
    EMBER_CHECK(step != 0, Status::InvalidArgument, "Slice with a step of 0");
    if (step < 0) {
      EMBER_ASSIGN_OR_RETURN(x, slice_down(x, axis, starts[i], ends[i], step));
      continue;
    }
    const int64_t dim = x.size(axis);
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    if (end < start) end = start;
    EMBER_ASSIGN_OR_RETURN(x, core::slice(x, axis, start, end, step));
  }
  return x;
}

Result<Tensor> onnx_slice(const Tensor& x, const Tensor& starts, const Tensor& ends, const Tensor& axes,
                          const Tensor& steps) {
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> s, read_ints(starts, "starts"));
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> e, read_ints(ends, "ends"));
  std::vector<int64_t> a, st;
  if (axes.defined()) {
    EMBER_ASSIGN_OR_RETURN(a, read_ints(axes, "axes"));
  }
  if (steps.defined()) {
    EMBER_ASSIGN_OR_RETURN(st, read_ints(steps, "steps"));
  }
  return onnx_slice(x, s, e, std::move(a), std::move(st));
}

Result<Tensor> onnx_gather(const Tensor& data, const Tensor& indices, int64_t axis_param) {
  EMBER_CHECK(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32, Status::DTypeMismatch,
              "gather indices must be int64 or int32, got ", dtype_name(indices.dtype()));
  EMBER_CHECK(data.dim() >= 1, Status::InvalidArgument, "gather needs data of rank >= 1");
  const int64_t rank = data.dim();
  EMBER_ASSIGN_OR_RETURN(const int64_t axis, onnx_axis(axis_param, rank, "gather axis"));
  const int64_t dim = data.size(axis);
  // Indices, wrapped, as a contiguous 1-D int64 tensor.
  EMBER_ASSIGN_OR_RETURN(const Tensor idx_in, core::contiguous(indices));
  const int64_t n = idx_in.numel();
  EMBER_ASSIGN_OR_RETURN(Tensor idx, core::empty({n}, DType::Int64));
  int64_t* out = idx.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v =
        indices.dtype() == DType::Int64 ? idx_in.data_ptr<int64_t>()[i] : idx_in.data_ptr<int32_t>()[i];
    EMBER_CHECK(v >= -dim && v < dim, Status::OutOfRange, "index ", v, " is out of range for axis ", axis_param,
                " of size ", dim);
    out[i] = v < 0 ? v + dim : v;
  }
  if (idx.device() != data.device()) {
    EMBER_ASSIGN_OR_RETURN(idx, core::to(idx, data.device()));
  }
  // data with the axis first, as [dim, rest].
  std::vector<int64_t> perm{axis};
  Shape others;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis) continue;
    perm.push_back(d);
    others.push_back(data.size(d));
  }
  int64_t rest = 1;
  for (int64_t d : others) rest *= d;
  EMBER_ASSIGN_OR_RETURN(const Tensor moved, core::permute(data, perm));
  EMBER_ASSIGN_OR_RETURN(const Tensor table, core::reshape(moved, {dim, rest}));
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::embedding(table, idx));  // [n, rest]
  // -> idx.shape + before + after, then before + idx.shape + after.
  const int64_t q = indices.dim();
  Shape shape = indices.sizes();
  shape.insert(shape.end(), others.begin(), others.end());
  EMBER_ASSIGN_OR_RETURN(y, core::reshape(y, shape));
  std::vector<int64_t> back;
  for (int64_t d = 0; d < axis; ++d) back.push_back(q + d);
  for (int64_t d = 0; d < q; ++d) back.push_back(d);
  for (int64_t d = q + axis; d < q + rank - 1; ++d) back.push_back(d);
  return core::permute(y, back);
}

Result<Tensor> onnx_expand(const Tensor& x, const std::vector<int64_t>& shape) {
  EMBER_ASSIGN_OR_RETURN(const Shape target, to_shape(shape, "shape"));
  EMBER_ASSIGN_OR_RETURN(const Shape out, core::broadcast_shapes(x.sizes(), target));
  return core::expand(x, out);
}

Result<Tensor> onnx_shape(const Tensor& x, int64_t start, int64_t end) {
  const int64_t r = x.dim();
  start = std::clamp(start < 0 ? start + r : start, int64_t{0}, r);
  end = std::clamp(end < 0 ? end + r : end, int64_t{0}, r);
  const std::vector<int64_t> dims(x.sizes().begin() + start, x.sizes().begin() + std::max(start, end));
  return tensor(dims, {static_cast<int64_t>(dims.size())});
}

Result<Tensor> onnx_constant_of_shape(const std::vector<int64_t>& shape, Scalar value, TensorOptions options) {
  EMBER_ASSIGN_OR_RETURN(const Shape sizes, to_shape(shape, "shape"));
  return core::full(sizes, value, options);
}

Result<Tensor> onnx_range(const Tensor& start, const Tensor& limit, const Tensor& delta, TensorOptions options) {
  auto scalar = [](const Tensor& t, const char* what) -> Result<Scalar> {
    EMBER_CHECK(t.defined() && t.numel() == 1, Status::InvalidArgument, "range: ", what,
                " must have one element, got ", t.defined() ? shape_str(t.sizes()) : std::string("none"));
    EMBER_CHECK(t.dtype() != DType::Bool, Status::InvalidArgument, "range: ", what, " must be numeric, not bool");
    return core::item(t.reshape({1}));  // one element: the reshape cannot fail
  };
  EMBER_ASSIGN_OR_RETURN(const Scalar s, scalar(start, "start"));
  EMBER_ASSIGN_OR_RETURN(const Scalar l, scalar(limit, "limit"));
  EMBER_ASSIGN_OR_RETURN(const Scalar d, scalar(delta, "delta"));
  EMBER_CHECK(d.to<double>() != 0.0, Status::InvalidArgument, "range: delta must be nonzero");
  const DType dt = options.dtype_or(start.dtype());
  const double n = std::ceil((l.to<double>() - s.to<double>()) / d.to<double>());
  Tensor r;
  if (!(n > 0)) {
    EMBER_ASSIGN_OR_RETURN(r, core::empty({0}, TensorOptions(dt)));
  } else {
    EMBER_CHECK(n < 9.007199254740992e15, Status::OutOfRange, "range: ", n, " elements is too many");
    EMBER_ASSIGN_OR_RETURN(const Tensor i, core::arange(0, static_cast<int64_t>(n), 1,
                                                        TensorOptions(is_floating(dt) ? DType::Float64 : DType::Int64)));
    // start + i * delta, floats in float64 as ONNX's reference
    const bool flt = is_floating(dt);
    EMBER_ASSIGN_OR_RETURN(r, flt ? core::mul(i, d.to<double>()) : core::mul(i, d.to<int64_t>()));
    EMBER_ASSIGN_OR_RETURN(r, flt ? core::add(r, s.to<double>()) : core::add(r, s.to<int64_t>()));
    EMBER_ASSIGN_OR_RETURN(r, core::to(r, dt));
  }
  return core::to(r, options.device_or());
}

Result<Tensor> onnx_bit_cast(const Tensor& x, DType to) {
  EMBER_CHECK(element_size(x.dtype()) == element_size(to), Status::NotSupported, "bit_cast: ", dtype_name(x.dtype()),
              " (", element_size(x.dtype()), " bytes) to ", dtype_name(to), " (", element_size(to),
              " bytes): the element sizes differ");
  EMBER_ASSIGN_OR_RETURN(const Tensor host, core::to(x, Device(DeviceType::CPU)));
  EMBER_ASSIGN_OR_RETURN(const Tensor c, core::contiguous(host));
  return from_blob(c.data_ptr(), c.sizes(), TensorOptions(to), [c](void*) {});
}

}  // namespace ember
