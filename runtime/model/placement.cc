#include "runtime/model/placement.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "runtime/core/error.h"
#include "runtime/model/executor.h"
#include "runtime/model/loader.h"
#include "runtime/model/model_access.h"
#include "runtime/model/op_state.h"
#include "runtime/model/weights.h"

namespace ember {

namespace {

void add_activation(std::vector<OpKind>& ops, const Activation& a) {
  if (a.kind == ActivationKind::Relu) ops.push_back(OpKind::Relu);
  if (a.kind == ActivationKind::Clamp) ops.push_back(OpKind::Clamp);
  if (a.kind == ActivationKind::HardSwish) ops.push_back(OpKind::Hardswish);
}

// How a node of one kind is placed.
struct OpRule {
  std::vector<OpKind> kernels;  // the kernel ops its front-end runs (empty: its own kernel)
  uint32_t host_inputs = 0;     // bit j: input j is read on the host (reads_on_host)
  int key_input = 0;            // key_input()
  bool host = false;            // always runs on the host (shape arithmetic: ShapeOf, Range)
};

constexpr uint32_t kSlot1 = 1u << 1;
constexpr uint32_t kAllSlots = ~0u;

// The ops that are not simply one kernel of their own. Every other op of
// ops.def runs its own kernel, on the device when the backend's kernels.inc
// lists it for the op's dtype (a new op needs no line here). Params-dependent
// kernels (Linear's bias and fused activation, Conv2d's activation, Pad's mode)
// are added by kernel_ops.
std::vector<std::pair<OpKind, OpRule>> special_rules() {
  const OpRule copy = {{OpKind::Copy}};
  const OpRule copy_host_shape = {{OpKind::Copy}, kSlot1};
  return {
      // Views, reshapes and concatenation: Copy (a reshape of a non-contiguous
      // tensor copies; a view read back to the host or by a dense kernel is
      // made contiguous on the device). Shapes, split sizes, starts/ends/axes/
      // steps and gather indices (wrapped and checked there) are read on the host.
      {OpKind::Copy, copy},
      {OpKind::Permute, copy},
      {OpKind::Flatten, copy},
      {OpKind::Concat, copy},
      {OpKind::Reshape, copy_host_shape},
      {OpKind::Expand, copy_host_shape},
      {OpKind::Split, copy_host_shape},
      {OpKind::Squeeze, copy_host_shape},
      {OpKind::Unsqueeze, copy_host_shape},
      {OpKind::Slice, {{OpKind::Copy}, kAllSlots & ~1u}},
      // run_gather: embedding over a [dim, rest] view, permuted back
      {OpKind::Gather, {{OpKind::Embedding, OpKind::Copy}, kSlot1}},
      {OpKind::ConstantOfShape, {{OpKind::Fill}, 1u, -1}},
      {OpKind::Fill, {{}, 0, -1}},
      // reads its inputs on the host and runs there (arange)
      {OpKind::Range, {{}, kAllSlots, -1, true}},
      // a view of the bytes on the host
      {OpKind::BitCast, {{}, kAllSlots, -1, true}},
      // reads only the sizes: the input stays where it is
      {OpKind::ShapeOf, {{}, kAllSlots, 0, true}},
      // keyed by the values, not the condition
      {OpKind::Where, {{}, 0, 1}},
      // without a kernel of its own, the front-end's math path (Copy: transpose_output's layout)
      {OpKind::ScaledDotProductAttention,
       {{OpKind::MatMul, OpKind::Mul, OpKind::Add, OpKind::Softmax, OpKind::Copy}}},
      // Indexing, selection and scans: their own kernels; indices are read on
      // the host to be checked and wrapped; CumSum's axis and TopK's k are read
      // on the host. NonZero and Unique run on the host (their output sizes
      // depend on the values).
      {OpKind::GatherElements, {{}, kSlot1}},
      {OpKind::ScatterElements, {{}, kSlot1}},
      {OpKind::CumSum, {{}, kSlot1}},
      {OpKind::CumProd, {{}, kSlot1}},
      {OpKind::TopK, {{}, kSlot1}},
      {OpKind::NonZero, {{}, kAllSlots, 0, true}},
      {OpKind::Unique, {{}, kAllSlots, 0, true}},
      // Reductions: their own kernel; run-time axes (input 1) are read on the host.
      {OpKind::Sum, {{}, kSlot1}},
      {OpKind::Mean, {{}, kSlot1}},
      {OpKind::Prod, {{}, kSlot1}},
      {OpKind::Var, {{}, kSlot1}},
      {OpKind::Norm, {{}, kSlot1}},
      {OpKind::Max, {{}, kSlot1}},
      {OpKind::Min, {{}, kSlot1}},
      // Resize: ONNX's run-time roi, scales and sizes (inputs 1 to 3) are read on the host.
      {OpKind::Resize, {{}, kAllSlots & ~1u}},
      // NonMaxSuppression runs on the host (its output size depends on the values);
      // RoiAlign's batch indices are checked there; DFT's dft_length and axis and
      // STFT's frame_step and frame_length are read there.
      {OpKind::NonMaxSuppression, {{}, kAllSlots, 0, true}},
      {OpKind::RoiAlign, {{}, 1u << 2}},
      {OpKind::DFT, {{}, kAllSlots & ~1u}},
      {OpKind::STFT, {{}, (1u << 1) | (1u << 3)}},
      // AffineGrid's size, Col2Im's image_shape and block_shape, MaxUnpool's output_shape: read on the host.
      {OpKind::AffineGrid, {{}, kSlot1}},
      {OpKind::Col2Im, {{}, kAllSlots & ~1u}},
      {OpKind::MaxUnpool, {{}, 1u << 2}},
      // matmul's folded and batched paths reshape and make results contiguous;
      // linear: mm, then add_ of the bias (a Copy back), then the activation.
      {OpKind::MatMul, {{OpKind::MatMul, OpKind::Copy}}},
      {OpKind::Linear, {{OpKind::MatMul, OpKind::Copy}}},
  };
}

const OpRule& rule(OpKind kind) {
  static const std::vector<OpRule> rules = [] {
    std::vector<OpRule> v(static_cast<size_t>(kNumOps));
    for (const auto& [op, r] : special_rules()) v[static_cast<size_t>(op)] = r;
    return v;
  }();
  return rules[static_cast<size_t>(kind)];
}

}  // namespace

std::vector<OpKind> kernel_ops(OpKind kind, const OpParams& params, bool adds_input) {
  const OpRule& r = rule(kind);
  std::vector<OpKind> ops = r.kernels.empty() ? std::vector<OpKind>{kind} : r.kernels;
  if (kind == OpKind::Linear) {  // int8 Linears have QLinearParams from create
    if (adds_input) ops.push_back(OpKind::Add);
    if (const auto* p = std::get_if<LinearParams>(&params)) add_activation(ops, p->activation);
    if (const auto* p = std::get_if<QLinearParams>(&params)) add_activation(ops, p->activation);
  } else if (kind == OpKind::Conv2d || kind == OpKind::QConv2d) {
    if (adds_input) ops.push_back(OpKind::Add);
    if (const auto* p = std::get_if<Conv2dParams>(&params)) add_activation(ops, p->activation);
    if (const auto* p = std::get_if<QConv2dParams>(&params)) add_activation(ops, p->conv.activation);
  } else if (kind == OpKind::Pad) {
    const auto* p = std::get_if<PadParams>(&params);
    if (p != nullptr && p->mode == PadMode::Constant) ops = {OpKind::Fill, OpKind::Copy};
  }
  return ops;
}

bool reads_on_host(OpKind kind, size_t slot) { return slot < 32 && (rule(kind).host_inputs >> slot & 1u) != 0; }

int key_input(OpKind kind) { return rule(kind).key_input; }

std::string node_unsupported_reason(const Backend& backend, OpKind kind, const OpParams& params, bool adds_input,
                                    bool has_device_inputs, DType key) {
  const std::string device(backend.name());
  std::vector<OpKind> ops = kernel_ops(kind, params, adds_input);
  // A kernel that reads only contiguous inputs gets non-contiguous ones copied first.
  for (size_t i = 0, n = ops.size(); i < n && has_device_inputs; ++i) {
    const KernelEntry* e = backend.find_kernel(ops[i], key);
    if (e != nullptr && e->contiguous_inputs) ops.push_back(OpKind::Copy);
  }
  std::string missing;
  for (OpKind op : ops) {
    if (backend.supports(op, key)) continue;
    if (missing.find(str_cat("'", op_name(op), "'")) != std::string::npos) continue;
    missing += str_cat(missing.empty() ? "" : ", ", "'", op_name(op), "'");
  }
  if (missing.empty()) return {};
  return str_cat("not implemented for ", device, " (no ", dtype_name(key), " kernel for ", missing, ")");
}

std::string describe_op(const Model& m, int k, DType key) {
  return str_cat("node '", fb_str(m.op(k).name()), "' (", op_name(m.op_kind(k)), ", ", dtype_name(key), ")");
}

namespace {

// The dtype a value has when the ops read it (upcast fp16 weights and
// densified sparse weights are float32).
DType value_dtype(const Model& m, const std::vector<TensorState>& tensors, int32_t t) {
  const Tensor& d = tensors[static_cast<size_t>(t)].densified;
  return d.defined() ? d.dtype() : m.tensor_dtype(t);
}

// Places op k: Host (shape arithmetic), Device, or Fallback with its reason.
void place_op(const Model& m, int k, Backend& backend, DType low, std::vector<OpState>& ops,
              std::vector<TensorState>& tensors) {
  OpState& op = ops[static_cast<size_t>(k)];
  const OpKind kind = m.op_kind(k);
  const auto* in = m.op(k).inputs();
  const auto* out = m.op(k).outputs();
  bool any_input = false, all_host = true, device_inputs = false;
  for (uint32_t j = 0; j < vlen(in); ++j) {
    const int32_t t = in->Get(j);
    if (t < 0) continue;
    any_input = true;
    all_host = all_host && tensors[static_cast<size_t>(t)].host;
    device_inputs = device_inputs || !reads_on_host(kind, j);
  }
  const int ki = key_input(kind);
  DType key = ki >= 0 && static_cast<uint32_t>(ki) < vlen(in) && in->Get(static_cast<uint32_t>(ki)) >= 0
                  ? value_dtype(m, tensors, in->Get(static_cast<uint32_t>(ki)))
                  : (vlen(out) > 0 && out->Get(0) >= 0 ? m.tensor_dtype(out->Get(0)) : DType::Float32);
  if (key == DType::Float32) key = low;
  op.key_dtype = key;
  if (rule(kind).host || (any_input && all_host)) {
    op.placement = Placement::Host;
    for (uint32_t j = 0; j < vlen(out); ++j) {
      if (out->Get(j) >= 0) tensors[static_cast<size_t>(out->Get(j))].host = true;
    }
    return;
  }
  const bool int8 = op.kind == OpKind::QLinear || op.kind == OpKind::QConv2d;
  const bool sparse = op.kind == OpKind::SparseLinear;
  // What an Add kernel adds after the op's own: a Linear's bias, a Conv2d's residual.
  const uint32_t added = kind == OpKind::Conv2d ? 3 : 2;
  const bool adds_input = vlen(in) > added && in->Get(added) >= 0;
  std::string why;
  if (int8 || sparse) {
    // A run-time op runs its own kernel in float32 (16-bit executors convert
    // around it) with the weight the device's backend prepares.
    why = node_unsupported_reason(backend, op.kind, op.params, kind == OpKind::Conv2d && adds_input, device_inputs,
                                  DType::Float32);
    if (why.empty()) why = prepare_for_device(m, k, backend, op);
  } else {
    why = node_unsupported_reason(backend, kind, op.params, adds_input, device_inputs, key);
  }
  // A Copy converts: the device must hold the output's dtype as well.
  DType to = vlen(out) > 0 && out->Get(0) >= 0 ? m.tensor_dtype(out->Get(0)) : key;
  if (to == DType::Float32) to = low;
  if (why.empty() && kind == OpKind::Copy && to != key) {
    why = node_unsupported_reason(backend, kind, op.params, adds_input, device_inputs, to);
  }
  if (why.empty()) return;
  op.placement = Placement::Fallback;
  op.reason = why;
}

}  // namespace

Status place_ops(const Model& m, DeviceType device, DType low, bool allow_fallback, bool log_fallback,
                 std::vector<OpState>& ops, std::vector<TensorState>& tensors, std::string* error) {
  Backend* backend = get_backend(device);
  if (backend == nullptr)
    return report_error(error, Status::NotSupported, "ember is not built with support for ",
                        device_type_name(device), " devices");
  for (int t = 0; t < m.num_tensors(); ++t) {
    const DType d = m.tensor_dtype(t);
    if (m.weight(t).defined() && m.tensor(t).sparse() == nullptr && (d == DType::Int64 || d == DType::Int32))
      tensors[static_cast<size_t>(t)].host = true;
  }
  int first_bad = -1, n_bad = 0;
  for (int k = 0; k < m.num_ops(); ++k) {
    place_op(m, k, *backend, low, ops, tensors);
    if (ops[static_cast<size_t>(k)].placement != Placement::Fallback) continue;
    if (first_bad < 0) first_bad = k;
    ++n_bad;
  }
  if (n_bad > 0 && !allow_fallback) {
    const OpState& bad = ops[static_cast<size_t>(first_bad)];
    return report_error(error, Status::NotSupported, describe_op(m, first_bad, bad.key_dtype), ": ", bad.reason,
                        n_bad > 1 ? str_cat("; ", n_bad - 1, " more node", n_bad > 2 ? "s" : "", " cannot run on ",
                                            backend->name())
                                  : std::string(),
                        " (allow_fallback, ember's --allow-fallback, runs such nodes on the CPU)");
  }
  for (int k = 0; k < m.num_ops() && log_fallback; ++k) {
    const OpState& op = ops[static_cast<size_t>(k)];
    if (op.placement != Placement::Fallback) continue;
    std::fprintf(stderr, "ember: %s runs on the CPU: %s\n", describe_op(m, k, op.key_dtype).c_str(),
                 op.reason.c_str());
  }
  return Status::Ok;
}

// Opens the device's backend (the driver and a device) and checks what `options` need.
Status check_device(const ExecutorOptions& options, std::string* error) {
  Backend* backend = get_backend(options.device);
  if (backend == nullptr) {
    return report_error(error, Status::NotSupported, "ember is not built with support for ",
                        device_type_name(options.device), " devices");
  }
  Result<Backend::DeviceInfo> info = backend->open();
  if (!info.ok()) return report_error(error, info.status(), backend->last_error());
  if (options.precision == Precision::BFloat16 && !info->bfloat16)
    return report_error(error, Status::UnsupportedHardware, "bf16 precision: the ", backend->name(), " device '",
                        info->device_name, "' does not support bfloat16");
  if (options.precision == Precision::Float16 && !info->float16)
    return report_error(error, Status::UnsupportedHardware, "fp16 precision: the ", backend->name(), " device '",
                        info->device_name, "' does not support float16");
  return Status::Ok;
}

namespace {

// The ops whose CPU kernels run channels_last inputs as fast as contiguous
// ones, keeping the layout (kernels/cpu/elementwise.cc orders dims by the
// output's strides; reduce.cc's 1x1 pool; pool.cc's max pooling): the
// elementwise ops, the squeeze-excite block's pool and max pooling. Others
// read channels_last inputs made contiguous first (a Resize's reference path
// on them ran 80x slower).
bool keeps_channels_last(OpKind op) {
  switch (op) {
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, ...) case OpKind::Name:
#define RT_UNARY_P(Name, ...) case OpKind::Name:
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP
    case OpKind::Gelu:
    case OpKind::Clamp:
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Maximum:
    case OpKind::Minimum:
    case OpKind::AdaptiveAvgPool2d:
    case OpKind::MaxPool2d:
      return true;
    default:
      return false;
  }
}

}  // namespace

// Auto: where the model has a depthwise convolution, whose channels-in-lanes
// kernel is about twice as fast, or an int8 one, which otherwise transposes
// its input to channels last and its output back.
void choose_conv_layout(const Model& m, const ExecutorOptions& options, std::vector<OpState>& ops) {
  if (options.device != DeviceType::CPU || options.precision != Precision::Float32 ||
      options.conv_layout == ConvLayout::Contiguous)
    return;
  bool wanted = false;
  for (int k = 0; k < m.num_ops() && !wanted; ++k) {
    const OpState& op = ops[static_cast<size_t>(k)];
    const auto* conv = std::get_if<Conv2dParams>(&op.params);
    const auto* in = m.op(k).inputs();
    if (op.kind == OpKind::QConv2d) wanted = true;
    if (op.kind != OpKind::Conv2d || conv == nullptr || conv->groups == 1 || vlen(in) < 2) continue;
    const std::vector<int64_t> w = m.tensor_shape(in->Get(1));
    wanted = w.size() == 4 && w[1] == 1;
  }
  if (options.conv_layout == ConvLayout::Auto && !wanted) return;
  for (OpState& op : ops) {
    op.channels_last = op.kind == OpKind::Conv2d || op.kind == OpKind::QConv2d;
    op.contiguous_inputs = !op.channels_last && !keeps_channels_last(op.kind);
  }
}

namespace {

// Op k's input j when it is a weight of the model (or absent: -1), else -2.
int32_t weight_input(const Model& m, int k, uint32_t j) {
  const auto* in = m.op(k).inputs();
  if (j >= vlen(in) || in->Get(j) < 0) return -1;
  return m.weight(in->Get(j)).defined() ? in->Get(j) : -2;
}

// Op k: a float32 channels_last Conv2d with constant weights and no residual.
const Conv2dParams* plain_conv(const Model& m, const std::vector<OpState>& ops, int k) {
  const OpState& op = ops[static_cast<size_t>(k)];
  const auto* p = std::get_if<Conv2dParams>(&op.params);
  const auto* in = m.op(k).inputs();
  if (op.kind != OpKind::Conv2d || !op.channels_last || p == nullptr || vlen(in) < 2 || vlen(m.op(k).outputs()) != 1 ||
      weight_input(m, k, 1) < 0 || weight_input(m, k, 2) == -2 || weight_input(m, k, 3) != -1 || in->Get(0) < 0 ||
      m.tensor_dtype(in->Get(0)) != DType::Float32 || m.tensor_dtype(in->Get(1)) != DType::Float32) {
    return nullptr;
  }
  return p;
}

}  // namespace

int32_t pair_input(const Model& m, OpKind kind, int first, int k, uint32_t j) {
  const uint32_t from_first = kind == OpKind::Conv2dPair ? 3 : 2;  // AddLayerNorm: the Add's two
  const auto* in = m.op(j < from_first ? first : k).inputs();
  const uint32_t i = j < from_first ? j : j - from_first + 1;  // (the second op's input 0 is the first's output)
  return i < vlen(in) ? in->Get(i) : -1;
}

namespace {

// Op b, a LayerNorm, and op a, the Add whose float32 sum of two tensors of
// one declared shape it alone reads.
bool add_then_layer_norm(const Model& m, const std::vector<OpState>& ops, int a, int b) {
  const auto* in = m.op(a).inputs();
  if (ops[static_cast<size_t>(a)].kind != OpKind::Add || ops[static_cast<size_t>(b)].kind != OpKind::LayerNorm ||
      vlen(in) != 2 || in->Get(0) < 0 || in->Get(1) < 0 || vlen(m.op(a).outputs()) != 1)
    return false;
  for (int32_t t : {in->Get(0), in->Get(1), m.op(a).outputs()->Get(0)}) {
    if (m.tensor_dtype(t) != DType::Float32) return false;
  }
  return m.tensor_shape(in->Get(0)) == m.tensor_shape(in->Get(1));
}

}  // namespace

void pair_ops(const Model& m, std::vector<OpState>& ops, std::vector<TensorState>& tensors) {
  std::vector<int> readers(static_cast<size_t>(m.num_tensors()), 0);
  for (int k = 0; k < m.num_ops(); ++k) {
    for (uint32_t j = 0; j < vlen(m.op(k).inputs()); ++j) {
      const int32_t t = m.op(k).inputs()->Get(j);
      if (t >= 0) ++readers[static_cast<size_t>(t)];
    }
  }
  for (int32_t t : m.outputs()) ++readers[static_cast<size_t>(t)];
  for (int b = 1; b < m.num_ops(); ++b) {
    const int a = b - 1;
    if (ops[static_cast<size_t>(a)].paired >= 0 || vlen(m.op(a).outputs()) < 1 || vlen(m.op(b).inputs()) < 1) continue;
    const int32_t mid = m.op(a).outputs()->Get(0);
    if (m.op(b).inputs()->Get(0) != mid || mid < 0 || readers[static_cast<size_t>(mid)] != 1) continue;
    OpState &first = ops[static_cast<size_t>(a)], &pair = ops[static_cast<size_t>(b)];
    const Conv2dParams* pw = plain_conv(m, ops, a);
    const Conv2dParams* dw = plain_conv(m, ops, b);
    if (pw != nullptr && dw != nullptr) {
      const std::vector<int64_t> w1 = m.tensor_shape(m.op(a).inputs()->Get(1));
      const std::vector<int64_t> w2 = m.tensor_shape(m.op(b).inputs()->Get(1));
      const bool pointwise = w1.size() == 4 && w1[2] == 1 && w1[3] == 1 && pw->groups == 1 && pw->stride[0] == 1 &&
                             pw->stride[1] == 1 && pw->padding[0] == 0 && pw->padding[1] == 0;
      const bool depthwise = w2.size() == 4 && w2[1] == 1 && w1.size() == 4 && w2[0] == w1[0] && dw->groups == w1[0];
      if (!pointwise || !depthwise) continue;
      pair.params = Conv2dPairParams{*pw, *dw};
      pair.kind = OpKind::Conv2dPair;
    } else if (add_then_layer_norm(m, ops, a, b)) {
      pair.kind = OpKind::AddLayerNorm;  // (its params: the LayerNorm's)
    } else {
      continue;
    }
    pair.paired = a;
    first.paired = b;
    // The pair reads the first op's inputs: they live until it has run.
    for (uint32_t j = 0; j < vlen(m.op(a).inputs()); ++j) {
      const int32_t t = m.op(a).inputs()->Get(j);
      if (t >= 0) tensors[static_cast<size_t>(t)].last_use = std::max(tensors[static_cast<size_t>(t)].last_use, b);
    }
  }
}

}  // namespace ember
