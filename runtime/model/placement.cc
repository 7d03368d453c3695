#include "runtime/model/placement.h"

#include "runtime/core/error.h"

namespace ember {

namespace {

void add_activation(std::vector<OpKind>& ops, const Activation& a) {
  if (a.kind == ActivationKind::Relu) ops.push_back(OpKind::Relu);
  if (a.kind != ActivationKind::None && a.kind != ActivationKind::Relu) ops.push_back(OpKind::Clamp);
}

}  // namespace

std::vector<OpKind> kernel_ops(OpKind kind, const OpParams& params, bool has_bias) {
  switch (kind) {
    // Views, reshapes and concatenation: Copy (a reshape of a non-contiguous
    // tensor copies; a view read back to the host or by a dense kernel is
    // made contiguous on the device).
    case OpKind::Copy:
    case OpKind::Reshape:
    case OpKind::Permute:
    case OpKind::Flatten:
    case OpKind::Squeeze:
    case OpKind::Unsqueeze:
    case OpKind::Concat:
    case OpKind::Split:
    case OpKind::Slice:
    case OpKind::Expand:
      return {OpKind::Copy};
    case OpKind::ConstantOfShape:
      return {OpKind::Fill};
    case OpKind::Gather:  // run_gather: embedding over a [dim, rest] view, permuted back
      return {OpKind::Embedding, OpKind::Copy};
    case OpKind::MatMul:  // matmul's folded and batched paths reshape and make results contiguous
      return {OpKind::MatMul, OpKind::Copy};
    case OpKind::Linear: {  // linear -> mm, then add_ of the bias (a Copy back), then the fused activation
      std::vector<OpKind> ops{OpKind::MatMul, OpKind::Copy};
      if (has_bias) ops.push_back(OpKind::Add);
      if (const auto* p = std::get_if<LinearParams>(&params)) add_activation(ops, p->activation);
      return ops;
    }
    case OpKind::Conv2d: {
      std::vector<OpKind> ops{OpKind::Conv2d};
      if (const auto* p = std::get_if<Conv2dParams>(&params)) add_activation(ops, p->activation);
      return ops;
    }
    case OpKind::Pad: {  // constant padding: fill then copy; the other modes: the pad kernel
      const auto* p = std::get_if<PadParams>(&params);
      if (p != nullptr && p->mode == PadMode::Constant) return {OpKind::Fill, OpKind::Copy};
      return {OpKind::Pad};
    }
    default:
      return {kind};
  }
}

bool reads_on_host(OpKind kind, size_t slot) {
  switch (kind) {
    case OpKind::Reshape:
    case OpKind::Expand:
    case OpKind::Split:
    case OpKind::Gather:  // indices are wrapped and checked on the host
      return slot == 1;
    case OpKind::Slice:
      return slot >= 1;
    case OpKind::ConstantOfShape:
      return slot == 0;
    case OpKind::ShapeOf:  // reads only the sizes: the input stays where it is
      return true;
    default:
      return false;
  }
}

int key_input(OpKind kind) {
  switch (kind) {
    case OpKind::Fill:
    case OpKind::ConstantOfShape:
      return -1;
    case OpKind::Where:
      return 1;
    default:
      return 0;
  }
}

std::string node_unsupported_reason(const Backend& backend, OpKind kind, const OpParams& params, bool has_bias,
                                    bool has_device_inputs, DType key) {
  const std::string device(backend.name());
  std::vector<OpKind> ops = kernel_ops(kind, params, has_bias);
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

}  // namespace ember
