// The executor's dispatch: one runner per ops.def line, Status run_<Name>(ctx),
// called from a switch that ops.def generates. The switch has no default: a
// new line in ops.def without its runner does not compile ("'run_NewOp' was
// not declared"). Runners call the ops' Status-returning cores (core::f,
// runtime/ops/ops.h) and the graph ops (graph_ops.h); they raise nothing.
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

#pragma GCC diagnostic error "-Wswitch"

namespace ember {

Result<Tensor> OpContext::need(size_t j, const char* what) const {
  EMBER_CHECK(j < in.size() && in[j].defined(), Status::InvalidArgument, "the ", what, " input is missing");
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

Status OpContext::set(size_t j, Result<Tensor> r) {
  EMBER_TRY(r);
  out[j] = std::move(r.get());
  return Status::Ok;
}

// The fused activation of a Linear / Conv2d: in place through its kernel,
// unless y records a gradient (the trainer, runtime/train): then through the
// front-ends, whose backward masks the gradient.
Result<Tensor> activate(const Tensor& y, const Activation& a) {
  if (a.kind == ActivationKind::None || y.numel() == 0) return y;
  if (a.kind == ActivationKind::Relu || a.kind == ActivationKind::HardSwish) {
    const bool relu_kind = a.kind == ActivationKind::Relu;
    if (y.requires_grad()) return relu_kind ? core::relu(y) : core::hardswish(y);
    // Elementwise, same index: in == out is safe.
    EMBER_TRY(run_kernel(relu_kind ? OpKind::Relu : OpKind::Hardswish, {y}, {y}));
    return y;
  }
  ClampParams c;
  c.has_min = std::isfinite(a.min);
  c.has_max = std::isfinite(a.max);
  if (c.has_min) c.min = a.min;
  if (c.has_max) c.max = a.max;
  if (!c.has_min && !c.has_max) return y;
  if (y.requires_grad())
    return core::clamp(y, c.has_min ? std::optional<Scalar>(c.min) : std::nullopt,
                       c.has_max ? std::optional<Scalar>(c.max) : std::nullopt);
  EMBER_TRY(run_kernel(OpKind::Clamp, {y}, {y}, c));
  return y;
}

Result<Tensor> layer_norm_step(const Tensor& x, const Tensor& w, const Tensor& bias, const NormParams& p) {
  EMBER_CHECK(p.normalized_rank >= 1 && p.normalized_rank <= x.dim(), Status::InvalidArgument,
              "layer_norm normalizes ", p.normalized_rank, " dims of an input of rank ", x.dim());
  const Shape normalized(x.sizes().end() - p.normalized_rank, x.sizes().end());
  return core::layer_norm(x, normalized, w, bias, p.eps);
}

Result<MemoryFormat> channels_last_input(const OpState& s, bool stem, Tensor* x) {
  if (!s.channels_last || x->dim() != 4 || x->is_contiguous(MemoryFormat::ChannelsLast)) return MemoryFormat::Preserve;
  if (stem && x->is_contiguous() && x->size(1) <= 4) return MemoryFormat::ChannelsLast;
  EMBER_ASSIGN_OR_RETURN(*x, core::contiguous(*x, MemoryFormat::ChannelsLast));
  return MemoryFormat::Preserve;
}

Result<Tensor> conv2d_step(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p,
                           const Tensor& residual, MemoryFormat out_format) {
  bool fused = false;  // applied by the CPU kernel (never when a gradient is recorded)
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::conv2d_activated(x, w, bias, p, &fused, residual, out_format));
  if (fused) return y;
  if (residual.defined()) {
    EMBER_ASSIGN_OR_RETURN(y, core::add(y, residual));
  }
  return activate(y, p.activation);
}

// y + a LoRA adapter's term scale * (x A^T) B^T (the trainer's, runtime/train).
Result<Tensor> add_lora(const Tensor& y, const LoraAdapter& a, const Tensor& x) {
  EMBER_ASSIGN_OR_RETURN(Tensor t, core::linear(x, a.a));
  EMBER_ASSIGN_OR_RETURN(t, core::linear(t, a.b));
  EMBER_ASSIGN_OR_RETURN(t, core::mul(t, a.scale));
  return core::add(y, t);
}

namespace {

// --- helpers ----------------------------------------------------------------------

Result<Shape> static_shape(const Model& m, int t, const char* what) {
  const std::vector<int64_t> s = m.tensor_shape(t);
  for (int64_t d : s) {
    EMBER_CHECK(d >= 0, Status::NotSupported, what, " needs a static output shape, '", m.tensor_name(t),
                "' is declared ", shape_str(s));
  }
  return s;
}

// --- elementwise -------------------------------------------------------------------

Status run_Copy(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  return c.set(0, core::to(x, c.declared_dtype(0)));
}

Status run_Fill(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Shape shape, static_shape(c.model, c.out_tensor(0), "fill"));
  return c.set(0, core::full(shape, c.params<ScalarParams>().value, TensorOptions(c.declared_dtype(0)).device(c.device)));
}

// The unary elementwise ops: every RT_UNARY / RT_UNARY_P op of ops.def runs
// its front-end's core (unary_op).
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, ...)                                   \
  Status run_##Name(OpContext& c) {                           \
    EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data")); \
    return c.set(0, core::unary_op(c.kind, x));               \
  }
#define RT_UNARY_P(Name, ...)                                 \
  Status run_##Name(OpContext& c) {                           \
    const auto& p = c.params<UnaryParams>();                  \
    EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data")); \
    return c.set(0, core::unary_op(c.kind, x, p.a, p.b));     \
  }
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP

// The RT_OP_P ops: their graph front-end's core with the inputs (undefined
// when omitted, after the first) and the params.
#define RT_OP_P_INPUTS_1 x
#define RT_OP_P_INPUTS_2 RT_OP_P_INPUTS_1, c.opt(1)
#define RT_OP_P_INPUTS_3 RT_OP_P_INPUTS_2, c.opt(2)
#define RT_OP_P_INPUTS_4 RT_OP_P_INPUTS_3, c.opt(3)
#define RT_OP_P_INPUTS_5 RT_OP_P_INPUTS_4, c.opt(4)
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(...)
#define RT_UNARY_P(...)
#define RT_OP_P(Name, name, n_in, Params)                                 \
  Status run_##Name(OpContext& c) {                                       \
    EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "first"));            \
    return c.set(0, core::name(RT_OP_P_INPUTS_##n_in, c.params<Params>())); \
  }
#include "runtime/graph/ops.def"
#undef RT_OP_P
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP

Status run_Gelu(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  return c.set(0, core::gelu(x, c.params<GeluParams>().tanh_approximation ? "tanh" : "none"));
}

Status run_Clamp(OpContext& c) {
  const auto& p = c.params<ClampParams>();
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  return c.set(0, core::clamp(x, p.has_min ? std::optional<Scalar>(p.min) : std::nullopt,
                              p.has_max ? std::optional<Scalar>(p.max) : std::nullopt));
}

// The binary ops: their front-end's core on the two inputs.
#define EMBER_BINARY_RUNNER(Name, fn)                            \
  Status run_##Name(OpContext& c) {                              \
    EMBER_ASSIGN_OR_RETURN(const Tensor a, c.need(0, "first"));  \
    EMBER_ASSIGN_OR_RETURN(const Tensor b, c.need(1, "second")); \
    return c.set(0, core::fn(a, b));                             \
  }
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
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_BINARY(Name, name, ...) EMBER_BINARY_RUNNER(Name, name)
#include "runtime/graph/ops.def"
#undef RT_BINARY
#undef RT_OP
#undef EMBER_BINARY_RUNNER

// A constant 2-D second operand was packed at create (weights.h): matmul_prepacked reads it.
Status run_MatMul(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor a, c.need(0, "first"));
  EMBER_ASSIGN_OR_RETURN(const Tensor b, c.need(1, "second"));
  return c.set(0, core::matmul_prepacked(a, b, c.state.prepared.get(), c.state.bf16));
}

Status run_Where(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor cond, c.need(0, "condition"));
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(1, "x"));
  EMBER_ASSIGN_OR_RETURN(const Tensor y, c.need(2, "y"));
  return c.set(0, core::where(cond, x, y));
}

// --- reductions --------------------------------------------------------------------

// A reduction's input, its dims (ReduceParams bits, or the run-time axes of
// input 1) and keepdim; `none`: run-time axes that are empty with noop_empty
// (the output is the input).
struct Reduction {
  const ReduceParams& p;
  Tensor x;
  std::vector<int64_t> dims;  // empty: every dim
  bool none = false;

  explicit Reduction(const OpContext& c) : p(c.params<ReduceParams>()) {}
  Status read(const OpContext& c) {
    EMBER_ASSIGN_OR_RETURN(x, c.need(0, "data"));
    uint32_t bits = p.dims;
    if (c.opt(1).defined()) {
      bits = 0;
      EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> axes, read_ints(c.opt(1), "axes"));
      for (int64_t a : axes) {
        const int64_t d = a < 0 ? a + x.dim() : a;
        EMBER_CHECK(d >= 0 && d < x.dim() && d < 32, Status::OutOfRange, "axis ", a, " is out of range for rank ",
                    x.dim());
        EMBER_CHECK(!((bits >> d) & 1u), Status::InvalidArgument, "axis ", a, " is given twice");
        bits |= uint32_t{1} << d;
      }
      none = bits == 0 && p.noop_empty;
    }
    for (int64_t d = 0; d < 32; ++d) {
      if ((bits >> d) & 1u) {
        EMBER_CHECK(d < x.dim(), Status::OutOfRange, "reduced dim ", d, " is out of range for rank ", x.dim());
        dims.push_back(d);
      }
    }
    return Status::Ok;
  }
  bool all() const { return dims.empty(); }
  // The result of a reduction over every dim, shaped as keepdim says.
  Result<Tensor> keep_all(Result<Tensor> y) const {
    EMBER_TRY(y);
    return p.keepdim ? core::reshape(*y, Shape(static_cast<size_t>(x.dim()), 1)) : std::move(y);
  }
};

// Reads the reduction of op c into r, or returns its input when it reduces nothing.
#define EMBER_REDUCTION(r, c)      \
  Reduction r(c);                  \
  EMBER_TRY(r.read(c));            \
  if (r.none) return c.set(0, r.x)

Status run_Sum(OpContext& c) {
  EMBER_REDUCTION(r, c);
  return c.set(0, r.all() ? r.keep_all(core::sum(r.x)) : core::sum(r.x, r.dims, r.p.keepdim));
}

Status run_Mean(OpContext& c) {
  EMBER_REDUCTION(r, c);
  return c.set(0, r.all() ? r.keep_all(core::mean(r.x)) : core::mean(r.x, r.dims, r.p.keepdim));
}

Status run_Prod(OpContext& c) {
  EMBER_REDUCTION(r, c);
  if (r.all()) return c.set(0, r.keep_all(core::prod(r.x)));
  Tensor y = r.x;
  for (auto it = r.dims.rbegin(); it != r.dims.rend(); ++it) {
    EMBER_ASSIGN_OR_RETURN(y, core::prod(y, *it, r.p.keepdim));
  }
  return c.set(0, y);
}

Status run_Var(OpContext& c) {
  EMBER_REDUCTION(r, c);
  return c.set(0, r.all() ? r.keep_all(core::var(r.x, std::nullopt, r.p.correction))
                          : core::var(r.x, r.dims, r.p.correction, r.p.keepdim));
}

Status run_Norm(OpContext& c) {
  EMBER_REDUCTION(r, c);
  return c.set(0, r.all() ? r.keep_all(core::norm(r.x, r.p.p)) : core::norm(r.x, r.p.p, r.dims, r.p.keepdim));
}

Status run_max_min(OpContext& c, bool is_max) {
  Reduction r(c);
  EMBER_TRY(r.read(c));
  const bool want_indices = c.num_outputs() > 1 && c.out_tensor(1) >= 0;
  EMBER_CHECK(!(r.none && want_indices), Status::NotSupported, "indices of a reduction over no dims are not supported");
  if (r.none) return c.set(0, r.x);
  const bool flt = is_floating(r.x.dtype());
  if (r.x.numel() == 0 && !want_indices && (flt || r.x.dtype() == DType::Bool)) {
    // ONNX: the max of nothing is -inf (false), the min +inf (true); torch raises.
    Shape shape;
    for (int64_t d = 0; d < r.x.dim(); ++d) {
      const bool reduced = r.all() || std::find(r.dims.begin(), r.dims.end(), d) != r.dims.end();
      if (!reduced || r.p.keepdim) shape.push_back(reduced ? 1 : r.x.size(d));
    }
    const Scalar bound = flt ? Scalar(is_max ? -INFINITY : INFINITY) : Scalar(!is_max);
    return c.set(0, core::full(shape, bound, TensorOptions(r.x.dtype()).device(c.device)));
  }
  if (r.dims.size() == 1) {
    EMBER_ASSIGN_OR_RETURN(auto v, is_max ? core::max(r.x, r.dims[0], r.p.keepdim) : core::min(r.x, r.dims[0], r.p.keepdim));
    c.out[0] = v.first;
    if (c.num_outputs() > 1) c.out[1] = v.second;
    return Status::Ok;
  }
  EMBER_CHECK(!want_indices, Status::NotSupported, "indices of a ", is_max ? "max" : "min",
              " over several dims are not supported");
  if (r.all()) return c.set(0, r.keep_all(is_max ? core::max(r.x) : core::min(r.x)));
  Tensor y = r.x;
  for (auto it = r.dims.rbegin(); it != r.dims.rend(); ++it) {
    EMBER_ASSIGN_OR_RETURN(auto v, is_max ? core::max(y, *it, r.p.keepdim) : core::min(y, *it, r.p.keepdim));
    y = v.first;
  }
  return c.set(0, y);
}

Status run_Max(OpContext& c) { return run_max_min(c, true); }
Status run_Min(OpContext& c) { return run_max_min(c, false); }

Status run_arg_max_min(OpContext& c, bool is_max) {
  Reduction r(c);
  EMBER_TRY(r.read(c));
  EMBER_CHECK(r.dims.size() <= 1, Status::NotSupported, op_name(c.kind), " over several dims is not supported");
  if (r.all()) return c.set(0, r.keep_all(is_max ? core::argmax(r.x) : core::argmin(r.x)));
  return c.set(0, is_max ? core::argmax(r.x, r.dims[0], r.p.keepdim) : core::argmin(r.x, r.dims[0], r.p.keepdim));
}

Status run_ArgMax(OpContext& c) { return run_arg_max_min(c, true); }
Status run_ArgMin(OpContext& c) { return run_arg_max_min(c, false); }
#undef EMBER_REDUCTION

// --- neural-network ops --------------------------------------------------------------

Status run_Softmax(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  return c.set(0, core::softmax(x, c.params<SoftmaxParams>().dim));
}

Status run_LogSoftmax(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  return c.set(0, core::log_softmax(x, c.params<SoftmaxParams>().dim));
}

Status run_LayerNorm(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  return c.set(0, layer_norm_step(x, c.opt(1), c.opt(2), c.params<NormParams>()));
}

Status run_BatchNorm(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  EMBER_ASSIGN_OR_RETURN(const Tensor mean, c.need(1, "running_mean"));
  EMBER_ASSIGN_OR_RETURN(const Tensor var, c.need(2, "running_var"));
  return c.set(0, core::batch_norm(x, mean, var, c.opt(3), c.opt(4), c.params<NormParams>().eps));
}

Status run_Conv2d(OpContext& c) {
  const auto& p = c.params<Conv2dParams>();
  EMBER_ASSIGN_OR_RETURN(Tensor x, c.need(0, "data"));
  EMBER_ASSIGN_OR_RETURN(const Tensor w, c.need(1, "weight"));
  // (groups 1: the stem kernel; its other paths convert the input in their scratch.)
  EMBER_ASSIGN_OR_RETURN(const MemoryFormat out_format, channels_last_input(c.state, p.groups == 1, &x));
  return c.set(0, conv2d_step(x, w, c.opt(2), p, c.opt(3), out_format));
}

Status run_MaxPool2d(OpContext& c) {
  const auto& p = c.params<Pool2dParams>();
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  return c.set(0, core::max_pool2d(x, {p.kernel[0], p.kernel[1]}, {p.stride[0], p.stride[1]},
                                   {p.padding[0], p.padding[1]}, {p.dilation[0], p.dilation[1]}, p.ceil_mode));
}

Status run_AvgPool2d(OpContext& c) {
  const auto& p = c.params<Pool2dParams>();
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  return c.set(0, core::avg_pool2d(x, {p.kernel[0], p.kernel[1]}, {p.stride[0], p.stride[1]},
                                   {p.padding[0], p.padding[1]}, p.ceil_mode, p.count_include_pad,
                                   p.divisor_override != 0 ? std::optional<int64_t>(p.divisor_override)
                                                           : std::nullopt));
}

Status run_AdaptiveAvgPool2d(OpContext& c) {
  // The output size: the last two dims of the declared output, which must be static.
  const std::vector<int64_t> s = c.model.tensor_shape(c.out_tensor(0));
  EMBER_CHECK(s.size() >= 2 && s[s.size() - 2] >= 0 && s[s.size() - 1] >= 0, Status::NotSupported,
              "adaptive_avg_pool2d needs the last two dims of its output static, '",
              c.model.tensor_name(c.out_tensor(0)), "' is declared ", shape_str(s));
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  return c.set(0, core::adaptive_avg_pool2d(x, {s[s.size() - 2], s[s.size() - 1]}));
}

Status run_Embedding(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor w, c.need(0, "weight"));
  EMBER_ASSIGN_OR_RETURN(const Tensor i, c.need(1, "indices"));
  return c.set(0, core::embedding(w, i));
}

Status run_Pad(OpContext& c) {
  const auto& p = c.params<PadParams>();
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
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
  return c.set(0, pads.empty() ? x : core::pad(x, pads, kModes[static_cast<int>(p.mode)], p.value));
}

Status run_Linear(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  EMBER_ASSIGN_OR_RETURN(const Tensor w, c.need(1, "weight"));
  LinearParams p = c.params<LinearParams>();
  if (c.lora != nullptr) p.activation = {};  // after the adapter's term
  bool activated = false;
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::linear_prepacked(x, w, c.opt(2), p, &activated));
  if (c.lora != nullptr) {
    EMBER_ASSIGN_OR_RETURN(y, add_lora(y, *c.lora, x));
  }
  return c.set(0, activated && c.lora == nullptr ? y : activate(y, c.params<LinearParams>().activation));
}

// --- backward ops: autograd runs them, the executor does not --------------------------

#define EMBER_BACKWARD_OPS(X) \
  X(MaxPool2dBackward) X(AvgPool2dBackward) X(AdaptiveAvgPool2dBackward) X(EmbeddingBackward) X(PadBackward)

#define EMBER_BACKWARD_RUNNER(Name)                                                                      \
  Status run_##Name(OpContext& c) {                                                                      \
    return fail(Status::NotSupported, "the executor does not run backward ops (", op_name(c.kind), ")"); \
  }
EMBER_BACKWARD_OPS(EMBER_BACKWARD_RUNNER)
#undef EMBER_BACKWARD_RUNNER

// --- graph ops (graph_ops.h: the same functions the converter folds with) ------------

std::vector<int64_t> dims_of(const DimsParams& p) { return std::vector<int64_t>(p.dims, p.dims + p.rank); }

// The values of required input j, an int tensor read on the host ("the shape input ...").
Result<std::vector<int64_t>> ints_input(const OpContext& c, size_t j, const char* what) {
  EMBER_ASSIGN_OR_RETURN(const Tensor t, c.need(j, what));
  return read_ints(t, what);
}

Status run_Reshape(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> shape, ints_input(c, 1, "shape"));
  return c.set(0, onnx_reshape(x, shape));
}

Status run_Permute(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  return c.set(0, core::permute(x, dims_of(c.params<DimsParams>())));
}

Status run_Flatten(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  return c.set(0, onnx_flatten(x, c.params<AxisParams>().axis));
}

// The axes of Squeeze/Unsqueeze: the run-time input 1, else the params.
Result<std::vector<int64_t>> axes_of(const OpContext& c) {
  if (c.opt(1).defined()) return read_ints(c.opt(1), "axes");
  return dims_of(c.params<DimsParams>());
}

Status run_Squeeze(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> axes, axes_of(c));
  return c.set(0, onnx_squeeze(x, axes));
}

Status run_Unsqueeze(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> axes, axes_of(c));
  return c.set(0, onnx_unsqueeze(x, axes));
}

Status run_Concat(OpContext& c) {
  for (size_t j = 0; j < c.in.size(); ++j) EMBER_TRY(c.need(j, "data"));
  return c.set(0, onnx_concat(c.in, c.params<AxisParams>().axis));
}

Status run_Split(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  const int64_t n = static_cast<int64_t>(c.num_outputs());
  std::vector<int64_t> sizes;
  if (c.opt(1).defined()) {
    EMBER_ASSIGN_OR_RETURN(sizes, read_ints(c.opt(1), "split"));
  }
  EMBER_ASSIGN_OR_RETURN(const std::vector<Tensor> parts,
                         onnx_split(x, c.params<AxisParams>().axis, c.opt(1).defined() ? &sizes : nullptr, n));
  for (size_t j = 0; j < c.num_outputs(); ++j) c.out[j] = parts[j];
  return Status::Ok;
}

Status run_Slice(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  EMBER_ASSIGN_OR_RETURN(const Tensor starts, c.need(1, "starts"));
  EMBER_ASSIGN_OR_RETURN(const Tensor ends, c.need(2, "ends"));
  return c.set(0, onnx_slice(x, starts, ends, c.opt(3), c.opt(4)));
}

Status run_Gather(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  EMBER_ASSIGN_OR_RETURN(const Tensor i, c.need(1, "indices"));
  return c.set(0, onnx_gather(x, i, c.params<AxisParams>().axis));
}

Status run_Expand(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> shape, ints_input(c, 1, "shape"));
  return c.set(0, onnx_expand(x, shape));
}

Status run_ShapeOf(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  return c.set(0, onnx_shape(x));
}

Status run_ConstantOfShape(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> shape, ints_input(c, 0, "shape"));
  return c.set(0, onnx_constant_of_shape(shape, c.params<ScalarParams>().value,
                                         TensorOptions(c.declared_dtype(0)).device(c.device)));
}

Status run_Range(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor start, c.need(0, "start"));
  EMBER_ASSIGN_OR_RETURN(const Tensor limit, c.need(1, "limit"));
  EMBER_ASSIGN_OR_RETURN(const Tensor delta, c.need(2, "delta"));
  return c.set(0, onnx_range(start, limit, delta, TensorOptions(c.declared_dtype(0)).device(c.device)));
}

// --- indexing, selection and scans (graph_ops_index.cc) ------------------------------

// The one value of a run-time input (`what`: "axis", "k").
Result<int64_t> one_int(const Tensor& t, const char* what) {
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> v, read_ints(t, what));
  EMBER_CHECK(v.size() == 1, Status::InvalidArgument, "the ", what, " input must have one value, got ", v.size());
  return v[0];
}

Status run_scan(OpContext& c, bool product) {
  const auto& p = c.params<ScanParams>();
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  int64_t axis = p.axis;
  if (c.opt(1).defined()) {
    EMBER_ASSIGN_OR_RETURN(axis, one_int(c.opt(1), "axis"));
  }
  EMBER_ASSIGN_OR_RETURN(const int64_t a, onnx_axis(axis, std::max<int64_t>(x.dim(), 1), "axis"));
  return c.set(0, core::cumulative(x, a, product, p.exclusive, p.reverse));
}

Status run_CumSum(OpContext& c) { return run_scan(c, false); }
Status run_CumProd(OpContext& c) { return run_scan(c, true); }

Status run_TopK(OpContext& c) {
  const auto& p = c.params<TopKParams>();
  EMBER_ASSIGN_OR_RETURN(const Tensor k_in, c.need(1, "k"));
  EMBER_ASSIGN_OR_RETURN(const int64_t k, one_int(k_in, "k"));
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  EMBER_ASSIGN_OR_RETURN(auto r, onnx_topk(x, k, p.axis, p.largest, p.sorted));
  c.out[0] = r.first;
  if (c.num_outputs() > 1) c.out[1] = r.second;
  return Status::Ok;
}

Status run_Recurrence(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "X"));
  EMBER_ASSIGN_OR_RETURN(const Tensor w, c.need(1, "W"));
  EMBER_ASSIGN_OR_RETURN(const Tensor r, c.need(2, "R"));
  EMBER_ASSIGN_OR_RETURN(std::vector<Tensor> y, core::recurrence(x, w, r, c.opt(3), c.opt(4), c.opt(5), c.opt(6),
                                                                 c.opt(7), c.params<RecurrenceParams>()));
  for (size_t j = 0; j < c.num_outputs(); ++j) c.out[j] = std::move(y[j]);
  return Status::Ok;
}

Status run_NonZero(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  return c.set(0, onnx_nonzero(x));
}

Status run_Unique(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  EMBER_ASSIGN_OR_RETURN(const std::vector<Tensor> r, onnx_unique(x, c.params<UniqueParams>()));
  for (size_t j = 0; j < c.num_outputs() && j < r.size(); ++j) c.out[j] = r[j];
  return Status::Ok;
}

Status run_BitCast(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  return c.set(0, onnx_bit_cast(x, c.declared_dtype(0)));
}

// --- dispatch --------------------------------------------------------------------------

Status dispatch(OpContext& ctx) {
  switch (ctx.kind) {
#define RT_OP(Name, name, n_in, n_out, Params) \
  case OpKind::Name:                           \
    return run_##Name(ctx);
#include "runtime/graph/ops.def"
#undef RT_OP
  }
  return fail(Status::InvalidModel, "unknown op id ", static_cast<int>(ctx.kind));
}

// Checks output j against the file's declaration.
Status check_output(const OpContext& ctx, size_t j, const Tensor& y) {
  const Model& m = ctx.model;
  const int32_t t = ctx.out_tensor(j);
  EMBER_CHECK(y.defined(), Status::Internal, "output ", j, " '", m.tensor_name(t), "' was not computed");
  // Read from the flatbuffer in place: this runs for every op of every run.
  const auto* declared = m.tensor(t).shape();
  const bool dtype_ok = y.dtype() == m.tensor_dtype(t) ||
                        (y.dtype() == ctx.low && m.tensor_dtype(t) == DType::Float32);
  bool ok = dtype_ok && y.dim() == static_cast<int64_t>(vlen(declared));
  for (uint32_t d = 0; ok && d < vlen(declared); ++d) {
    ok = declared->Get(d) < 0 || declared->Get(d) == y.size(static_cast<int64_t>(d));
  }
  EMBER_CHECK(ok, Status::ShapeMismatch, "output '", m.tensor_name(t), "' is ", dtype_name(y.dtype()), " ",
              shape_str(y.sizes()), ", but the model declares ", dtype_name(m.tensor_dtype(t)), " ",
              shape_str(m.tensor_shape(t)));
  return Status::Ok;
}

}  // namespace

bool is_backward_op(OpKind kind) {
#define EMBER_IS_BACKWARD(Name) \
  if (kind == OpKind::Name) return true;
  EMBER_BACKWARD_OPS(EMBER_IS_BACKWARD)
#undef EMBER_IS_BACKWARD
  return false;
}

Status run_op(OpContext& ctx, std::vector<Tensor>& values) {
  const size_t n_out = ctx.num_outputs();
  ctx.out.assign(n_out, Tensor());
  EMBER_TRY(dispatch(ctx));
  for (size_t j = 0; j < n_out; ++j) {
    const int32_t t = ctx.out_tensor(j);
    if (t < 0) continue;
    EMBER_TRY(check_output(ctx, j, ctx.out[j]));
    values[static_cast<size_t>(t)] = ctx.out[j];
  }
  return Status::Ok;
}

}  // namespace ember
