// What Executor::create() prepares once per op and per tensor of a model
// (runtime/model/executor.h), shared by every ExecutionContext: one struct per
// op and one per tensor instead of parallel vectors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/backend/backend.h"
#include "runtime/graph/op_params.h"
#include "runtime/model/placement.h"
#include "runtime/tensor/tensor.h"

namespace ember {

class Executor;

// Per op.
struct OpState {
  // What runs: the file's op, or the run-time op create() made of it (ops.def:
  // QLinear for a Linear reading an int8 weight with quantization parameters,
  // QConv2d for such a Conv2d, SparseLinear for a Linear reading a sparse COO
  // weight), whose params point to `prepared`.
  OpKind kind = OpKind::Copy;
  OpParams params;                          // decoded once
  Placement placement = Placement::Device;  // where it runs (placement.h)
  std::string reason;                       // why it falls back ("" unless Fallback)
  DType key_dtype = DType::Float32;         // the dtype its kernels were chosen for
  // A run-time op's weight, prepared by the backend of the device it runs on
  // (weights.h; SparseLinear on the CPU: shared with TensorState::prepared_sparse);
  // null otherwise.
  std::shared_ptr<const PreparedWeight> prepared;
  // Control-flow ops (If: then, else; Loop, Scan: body): the CPU executors of
  // their subgraphs, made once at create (control_flow.h).
  std::vector<std::shared_ptr<const Executor>> subgraphs;
  // Conv2d on the CPU: reads its input channels_last (ExecutorOptions::conv_layout).
  bool channels_last = false;
  // MatMul on the CPU under Precision::BFloat16 without a packed operand:
  // its products run on bf16-rounded operands (matmul_prepacked).
  bool bf16 = false;
  // Beside such convolutions, an op whose kernels are not as fast on
  // channels_last inputs: reads them made contiguous.
  bool contiguous_inputs = false;
  // A pair op (pair_ops: Conv2dPair, AddLayerNorm): the index of the first
  // op, which it runs as well; on that op, the pair's index (the executor
  // skips it). Else -1.
  int paired = -1;
};

// Per tensor.
struct TensorState {
  int last_use = -1;  // the last op reading it (graph outputs: num_ops; never read: -1)
  bool host = false;  // an int64 shape value kept on the CPU (device executors)
  // A sparse weight only Linears read, prepared by the CPU backend (SparseLinear).
  std::shared_ptr<const PreparedWeight> prepared_sparse;
  Tensor densified;      // a sparse weight densified, or an fp16 weight upcast: what the ops read
  Tensor device_weight;  // the weight uploaded to the device (if a device op reads it)
};

}  // namespace ember
