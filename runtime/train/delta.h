// Fine-tuning deltas: just the trained tensors of a model, in a safetensors
// file bound to the base `.ember` file they were trained from
// (`ember finetune --save-delta D.safetensors`, `ember run --weights D`).
//
// The file's metadata holds {"format": "ember-delta", "base": FINGERPRINT},
// FINGERPRINT being model_fingerprint() of the base file, and with LoRA
// adapters "lora_scale". load_delta() checks it and every tensor (a float32
// weight of the base with that name, dtype and shape, not int8 or sparse; or
// an adapter pair "<weight>.lora_A" [r, in] / "<weight>.lora_B" [out, r] on a
// Linear's [out, in] weight) and returns the base with those weights replaced
// (a new in-memory model: one copy of the file's bytes). Adapters on float32
// weights are merged into them (W + scale B A); adapters on int8 weights
// cannot be, and come back unmerged, by op, for ExecutorOptions::adapters:
// the executor then computes W_q x + b + scale B (A x) with the int8 kernel,
// as the trainer's forward does.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/model/loader.h"
#include "runtime/train/trainer.h"

namespace ember {

// "fnv1a64:<16 hex digits>" over every byte of the model's file.
std::string model_fingerprint(const Model& model);

// The trainer's parameters under their weight names, bound to its model.
Status save_delta(const Trainer& trainer, const std::string& path, std::string* error = nullptr);

// A base model with a delta applied: the model, and the adapters on its int8
// Linear layers (op index, adapter) to run unmerged (ExecutorOptions::adapters).
struct TunedModel {
  Model model;
  std::vector<std::pair<int, LoraAdapter>> adapters;
};

// `base` with the delta at `path` applied. Errors name the file and the tensor:
// "delta 'd.safetensors' was trained from another model (its base fnv1a64:..., this model fnv1a64:...)",
// "delta 'd.safetensors': 'fc9.weight' is not a weight of the model", a shape or dtype mismatch,
// "delta 'd.safetensors': adapter 'fc1.weight' lacks its lora_B", an adapter that does not fit its weight.
Result<TunedModel> load_delta(const Model& base, const std::string& path, std::string* error = nullptr);

// load_delta() for deltas whose adapters all merge (float32 weights): the
// model alone. A delta with adapters on int8 weights is NotSupported here
// (the error says to use load_delta, as `ember run --weights` does).
Result<Model> apply_delta(const Model& base, const std::string& path, std::string* error = nullptr);

}  // namespace ember
