// Weight preparation at Executor::create(): everything done once to a model's
// weights before any run, shared by every ExecutionContext (op_state.h holds
// the results).
//
// - Sparse COO weights: one that only Linear ops read as their weight is
//   prepared by the CPU backend for the run-time op SparseLinear (CSR by output
//   row, quant/csr.h; asymmetric int8 values dequantized); one that
//   any other op reads is densified (sparse int8 values outside Linear are
//   NotSupported).
// - `--weights fp16` models: float16 weights upcast to float32.
// - int8 weights with quantization parameters of Linear and Conv2d: prepared by
//   the CPU backend (Backend::prepare_weight) for the run-time ops QLinear /
//   QConv2d (ops.def; symmetric, per tensor or per output channel), which the
//   op then runs as (OpState::kind).
// - float32 Conv2d (groups 1) and Linear weights, and MatMul's constant 2-D
//   second input, of CPU executors: packed by the CPU backend
//   (Backend::prepare_weight) into the GEMM's A (Conv2d) or B (Linear:
//   weight^T; MatMul: b) panels; the op stays itself, its params (MatMul: its
//   OpState::prepared) point to the packed copy.
// - Device executors: run-time op weights prepared again by the device's backend,
//   and every other weight a device op reads uploaded once.
#pragma once

#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/model/executor.h"
#include "runtime/model/loader.h"
#include "runtime/model/op_state.h"

namespace ember {

// Per tensor: last_use (from the ops' inputs and the graph outputs).
std::vector<TensorState> tensor_states(const Model& m);

// Prepares (CPU backend) or densifies the sparse weights (tensors[t].prepared_sparse
// / densified); the Linears reading a prepared one become SparseLinear ops.
Status prepare_sparse(const Model& m, std::vector<OpState>& ops, std::vector<TensorState>& tensors,
                      std::string* error);

// Models converted with --weights fp16: each float16 weight an op reads gets a
// float32 copy in tensors[t].densified (packed sparse weights are left alone).
Status upcast_fp16_weights(const Model& m, std::vector<TensorState>& tensors, std::string* error);

// Prepares the int8 weight of every Linear and Conv2d whose weight is a dense
// int8 tensor with quantization parameters (ops[k].prepared; the op becomes a
// QLinear / QConv2d whose params point to it); other int8 weights of those ops
// are refused.
Status prepare_quantized(const Model& m, std::vector<OpState>& ops, std::string* error);

// Packs the float32 weight of every Conv2d with groups 1, every Linear and
// every MatMul whose second input is a constant 2-D tensor once for the CPU
// GEMM, and of every depthwise Conv2d reading channels_last activations for
// its kernel (ops[k].prepared; Conv2dParams::weight / LinearParams::weight
// point to it); a weight several ops read the same way is packed once. `bf16`
// (Precision::BFloat16): GEMM weights packed as bfloat16 for the GEMM's bf16
// kernel, and the other MatMuls' products on bf16-rounded operands (OpState::bf16).
Status prepare_packed(const Model& m, std::vector<OpState>& ops, const std::vector<TensorState>& tensors, bool bf16,
                      std::string* error);

// Prepares op k's run-time op weight (QLinear, QConv2d, SparseLinear) with the
// device's backend (Backend::prepare_weight) instead of the CPU's: ops[k]'s
// params then point to it. "" on success, else why the device cannot run it.
std::string prepare_for_device(const Model& m, int k, Backend& backend, OpState& op);

// Uploads every weight a device-placed op reads (in a slot it does not read on
// the host) to the device once (tensors[t].device_weight), as float16 with
// Precision::Float16. A run-time op's prepared weight is not uploaded again.
Status upload_weights(const Model& m, const ExecutorOptions& options, const std::vector<OpState>& ops,
                      std::vector<TensorState>& tensors, std::string* error);

// ExecutorOptions::adapters: each on a Linear op (run as Linear or QLinear)
// whose weight is [out, in], A float32 [r, in], B float32 [out, r], one per op.
Status check_adapters(const Model& m, const std::vector<OpState>& ops,
                      const std::vector<std::pair<int, LoraAdapter>>& adapters, std::string* error);

}  // namespace ember
