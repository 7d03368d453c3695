// The executor's dispatch: one runner per ops.def line, run_<Name>(ctx),
// called from a switch that ops.def generates. The switch has no default: a
// new line in ops.def without its runner does not compile ("'run_NewOp' was
// not declared"). Built with exceptions: runners raise ember::Error.
#include "runtime/model/op_runner.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "runtime/core/error.h"
#include "runtime/model/control_flow.h"
#include "runtime/model/graph_ops.h"
#include "runtime/model/model_access.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"
#include "runtime/ops/qlinear.h"
#include "quant/coo.h"

#pragma GCC diagnostic error "-Wswitch"

namespace ember {

const Tensor& OpContext::need(size_t j, const char* what) const {
  EMBER_ENFORCE(j < in.size() && in[j].defined(), Status::InvalidArgument, "the ", what, " input is missing");
  return in[j];
}

const Tensor& OpContext::opt(size_t j) const {
  static const Tensor none;
  return j < in.size() ? in[j] : none;
}

size_t OpContext::num_outputs() const { return vlen(model.op(index).outputs()); }

int32_t OpContext::out_tensor(size_t j) const { return model.op(index).outputs()->Get(static_cast<uint32_t>(j)); }

DType OpContext::declared_dtype(size_t j) const {
  const DType d = model.tensor_dtype(out_tensor(j));
  return d == DType::Float32 ? low : d;
}

Tensor dequantize_weight(const Model& m, int t) {
  const fb::QuantParams* q = m.tensor(t).quant();
  const Tensor& w = m.weight(t);
  EMBER_ENFORCE(q != nullptr && q->scales() != nullptr && q->scales()->size() > 0, Status::InvalidModel,
              "int8 weight '", m.tensor_name(t), "' has no scales");
  Shape along(static_cast<size_t>(w.dim()), 1);
  const int64_t n = q->scales()->size();
  if (n > 1) along[static_cast<size_t>(q->axis() < 0 ? 0 : q->axis())] = n;
  Tensor scale = empty({n}, DType::Float32), zero = zeros({n}, DType::Float32);
  for (int64_t i = 0; i < n; ++i) {
    scale.data_ptr<float>()[i] = q->scales()->Get(static_cast<uint32_t>(i));
    if (q->zero_points() != nullptr && q->zero_points()->size() == static_cast<uint32_t>(n))
      zero.data_ptr<float>()[i] = static_cast<float>(q->zero_points()->Get(static_cast<uint32_t>(i)));
  }
  return (w.to(DType::Float32) - zero.reshape(along)) * scale.reshape(along);
}

namespace {

// --- helpers ----------------------------------------------------------------------

// The fused activation of a Linear / Conv2d: in place through its kernel,
// unless y records a gradient (the trainer, runtime/train): then through the
// eager front-ends, whose backward masks the gradient.
Tensor activate(const Tensor& y, const Activation& a) {
  if (a.kind == ActivationKind::None || y.numel() == 0) return y;
  if (a.kind == ActivationKind::Relu || a.kind == ActivationKind::HardSwish) {
    const bool relu_kind = a.kind == ActivationKind::Relu;
    if (y.requires_grad()) return relu_kind ? relu(y) : hardswish(y);
    unwrap(run_kernel(relu_kind ? OpKind::Relu : OpKind::Hardswish, {y}, {y}));  // elementwise, same index: in == out is safe
    return y;
  }
  ClampParams c;
  c.has_min = std::isfinite(a.min);
  c.has_max = std::isfinite(a.max);
  if (c.has_min) c.min = a.min;
  if (c.has_max) c.max = a.max;
  if (!c.has_min && !c.has_max) return y;
  if (y.requires_grad())
    return clamp(y, c.has_min ? std::optional<Scalar>(c.min) : std::nullopt,
                 c.has_max ? std::optional<Scalar>(c.max) : std::nullopt);
  unwrap(run_kernel(OpKind::Clamp, {y}, {y}, c));
  return y;
}

// A LoRA adapter's term scale * (x A^T) B^T (the trainer's, runtime/train).
Tensor lora_term(const LoraAdapter& a, const Tensor& x) { return linear(linear(x, a.a), a.b) * a.scale; }

Shape static_shape(const Model& m, int t, const char* what) {
  const std::vector<int64_t> s = m.tensor_shape(t);
  for (int64_t d : s) {
    EMBER_ENFORCE(d >= 0, Status::NotSupported, what, " needs a static output shape, '", m.tensor_name(t),
                "' is declared ", shape_str(s));
  }
  return s;
}

// --- elementwise -------------------------------------------------------------------

void run_Copy(OpContext& c) { c.out[0] = c.need(0, "data").to(c.declared_dtype(0)); }

void run_Fill(OpContext& c) {
  c.out[0] = full(static_shape(c.model, c.out_tensor(0), "fill"), c.params<ScalarParams>().value,
                  TensorOptions(c.declared_dtype(0)).device(c.device));
}

// The param-less unary elementwise ops: one runner, run_unary.
// Every RT_UNARY op of ops.def runs its eager front-end (unary_op).
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, ...) \
  void run_##Name(OpContext& c) { c.out[0] = unary_op(c.kind, c.need(0, "data")); }
#define RT_UNARY_P(Name, ...)                                                   \
  void run_##Name(OpContext& c) {                                               \
    const auto& p = c.params<UnaryParams>();                                    \
    c.out[0] = unary_op(c.kind, c.need(0, "data"), p.a, p.b);                   \
  }
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP

// The RT_OP_P ops: their graph front-end with the inputs (undefined when
// omitted, after the first) and the params.
#define RT_OP_P_INPUTS_1 c.need(0, "first")
#define RT_OP_P_INPUTS_2 RT_OP_P_INPUTS_1, c.opt(1)
#define RT_OP_P_INPUTS_3 RT_OP_P_INPUTS_2, c.opt(2)
#define RT_OP_P_INPUTS_4 RT_OP_P_INPUTS_3, c.opt(3)
#define RT_OP_P_INPUTS_5 RT_OP_P_INPUTS_4, c.opt(4)
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(...)
#define RT_UNARY_P(...)
#define RT_OP_P(Name, name, n_in, Params) \
  void run_##Name(OpContext& c) { c.out[0] = name(RT_OP_P_INPUTS_##n_in, c.params<Params>()); }
#include "runtime/graph/ops.def"
#undef RT_OP_P
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP

void run_Gelu(OpContext& c) {
  c.out[0] = gelu(c.need(0, "data"), c.params<GeluParams>().tanh_approximation ? "tanh" : "none");
}

void run_Clamp(OpContext& c) {
  const auto& p = c.params<ClampParams>();
  c.out[0] = clamp(c.need(0, "data"), p.has_min ? std::optional<Scalar>(p.min) : std::nullopt,
                   p.has_max ? std::optional<Scalar>(p.max) : std::nullopt);
}

#define EMBER_BINARY_RUNNER(Name, fn) \
  void run_##Name(OpContext& c) { c.out[0] = fn(c.need(0, "first"), c.need(1, "second")); }
EMBER_BINARY_RUNNER(Add, add)
EMBER_BINARY_RUNNER(Sub, sub)
EMBER_BINARY_RUNNER(Mul, mul)
EMBER_BINARY_RUNNER(Div, div)
EMBER_BINARY_RUNNER(Pow, pow)
EMBER_BINARY_RUNNER(Maximum, maximum)
EMBER_BINARY_RUNNER(Minimum, minimum)
EMBER_BINARY_RUNNER(Eq, eq)
EMBER_BINARY_RUNNER(Ne, ne)
EMBER_BINARY_RUNNER(Lt, lt)
EMBER_BINARY_RUNNER(Le, le)
EMBER_BINARY_RUNNER(Gt, gt)
EMBER_BINARY_RUNNER(Ge, ge)
// A constant 2-D second operand was packed at create (weights.h): matmul_prepacked reads it.
void run_MatMul(OpContext& c) {
  c.out[0] = matmul_prepacked(c.need(0, "first"), c.need(1, "second"), c.state.prepared.get());
}
#undef EMBER_BINARY_RUNNER

// The RT_BINARY ops: their eager front-ends.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_BINARY(Name, name, ...) \
  void run_##Name(OpContext& c) { c.out[0] = name(c.need(0, "first"), c.need(1, "second")); }
#include "runtime/graph/ops.def"
#undef RT_BINARY
#undef RT_OP

void run_Where(OpContext& c) { c.out[0] = where(c.need(0, "condition"), c.need(1, "x"), c.need(2, "y")); }

// --- reductions --------------------------------------------------------------------

// A reduction's input, its dims (ReduceParams bits, or the run-time axes of
// input 1) and keepdim; `none`: run-time axes that are empty with noop_empty
// (the output is the input).
struct Reduction {
  const ReduceParams& p;
  const Tensor& x;
  std::vector<int64_t> dims;  // empty: every dim
  bool none = false;
  explicit Reduction(const OpContext& c) : p(c.params<ReduceParams>()), x(c.need(0, "data")) {
    uint32_t bits = p.dims;
    if (c.opt(1).defined()) {
      bits = 0;
      for (int64_t a : unwrap(read_ints(c.opt(1), "axes"))) {
        const int64_t d = a < 0 ? a + x.dim() : a;
        EMBER_ENFORCE(d >= 0 && d < x.dim() && d < 32, Status::OutOfRange, "axis ", a, " is out of range for rank ",
                    x.dim());
        EMBER_ENFORCE(!((bits >> d) & 1u), Status::InvalidArgument, "axis ", a, " is given twice");
        bits |= uint32_t{1} << d;
      }
      none = bits == 0 && p.noop_empty;
    }
    for (int64_t d = 0; d < 32; ++d) {
      if ((bits >> d) & 1u) {
        EMBER_ENFORCE(d < x.dim(), Status::OutOfRange, "reduced dim ", d, " is out of range for rank ", x.dim());
        dims.push_back(d);
      }
    }
  }
  bool all() const { return dims.empty(); }
  // The result of a reduction over every dim, shaped as keepdim says.
  Tensor keep_all(const Tensor& y) const { return p.keepdim ? y.reshape(Shape(static_cast<size_t>(x.dim()), 1)) : y; }
};

void run_Sum(OpContext& c) {
  const Reduction r(c);
  if (r.none) return void(c.out[0] = r.x);
  c.out[0] = r.all() ? r.keep_all(sum(r.x)) : sum(r.x, r.dims, r.p.keepdim);
}

void run_Mean(OpContext& c) {
  const Reduction r(c);
  if (r.none) return void(c.out[0] = r.x);
  c.out[0] = r.all() ? r.keep_all(mean(r.x)) : mean(r.x, r.dims, r.p.keepdim);
}

void run_Prod(OpContext& c) {
  const Reduction r(c);
  if (r.none) return void(c.out[0] = r.x);
  if (r.all()) {
    c.out[0] = r.keep_all(prod(r.x));
    return;
  }
  Tensor y = r.x;
  for (auto it = r.dims.rbegin(); it != r.dims.rend(); ++it) y = prod(y, *it, r.p.keepdim);
  c.out[0] = y;
}

void run_Var(OpContext& c) {
  const Reduction r(c);
  if (r.none) return void(c.out[0] = r.x);
  c.out[0] = r.all() ? r.keep_all(var(r.x, std::nullopt, r.p.correction)) : var(r.x, r.dims, r.p.correction, r.p.keepdim);
}

void run_Norm(OpContext& c) {
  const Reduction r(c);
  if (r.none) return void(c.out[0] = r.x);
  c.out[0] = r.all() ? r.keep_all(norm(r.x, r.p.p)) : norm(r.x, r.p.p, r.dims, r.p.keepdim);
}

void run_max_min(OpContext& c, bool is_max) {
  const Reduction r(c);
  const bool want_indices = c.num_outputs() > 1 && c.out_tensor(1) >= 0;
  EMBER_ENFORCE(!(r.none && want_indices), Status::NotSupported, "indices of a reduction over no dims are not supported");
  if (r.none) return void(c.out[0] = r.x);
  const bool flt = is_floating(r.x.dtype());
  if (r.x.numel() == 0 && !want_indices && (flt || r.x.dtype() == DType::Bool)) {
    // ONNX: the max of nothing is -inf (false), the min +inf (true); torch raises.
    Shape shape;
    for (int64_t d = 0; d < r.x.dim(); ++d) {
      const bool reduced = r.all() || std::find(r.dims.begin(), r.dims.end(), d) != r.dims.end();
      if (!reduced || r.p.keepdim) shape.push_back(reduced ? 1 : r.x.size(d));
    }
    const Scalar bound = flt ? Scalar(is_max ? -INFINITY : INFINITY) : Scalar(!is_max);
    c.out[0] = full(shape, bound, TensorOptions(r.x.dtype()).device(c.device));
    return;
  }
  if (r.dims.size() == 1) {
    auto v = is_max ? max(r.x, r.dims[0], r.p.keepdim) : min(r.x, r.dims[0], r.p.keepdim);
    c.out[0] = v.first;
    if (c.num_outputs() > 1) c.out[1] = v.second;
    return;
  }
  EMBER_ENFORCE(!want_indices, Status::NotSupported, "indices of a ", is_max ? "max" : "min",
              " over several dims are not supported");
  if (r.all()) {
    c.out[0] = r.keep_all(is_max ? max(r.x) : min(r.x));
    return;
  }
  Tensor y = r.x;
  for (auto it = r.dims.rbegin(); it != r.dims.rend(); ++it)
    y = (is_max ? max(y, *it, r.p.keepdim) : min(y, *it, r.p.keepdim)).first;
  c.out[0] = y;
}

void run_Max(OpContext& c) { run_max_min(c, true); }
void run_Min(OpContext& c) { run_max_min(c, false); }

void run_arg_max_min(OpContext& c, bool is_max) {
  const Reduction r(c);
  EMBER_ENFORCE(r.dims.size() <= 1, Status::NotSupported, op_name(c.kind), " over several dims is not supported");
  if (r.all()) {
    c.out[0] = r.keep_all(is_max ? argmax(r.x) : argmin(r.x));
  } else {
    c.out[0] = is_max ? argmax(r.x, r.dims[0], r.p.keepdim) : argmin(r.x, r.dims[0], r.p.keepdim);
  }
}

void run_ArgMax(OpContext& c) { run_arg_max_min(c, true); }
void run_ArgMin(OpContext& c) { run_arg_max_min(c, false); }

// --- neural-network ops --------------------------------------------------------------

void run_Softmax(OpContext& c) { c.out[0] = softmax(c.need(0, "data"), c.params<SoftmaxParams>().dim); }

void run_LogSoftmax(OpContext& c) { c.out[0] = log_softmax(c.need(0, "data"), c.params<SoftmaxParams>().dim); }

void run_LayerNorm(OpContext& c) {
  const auto& p = c.params<NormParams>();
  const Tensor& x = c.need(0, "data");
  EMBER_ENFORCE(p.normalized_rank >= 1 && p.normalized_rank <= x.dim(), Status::InvalidArgument,
              "layer_norm normalizes ", p.normalized_rank, " dims of an input of rank ", x.dim());
  const Shape normalized(x.sizes().end() - p.normalized_rank, x.sizes().end());
  c.out[0] = layer_norm(x, normalized, c.opt(1), c.opt(2), p.eps);
}

void run_BatchNorm(OpContext& c) {
  c.out[0] = batch_norm(c.need(0, "data"), c.need(1, "running_mean"), c.need(2, "running_var"), c.opt(3), c.opt(4),
                        c.params<NormParams>().eps);
}

void run_Conv2d(OpContext& c) {
  const auto& p = c.params<Conv2dParams>();
  bool fused = false;  // applied by the CPU kernel (never when a gradient is recorded)
  c.out[0] = conv2d_activated(c.need(0, "data"), c.need(1, "weight"), c.opt(2), p, &fused);
  if (!fused) c.out[0] = activate(c.out[0], p.activation);
}

void run_MaxPool2d(OpContext& c) {
  const auto& p = c.params<Pool2dParams>();
  c.out[0] = max_pool2d(c.need(0, "data"), {p.kernel[0], p.kernel[1]}, {p.stride[0], p.stride[1]},
                        {p.padding[0], p.padding[1]}, {p.dilation[0], p.dilation[1]}, p.ceil_mode);
}

void run_AvgPool2d(OpContext& c) {
  const auto& p = c.params<Pool2dParams>();
  c.out[0] = avg_pool2d(c.need(0, "data"), {p.kernel[0], p.kernel[1]}, {p.stride[0], p.stride[1]},
                        {p.padding[0], p.padding[1]}, p.ceil_mode, p.count_include_pad,
                        p.divisor_override != 0 ? std::optional<int64_t>(p.divisor_override) : std::nullopt);
}

void run_AdaptiveAvgPool2d(OpContext& c) {
  // The output size: the last two dims of the declared output, which must be static.
  const std::vector<int64_t> s = c.model.tensor_shape(c.out_tensor(0));
  EMBER_ENFORCE(s.size() >= 2 && s[s.size() - 2] >= 0 && s[s.size() - 1] >= 0, Status::NotSupported,
              "adaptive_avg_pool2d needs the last two dims of its output static, '",
              c.model.tensor_name(c.out_tensor(0)), "' is declared ", shape_str(s));
  c.out[0] = adaptive_avg_pool2d(c.need(0, "data"), {s[s.size() - 2], s[s.size() - 1]});
}

void run_Embedding(OpContext& c) { c.out[0] = embedding(c.need(0, "weight"), c.need(1, "indices")); }

void run_Pad(OpContext& c) {
  const auto& p = c.params<PadParams>();
  const Tensor& x = c.need(0, "data");
  EMBER_ENFORCE(x.dim() <= kMaxRank, Status::InvalidArgument, "pad input of rank ", x.dim());
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
  c.out[0] = pads.empty() ? x : pad(x, pads, kModes[static_cast<int>(p.mode)], p.value);
}

void run_Linear(OpContext& c) {
  const Tensor& x = c.need(0, "data");
  LinearParams p = c.params<LinearParams>();
  if (c.lora != nullptr) p.activation = {};  // after the adapter's term
  bool activated = false;
  Tensor y = linear_prepacked(x, c.need(1, "weight"), c.opt(2), p, &activated);
  if (c.lora != nullptr) y = y + lora_term(*c.lora, x);
  c.out[0] = activated && c.lora == nullptr ? y : activate(y, c.params<LinearParams>().activation);
}

// --- run-time ops: create() made them of a Linear / Conv2d, the weight prepared ---
// by the backend of the device they run on. The kernels take float32 (a
// float16 executor converts around them) and apply the fused activation.

// y = f(x as float32), in x's dtype.
template <typename F>
Tensor in_float32(const Tensor& x, F f) {
  if (x.dtype() == DType::Float32) return f(x);
  return f(x.to(DType::Float32)).to(x.dtype());
}

// The float32 weight an int8 op approximates (dequantize_weight).
Tensor dequantized_weight(const OpContext& c) {
  return dequantize_weight(c.model, c.model.op(c.index).inputs()->Get(1));
}

// An int8 or sparse kernel has no backward. When x carries a gradient (the
// trainer), y keeps the kernel's values and gets the gradient of the float32
// layer `f` it approximates (a straight-through estimator):
//   y = kernel(x) + (f(x) - f(x).detach())
template <typename F>
Tensor straight_through(const Tensor& y, const Tensor& x, F f) {
  if (!x.requires_grad()) return y;
  const Tensor fx = f(x);
  return y + (fx - fx.detach());
}

Tensor detached(const Tensor& t) { return t.defined() ? t.detach() : t; }

// When the trainer trains op c's bias (input 2: its copy requires grad), the
// trained value minus the file's, else undefined. The int8 kernels hold the
// file's bias in their prepared weight: adding this puts the trained one in
// its place, with its gradient.
Tensor trained_bias_delta(const OpContext& c) {
  const Tensor& b = c.opt(2);
  if (!b.defined() || !b.requires_grad()) return {};
  return b - c.model.weight(c.model.op(c.index).inputs()->Get(2));
}

void run_QLinear(OpContext& c) {
  const Tensor& x = c.need(0, "data");
  QLinearParams p = c.params<QLinearParams>();
  const Activation act = p.activation;
  const Tensor db = trained_bias_delta(c);
  const bool act_after = c.lora != nullptr || db.defined();  // after what is added to the kernel's output
  if (act_after) p.activation = {};
  Tensor y = in_float32(x, [&](const Tensor& v) { return qlinear(v, p); });
  y = straight_through(y, x, [&](const Tensor& v) {
    return activate(linear(v, dequantized_weight(c), detached(c.opt(2))), p.activation);
  });
  if (db.defined()) y = y + db;
  if (c.lora != nullptr) y = y + lora_term(*c.lora, x);
  c.out[0] = act_after ? activate(y, act) : y;
}

void run_QConv2d(OpContext& c) {
  const Tensor& x = c.need(0, "data");
  QConv2dParams p = c.params<QConv2dParams>();
  const Activation act = p.conv.activation;
  const Tensor db = trained_bias_delta(c);
  if (db.defined()) p.conv.activation = {};
  Tensor y = in_float32(x, [&](const Tensor& v) { return qconv2d(v, p); });
  y = straight_through(y, x, [&](const Tensor& v) {
    return activate(conv2d(v, dequantized_weight(c), detached(c.opt(2)), {p.conv.stride[0], p.conv.stride[1]},
                           {p.conv.padding[0], p.conv.padding[1]}, {p.conv.dilation[0], p.conv.dilation[1]},
                           p.conv.groups),
                    p.conv.activation);
  });
  c.out[0] = db.defined() ? activate(y + db.reshape({db.numel(), 1, 1}), act) : y;
}

// The dense float32 weight of a SparseLinear op from its COO values ([nnz]: the
// file's, or the trainer's copy), differentiable in the values: a trained
// sparse weight keeps the file's sparsity pattern.
Tensor coo_weight(const OpContext& c, const Tensor& values) {
  const int32_t t = c.model.op(c.index).inputs()->Get(1);
  EMBER_ENFORCE(values.is_floating_point(), Status::NotSupported, "no gradient flows back through the ",
              dtype_name(values.dtype()), " sparse COO weight '", c.model.tensor_name(t), "'");
  const Tensor& indices = c.model.weight(c.model.tensor(t).sparse()->indices());
  const Shape shape = c.model.tensor_shape(t);
  Tensor flat = empty({values.numel()}, DType::Int64);
  for (int64_t k = 0; k < values.numel(); ++k) {
    int64_t at = 0;
    for (size_t d = 0; d < shape.size(); ++d) at = at * shape[d] + sparse::coo_index(indices, static_cast<int64_t>(d), k);
    flat.data_ptr<int64_t>()[k] = at;
  }
  return scatter(zeros(shape).reshape({-1}), 0, flat, values.to(DType::Float32)).reshape(shape);
}

void run_SparseLinear(OpContext& c) {
  const Tensor& x = c.need(0, "data");
  const Tensor& values = c.need(1, "weight");
  const auto& p = c.params<QLinearParams>();
  const auto dense = [&](const Tensor& v) { return activate(linear(v, coo_weight(c, values), c.opt(2)), p.activation); };
  if (values.requires_grad() || c.opt(2).requires_grad()) {  // trained: the prepared weight holds the file's values
    c.out[0] = dense(x);
    return;
  }
  const Tensor y = in_float32(x, [&](const Tensor& v) { return sparse_linear(v, p, c.opt(2)); });
  c.out[0] = straight_through(y, x, dense);
}

// --- backward ops: autograd runs them, the executor does not --------------------------

#define EMBER_BACKWARD_OPS(X) \
  X(MaxPool2dBackward) X(AvgPool2dBackward) X(AdaptiveAvgPool2dBackward) X(EmbeddingBackward) X(PadBackward)

#define EMBER_BACKWARD_RUNNER(Name)                                                    \
  void run_##Name(OpContext& c) {                                                      \
    raise_error(Status::NotSupported, str_cat("the executor does not run backward ops (", \
                                              op_name(c.kind), ")"));                    \
  }
EMBER_BACKWARD_OPS(EMBER_BACKWARD_RUNNER)
#undef EMBER_BACKWARD_RUNNER

// --- graph ops (graph_ops.h: the same functions the converter folds with) ------------

std::vector<int64_t> dims_of(const DimsParams& p) { return std::vector<int64_t>(p.dims, p.dims + p.rank); }

void run_Reshape(OpContext& c) {
  c.out[0] = unwrap(onnx_reshape(c.need(0, "data"), unwrap(read_ints(c.need(1, "shape"), "shape"))));
}

void run_Permute(OpContext& c) { c.out[0] = c.need(0, "data").permute(dims_of(c.params<DimsParams>())); }

void run_Flatten(OpContext& c) { c.out[0] = unwrap(onnx_flatten(c.need(0, "data"), c.params<AxisParams>().axis)); }

// The axes of Squeeze/Unsqueeze: the run-time input 1, else the params.
std::vector<int64_t> axes_of(const OpContext& c) {
  return c.opt(1).defined() ? unwrap(read_ints(c.opt(1), "axes")) : dims_of(c.params<DimsParams>());
}

void run_Squeeze(OpContext& c) { c.out[0] = unwrap(onnx_squeeze(c.need(0, "data"), axes_of(c))); }

void run_Unsqueeze(OpContext& c) { c.out[0] = unwrap(onnx_unsqueeze(c.need(0, "data"), axes_of(c))); }

void run_Concat(OpContext& c) {
  for (size_t j = 0; j < c.in.size(); ++j) c.need(j, "data");
  c.out[0] = unwrap(onnx_concat(c.in, c.params<AxisParams>().axis));
}

void run_Split(OpContext& c) {
  const Tensor& x = c.need(0, "data");
  const int64_t n = static_cast<int64_t>(c.num_outputs());
  std::vector<Tensor> parts;
  if (c.opt(1).defined()) {
    const std::vector<int64_t> sizes = unwrap(read_ints(c.opt(1), "split"));
    parts = unwrap(onnx_split(x, c.params<AxisParams>().axis, &sizes, n));
  } else {
    parts = unwrap(onnx_split(x, c.params<AxisParams>().axis, nullptr, n));
  }
  for (size_t j = 0; j < c.num_outputs(); ++j) c.out[j] = parts[j];
}

void run_Slice(OpContext& c) {
  c.out[0] = unwrap(onnx_slice(c.need(0, "data"), c.need(1, "starts"), c.need(2, "ends"), c.opt(3), c.opt(4)));
}

void run_Gather(OpContext& c) {
  c.out[0] = unwrap(onnx_gather(c.need(0, "data"), c.need(1, "indices"), c.params<AxisParams>().axis));
}

void run_Expand(OpContext& c) {
  c.out[0] = unwrap(onnx_expand(c.need(0, "data"), unwrap(read_ints(c.need(1, "shape"), "shape"))));
}

void run_ShapeOf(OpContext& c) { c.out[0] = unwrap(onnx_shape(c.need(0, "data"))); }

void run_ConstantOfShape(OpContext& c) {
  c.out[0] = unwrap(onnx_constant_of_shape(unwrap(read_ints(c.need(0, "shape"), "shape")),
                                           c.params<ScalarParams>().value,
                                           TensorOptions(c.declared_dtype(0)).device(c.device)));
}

void run_Range(OpContext& c) {
  c.out[0] = unwrap(onnx_range(c.need(0, "start"), c.need(1, "limit"), c.need(2, "delta"),
                               TensorOptions(c.declared_dtype(0)).device(c.device)));
}

// --- indexing, selection and scans (graph_ops_index.cc) ------------------------------

void run_scan(OpContext& c, bool product) {
  const auto& p = c.params<ScanParams>();
  const Tensor& x = c.need(0, "data");
  int64_t axis = p.axis;
  if (c.opt(1).defined()) {
    const std::vector<int64_t> a = unwrap(read_ints(c.opt(1), "axis"));
    EMBER_ENFORCE(a.size() == 1, Status::InvalidArgument, "the axis input must have one value, got ", a.size());
    axis = a[0];
  }
  c.out[0] =
      cumulative(x, unwrap(onnx_axis(axis, std::max<int64_t>(x.dim(), 1), "axis")), product, p.exclusive, p.reverse);
}

void run_CumSum(OpContext& c) { run_scan(c, false); }
void run_CumProd(OpContext& c) { run_scan(c, true); }

void run_TopK(OpContext& c) {
  const auto& p = c.params<TopKParams>();
  const std::vector<int64_t> k = unwrap(read_ints(c.need(1, "k"), "k"));
  EMBER_ENFORCE(k.size() == 1, Status::InvalidArgument, "the k input must have one value, got ", k.size());
  auto [values, indices] = unwrap(onnx_topk(c.need(0, "data"), k[0], p.axis, p.largest, p.sorted));
  c.out[0] = values;
  if (c.num_outputs() > 1) c.out[1] = indices;
}

void run_Recurrence(OpContext& c) {
  std::vector<Tensor> y = recurrence(c.need(0, "X"), c.need(1, "W"), c.need(2, "R"), c.opt(3), c.opt(4), c.opt(5),
                                     c.opt(6), c.opt(7), c.params<RecurrenceParams>());
  for (size_t j = 0; j < c.num_outputs(); ++j) c.out[j] = std::move(y[j]);
}

void run_NonZero(OpContext& c) { c.out[0] = unwrap(onnx_nonzero(c.need(0, "data"))); }

void run_Unique(OpContext& c) {
  const std::vector<Tensor> r = unwrap(onnx_unique(c.need(0, "data"), c.params<UniqueParams>()));
  for (size_t j = 0; j < c.num_outputs() && j < r.size(); ++j) c.out[j] = r[j];
}
void run_BitCast(OpContext& c) { c.out[0] = unwrap(onnx_bit_cast(c.need(0, "data"), c.declared_dtype(0))); }

// --- dispatch --------------------------------------------------------------------------

void dispatch(OpContext& ctx) {
  switch (ctx.kind) {
#define RT_OP(Name, name, n_in, n_out, Params) \
  case OpKind::Name:                           \
    return run_##Name(ctx);
#include "runtime/graph/ops.def"
#undef RT_OP
  }
  raise_error(Status::InvalidModel, str_cat("unknown op id ", static_cast<int>(ctx.kind)));
}

// Checks output j against the file's declaration.
void check_output(const OpContext& ctx, size_t j, const Tensor& y) {
  const Model& m = ctx.model;
  const int32_t t = ctx.out_tensor(j);
  EMBER_ENFORCE(y.defined(), Status::Internal, "output ", j, " '", m.tensor_name(t), "' was not computed");
  // Read from the flatbuffer in place: this runs for every op of every run.
  const auto* declared = m.tensor(t).shape();
  const bool dtype_ok = y.dtype() == m.tensor_dtype(t) ||
                        (y.dtype() == ctx.low && m.tensor_dtype(t) == DType::Float32);
  bool ok = dtype_ok && y.dim() == static_cast<int64_t>(vlen(declared));
  for (uint32_t d = 0; ok && d < vlen(declared); ++d) {
    ok = declared->Get(d) < 0 || declared->Get(d) == y.size(static_cast<int64_t>(d));
  }
  EMBER_ENFORCE(ok, Status::ShapeMismatch, "output '", m.tensor_name(t), "' is ", dtype_name(y.dtype()), " ",
              shape_str(y.sizes()), ", but the model declares ", dtype_name(m.tensor_dtype(t)), " ",
              shape_str(m.tensor_shape(t)));
}

}  // namespace

bool is_backward_op(OpKind kind) {
#define EMBER_IS_BACKWARD(Name) \
  if (kind == OpKind::Name) return true;
  EMBER_BACKWARD_OPS(EMBER_IS_BACKWARD)
#undef EMBER_IS_BACKWARD
  return false;
}

void run_op(OpContext& ctx, std::vector<Tensor>& values) {
  const size_t n_out = ctx.num_outputs();
  ctx.out.assign(n_out, Tensor());
  dispatch(ctx);
  for (size_t j = 0; j < n_out; ++j) {
    const int32_t t = ctx.out_tensor(j);
    if (t < 0) continue;
    check_output(ctx, j, ctx.out[j]);
    values[static_cast<size_t>(t)] = ctx.out[j];
  }
}

}  // namespace ember
