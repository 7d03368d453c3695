// Placement: which backend each node of a model runs on, decided once by
// Executor::create (runtime/model/executor.h) for a device other than the CPU.
//
// A node runs on the device when the device's backend has a kernel for every
// kernel op its front-end calls (vulkan_kernel_ops) at the node's dtype;
// otherwise it is "not implemented for vulkan" (an error at create unless
// ExecutorOptions::allow_fallback, which runs it on the CPU instead).
// Host nodes are the int64 shape computations (ShapeOf and what only reads
// shapes and int64 constants): they run on the CPU by design, not as a
// fallback.
#pragma once

#include <string>
#include <vector>

#include "runtime/backend/backend.h"
#include "runtime/core/status.h"
#include "runtime/graph/op_kind.h"
#include "runtime/graph/op_params.h"

namespace ember {

class Model;
struct ExecutorOptions;
struct OpState;
struct TensorState;

enum class Placement : uint8_t {
  Device,    // on the executor's device
  Host,      // on the CPU by design (shape arithmetic on int64 tensors)
  Fallback,  // on the CPU because the device cannot run it (allow_fallback)
};

// The kernel ops the front-end of a node of `kind` runs, Copy included where
// the front-end may copy (reshapes of views, concatenation, matmul's batched
// paths, linear's in-place bias add) or where the node makes views that a
// later read back to the host makes contiguous on the device;
// node_unsupported_reason adds Copy for kernels declared dense
// (RT_KERNEL_DENSE). `adds_input`: an input the front-end adds with an Add
// kernel after the op's own (a Linear's bias, a Conv2d's residual).
std::vector<OpKind> kernel_ops(OpKind kind, const OpParams& params, bool adds_input);

// True when input `slot` of a node of `kind` is read on the host (a shape,
// starts/ends/axes/steps, split sizes, gather indices): it stays a CPU tensor.
bool reads_on_host(OpKind kind, size_t slot);

// The input slot whose dtype selects the kernels (the first input but for
// Where, whose kernel is keyed by the values, not the condition); -1: the
// output's dtype (ops without tensor inputs).
int key_input(OpKind kind);


// "" when `backend` runs a node of `kind` at dtype `key`; otherwise why not,
// e.g. "not implemented for vulkan (no kernel for matmul, add at float32)".
// (Linear/Conv2d with int8 or sparse weights: pack_for_device, weights.h.)
std::string node_unsupported_reason(const Backend& backend, OpKind kind, const OpParams& params, bool adds_input,
                                    bool has_device_inputs, DType key);

// Places every op of `m` for a device executor (Executor::create): sets
// ops[k].placement, reason and key_dtype, tensors[t].host (int64 shape
// values), and packs int8 / sparse Linear weights on the device. Unless
// `allow_fallback`, a node the device cannot run is NotSupported, naming the
// first one; with `log_fallback`, one stderr line per fallback node.
// `low`: the dtype float32 values have on the device (Float16 / BFloat16 under
// Precision::Float16 / BFloat16; Float32 otherwise).
Status place_ops(const Model& m, DeviceType device, DType low, bool allow_fallback, bool log_fallback,
                 std::vector<OpState>& ops, std::vector<TensorState>& tensors, std::string* error);

// "node 'fc1' (linear, float32)": op k as placement messages name it.
std::string describe_op(const Model& m, int k, DType key);

// Opens the device's backend (the driver and a device) and checks what
// `options` need (its precision).
Status check_device(const ExecutorOptions& options, std::string* error);

// ExecutorOptions::conv_layout (runtime/model/executor.h): sets
// OpState::channels_last on the Conv2d ops that read channels_last inputs and
// OpState::contiguous_inputs on the ops beside them that read contiguous ones
// (CPU float32; Auto: where the model has a depthwise convolution).
void choose_conv_layout(const Model& m, const ExecutorOptions& options, std::vector<OpState>& ops);

// The CPU executor's pairs of ops run as one (OpState::paired), the second
// op becoming a run-time op at its place; the first is skipped, its output
// never made, and its inputs live until the pair has run:
// - Conv2dPair: a 1x1 Conv2d (stride 1, no padding, groups 1) followed by the
//   depthwise Conv2d that alone reads its output, both channels_last
//   (choose_conv_layout) float32 with constant weights and no residual (its
//   params carry both ops' Conv2dParams with their prepared weights;
//   kernels/cpu/conv_pair.cc);
// - AddLayerNorm: a float32 Add of two tensors of one declared shape followed
//   by the LayerNorm that alone reads the sum (its params: the LayerNorm's;
//   kernels/cpu/norm.cc). Other shapes at run time: add, then layer_norm.
// Each forms only between adjacent ops (the converter's order).
void pair_ops(const Model& m, std::vector<OpState>& ops, std::vector<TensorState>& tensors);
// Input j of the pair op `kind` at op k whose first op is `first`: its model
// tensor, or -1 (none). Conv2dPair (0-4): x, weight, bias of the 1x1 op, then
// the weight and bias of the depthwise op k; AddLayerNorm (0-3): the Add's
// two inputs, then the LayerNorm's weight and bias.
int32_t pair_input(const Model& m, OpKind kind, int first, int k, uint32_t j);

}  // namespace ember
