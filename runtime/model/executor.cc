// The executor. Built WITH exceptions (unlike runtime:model): every op runs
// through the eager front-ends, which raise ember::Error; run() catches them
// per op and turns them into a Status and "node '<name>' (<op>): <message>".
#include "runtime/model/executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <new>
#include <sstream>
#include <utility>

#include "quant/coo.h"
#include "quant/dynamic_conv.h"
#include "quant/dynamic_linear.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/core/error.h"
#include "runtime/core/thread_pool.h"
#include "runtime/model/planner.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

#ifdef RT_WITH_VULKAN
#include "kernels/vulkan/context.h"
#include "kernels/vulkan/quant_linear.h"
#endif

namespace ember {
namespace {

template <typename T>
uint32_t vlen(const flatbuffers::Vector<T>* v) {
  return v == nullptr ? 0u : v->size();
}

std::string fb_str(const flatbuffers::String* s) { return s == nullptr ? std::string() : s->str(); }

std::string op_ref(const Model& m, int k) {
  return str_cat("node '", fb_str(m.op(k).name()), "' (", op_name(m.op_kind(k)), ")");
}

// "[batch, 4]" (unnamed symbolic dims: "?").
std::string declared_str(const std::vector<int64_t>& shape, const std::vector<std::string>& names) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d > 0) s += ", ";
    if (shape[d] >= 0) {
      s += std::to_string(shape[d]);
    } else {
      s += d < names.size() && !names[d].empty() ? names[d] : "?";
    }
  }
  return s + "]";
}

bool is_backward(OpKind k) {
  switch (k) {
    case OpKind::MaxPool2dBackward:
    case OpKind::AvgPool2dBackward:
    case OpKind::AdaptiveAvgPool2dBackward:
    case OpKind::EmbeddingBackward:
    case OpKind::PadBackward:
      return true;
    default:
      return false;
  }
}

IOInfo io_info(const Model& m, int t) {
  IOInfo info;
  info.tensor = t;
  info.name = std::string(m.tensor_name(t));
  info.dtype = m.tensor_dtype(t);
  info.shape = m.tensor_shape(t);
  const auto* names = m.tensor(t).dim_names();
  for (uint32_t d = 0; d < vlen(names); ++d) info.dim_names.push_back(fb_str(names->Get(d)));
  return info;
}

// --- op implementations (they raise ember::Error) -----------------------------

[[noreturn]] void raise(Status s, const std::string& message) { raise_error(s, message); }

// Reads a small int64 (or int32) tensor of rank 0 or 1 on the host, without allocating.
std::vector<int64_t> read_ints(const Tensor& t, const char* what) {
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

// ONNX axis in [-r, r) (or [-r, r] when `inclusive`) -> [0, r).
int64_t onnx_axis(int64_t axis, int64_t rank, const char* what, bool inclusive = false) {
  const int64_t hi = inclusive ? rank : rank - 1;
  EMBER_CHECK(axis >= -rank && axis <= hi, Status::OutOfRange, what, " ", axis, " is out of range for rank ",
              rank);
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> reduce_dims(const ReduceParams& p, int64_t rank) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < 32; ++d) {
    if ((p.dims >> d) & 1u) {
      EMBER_CHECK(d < rank, Status::OutOfRange, "reduced dim ", d, " is out of range for rank ", rank);
      dims.push_back(d);
    }
  }
  return dims;
}

// The result of a reduction over every dim, shaped as keepdim says.
Tensor keep_all(const Tensor& y, const Tensor& x, bool keepdim) {
  return keepdim ? y.reshape(Shape(static_cast<size_t>(x.dim()), 1)) : y;
}

void apply_activation(const Tensor& y, const Activation& a) {
  if (a.kind == ActivationKind::None || y.numel() == 0) return;
  if (a.kind == ActivationKind::Relu) {
    run_kernel(OpKind::Relu, {y}, {y});  // elementwise, same index: in == out is safe
    return;
  }
  ClampParams c;
  c.has_min = std::isfinite(a.min);
  c.has_max = std::isfinite(a.max);
  if (c.has_min) c.min = a.min;
  if (c.has_max) c.max = a.max;
  if (c.has_min || c.has_max) run_kernel(OpKind::Clamp, {y}, {y}, c);
}

Shape static_shape(const Model& m, int t, const char* what) {
  const std::vector<int64_t> s = m.tensor_shape(t);
  for (int64_t d : s) {
    EMBER_CHECK(d >= 0, Status::NotSupported, what, " needs a static output shape, '", m.tensor_name(t),
                "' is declared ", shape_str(s));
  }
  return s;
}

Tensor run_reshape(const Tensor& x, const std::vector<int64_t>& spec) {
  Shape shape(spec.size());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0) {
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
  return x.reshape(shape);
}

Tensor run_slice(Tensor x, const Tensor& starts_t, const Tensor& ends_t, const Tensor& axes_t,
                 const Tensor& steps_t) {
  const std::vector<int64_t> starts = read_ints(starts_t, "starts");
  const std::vector<int64_t> ends = read_ints(ends_t, "ends");
  EMBER_CHECK(starts.size() == ends.size(), Status::InvalidArgument, "slice has ", starts.size(),
              " starts but ", ends.size(), " ends");
  std::vector<int64_t> axes, steps;
  if (axes_t.defined()) {
    axes = read_ints(axes_t, "axes");
  } else {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps_t.defined()) {
    steps = read_ints(steps_t, "steps");
  } else {
    steps.assign(starts.size(), 1);
  }
  EMBER_CHECK(axes.size() == starts.size() && steps.size() == starts.size(), Status::InvalidArgument,
              "slice has ", starts.size(), " starts, ", axes.size(), " axes and ", steps.size(), " steps");
  std::vector<bool> seen(static_cast<size_t>(x.dim()), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = onnx_axis(axes[i], x.dim(), "slice axis");
    EMBER_CHECK(!seen[static_cast<size_t>(axis)], Status::InvalidArgument, "slice axis ", axes[i],
                " is repeated");
    seen[static_cast<size_t>(axis)] = true;
    const int64_t step = steps[i];
    EMBER_CHECK(step != 0, Status::InvalidArgument, "slice step cannot be 0");
    EMBER_CHECK(step > 0, Status::NotSupported, "slice with a negative step (", step,
                ") is not supported");
    const int64_t dim = x.size(axis);
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    if (end < start) end = start;
    x = x.slice(axis, start, end, step);
  }
  return x;
}

Tensor run_gather(const Tensor& data, const Tensor& indices, int64_t axis_param) {
  EMBER_CHECK(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32, Status::DTypeMismatch,
              "gather indices must be int64 or int32, got ", dtype_name(indices.dtype()));
  EMBER_CHECK(data.dim() >= 1, Status::InvalidArgument, "gather needs data of rank >= 1");
  const int64_t rank = data.dim();
  const int64_t axis = onnx_axis(axis_param, rank, "gather axis");
  const int64_t dim = data.size(axis);
  // Indices, wrapped, as a contiguous 1-D int64 tensor.
  const Tensor idx_in = indices.contiguous();
  const int64_t n = idx_in.numel();
  Tensor idx = empty({n}, DType::Int64);
  int64_t* out = idx.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = indices.dtype() == DType::Int64 ? idx_in.data_ptr<int64_t>()[i]
                                                      : idx_in.data_ptr<int32_t>()[i];
    EMBER_CHECK(v >= -dim && v < dim, Status::OutOfRange, "index ", v, " is out of range for axis ",
                axis_param, " of size ", dim);
    out[i] = v < 0 ? v + dim : v;
  }
  if (idx.device() != data.device()) idx = idx.to(data.device());
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
  const Tensor table = data.permute(perm).reshape({dim, rest});
  Tensor y = embedding(table, idx);  // [n, rest]
  // -> idx.shape + before + after, then before + idx.shape + after.
  const int64_t q = indices.dim();
  Shape shape = indices.sizes();
  shape.insert(shape.end(), others.begin(), others.end());
  y = y.reshape(shape);
  std::vector<int64_t> back;
  for (int64_t d = 0; d < axis; ++d) back.push_back(q + d);
  for (int64_t d = 0; d < q; ++d) back.push_back(d);
  for (int64_t d = q + axis; d < q + rank - 1; ++d) back.push_back(d);
  return y.permute(back);
}

Shape to_shape(const std::vector<int64_t>& v, const char* what) {
  for (int64_t d : v) EMBER_CHECK(d >= 0, Status::InvalidArgument, "negative dim ", d, " in the ", what, " ", shape_str(v));
  return v;
}

}  // namespace

// --- dynamic int8 Linear --------------------------------------------------------

namespace {

// Packs the int8 weight of every Linear whose weight is an int8 tensor with
// quantization parameters (symmetric: zero points all 0; per tensor or per
// output channel, axis 0). Other int8 Linear weights are refused.
Status prepare_quantized(const Model& m, const std::vector<OpParams>& params,
                         std::vector<std::shared_ptr<const quant::PackedLinear>>* packed,
                         std::vector<std::shared_ptr<const quant::PackedConv2d>>* packed_conv, std::string* error) {
  packed->assign(static_cast<size_t>(m.num_ops()), nullptr);
  packed_conv->assign(static_cast<size_t>(m.num_ops()), nullptr);
  for (int k = 0; k < m.num_ops(); ++k) {
    const bool is_conv = m.op_kind(k) == OpKind::Conv2d;
    if (m.op_kind(k) != OpKind::Linear && !is_conv) continue;
    const auto* in = m.op(k).inputs();
    if (vlen(in) < 2) continue;
    const int32_t wi = in->Get(1);
    // Sparse int8 weights go through SpMM (prepare_sparse).
    if (wi < 0 || m.tensor_dtype(wi) != DType::Int8 || m.tensor(wi).sparse() != nullptr) continue;
    const std::string where = str_cat("operator ", k, " ", op_ref(m, k));
    const Tensor& w = m.weight(wi);
    const fb::QuantParams* q = m.tensor(wi).quant();
    if (!w.defined() || q == nullptr || w.dim() != (is_conv ? 4 : 2))
      return report_error(error, Status::NotSupported, where, ": an int8 weight must be a ", is_conv ? "4" : "2",
                          "-D constant with quantization parameters");
    if (is_conv && std::get<Conv2dParams>(params[static_cast<size_t>(k)]).groups != 1)
      return report_error(error, Status::NotSupported, where, ": int8 convolutions need groups = 1");
    const int64_t n = w.size(0), kdim = w.numel() / std::max<int64_t>(n, 1);
    const uint32_t ns = vlen(q->scales());
    const bool per_channel = ns > 1 || (ns == 1 && q->axis() == 0 && n == 1);
    if (!(ns == 1 || (q->axis() == 0 && ns == static_cast<uint32_t>(n))))
      return report_error(error, Status::NotSupported, where, ": int8 weight scales must be per tensor or per",
                          " output channel (axis 0)");
    for (uint32_t j = 0; j < vlen(q->zero_points()); ++j) {
      if (q->zero_points()->Get(j) != 0)
        return report_error(error, Status::NotSupported, where,
                            ": int8 weights must be symmetric (zero points 0) for dynamic quantization");
    }
    const float* bias = nullptr;
    const int32_t bi = vlen(in) > 2 ? in->Get(2) : -1;
    if (bi >= 0) {
      const Tensor& b = m.weight(bi);
      if (!b.defined() || b.dtype() != DType::Float32 || b.dim() != 1 || b.size(0) != n)
        return report_error(error, Status::NotSupported, where,
                            ": the bias of an int8 Linear must be a float32 constant [", n, "]");
      bias = b.data_ptr<float>();
    }
    // Activations per tensor (files without the field) or per row (Linear only).
    const fb::ActivationQuant act = q->activations();
    if (act != fb::ActivationQuant::PerTensor && act != fb::ActivationQuant::PerRow)
      return report_error(error, Status::NotSupported, where, ": unknown activation quantization ",
                          static_cast<int>(act));
    const bool per_row = act == fb::ActivationQuant::PerRow;
    if (is_conv && per_row)
      return report_error(error, Status::NotSupported, where,
                          ": per-row activation quantization is supported for int8 Linear only (Conv2d: per tensor)");
    std::vector<float> scales(q->scales()->begin(), q->scales()->end());
    const auto* qw = static_cast<const int8_t*>(w.data_ptr());
    if (is_conv) {
      (*packed_conv)[static_cast<size_t>(k)] = std::make_shared<const quant::PackedConv2d>(
          quant::pack_conv2d(qw, n, w.size(1), w.size(2), w.size(3), scales.data(), per_channel, bias,
                             std::get<Conv2dParams>(params[static_cast<size_t>(k)])));
    } else {
      quant::PackedLinear p = quant::pack_linear(qw, n, kdim, scales.data(), per_channel, bias);
      p.per_row_activations = per_row;
      (*packed)[static_cast<size_t>(k)] = std::make_shared<const quant::PackedLinear>(std::move(p));
    }
  }
  return Status::Ok;
}

// y = act(dynamic int8 linear(x)): x [*, K] float32.
Tensor run_linear_int8(const Tensor& x, const quant::PackedLinear& w, const Activation& act) {
  EMBER_CHECK(x.dtype() == DType::Float32, Status::DTypeMismatch, "int8 linear: expected a float32 input, got ",
              dtype_name(x.dtype()));
  EMBER_CHECK(x.dim() >= 1 && x.size(-1) == w.in_features, Status::ShapeMismatch,
              "int8 linear: the input's last dimension ", x.dim() >= 1 ? x.size(-1) : 0,
              " does not match the weight's ", w.in_features);
  const Tensor xc = x.contiguous();
  Shape shape = xc.sizes();
  shape.back() = w.out_features;
  Tensor y = empty(shape, DType::Float32);
  const int64_t m = w.in_features > 0 ? xc.numel() / w.in_features : 0;
  quant::DynamicQuantOptions options;
  options.per_row = w.per_row_activations;  // the file's ActivationQuant
  quant::dynamic_linear(xc.data_ptr<float>(), m, w.in_features, w, y.data_ptr<float>(), w.out_features, act,
                        options);
  return y;
}

// y = act(dynamic int8 conv2d(x)): x [N, C_in, H, W] float32.
Tensor run_conv_int8(const Tensor& x, const quant::PackedConv2d& c, const Activation& act) {
  EMBER_CHECK(x.dtype() == DType::Float32, Status::DTypeMismatch, "int8 conv2d: expected a float32 input, got ",
              dtype_name(x.dtype()));
  EMBER_CHECK(x.dim() == 4 && x.size(1) == c.c_in, Status::ShapeMismatch,
              "int8 conv2d: expected an input [N, ", c.c_in, ", H, W]");
  const Tensor xc = x.contiguous();
  const int64_t oh = quant::conv_out_size(c, 0, x.size(2)), ow = quant::conv_out_size(c, 1, x.size(3));
  EMBER_CHECK(oh > 0 && ow > 0, Status::ShapeMismatch, "int8 conv2d: the input ", x.size(2), "x", x.size(3),
              " is smaller than the kernel");
  Tensor y = empty({x.size(0), c.c_out, oh, ow}, DType::Float32);
  quant::dynamic_conv2d(xc.data_ptr<float>(), x.size(0), x.size(2), x.size(3), c, y.data_ptr<float>(), act);
  return y;
}

}  // namespace

// --- Executor -------------------------------------------------------------------

Executor::Executor(std::shared_ptr<const Model> model) : model_(std::move(model)) {
  const Model& m = *model_;
  for (int32_t t : m.inputs()) inputs_.push_back(io_info(m, t));
  for (int32_t t : m.outputs()) outputs_.push_back(io_info(m, t));
  const int n = m.num_ops();
  last_use_.assign(static_cast<size_t>(m.num_tensors()), -1);
  params_.resize(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    const auto* in = m.op(k).inputs();
    for (uint32_t j = 0; j < vlen(in); ++j) {
      const int32_t t = in->Get(j);
      if (t >= 0 && t < m.num_tensors()) last_use_[static_cast<size_t>(t)] = k;
    }
    Result<OpParams> p = m.op_params(k);
    if (p.ok()) params_[static_cast<size_t>(k)] = p.get();
  }
  for (int32_t t : m.outputs()) {
    if (t >= 0 && t < m.num_tensors()) last_use_[static_cast<size_t>(t)] = n;
  }
  placement_.assign(static_cast<size_t>(n), Placement::Device);
  reasons_.assign(static_cast<size_t>(n), std::string());
  key_dtype_.assign(static_cast<size_t>(n), DType::Float32);
  host_.assign(static_cast<size_t>(m.num_tensors()), 0);
  device_weights_.assign(static_cast<size_t>(m.num_tensors()), Tensor());
}

std::vector<int> Executor::fallback_ops() const {
  std::vector<int> ops;
  for (size_t k = 0; k < placement_.size(); ++k) {
    if (placement_[k] == Placement::Fallback) ops.push_back(static_cast<int>(k));
  }
  return ops;
}

std::string Executor::describe_op(int k) const {
  const Model& m = *model_;
  return str_cat("node '", fb_str(m.op(k).name()), "' (", op_name(m.op_kind(k)), ", ",
                 dtype_name(key_dtype_[static_cast<size_t>(k)]), ")");
}

Result<std::shared_ptr<const Executor>> Executor::create(std::shared_ptr<const Model> model,
                                                         std::string* error) {
  return create(std::move(model), ExecutorOptions{}, error);
}

namespace {

// Opens the Vulkan context (the loader and a device) and checks what `options` need.
Status check_vulkan(const ExecutorOptions& options, std::string* error) {
#ifdef RT_WITH_VULKAN
  Result<vk::Context*> c = vk::Context::get();
  if (!c.ok()) return report_error(error, c.status(), vk::Context::why());
  if (options.precision == Precision::Float16 && !c.get()->caps().float16)
    return report_error(error, Status::UnsupportedHardware, "fp16 precision: the Vulkan device '",
                        c.get()->caps().device_name,
                        "' does not support float16 (shaderFloat16 and 16-bit storage buffers)");
  return Status::Ok;
#else
  (void)options;
  return report_error(error, Status::NotSupported, "ember is not built with support for vulkan devices");
#endif
}

}  // namespace

Result<std::shared_ptr<const Executor>> Executor::create(std::shared_ptr<const Model> model,
                                                         const ExecutorOptions& options, std::string* error) {
  if (options.device == DeviceType::CUDA)
    return report_error(error, Status::NotSupported, "the executor runs on cpu or vulkan, not cuda");
  if (options.device == DeviceType::CPU && options.precision == Precision::Float16)
    return report_error(error, Status::InvalidArgument, "fp16 precision needs a device (vulkan); the CPU executor "
                        "runs float32 (convert with --weights fp16 for float16 weights)");
  if (options.device == DeviceType::Vulkan) RT_RETURN_IF_ERROR(check_vulkan(options, error));
  if (model == nullptr) return report_error(error, Status::InvalidArgument, "Executor::create: no model");
  const Model& m = *model;
  const int nt = m.num_tensors();
  std::vector<uint8_t> defined(static_cast<size_t>(nt), 0);
  for (int t = 0; t < nt; ++t) defined[static_cast<size_t>(t)] = m.weight(t).defined();
  for (int32_t t : m.inputs()) {
    if (t < 0 || t >= nt) return report_error(error, Status::InvalidModel, "graph input: tensor index ", t, " out of range");
    defined[static_cast<size_t>(t)] = 1;
  }
  for (int k = 0; k < m.num_ops(); ++k) {
    const OpKind kind = m.op_kind(k);
    const std::string where = str_cat("operator ", k, " ", op_ref(m, k));
    if (static_cast<int>(kind) >= kNumOps)
      return report_error(error, Status::InvalidModel, "operator ", k, ": unknown op id ", static_cast<int>(kind));
    if (is_backward(kind))
      return report_error(error, Status::NotSupported, where, ": the executor does not run backward ops");
    std::string why;
    Result<OpParams> p = m.op_params(k, &why);
    if (!p.ok()) return report_error(error, p.status(), where, ": ", why);
    const auto* in = m.op(k).inputs();
    const auto* out = m.op(k).outputs();
    for (uint32_t j = 0; j < vlen(in); ++j) {
      const int32_t t = in->Get(j);
      if (t == -1) continue;
      if (t < 0 || t >= nt || !defined[static_cast<size_t>(t)])
        return report_error(error, Status::InvalidModel, where, ": input ", j, " (tensor ", t,
                    ") is not a graph input, a weight or an earlier operator's output");
    }
    for (uint32_t j = 0; j < vlen(out); ++j) {
      const int32_t t = out->Get(j);
      if (t == -1) continue;
      if (t < 0 || t >= nt || defined[static_cast<size_t>(t)])
        return report_error(error, Status::InvalidModel, where, ": output ", j, " (tensor ", t,
                    ") is out of range or already defined");
      defined[static_cast<size_t>(t)] = 1;
    }
  }
  for (int32_t t : m.outputs()) {
    if (t < 0 || t >= nt || !defined[static_cast<size_t>(t)])
      return report_error(error, Status::InvalidModel, "graph output: tensor ", t, " is never computed");
  }
  auto ex = std::make_shared<Executor>(std::move(model));
  RT_RETURN_IF_ERROR(ex->prepare_sparse(error));
  ex->upcast_fp16_weights();
  RT_RETURN_IF_ERROR(prepare_quantized(*ex->model_, ex->params_, &ex->packed_, &ex->packed_conv_, error));
  ex->vk_int8_.resize(static_cast<size_t>(ex->model_->num_ops()));
  ex->vk_sparse_.resize(static_cast<size_t>(ex->model_->num_ops()));
  ex->options_ = options;
  if (options.device != DeviceType::CPU) {
    RT_RETURN_IF_ERROR(ex->place_nodes(error));
    RT_RETURN_IF_ERROR(ex->upload_weights(error));
  }
  std::shared_ptr<const Executor> done(std::move(ex));
  if (options.device != DeviceType::CPU && options.warm_up) {
    std::vector<Tensor> inputs;
    for (const IOInfo& io : done->inputs()) {
      Shape shape;
      for (int64_t d : io.shape) shape.push_back(d < 0 ? 1 : d);
      inputs.push_back(zeros(shape, io.dtype));
    }
    ExecutionContext warm(done);
    std::string ignored;
    (void)warm.run(Span<const Tensor>(inputs.data(), inputs.size()), {}, &ignored);
  }
  return done;
}

Status Executor::place_nodes(std::string* error) {
  const Model& m = *model_;
  Backend* backend = get_backend(options_.device);
  if (backend == nullptr)
    return report_error(error, Status::NotSupported, "ember is not built with support for ",
                        device_type_name(options_.device), " devices");
  const bool fp16 = options_.precision == Precision::Float16;
  // The dtype a value has when the ops read it (upcast fp16 weights and
  // densified sparse weights are float32).
  auto value_dtype = [&](int32_t t) {
    const Tensor& d = densified_[static_cast<size_t>(t)];
    return d.defined() ? d.dtype() : m.tensor_dtype(t);
  };
  for (int t = 0; t < m.num_tensors(); ++t) {
    const DType d = m.tensor_dtype(t);
    if (m.weight(t).defined() && m.tensor(t).sparse() == nullptr && (d == DType::Int64 || d == DType::Int32))
      host_[static_cast<size_t>(t)] = 1;
  }
  int first_bad = -1, n_bad = 0;
  for (int k = 0; k < m.num_ops(); ++k) {
    const size_t kk = static_cast<size_t>(k);
    const OpKind kind = m.op_kind(k);
    const auto* in = m.op(k).inputs();
    const auto* out = m.op(k).outputs();
    bool any_input = false, all_host = true, device_inputs = false;
    for (uint32_t j = 0; j < vlen(in); ++j) {
      const int32_t t = in->Get(j);
      if (t < 0) continue;
      any_input = true;
      all_host = all_host && host_[static_cast<size_t>(t)] != 0;
      device_inputs = device_inputs || !reads_on_host(kind, j);
    }
    const int ki = key_input(kind);
    DType key = ki >= 0 && static_cast<uint32_t>(ki) < vlen(in) && in->Get(static_cast<uint32_t>(ki)) >= 0
                    ? value_dtype(in->Get(static_cast<uint32_t>(ki)))
                    : (vlen(out) > 0 && out->Get(0) >= 0 ? m.tensor_dtype(out->Get(0)) : DType::Float32);
    if (fp16 && key == DType::Float32) key = DType::Float16;
    key_dtype_[kk] = key;
    if (kind == OpKind::ShapeOf || (any_input && all_host)) {
      placement_[kk] = Placement::Host;
      for (uint32_t j = 0; j < vlen(out); ++j) {
        if (out->Get(j) >= 0) host_[static_cast<size_t>(out->Get(j))] = 1;
      }
      continue;
    }
    const bool int8 = packed_[kk] != nullptr || packed_conv_[kk] != nullptr;
    const bool sparse = kind == OpKind::Linear && vlen(in) > 1 && in->Get(1) >= 0 &&
                        packed_sparse_[static_cast<size_t>(in->Get(1))] != nullptr;
    const bool has_bias = vlen(in) > 2 && in->Get(2) >= 0;
    std::string why = int8 || sparse ? pack_for_device(k) : std::string();
    if (why.empty()) why = node_unsupported_reason(*backend, kind, params_[kk], has_bias, device_inputs, key);
    if (why.empty()) continue;
    placement_[kk] = Placement::Fallback;
    reasons_[kk] = why;
    if (first_bad < 0) first_bad = k;
    ++n_bad;
  }
  if (n_bad > 0 && !options_.allow_fallback) {
    return report_error(error, Status::NotSupported, describe_op(first_bad), ": ", reasons_[static_cast<size_t>(first_bad)],
                        n_bad > 1 ? str_cat("; ", n_bad - 1, " more node", n_bad > 2 ? "s" : "", " cannot run on ",
                                            backend->name())
                                  : std::string(),
                        " (allow_fallback, ember's --allow-fallback, runs such nodes on the CPU)");
  }
  for (int k : options_.log_fallback ? fallback_ops() : std::vector<int>()) {
    std::fprintf(stderr, "ember: %s runs on the CPU: %s\n", describe_op(k).c_str(),
                 reasons_[static_cast<size_t>(k)].c_str());
  }
  return Status::Ok;
}

std::string Executor::pack_for_device(int k) {
  const Model& m = *model_;
  const size_t kk = static_cast<size_t>(k);
#ifdef RT_WITH_VULKAN
  const auto* in = m.op(k).inputs();
  if (options_.device == DeviceType::Vulkan && m.op_kind(k) == OpKind::Linear && vlen(in) > 1) {
    const int32_t wi = in->Get(1);
    if (packed_[kk] != nullptr) {
      const Tensor& w = m.weight(wi);
      const fb::QuantParams* q = m.tensor(wi).quant();  // checked by prepare_quantized
      const std::vector<float> scales(q->scales()->begin(), q->scales()->end());
      const bool per_channel = scales.size() > 1 || (q->axis() == 0 && w.size(0) == 1);
      const int32_t bi = vlen(in) > 2 ? in->Get(2) : -1;
      const float* bias = bi >= 0 ? m.weight(bi).data_ptr<float>() : nullptr;
      Result<vk::VkQuantLinear> r = vk::pack_quant_linear(static_cast<const int8_t*>(w.data_ptr()), w.size(0),
                                                          w.size(1), scales.data(), per_channel, bias);
      if (!r.ok()) return str_cat("packing the int8 weight for vulkan failed: ", vk::Context::why());
      vk_int8_[kk] = std::make_shared<const vk::VkQuantLinear>(std::move(r.get()));
      return std::string();
    }
    if (wi >= 0 && packed_sparse_[static_cast<size_t>(wi)] != nullptr) {
      Result<vk::VkSparseLinear> r = vk::pack_sparse_linear(*packed_sparse_[static_cast<size_t>(wi)]);
      if (!r.ok()) return str_cat("packing the sparse weight for vulkan failed: ", vk::Context::why());
      vk_sparse_[kk] = std::make_shared<const vk::VkSparseLinear>(std::move(r.get()));
      return std::string();
    }
  }
#endif
  return str_cat(packed_[kk] != nullptr || packed_conv_[kk] != nullptr ? "dynamic int8 " : "sparse COO ",
                 op_name(m.op_kind(k)), " is not implemented for ", get_backend(options_.device)->name());
}

// Every weight a device op reads (in a slot it does not read on the host)
// goes to the device once, converted to float16 in fp16 mode. The weight of a
// Linear packed by pack_for_device stays on the host.
Status Executor::upload_weights(std::string* error) {
  const Model& m = *model_;
  const Device device(options_.device);
  NoGradGuard no_grad;
  for (int k = 0; k < m.num_ops(); ++k) {
    if (placement_[static_cast<size_t>(k)] != Placement::Device) continue;
    const OpKind kind = m.op_kind(k);
    const auto* in = m.op(k).inputs();
    for (uint32_t j = 0; j < vlen(in); ++j) {
      const int32_t t = in->Get(j);
      if (t < 0 || reads_on_host(kind, j) || !m.weight(t).defined()) continue;
      const size_t kk = static_cast<size_t>(k);
      if (j == 1 && (vk_int8_[kk] != nullptr || vk_sparse_[kk] != nullptr)) continue;
      const size_t i = static_cast<size_t>(t);
      if (device_weights_[i].defined()) continue;
      Tensor w = densified_[i].defined() ? densified_[i] : m.weight(t);
      try {
        if (options_.precision == Precision::Float16 && w.dtype() == DType::Float32) w = w.to(DType::Float16);
        device_weights_[i] = w.to(device);
      } catch (const Error& e) {
        return report_error(error, e.status(), "uploading weight '", m.tensor_name(t), "' to ", device, ": ",
                            e.what());
      }
    }
  }
  return Status::Ok;
}

Status Executor::prepare_sparse(std::string* error) {
  const Model& m = *model_;
  const int nt = m.num_tensors();
  packed_sparse_.assign(static_cast<size_t>(nt), nullptr);
  densified_.assign(static_cast<size_t>(nt), Tensor());
  for (int t = 0; t < nt; ++t) {
    const fb::SparseCoo* sp = m.tensor(t).sparse();
    if (sp == nullptr || last_use_[static_cast<size_t>(t)] < 0) continue;
    // Packed when every reader is a Linear reading it as its weight.
    bool linear_only = m.tensor_shape(t).size() == 2;
    for (int k = 0; k < m.num_ops() && linear_only; ++k) {
      const auto* in = m.op(k).inputs();
      for (uint32_t j = 0; j < vlen(in); ++j) {
        if (in->Get(j) == t && !(m.op_kind(k) == OpKind::Linear && j == 1)) linear_only = false;
      }
    }
    for (int32_t o : m.outputs()) linear_only = linear_only && o != t;
    const int32_t ii = sp->indices();  // checked by Verification::Full; Minimal files too:
    if (ii < 0 || ii >= nt || !m.weight(ii).defined())
      return report_error(error, Status::InvalidModel, "sparse weight '", m.tensor_name(t), "': COO indices tensor ",
                          ii, " is not a weight");
    const Tensor& values = m.weight(t);
    const Tensor& indices = m.weight(ii);
    const std::vector<int64_t> shape = m.tensor_shape(t);
    const fb::QuantParams* q = m.tensor(t).quant();
    std::vector<float> scales;
    std::vector<int64_t> zero_points;
    if (q != nullptr) {
      if (q->scales() != nullptr) scales.assign(q->scales()->begin(), q->scales()->end());
      if (q->zero_points() != nullptr) zero_points.assign(q->zero_points()->begin(), q->zero_points()->end());
    }
    try {
      if (linear_only) {
        if (values.dtype() == DType::Int8 && scales.size() > 1 && q->axis() != 0)
          return report_error(error, Status::NotSupported, "sparse weight '", m.tensor_name(t),
                              "': int8 values quantized along axis ", q->axis(),
                              " (the SpMM kernel takes per-output-channel scales, axis 0)");
        packed_sparse_[static_cast<size_t>(t)] = std::make_shared<const sparse::CsrMatrix>(
            sparse::pack_csr(indices, values, shape[0], shape[1], scales, zero_points));
      } else {
        if (values.dtype() == DType::Int8)
          return report_error(error, Status::NotSupported, "sparse weight '", m.tensor_name(t),
                              "': int8 sparse values are only supported as a Linear weight");
        NoGradGuard no_grad;
        densified_[static_cast<size_t>(t)] = sparse::coo_to_dense(indices, values, shape);
      }
    } catch (const Error& e) {
      return report_error(error, e.status(), "sparse weight '", m.tensor_name(t), "': ", e.what());
    }
  }
  return Status::Ok;
}

// `ember convert --weights fp16` stores float32 weights as float16 (metadata
// converter option weights=fp16): each one read by an op is converted back to
// float32 once here (like the densified sparse weights), so the ops run in
// float32. Packed sparse weights are not touched: pack_csr already turned fp16
// values into float32 (and keeps symmetric int8 values as int8 with per-row scales).
void Executor::upcast_fp16_weights() {
  const Model& m = *model_;
  bool fp16 = false;
  for (const auto& kv : m.metadata().converter_options) fp16 = fp16 || (kv.first == "weights" && kv.second == "fp16");
  if (!fp16) return;
  NoGradGuard no_grad;
  for (int t = 0; t < m.num_tensors(); ++t) {
    const size_t i = static_cast<size_t>(t);
    if (last_use_[i] < 0 || packed_sparse_[i] != nullptr) continue;
    const Tensor& w = densified_[i].defined() ? densified_[i] : m.weight(t);
    if (w.defined() && w.dtype() == DType::Float16) densified_[i] = w.to(DType::Float32).contiguous();
  }
}

// --- ExecutionContext --------------------------------------------------------------

struct ExecutionContext::Arena {
  std::vector<int64_t> signature;  // per input: dtype, rank, sizes, strides
  bool planned = false;
  ArenaPlan plan;
  std::shared_ptr<ArenaMemory> memory;
  int replans = 0;
};

ExecutionContext::ExecutionContext(std::shared_ptr<const Executor> executor)
    : executor_(std::move(executor)), arena_(std::make_unique<Arena>()) {}

ExecutionContext::~ExecutionContext() = default;

namespace {

// Runs op k on `values` (inputs read, outputs written). Raises ember::Error.
// `in`: the op's inputs (on the devices placement chose); `device`: where
// ops without tensor inputs create their output; `fp16`: float32 values are
// float16 on the device (Precision::Float16).
void run_op(const Model& m, int k, const OpParams& params, const quant::PackedLinear* packed,
            const quant::PackedConv2d* packed_conv, const vk::VkQuantLinear* vk_int8,
            const vk::VkSparseLinear* vk_sparse,
            const std::vector<std::shared_ptr<const sparse::CsrMatrix>>& packed_sparse, const std::vector<Tensor>& in,
            const Device& device, bool fp16, std::vector<Tensor>& values) {
  const fb::Operator& op = m.op(k);
  const OpKind kind = m.op_kind(k);
  const auto* in_idx = op.inputs();
  const auto* out_idx = op.outputs();
  const size_t n_out = vlen(out_idx);
  auto out_tensor = [&](size_t j) { return out_idx->Get(static_cast<uint32_t>(j)); };
  std::vector<Tensor> out(n_out);
  auto need = [&](size_t j, const char* what) -> const Tensor& {
    EMBER_CHECK(j < in.size() && in[j].defined(), Status::InvalidArgument, "the ", what, " input is missing");
    return in[j];
  };
  const Tensor none;
  auto opt = [&](size_t j) -> const Tensor& { return j < in.size() ? in[j] : none; };
  // The dtype an output is created with: float32 is float16 in fp16 mode.
  auto declared_dtype = [&](size_t j) {
    const DType d = m.tensor_dtype(out_tensor(j));
    return fp16 && d == DType::Float32 ? DType::Float16 : d;
  };

  switch (kind) {
    case OpKind::Copy:
      out[0] = need(0, "data").to(declared_dtype(0));
      break;
    case OpKind::Fill:
      out[0] = full(static_shape(m, out_tensor(0), "fill"), std::get<ScalarParams>(params).value,
                    TensorOptions(declared_dtype(0)).device(device));
      break;
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, ...) case OpKind::Name:
#include "runtime/graph/ops.def"
#undef RT_UNARY
#undef RT_OP
      out[0] = unary_op(kind, need(0, "data"));
      break;
    case OpKind::Gelu:
      out[0] = gelu(need(0, "data"), std::get<GeluParams>(params).tanh_approximation ? "tanh" : "none");
      break;
    case OpKind::Clamp: {
      const auto& p = std::get<ClampParams>(params);
      out[0] = clamp(need(0, "data"), p.has_min ? std::optional<Scalar>(p.min) : std::nullopt,
                     p.has_max ? std::optional<Scalar>(p.max) : std::nullopt);
      break;
    }
#define BINARY(Name, fn)                                \
  case OpKind::Name:                                    \
    out[0] = fn(need(0, "first"), need(1, "second"));   \
    break;
      BINARY(Add, add)
      BINARY(Sub, sub)
      BINARY(Mul, mul)
      BINARY(Div, div)
      BINARY(Pow, pow)
      BINARY(Maximum, maximum)
      BINARY(Minimum, minimum)
      BINARY(Eq, eq)
      BINARY(Ne, ne)
      BINARY(Lt, lt)
      BINARY(Le, le)
      BINARY(Gt, gt)
      BINARY(Ge, ge)
      BINARY(MatMul, matmul)
#undef BINARY
    case OpKind::Where:
      out[0] = where(need(0, "condition"), need(1, "x"), need(2, "y"));
      break;
    case OpKind::Sum:
    case OpKind::Mean:
    case OpKind::Prod:
    case OpKind::Var:
    case OpKind::Norm:
    case OpKind::Max:
    case OpKind::Min:
    case OpKind::ArgMax:
    case OpKind::ArgMin: {
      const auto& p = std::get<ReduceParams>(params);
      const Tensor& x = need(0, "data");
      const std::vector<int64_t> dims = reduce_dims(p, x.dim());
      const bool all = dims.empty();
      switch (kind) {
        case OpKind::Sum:
          out[0] = all ? keep_all(sum(x), x, p.keepdim) : sum(x, dims, p.keepdim);
          break;
        case OpKind::Mean:
          out[0] = all ? keep_all(mean(x), x, p.keepdim) : mean(x, dims, p.keepdim);
          break;
        case OpKind::Prod: {
          if (all) {
            out[0] = keep_all(prod(x), x, p.keepdim);
          } else {
            Tensor y = x;
            for (auto it = dims.rbegin(); it != dims.rend(); ++it) y = prod(y, *it, p.keepdim);
            out[0] = y;
          }
          break;
        }
        case OpKind::Var:
          out[0] = all ? keep_all(var(x, std::nullopt, p.correction), x, p.keepdim)
                       : var(x, dims, p.correction, p.keepdim);
          break;
        case OpKind::Norm:
          out[0] = all ? keep_all(norm(x, p.p), x, p.keepdim) : norm(x, p.p, dims, p.keepdim);
          break;
        case OpKind::Max:
        case OpKind::Min: {
          const bool is_max = kind == OpKind::Max;
          const bool want_indices = n_out > 1 && out_tensor(1) >= 0;
          if (dims.size() == 1) {
            auto r = is_max ? max(x, dims[0], p.keepdim) : min(x, dims[0], p.keepdim);
            out[0] = r.first;
            if (n_out > 1) out[1] = r.second;
          } else {
            EMBER_CHECK(!want_indices, Status::NotSupported, "indices of a ", is_max ? "max" : "min",
                        " over several dims are not supported");
            if (all) {
              out[0] = keep_all(is_max ? max(x) : min(x), x, p.keepdim);
            } else {
              Tensor y = x;
              for (auto it = dims.rbegin(); it != dims.rend(); ++it)
                y = (is_max ? max(y, *it, p.keepdim) : min(y, *it, p.keepdim)).first;
              out[0] = y;
            }
          }
          break;
        }
        default: {  // ArgMax, ArgMin
          const bool is_max = kind == OpKind::ArgMax;
          EMBER_CHECK(dims.size() <= 1, Status::NotSupported, op_name(kind), " over several dims is not supported");
          if (all) {
            out[0] = keep_all(is_max ? argmax(x) : argmin(x), x, p.keepdim);
          } else {
            out[0] = is_max ? argmax(x, dims[0], p.keepdim) : argmin(x, dims[0], p.keepdim);
          }
          break;
        }
      }
      break;
    }
    case OpKind::Softmax:
      out[0] = softmax(need(0, "data"), std::get<SoftmaxParams>(params).dim);
      break;
    case OpKind::LogSoftmax:
      out[0] = log_softmax(need(0, "data"), std::get<SoftmaxParams>(params).dim);
      break;
    case OpKind::LayerNorm: {
      const auto& p = std::get<NormParams>(params);
      const Tensor& x = need(0, "data");
      EMBER_CHECK(p.normalized_rank >= 1 && p.normalized_rank <= x.dim(), Status::InvalidArgument,
                  "layer_norm normalizes ", p.normalized_rank, " dims of an input of rank ", x.dim());
      const Shape normalized(x.sizes().end() - p.normalized_rank, x.sizes().end());
      out[0] = layer_norm(x, normalized, opt(1), opt(2), p.eps);
      break;
    }
    case OpKind::BatchNorm:
      out[0] = batch_norm(need(0, "data"), need(1, "running_mean"), need(2, "running_var"), opt(3), opt(4),
                          std::get<NormParams>(params).eps);
      break;
    case OpKind::Conv2d: {
      const auto& p = std::get<Conv2dParams>(params);
      if (packed_conv != nullptr) {
        out[0] = run_conv_int8(need(0, "data"), *packed_conv, p.activation);
        break;
      }
      out[0] = conv2d(need(0, "data"), need(1, "weight"), opt(2), {p.stride[0], p.stride[1]},
                      {p.padding[0], p.padding[1]}, {p.dilation[0], p.dilation[1]}, p.groups);
      apply_activation(out[0], p.activation);
      break;
    }
    case OpKind::MaxPool2d: {
      const auto& p = std::get<Pool2dParams>(params);
      out[0] = max_pool2d(need(0, "data"), {p.kernel[0], p.kernel[1]}, {p.stride[0], p.stride[1]},
                          {p.padding[0], p.padding[1]}, {p.dilation[0], p.dilation[1]}, p.ceil_mode);
      break;
    }
    case OpKind::AvgPool2d: {
      const auto& p = std::get<Pool2dParams>(params);
      out[0] = avg_pool2d(need(0, "data"), {p.kernel[0], p.kernel[1]}, {p.stride[0], p.stride[1]},
                          {p.padding[0], p.padding[1]}, p.ceil_mode, p.count_include_pad,
                          p.divisor_override != 0 ? std::optional<int64_t>(p.divisor_override) : std::nullopt);
      break;
    }
    case OpKind::AdaptiveAvgPool2d: {
      // The output size: the last two dims of the declared output, which must be static.
      const std::vector<int64_t> s = m.tensor_shape(out_tensor(0));
      EMBER_CHECK(s.size() >= 2 && s[s.size() - 2] >= 0 && s[s.size() - 1] >= 0, Status::NotSupported,
                  "adaptive_avg_pool2d needs the last two dims of its output static, '",
                  m.tensor_name(out_tensor(0)), "' is declared ", shape_str(s));
      out[0] = adaptive_avg_pool2d(need(0, "data"), {s[s.size() - 2], s[s.size() - 1]});
      break;
    }
    case OpKind::Embedding:
      out[0] = embedding(need(0, "weight"), need(1, "indices"));
      break;
    case OpKind::Pad: {
      const auto& p = std::get<PadParams>(params);
      const Tensor& x = need(0, "data");
      EMBER_CHECK(x.dim() <= kMaxRank, Status::InvalidArgument, "pad input of rank ", x.dim());
      // Pairs from the last dim backwards, up to the outermost padded dim.
      int64_t outer = x.dim();
      for (int64_t d = 0; d < x.dim(); ++d) {
        if (p.before[d] != 0 || p.after[d] != 0) {
          outer = d;
          break;
        }
      }
      std::vector<int64_t> pads;
      for (int64_t d = x.dim() - 1; d >= outer; --d) {
        pads.push_back(p.before[d]);
        pads.push_back(p.after[d]);
      }
      static const char* const kModes[] = {"constant", "reflect", "replicate", "circular"};
      out[0] = pads.empty() ? x : pad(x, pads, kModes[static_cast<int>(p.mode)], p.value);
      break;
    }
    case OpKind::Linear: {
#ifdef RT_WITH_VULKAN
      if (vk_int8 != nullptr || vk_sparse != nullptr) {  // int8 / sparse weight packed on the device
        const Tensor& x = need(0, "data");
        const Tensor x32 = x.dtype() == DType::Float16 ? x.to(DType::Float32) : x;
        const Activation& act = std::get<LinearParams>(params).activation;
        const Tensor& b = opt(2);
        const Tensor y = vk_int8 != nullptr
                             ? vk::dynamic_quant_linear(x32, *vk_int8, act,
                                                        packed != nullptr && packed->per_row_activations)
                             : vk::sparse_linear(x32, *vk_sparse, b.defined() ? b.to(DType::Float32) : b, act);
        out[0] = x.dtype() == DType::Float16 ? y.to(DType::Float16) : y;
        break;
      }
#else
      (void)vk_int8;
      (void)vk_sparse;
#endif
      if (packed != nullptr) {
        out[0] = run_linear_int8(need(0, "data"), *packed, std::get<LinearParams>(params).activation);
        break;
      }
      const int32_t wt = vlen(in_idx) > 1 ? in_idx->Get(1) : -1;
      const sparse::CsrMatrix* sp = wt >= 0 ? packed_sparse[static_cast<size_t>(wt)].get() : nullptr;
      out[0] = sp != nullptr ? sparse::sparse_linear(need(0, "data"), *sp, opt(2))
                             : linear(need(0, "data"), need(1, "weight"), opt(2));
      apply_activation(out[0], std::get<LinearParams>(params).activation);
      break;
    }
    // --- graph ops ---
    case OpKind::Reshape:
      out[0] = run_reshape(need(0, "data"), read_ints(need(1, "shape"), "shape"));
      break;
    case OpKind::Permute: {
      const auto& p = std::get<DimsParams>(params);
      out[0] = need(0, "data").permute(std::vector<int64_t>(p.dims, p.dims + p.rank));
      break;
    }
    case OpKind::Flatten: {
      const Tensor& x = need(0, "data");
      const int64_t axis = onnx_axis(std::get<AxisParams>(params).axis, x.dim(), "flatten axis", true);
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < x.dim(); ++d) (d < axis ? outer : inner) *= x.size(d);
      out[0] = x.reshape({outer, inner});
      break;
    }
    case OpKind::Squeeze: {
      const auto& p = std::get<DimsParams>(params);
      const Tensor& x = need(0, "data");
      std::vector<bool> drop(static_cast<size_t>(x.dim()), false);
      for (int i = 0; i < p.rank; ++i) {
        const int64_t d = onnx_axis(p.dims[i], x.dim(), "squeeze axis");
        EMBER_CHECK(x.size(d) == 1, Status::ShapeMismatch, "cannot squeeze dim ", p.dims[i], " of size ",
                    x.size(d), " (shape ", shape_str(x.sizes()), ")");
        drop[static_cast<size_t>(d)] = true;
      }
      Shape shape;
      for (int64_t d = 0; d < x.dim(); ++d) {
        const bool squeezed = p.rank == 0 ? x.size(d) == 1 : static_cast<bool>(drop[static_cast<size_t>(d)]);
        if (!squeezed) shape.push_back(x.size(d));
      }
      out[0] = x.reshape(shape);
      break;
    }
    case OpKind::Unsqueeze: {
      const auto& p = std::get<DimsParams>(params);
      const Tensor& x = need(0, "data");
      const int64_t rank = x.dim() + p.rank;
      std::vector<bool> inserted(static_cast<size_t>(rank), false);
      for (int i = 0; i < p.rank; ++i) {
        const int64_t d = onnx_axis(p.dims[i], rank, "unsqueeze axis");
        EMBER_CHECK(!inserted[static_cast<size_t>(d)], Status::InvalidArgument, "unsqueeze axis ", p.dims[i],
                    " is repeated");
        inserted[static_cast<size_t>(d)] = true;
      }
      Shape shape;
      int64_t src = 0;
      for (int64_t d = 0; d < rank; ++d) shape.push_back(inserted[static_cast<size_t>(d)] ? 1 : x.size(src++));
      out[0] = x.reshape(shape);
      break;
    }
    case OpKind::Concat: {
      for (size_t j = 0; j < in.size(); ++j) need(j, "data");
      EMBER_CHECK(!in.empty(), Status::InvalidArgument, "concat without inputs");
      const int64_t axis = onnx_axis(std::get<AxisParams>(params).axis, in[0].dim(), "concat axis");
      out[0] = in.size() == 1 ? in[0] : cat(in, axis);
      break;
    }
    case OpKind::Split: {
      const Tensor& x = need(0, "data");
      const int64_t axis = onnx_axis(std::get<AxisParams>(params).axis, x.dim(), "split axis");
      std::vector<Tensor> parts;
      const int64_t n = static_cast<int64_t>(n_out);
      if (opt(1).defined()) {
        const std::vector<int64_t> sizes = read_ints(opt(1), "split");
        EMBER_CHECK(static_cast<int64_t>(sizes.size()) == n, Status::InvalidArgument, "split has ", sizes.size(),
                    " sizes for ", n, " outputs");
        int64_t total = 0;
        for (int64_t s : sizes) {
          EMBER_CHECK(s >= 0, Status::InvalidArgument, "negative split size ", s);
          total += s;
        }
        EMBER_CHECK(total == x.size(axis), Status::ShapeMismatch, "split sizes ", shape_str(sizes), " sum to ",
                    total, ", but axis ", axis, " has size ", x.size(axis));
        int64_t start = 0;
        for (int64_t s : sizes) {
          parts.push_back(x.narrow(axis, start, s));
          start += s;
        }
      } else {
        const int64_t dim = x.size(axis);
        const int64_t chunk = (dim + n - 1) / n;
        EMBER_CHECK(chunk * (n - 1) < dim || (dim == 0), Status::ShapeMismatch, "cannot split axis ", axis,
                    " of size ", dim, " into ", n, " parts");
        for (int64_t i = 0; i < n; ++i) {
          const int64_t start = std::min(dim, i * chunk);
          parts.push_back(x.narrow(axis, start, std::min(chunk, dim - start)));
        }
      }
      for (size_t j = 0; j < n_out; ++j) out[j] = parts[j];
      break;
    }
    case OpKind::Slice:
      out[0] = run_slice(need(0, "data"), need(1, "starts"), need(2, "ends"), opt(3), opt(4));
      break;
    case OpKind::Gather:
      out[0] = run_gather(need(0, "data"), need(1, "indices"), std::get<AxisParams>(params).axis);
      break;
    case OpKind::Expand: {
      const Tensor& x = need(0, "data");
      const Shape target = broadcast_shapes(x.sizes(), to_shape(read_ints(need(1, "shape"), "shape"), "shape"));
      out[0] = x.expand(target);
      break;
    }
    case OpKind::ShapeOf: {
      const Tensor& x = need(0, "data");
      out[0] = tensor(std::vector<int64_t>(x.sizes().begin(), x.sizes().end()), {x.dim()});
      break;
    }
    case OpKind::ConstantOfShape:
      out[0] = full(to_shape(read_ints(need(0, "shape"), "shape"), "shape"),
                    std::get<ScalarParams>(params).value, TensorOptions(declared_dtype(0)).device(device));
      break;
    default:
      raise(Status::NotSupported, "the executor does not run this op");
  }

  // Check each output against the file's declaration, then store it.
  for (size_t j = 0; j < n_out; ++j) {
    const int32_t t = out_tensor(j);
    if (t < 0) continue;
    const Tensor& y = out[j];
    EMBER_CHECK(y.defined(), Status::Internal, "output ", j, " '", m.tensor_name(t), "' was not computed");
    // Read from the flatbuffer in place: this runs for every op of every run.
    const auto* declared = m.tensor(t).shape();
    const bool dtype_ok =
        y.dtype() == m.tensor_dtype(t) || (fp16 && y.dtype() == DType::Float16 && m.tensor_dtype(t) == DType::Float32);
    bool ok = dtype_ok && y.dim() == static_cast<int64_t>(vlen(declared));
    for (uint32_t d = 0; ok && d < vlen(declared); ++d) {
      ok = declared->Get(d) < 0 || declared->Get(d) == y.size(static_cast<int64_t>(d));
    }
    EMBER_CHECK(ok, Status::ShapeMismatch, "output '", m.tensor_name(t), "' is ", dtype_name(y.dtype()), " ",
                shape_str(y.sizes()), ", but the model declares ", dtype_name(m.tensor_dtype(t)), " ",
                shape_str(m.tensor_shape(t)));
    values[static_cast<size_t>(t)] = y;
  }
}

}  // namespace

Result<std::vector<Tensor>> ExecutionContext::run(Span<const Tensor> inputs, const RunOptions& options,
                                                  std::string* error) {
  const Executor& ex = *executor_;
  const Model& m = *ex.model_;

  // --- inputs ---
  if (inputs.size() != ex.inputs_.size()) {
    std::string names;
    for (const IOInfo& io : ex.inputs_) names += (names.empty() ? "" : ", ") + io.name;
    return report_error(error, Status::InvalidArgument, "expected ", ex.inputs_.size(), " inputs (", names, "), got ",
                inputs.size());
  }
  std::map<std::string, std::pair<int64_t, std::string>> bound;  // dim name -> (value, input)
  for (size_t i = 0; i < inputs.size(); ++i) {
    const IOInfo& io = ex.inputs_[i];
    const Tensor& x = inputs[i];
    if (!x.defined()) return report_error(error, Status::InvalidArgument, "input '", io.name, "' is undefined");
    if (x.device().type() != DeviceType::CPU)
      return report_error(error, Status::DeviceMismatch, "input '", io.name, "' is on ", x.device(), ", expected cpu");
    if (x.dtype() != io.dtype)
      return report_error(error, Status::DTypeMismatch, "input '", io.name, "': expected dtype ", dtype_name(io.dtype),
                  ", got ", dtype_name(x.dtype()));
    const auto declared = [&io] { return declared_str(io.shape, io.dim_names); };  // for messages only
    if (x.dim() != static_cast<int64_t>(io.shape.size()))
      return report_error(error, Status::ShapeMismatch, "input '", io.name, "': expected rank ", io.shape.size(), " ",
                  declared(), ", got rank ", x.dim(), " ", shape_str(x.sizes()));
    for (size_t d = 0; d < io.shape.size(); ++d) {
      const int64_t size = x.size(static_cast<int64_t>(d));
      if (io.shape[d] >= 0) {
        if (size != io.shape[d])
          return report_error(error, Status::ShapeMismatch, "input '", io.name, "': dim ", d, " is ", size, ", expected ",
                      io.shape[d], " (declared ", declared(), ", got ", shape_str(x.sizes()), ")");
        continue;
      }
      const std::string name = d < io.dim_names.size() ? io.dim_names[d] : std::string();
      if (name.empty()) continue;
      auto it = bound.find(name);
      if (it == bound.end()) {
        bound.emplace(name, std::make_pair(size, io.name));
      } else if (it->second.first != size) {
        return report_error(error, Status::ShapeMismatch, "input '", io.name, "': dim ", d, " ('", name, "') is ", size,
                    ", but '", name, "' is ", it->second.first, " in input '", it->second.second, "'");
      }
    }
  }

  // --- memory: plan (record) or serve from the arena ---
  std::vector<int64_t> signature;
  for (const Tensor& x : inputs) {
    signature.push_back(static_cast<int64_t>(x.dtype()));
    signature.push_back(x.dim());
    signature.insert(signature.end(), x.sizes().begin(), x.sizes().end());
    signature.insert(signature.end(), x.strides().begin(), x.strides().end());
  }
  Arena& arena = *arena_;
  if (!arena.planned || arena.signature != signature) {
    arena.planned = false;
    arena.memory.reset();
    arena.signature = signature;
  }
  std::unique_ptr<RecordingAllocator> recorder;
  std::unique_ptr<ArenaAllocator> served;
  StorageAllocator* allocator;
  if (arena.planned) {
    served = std::make_unique<ArenaAllocator>(arena.memory, arena.plan);
    allocator = served.get();
  } else {
    recorder = std::make_unique<RecordingAllocator>();
    allocator = recorder.get();
  }

  // An input that lives in this context's arena (an output of an earlier run
  // fed back) would be overwritten by this run: copy it to the heap first.
  std::vector<Tensor> own_inputs(inputs.begin(), inputs.end());
  if (arena.memory != nullptr) {
    const std::byte* lo = arena.memory->data();
    const std::byte* hi = lo + arena.memory->size() + kTensorTailPadding;
    for (Tensor& x : own_inputs) {
      const auto* p = static_cast<const std::byte*>(x.storage()->data());
      if (p >= lo && p < hi) {
        NoGradGuard no_grad;
        x = x.clone();
      }
    }
  }

  std::vector<OpProfile> profile;
  std::vector<Tensor> values(static_cast<size_t>(m.num_tensors()));
  std::vector<Tensor> results;
  Status status = Status::Ok;
  std::string message;
  {
    NoGradGuard no_grad;
    ThreadLimitGuard threads(options.num_threads);
    StorageAllocatorGuard hook(allocator);
    const bool on_cpu = ex.options_.device == DeviceType::CPU;
    const Device cpu(DeviceType::CPU);
    const Device device(ex.options_.device);
    const bool fp16 = ex.options_.precision == Precision::Float16;
    Backend* backend = on_cpu ? nullptr : get_backend(ex.options_.device);
    // other[t]: value t on the other device than values[t] (weights uploaded
    // at create; a value crosses at most once per run).
    std::vector<Tensor> other(on_cpu ? 0 : static_cast<size_t>(m.num_tensors()));
    for (int t = 0; t < m.num_tensors(); ++t) {
      const size_t i = static_cast<size_t>(t);
      if (m.weight(t).defined() && ex.last_use_[i] >= 0) {
        values[i] = ex.densified_[i].defined() ? ex.densified_[i] : m.weight(t);
        if (!on_cpu) other[i] = ex.device_weights_[i];
      }
    }
    for (size_t i = 0; i < inputs.size(); ++i) values[static_cast<size_t>(ex.inputs_[i].tensor)] = own_inputs[i];
    // Value t on `where`: moved (and converted for fp16) once, then cached.
    auto value_on = [&](int32_t t, const Device& where) -> Tensor {
      const size_t i = static_cast<size_t>(t);
      const Tensor& v = values[i];
      if (on_cpu || !v.defined() || v.device() == where) return v;
      if (!other[i].defined()) {
        if (where.is_cpu()) {
          Tensor x = v.to(where);
          if (fp16 && x.dtype() == DType::Float16 && m.tensor_dtype(t) == DType::Float32) x = x.to(DType::Float32);
          other[i] = x;
        } else {
          other[i] = (fp16 && v.dtype() == DType::Float32 ? v.to(DType::Float16) : v).to(where);
        }
      }
      return other[i];
    };
    const int n_ops = m.num_ops();
    for (int k = 0; k < n_ops && status == Status::Ok; ++k) {
      const fb::Operator& op = m.op(k);
      const OpKind kind = m.op_kind(k);
      const Placement place = ex.placement_[static_cast<size_t>(k)];
      const bool on_device = !on_cpu && place == Placement::Device;
      OpProfile entry;
      if (options.profile) {
        entry.op = k;
        entry.type = std::string(op_name(kind));
        entry.name = fb_str(op.name());
        entry.device = on_cpu || place == Placement::Host ? "cpu"
                       : on_device                         ? std::string(device_type_name(device.type()))
                                                           : "cpu (fallback)";
        for (uint32_t j = 0; j < vlen(op.inputs()); ++j) {
          const int32_t t = op.inputs()->Get(j);
          if (t >= 0 && values[static_cast<size_t>(t)].defined())
            entry.input_shapes.push_back(values[static_cast<size_t>(t)].sizes());
        }
      }
      const auto start = std::chrono::steady_clock::now();
      try {
        std::vector<Tensor> in(vlen(op.inputs()));
        for (uint32_t j = 0; j < vlen(op.inputs()); ++j) {
          const int32_t t = op.inputs()->Get(j);
          if (t < 0) continue;
          if (kind == OpKind::ShapeOf) {
            in[j] = values[static_cast<size_t>(t)];  // reads only the sizes
          } else {
            in[j] = value_on(t, on_device && !reads_on_host(kind, j) ? device : cpu);
          }
        }
        const size_t kk = static_cast<size_t>(k);
        run_op(m, k, ex.params_[kk], ex.packed_[kk].get(), ex.packed_conv_[kk].get(),
               on_device ? ex.vk_int8_[kk].get() : nullptr, on_device ? ex.vk_sparse_[kk].get() : nullptr,
               ex.packed_sparse_, in, on_device ? device : cpu,
               on_device && fp16, values);
        if (options.profile && on_device) {
          const Status st = backend->synchronize();
          EMBER_CHECK(st == Status::Ok, st, "synchronize", backend_error_detail(*backend));
        }
      } catch (const Error& e) {
        status = e.status();
        message = str_cat(op_ref(m, k), ": ", e.what());
      } catch (const std::bad_alloc&) {
        status = Status::OutOfMemory;
        message = str_cat(op_ref(m, k), ": out of memory");
      } catch (const std::exception& e) {
        status = Status::Internal;
        message = str_cat(op_ref(m, k), ": ", e.what());
      }
      if (status != Status::Ok) break;
      if (options.profile) {
        entry.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        profile.push_back(std::move(entry));
      }
      // Liveness: drop what no later op reads (graph outputs live to the end).
      auto drop = [&](int32_t t) {
        values[static_cast<size_t>(t)] = Tensor();
        if (!on_cpu) other[static_cast<size_t>(t)] = Tensor();
      };
      for (uint32_t j = 0; j < vlen(op.inputs()); ++j) {
        const int32_t t = op.inputs()->Get(j);
        if (t >= 0 && ex.last_use_[static_cast<size_t>(t)] == k) drop(t);
      }
      for (uint32_t j = 0; j < vlen(op.outputs()); ++j) {
        const int32_t t = op.outputs()->Get(j);
        if (t >= 0 && ex.last_use_[static_cast<size_t>(t)] < k) drop(t);
      }
    }
    if (status == Status::Ok) {
      // Outputs come back to the host once each (float32 in fp16 mode). Those
      // still on the device are made contiguous there and read back together:
      // one submit for the graph and every copy.
      try {
        std::vector<Tensor> packed(on_cpu ? 0 : ex.outputs_.size());
        std::vector<Backend::CopyOut> copies;
        for (size_t o = 0; o < ex.outputs_.size(); ++o) {
          const int32_t t = ex.outputs_[o].tensor;
          const Tensor& v = values[static_cast<size_t>(t)];
          if (on_cpu || !v.defined() || v.device() == cpu || other[static_cast<size_t>(t)].defined()) {
            results.push_back(value_on(t, cpu));
            continue;
          }
          const bool widen = fp16 && v.dtype() == DType::Float16 && m.tensor_dtype(t) == DType::Float32;
          packed[o] = (widen ? v.to(DType::Float32) : v).contiguous();
          results.push_back(empty(packed[o].sizes(), packed[o].dtype()));
          copies.push_back({Span<std::byte>(static_cast<std::byte*>(results.back().data_ptr()), results.back().nbytes()),
                            &packed[o].storage()->buffer(),
                            static_cast<size_t>(packed[o].storage_offset()) * packed[o].element_size()});
        }
        const Status st = copies.empty() ? Status::Ok : backend->copy_out_batch(copies);
        EMBER_CHECK(st == Status::Ok, st, "copy to cpu", backend_error_detail(*backend));
      } catch (const Error& e) {
        status = e.status();
        message = str_cat("reading the outputs back from ", device, ": ", e.what());
        results.clear();
      }
    }
    other.clear();
    values.clear();  // frees every intermediate before the recording ends
  }

  if (status != Status::Ok) {
    if (recorder != nullptr) recorder->finish();  // incomplete: plan again next run
    if (error != nullptr) *error = message;
    return status;
  }
  if (recorder != nullptr) {
    arena.plan = plan_arena(recorder->finish());
    arena.memory = std::make_shared<ArenaMemory>(arena.plan.arena_bytes);
    arena.planned = true;
    ++arena.replans;
    plan_.arena_bytes = arena.plan.arena_bytes;
    plan_.naive_bytes = arena.plan.naive_bytes;
    plan_.allocations = static_cast<int>(arena.plan.offsets.size());
    plan_.heap_fallbacks = 0;
  } else {
    plan_.heap_fallbacks = served->heap_fallbacks();
    if (!served->matched()) arena.planned = false;  // the sequence changed: plan again next run
  }
  plan_.plans = arena.replans;
  if (options.profile) profile_ = std::move(profile);
  return results;
}

}  // namespace ember
