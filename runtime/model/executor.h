// Executor: runs a loaded `.ember` model (runtime/model/loader.h) on the CPU
// or on Vulkan (ExecutorOptions).
//
// - An Executor is built once from a Model and is immutable afterwards: share
//   it between threads. Each thread runs it through its own ExecutionContext
//   (the arena, the plan and the profile live there), so several threads can
//   run one loaded model at the same time.
// - Every op runs through the eager front-ends (runtime/ops/ops.h) and so the
//   very kernels the eager API and autograd use; graph ops (ops.def: Reshape,
//   Concat, Gather, ...) are composed from views and those front-ends.
// - Memory: the first run for a given set of input shapes is the planning run.
//   It records every tensor allocation of the run and when it is released
//   (liveness), then packs them into one arena (greedy by size, as TFLite's
//   arena planner). Later runs with the same input shapes serve each
//   allocation from its planned offset: a run allocates no tensor memory.
//   New input shapes (another batch size) plan again.
// - Errors: nothing aborts on bad input. Inputs are checked (count, names,
//   dtypes, ranks, fixed dims, symbolic dims bound consistently: every `batch`
//   has one value); an op that fails reports the node name and the reason.
// - Vulkan (ExecutorOptions::device): create() places every node
//   (runtime/model/placement.h): on the device when the backend has its
//   kernels, else an error naming the node ("not implemented for vulkan"),
//   or, with allow_fallback, on the CPU (one stderr line per such node at
//   create). int64 shape arithmetic (ShapeOf and what only reads shapes)
//   stays on the host. Every weight a device node reads is uploaded once at
//   create, shared by all contexts. A run uploads each input once, records
//   every device node into the one Vulkan command stream (kernels/vulkan:
//   nothing is submitted until the host reads) and downloads each output
//   once: a run without fallback nodes submits once. A value crossing
//   between a device and a fallback node moves once per run (both copies
//   are kept until its last reader). Pipelines are created and cached by the
//   Vulkan context at their first dispatch, i.e. during the first run (which
//   also plans the CPU memory): there is no separate warm-up.
//   Vulkan tensors come from the Vulkan allocator (sub-allocated blocks);
//   the CPU arena plan covers the CPU tensors (outputs, host values).
//   Precision::Float16: float32 weights and activations live as float16 on
//   the device (inputs converted before upload, outputs returned as float32);
//   needs the device's float16 support.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/model/loader.h"
#include "runtime/model/op_runner.h"
#include "runtime/model/op_state.h"
#include "runtime/model/placement.h"
#include "runtime/tensor/tensor.h"

namespace ember {

// A graph input or output as the file declares it.
struct IOInfo {
  int tensor = -1;                     // tensor index in the model
  std::string name;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;          // -1: symbolic
  std::vector<std::string> dim_names;  // one per dim, "" for fixed dims (may be empty)
};

enum class Precision : uint8_t { Float32, Float16, BFloat16 };

// The dtype float32 values have on the device under `p` (Float32: as they are).
inline DType device_float_dtype(Precision p) {
  return p == Precision::Float16 ? DType::Float16 : p == Precision::BFloat16 ? DType::BFloat16 : DType::Float32;
}

// The memory format of the CPU executor's convolution activations.
enum class ConvLayout {
  Auto,          // channels_last for models with a depthwise or an int8 convolution, else contiguous
  Contiguous,    // NCHW
  ChannelsLast,  // NHWC memory (logical NCHW shapes, PyTorch's memory_format=channels_last)
};

struct ExecutorOptions {
  DeviceType device = DeviceType::CPU;  // CPU or Vulkan
  // Nodes the device cannot run go to the CPU instead of failing create().
  bool allow_fallback = false;
  // Float16 / BFloat16: float32 tensors stored as that dtype on the device
  // (arithmetic in float32 inside the kernels); bfloat16: CUDA sm_80+.
  Precision precision = Precision::Float32;
  // With allow_fallback: one stderr line per fallback node at create.
  bool log_fallback = true;
  // Devices that record work into graphs (CUDA): the second run of an input
  // signature is captured, later runs of it replay the graph (one launch, no
  // per-kernel cost). Models whose host ops read an input's values run op by
  // op (a replay would not see new values), as do profiled runs.
  bool graphs = true;
  // Devices: create() runs the model once on zero inputs (symbolic dims 1),
  // which creates and caches every compute pipeline it uses, so that the
  // first real run does not pay for them. A model that cannot run on those
  // inputs is not an error: its pipelines are created at first use instead.
  bool warm_up = true;
  // LoRA adapters applied unmerged at run time (op index, adapter): op k, a
  // Linear (float32 or int8, run as QLinear), computes act(W x + b + scale *
  // B (A x)) through the same runner code as the trainer's forward
  // (run_recording). Fine-tuning deltas with adapters on int8 weights load
  // into this (runtime/train/delta.h, load_delta). CPU executor only; create()
  // checks the ops and the adapters' shapes ([rank, in], [out, rank], float32).
  std::vector<std::pair<int, LoraAdapter>> adapters;
  // CPU float32: each Conv2d and int8 Conv2d (QConv2d) reads its input
  // channels_last (converting it where it is not), so its output and the
  // elementwise ops, pools and convolutions after it stay channels_last
  // (runtime/ops keep the input's memory format, as PyTorch); the model's
  // outputs come back contiguous. The kernels put channels in vector lanes
  // there (kernels/cpu/conv2d.cc, depthwise.cc, pool.cc,
  // quant/dynamic_conv.cc). Auto: where the model has a depthwise
  // convolution or an int8 one (QConv2d).
  ConvLayout conv_layout = ConvLayout::Auto;
};

struct RunOptions {
  int num_threads = 0;   // threads for this run's kernels; 0: get_num_threads()
  // Record per-op times into ExecutionContext::profile(). On a device each
  // op is submitted and waited for before its time is taken (so the times
  // are the ops' own, and the run submits once per op).
  bool profile = false;
  // A CPU tensor of more bytes than this (0: no limit) is not allocated: the
  // op fails with OutOfMemory naming the size, before any work on it. Bounds
  // what a run on untrusted shapes may take (the shape-op fuzz target uses it).
  size_t max_tensor_bytes = 0;
};

// One op of a profiled run.
struct OpProfile {
  int op = -1;                          // op index in the model
  std::string type;                     // op_name(), e.g. "conv2d"
  std::string name;                     // node name
  double ms = 0.0;
  std::vector<Shape> input_shapes;      // of the defined inputs
  std::string device;                   // "cpu", "vulkan" or "cpu (fallback)"
};

// The memory plan of a context for its current input shapes.
struct MemoryPlan {
  size_t arena_bytes = 0;   // the one arena every run uses
  size_t naive_bytes = 0;   // the sum of every tensor allocation of a run (no reuse)
  int allocations = 0;      // tensor allocations per run, all served by the arena
  int heap_fallbacks = 0;   // allocations of the last run not served by the arena (0 when planned)
  int plans = 0;            // how many times this context has planned (a new signature, a mismatch)
};

class Executor;

// Training (runtime/train/trainer.h): runs `ex` (on the CPU or a device: the
// CPU values bound are copied there, recorded, so gradients come back) through the
// same op dispatch with autograd recording: no NoGradGuard and no arena
// (every value is its own heap tensor, kept alive by the autograd graph), the
// tensors in `weights` (model tensor index, value) read in place of the
// model's weights, and the LoRA adapters in `adapters` (op index, adapter;
// Linear and QLinear ops) added to their ops. Inputs are checked as by
// ExecutionContext::run.
Result<std::vector<Tensor>> run_recording(const Executor& ex, Span<const Tensor> inputs,
                                          const std::vector<std::pair<int, Tensor>>& weights,
                                          const std::vector<std::pair<int, LoraAdapter>>& adapters = {},
                                          std::string* error = nullptr);

// Runs `ex` (a control-flow subgraph's executor, on the CPU) on `inputs`,
// checked as ExecutionContext::run checks them, from inside a running op:
// its allocations go wherever the caller's storage hook sends them. On
// failure the thread's message says where ("subgraph: node 'add_1' (add): ...").
Result<std::vector<Tensor>> run_subgraph(const Executor& ex, const std::vector<Tensor>& inputs);

class Executor {
 public:
  // Checks that every op of the model can run here (its OpKind is one the
  // executor runs on this device). Errors name the op and its node.
  // Sparse COO weights: one that only Linear ops read as their weight is
  // packed once here (CSR by output row, quant/coo.h; int8 values
  // dequantized) and those Linears run the SpMM kernel; one that any other op
  // reads is densified once here (float32/float16 values; sparse int8 values
  // outside Linear are NotSupported). Both are shared by every context.
  // Models converted with --weights fp16 (metadata weights=fp16): their
  // float16 weights are converted to float32 once here (a one-time
  // allocation per weight, shared by every context).
  static Result<std::shared_ptr<const Executor>> create(std::shared_ptr<const Model> model,
                                                        std::string* error = nullptr);
  // On `options.device`. Vulkan: fails without a loader or a device (the
  // Vulkan context's message), for Precision::Float16 without float16
  // support, and for a node the device cannot run unless allow_fallback
  // ("node 'fc1' (linear, float32): not implemented for vulkan (...)").
  static Result<std::shared_ptr<const Executor>> create(std::shared_ptr<const Model> model,
                                                        const ExecutorOptions& options,
                                                        std::string* error = nullptr);

  const Model& model() const { return *model_; }
  const ExecutorOptions& options() const { return options_; }
  // Where op k runs (Placement::Device for every op on the CPU executor).
  Placement placement(int op) const { return ops_[static_cast<size_t>(op)].placement; }
  // Why op k falls back to the CPU ("" unless placement(k) is Fallback).
  const std::string& fallback_reason(int op) const { return ops_[static_cast<size_t>(op)].reason; }
  // The ops that fall back, in op order.
  std::vector<int> fallback_ops() const;
  // "node 'fc1' (linear, float32)": an op as placement messages name it.
  std::string describe_op(int op) const;
  const std::vector<IOInfo>& inputs() const { return inputs_; }
  const std::vector<IOInfo>& outputs() const { return outputs_; }
  // Bytes the weights prepared at create hold (packed float32 GEMM panels,
  // int8 panels, CSR), each counted once: memory beside the mapped model.
  size_t prepared_bytes() const;

  explicit Executor(std::shared_ptr<const Model> model);  // use create()

 private:
  friend class ExecutionContext;
  friend Result<std::vector<Tensor>> run_subgraph(const Executor&, const std::vector<Tensor>&);
  // create() for the main graph or a subgraph; `subgraphs`: the executors of
  // the file's subgraphs of lower index (all of them for the main graph).
  static Result<std::shared_ptr<const Executor>> create_graph(
      std::shared_ptr<const Model> model, const ExecutorOptions& options,
      const std::vector<std::shared_ptr<const Executor>>& subgraphs, std::string* error);
  friend Result<std::vector<Tensor>> run_recording(const Executor&, Span<const Tensor>,
                                                   const std::vector<std::pair<int, Tensor>>&,
                                                   const std::vector<std::pair<int, LoraAdapter>>&, std::string*);
  std::shared_ptr<const Model> model_;
  ExecutorOptions options_;
  std::vector<IOInfo> inputs_, outputs_;
  std::vector<OpState> ops_;          // per op (op_state.h)
  std::vector<TensorState> tensors_;  // per tensor
  bool capturable_ = false;           // a run can be replayed from a device graph (options_.graphs)
};

class ExecutionContext {
 public:
  explicit ExecutionContext(std::shared_ptr<const Executor> executor);
  ExecutionContext(const ExecutionContext&) = delete;
  ExecutionContext& operator=(const ExecutionContext&) = delete;
  ~ExecutionContext();

  // Runs the model on `inputs`, given in the order of Executor::inputs()
  // (CPU tensors, any strides). On success the outputs, in the order of
  // Executor::outputs(), live in this context's arena: they stay valid as
  // tensors but the next run() on this context overwrites them (clone() to
  // keep). On failure returns the Status and sets *error ("node 'fc1'
  // (linear): ..." for an op that fails). An input that is an output of an
  // earlier run of this context is copied first (the run would overwrite it).
  // The plan is keyed by the inputs' dtypes, shapes and strides.
  Result<std::vector<Tensor>> run(Span<const Tensor> inputs, const RunOptions& options = {},
                                  std::string* error = nullptr);

  // The plan for the input shapes of the last run (zeros before the first).
  const MemoryPlan& memory_plan() const { return plan_; }
  // Per-op times of the last run made with RunOptions::profile (in op order).
  const std::vector<OpProfile>& profile() const { return profile_; }
  // Whether the last run captured or replayed a device graph (ExecutorOptions::graphs).
  bool graph_captured() const;

 private:
  struct Arena;
  std::shared_ptr<const Executor> executor_;
  std::unique_ptr<Arena> arena_;
  MemoryPlan plan_;
  std::vector<OpProfile> profile_;
};

}  // namespace ember
