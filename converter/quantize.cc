// quantize_weights(): the converter's dynamic int8 pass over a ModelDef (see
// convert.h). Weights are quantized only by quant/qscheme.h, so files are
// deterministic and match what PyTorch's quantize_dynamic stores.
#include <algorithm>
#include <cstring>
#include <set>

#include "converter/convert.h"
#include "quant/qscheme.h"
#include "runtime/autograd/grad_mode.h"

namespace ember::converter {

namespace {

std::vector<float> float_values(const TensorDef& t) {
  std::vector<float> v(t.byte_size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), t.bytes(), v.size() * sizeof(float));
  return v;
}

}  // namespace

Diag quantize_weights(ModelDef& def, const ConvertOptions& options, QuantizeReport* report) {
  if (options.quantize.empty()) {
    if (options.activations != ActivationQuant::PerTensor)
      return {Status::InvalidArgument, "--activations per-row needs --quantize dynamic-int8"};
    if (options.reduce_range) return {Status::InvalidArgument, "--reduce-range needs --quantize dynamic-int8"};
    return Diag::success();
  }
  if (options.quantize != "dynamic-int8")
    return {Status::InvalidArgument,
            "unknown quantization '" + options.quantize + "' (supported: dynamic-int8)"};
  bool gemm = false, matmul = false, conv = false;
  for (const std::string& op : options.quantize_ops) {
    if (op == "Gemm") {
      gemm = true;
    } else if (op == "MatMul") {
      matmul = true;
    } else if (op == "Conv") {
      conv = true;
    } else {
      return {Status::InvalidArgument,
              "unknown op type '" + op + "' in --quantize-ops (supported: MatMul, Gemm, Conv)"};
    }
  }
  if (options.min_weight_elements < 0)
    return {Status::InvalidArgument, "--min-weight-elements must be >= 0"};
  const std::set<std::string> exclude(options.exclude.begin(), options.exclude.end());

  // How many times each tensor is read (ops and graph outputs): only weights
  // read by their one op are rewritten.
  std::vector<int> uses(def.tensors.size(), 0);
  for (const OpDef& op : def.ops) {
    for (int32_t t : op.inputs) {
      if (t >= 0) ++uses[static_cast<size_t>(t)];
    }
  }
  for (int32_t t : def.outputs) ++uses[static_cast<size_t>(t)];

  QuantizeReport r;
  const bool per_channel = !options.per_tensor;
  for (OpDef& op : def.ops) {
    const bool is_linear = op.op == OpKind::Linear && gemm;
    const bool is_matmul = op.op == OpKind::MatMul && matmul;
    // Conv: groups = 1 only (grouped and depthwise convolutions stay fp32).
    const bool is_conv = op.op == OpKind::Conv2d && conv && std::get<Conv2dParams>(op.params).groups == 1;
    if (!is_linear && !is_matmul && !is_conv) continue;
    if (exclude.count(op.name) > 0) continue;
    if (op.inputs.size() < 2 || op.inputs[1] < 0) continue;
    TensorDef& w = def.tensors[static_cast<size_t>(op.inputs[1])];
    if (!w.has_data || w.dtype != DType::Float32 || w.shape.size() != (is_conv ? 4u : 2u) || w.quant || w.sparse)
      continue;
    if (uses[static_cast<size_t>(op.inputs[1])] != 1) continue;
    int64_t elements = 1;
    for (int64_t d : w.shape) elements *= d;
    if (elements < options.min_weight_elements || elements == 0) continue;
    std::vector<float> v = float_values(w);
    int64_t n = w.shape[0], k = elements / std::max<int64_t>(w.shape[0], 1);
    const std::vector<int64_t> shape = w.shape;
    if (is_matmul) {  // B [K, N] -> Linear's weight [N, K]
      std::swap(n, k);
      std::vector<float> t(v.size());
      for (int64_t i = 0; i < k; ++i) {
        for (int64_t j = 0; j < n; ++j) t[static_cast<size_t>(j * k + i)] = v[static_cast<size_t>(i * n + j)];
      }
      v.swap(t);
    }
    std::vector<int8_t> q(v.size());
    std::vector<float> scales(static_cast<size_t>(per_channel ? n : 1));
    quant::quantize_weight_int8(v.data(), n, k, per_channel, q.data(), scales.data(), options.reduce_range);
    r.bytes_before += static_cast<int64_t>(w.byte_size());
    w.tensor = Tensor();
    w.data.resize(q.size());
    std::memcpy(w.data.data(), q.data(), q.size());
    w.dtype = DType::Int8;
    w.shape = is_matmul ? std::vector<int64_t>{n, k} : shape;
    if (w.dim_names.size() == 2 && is_matmul) std::swap(w.dim_names[0], w.dim_names[1]);
    w.trainable = false;
    QuantDef qd;
    qd.scales = std::move(scales);
    qd.axis = per_channel ? 0 : -1;
    // Conv2d quantizes its whole input per tensor (quant/dynamic_conv.h).
    qd.activations = is_conv ? ActivationQuant::PerTensor : options.activations;
    w.quant = std::move(qd);
    r.bytes_after += static_cast<int64_t>(q.size());
    if (is_matmul) {
      op.op = OpKind::Linear;
      op.inputs = {op.inputs[0], op.inputs[1], -1};
      op.params = LinearParams{};
    }
    ++r.quantized;
    r.nodes.push_back(op.name);
  }
  if (report != nullptr) *report = r;
  return Diag::success();
}

}  // namespace ember::converter

namespace ember::converter {

Diag convert_weights_fp16(ModelDef& def, int* count) {
  // Biases of ops whose weight is int8: the int8 kernels take float32 biases.
  std::set<int32_t> keep;
  for (const OpDef& op : def.ops) {
    if (op.inputs.size() > 2 && op.inputs[1] >= 0 && op.inputs[2] >= 0 &&
        def.tensors[static_cast<size_t>(op.inputs[1])].dtype == DType::Int8)
      keep.insert(op.inputs[2]);
  }
  int n = 0;
  for (size_t i = 0; i < def.tensors.size(); ++i) {
    TensorDef& t = def.tensors[i];
    if (!t.has_data || t.dtype != DType::Float32 || t.quant || t.sparse || keep.count(static_cast<int32_t>(i)) > 0)
      continue;
    Tensor v = t.tensor.defined() ? t.tensor.contiguous() : empty(t.shape, DType::Float32);
    if (!t.tensor.defined() && !t.data.empty()) std::memcpy(v.data_ptr(), t.data.data(), t.data.size());
    NoGradGuard no_grad;
    t.tensor = v.to(DType::Float16).contiguous();
    t.data.clear();
    t.dtype = DType::Float16;
    ++n;
  }
  if (count != nullptr) *count = n;
  return Diag::success();
}

}  // namespace ember::converter
