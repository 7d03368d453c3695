// Fine-tuning deltas: just the trained tensors of a model, in a safetensors
// file bound to the base `.ember` file they were trained from
// (`ember finetune --save-delta D.safetensors`, `ember run --weights D`).
//
// The file's metadata holds {"format": "ember-delta", "base": FINGERPRINT},
// FINGERPRINT being model_fingerprint() of the base file. apply_delta() checks
// it and every tensor (a float32 weight of the base with that name, dtype and
// shape, not int8 or sparse) and returns the base with those weights replaced:
// a new in-memory model (one copy of the file's bytes).
#pragma once

#include <string>

#include "runtime/core/result.h"
#include "runtime/model/loader.h"
#include "runtime/train/trainer.h"

namespace ember {

// "fnv1a64:<16 hex digits>" over every byte of the model's file.
std::string model_fingerprint(const Model& model);

// The trainer's parameters under their weight names, bound to its model.
Status save_delta(const Trainer& trainer, const std::string& path, std::string* error = nullptr);

// `base` with the delta at `path` applied. Errors name the file and the tensor:
// "delta 'd.safetensors' was trained from another model (its base fnv1a64:..., this model fnv1a64:...)",
// "delta 'd.safetensors': 'fc9.weight' is not a weight of the model", a shape or dtype mismatch.
Result<Model> apply_delta(const Model& base, const std::string& path, std::string* error = nullptr);

}  // namespace ember
