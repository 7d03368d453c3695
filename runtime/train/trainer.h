// Fine-tuning a converted model on the device (`ember finetune`).
//
// A Trainer loads nothing of its own: it wraps a CPU Executor of the `.ember`
// file and runs it through the executor's own op dispatch with autograd
// recording (run_recording, runtime/model/executor.h). The selected weights
// become leaf tensors (float32 copies of just those; every other weight stays
// zero-copy in the mapping), so any loss and optimizer of the eager API
// (runtime/ops, runtime/optim) trains them:
//
//   auto tr = Trainer::create(model, {{"fc2.*"}, {}}).get();
//   optim::SGD opt(tr->parameters(), {0.01});
//   auto out = tr->forward({x}).get();
//   cross_entropy(out[0], y).backward();
//   opt.step();
//   tr->save("tuned.ember");
//
// What can be trained (list_weights): float32 weights that ops read as data;
// a float32 sparse COO weight trains its nonzero values only (its [nnz]
// values are the parameter, so the sparsity pattern stays the file's). Int8
// weights, float16-stored weights and weights read on the host (shapes, axes)
// are listed with the reason they cannot be; selecting one is an error that
// says it. Fused activations (Linear+Relu, Conv+Clip) are applied through the
// eager front-ends when gradients are recorded, so their backward masks the
// gradient. Gradients flow back through frozen int8 and sparse layers
// (straight-through: the kernel's values, the gradient of the float32 layer),
// and an int8 layer's trained bias replaces the one its prepared weight holds.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/model/executor.h"
#include "runtime/model/loader.h"
#include "runtime/tensor/tensor.h"

namespace ember {

// A weight of the model and whether it can be trained.
struct WeightInfo {
  int tensor = -1;
  std::string name;     // as the ONNX file had it
  std::vector<int64_t> shape;
  DType dtype = DType::Float32;
  std::string why_not;  // "" when trainable
  int last_op = -1;     // the last op that reads it
};

// Writes `value` over weight t's bytes in `bytes`, a copy of m's file (same
// dtype and size as the weight; the trainer's save and delta application).
Status patch_weight(std::vector<std::byte>& bytes, const Model& m, int t, const Tensor& value,
                    std::string* error = nullptr);

// Every weight that an op reads, in tensor order.
std::vector<WeightInfo> list_weights(const Executor& ex);

// The Linear ops that read weight t as their weight (input 1): where a LoRA
// adapter on t goes.
std::vector<int> lora_ops(const Model& m, int t);

struct TrainerOptions {
  // Glob patterns (fnmatch) over the weights' names: "fc2.*", "*". Empty: the
  // weights of the last layer (those the last op reading a trainable weight reads).
  std::vector<std::string> train;
  // Patterns removed from the selection.
  std::vector<std::string> freeze;
  // LoRA: rank-r adapters on the Linear layers (float32 or int8) whose weight
  // matches a pattern of lora_targets: y = W x + b + (alpha / r) B (A x), A
  // [r, in] initialized as PyTorch's kaiming_uniform_(a=sqrt(5)) (peft's
  // choice), B [out, r] zeros. The adapters are parameters named
  // "<weight>.lora_A" / "<weight>.lora_B"; with lora_rank > 0 and no `train`
  // patterns only the adapters train.
  int64_t lora_rank = 0;
  double lora_alpha = 0;  // 0: alpha = rank (scale 1)
  std::vector<std::string> lora_targets;
  // Where the forward and backward run (CPU or Vulkan): the parameters and the
  // optimizer stay on the CPU; each forward copies them to the device
  // (recorded: their gradients come back); the outputs come back to the CPU.
  // A node the device cannot run is an error at create, naming it.
  DeviceType device = DeviceType::CPU;
};

struct SaveOptions {
  // LoRA adapters on int8 Linear weights: merge them, writing each such
  // weight as float32 dequant(W_q) + scale B A (its quantization parameters
  // dropped: the Linear then runs in float32). Without it, saving them is an
  // error (save a delta instead, or merge: `ember finetune --merge-lora`).
  bool merge_int8_lora = false;
};

class Trainer {
 public:
  // Errors: a pattern that matches no weight (the message lists the names), a
  // selected weight that cannot be trained (the reason), an empty selection.
  static Result<std::unique_ptr<Trainer>> create(std::shared_ptr<const Model> model, const TrainerOptions& options,
                                                 std::string* error = nullptr);

  // The model's outputs on `inputs` (in Executor::inputs() order), with the
  // autograd graph back to parameters().
  Result<std::vector<Tensor>> forward(Span<const Tensor> inputs, std::string* error = nullptr);

  // The trained weights (then the LoRA adapters): float32 leaf tensors that require grad.
  const std::vector<Tensor>& parameters() const { return params_; }
  const std::vector<std::string>& parameter_names() const { return names_; }
  int64_t trainable_elements() const;
  const Executor& executor() const { return *executor_; }

  // Writes the model with the trained weights in place of the originals
  // (every other byte copied from the loaded file), atomically: a failure or
  // a kill leaves `path` as it was. LoRA adapters on float32 weights are
  // merged into them (W + scale B A); on int8 weights only with
  // options.merge_int8_lora (then the file is rewritten: those weights become
  // float32, everything else as it was), else the error says to save a delta
  // or merge.
  Status save(const std::string& path, std::string* error = nullptr) const { return save(path, {}, error); }
  Status save(const std::string& path, const SaveOptions& options, std::string* error = nullptr) const;

  // The adapters by op index (run_recording's form).
  const std::vector<std::pair<int, LoraAdapter>>& adapters() const { return adapters_; }

  explicit Trainer(std::shared_ptr<const Executor> executor) : executor_(std::move(executor)) {}  // use create()

 private:
  std::shared_ptr<const Executor> executor_;
  Status add_adapters(const TrainerOptions& options, std::string* error);
  bool is_adapter(size_t i) const;  // parameter i is a LoRA adapter's A or B
  std::vector<int> tensors_;  // model tensor of each parameter (an adapter: the weight it adapts)
  std::vector<std::string> names_;
  std::vector<Tensor> params_;
  std::vector<std::pair<int, LoraAdapter>> adapters_;
};

}  // namespace ember
