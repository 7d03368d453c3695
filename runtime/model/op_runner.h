// Running one op of a model: the executor's dispatch (op_runner.cc), one
// runner per ops.def line, selected by a switch generated from ops.def.
// Runners call the ops' Status-returning cores (runtime/ops/ops.h's core::)
// and the graph ops (graph_ops.h), and return a Status; nothing raises.
#pragma once

#include <cstdint>
#include <variant>
#include <vector>

#include "runtime/model/loader.h"
#include "runtime/model/op_state.h"
#include "runtime/tensor/tensor.h"

namespace ember {

// A LoRA adapter on a Linear or QLinear op (runtime/train): the op computes
// y = act(W x + b + scale * B (A x)), A [rank, in], B [out, rank].
struct LoraAdapter {
  Tensor a, b;
  double scale = 1.0;
};

// Everything a runner reads, and the outputs it writes.
struct OpContext {
  const Model& model;
  int index;                               // the op's index in the model
  OpKind kind;
  const OpState& state;                    // prepared at create (params, packed weights)
  const std::vector<TensorState>& tensors;  // prepared at create (packed sparse weights)
  const std::vector<Tensor>& in;           // the op's inputs, on the devices placement chose
  Device device;     // where ops without tensor inputs create their output
  bool on_device;    // the op runs on the executor's (non-CPU) device
  DType low;         // what float32 values are on the device: Float16 / BFloat16 (Precision), or Float32
  std::vector<Tensor> out;  // one per output slot, set by the runner
  const LoraAdapter* lora = nullptr;  // the trainer's adapter on this op, if any

  // Input j, which must be given ("the <what> input is missing").
  Result<Tensor> need(size_t j, const char* what) const;
  // Input j, or an undefined tensor when omitted.
  const Tensor& opt(size_t j) const;
  size_t num_outputs() const;
  int32_t out_tensor(size_t j) const;  // the model tensor of output j (-1: omitted)
  // The dtype output j is created with (float32 is float16 in fp16 mode).
  DType declared_dtype(size_t j) const;
  // Output j from a core's result (or its Status).
  Status set(size_t j, Result<Tensor> r);
  template <typename P>
  const P& params() const {
    return std::get<P>(state.params);
  }
};

// The float32 weight that int8 weight t of `m` stands for: (q - zero_point) *
// scale, per tensor or along its quantization axis (what the trainer's
// straight-through gradient and a merged LoRA save use; run_time_ops.cc).
Result<Tensor> dequantize_weight(const Model& m, int t);

// Steps the runners share (op_runner.cc): a Linear / Conv2d's fused
// activation, in place unless y records a gradient; y plus a LoRA adapter's
// term scale * (x A^T) B^T.
Result<Tensor> activate(const Tensor& y, const Activation& a);
Result<Tensor> add_lora(const Tensor& y, const LoraAdapter& a, const Tensor& x);
// layer_norm of x over its last p.normalized_rank dims (weight and bias
// optional), as the LayerNorm op runs it.
Result<Tensor> layer_norm_step(const Tensor& x, const Tensor& w, const Tensor& bias, const NormParams& p);
// A convolution's input under OpState::channels_last: converted to
// channels_last, but an image's few channels (contiguous, at most 4; `stem`:
// the op reads them so) are left as they are, and the output format the op
// asks for is then channels_last: the CPU kernels' stems, float32 and int8,
// read NCHW rows (MobileNetV2's 3x224x224: the converting copy took
// 0.04-0.09 ms). Returns that format (Preserve: x's).
Result<MemoryFormat> channels_last_input(const OpState& s, bool stem, Tensor* x);
// A Conv2d as the executor runs it: the convolution, then `residual` (or
// none) and p's activation (by the CPU kernel where it can).
Result<Tensor> conv2d_step(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p,
                           const Tensor& residual = Tensor(), MemoryFormat out_format = MemoryFormat::Preserve);

// The run-time ops' runners (run_time_ops.cc).
Status run_QLinear(OpContext& c);
Status run_QConv2d(OpContext& c);
Status run_SparseLinear(OpContext& c);
Status run_Conv2dPair(OpContext& c);
Status run_AddLayerNorm(OpContext& c);

// Runs op ctx.index: the runner fills ctx.out, then each output is checked
// against the model's declared dtype and shape and stored in values[tensor].
// A failure's message is the thread's (error_message(); backward ops: NotSupported).
Status run_op(OpContext& ctx, std::vector<Tensor>& values);

// The backward ops of ops.def (autograd runs them; the executor does not).
bool is_backward_op(OpKind kind);

}  // namespace ember
