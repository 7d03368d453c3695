// Writes a ModelDef as a `.ember` file (runtime/model/ember.fbs).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/core/status.h"
#include "runtime/model/model_def.h"

namespace ember {

// The bytes of the `.ember` file for `def`: a size-prefixed flatbuffer, one
// 64-byte-aligned segment per weight, kTensorTailPadding bytes of padding.
// The result is verified with Verification::Full before it is returned; on
// failure returns the Status and sets *error (when non-null) to the reason,
// e.g. "tensor 2 'fc.weight': data is 12 bytes, shape [2, 3] x float32 needs 24".
Status serialize_model(const ModelDef& def, std::vector<std::byte>* out, std::string* error = nullptr);

// serialize_model(), then writes `path` atomically: a temporary file next to it
// ("<path>.tmp.<pid>"), fsync, rename. On any failure the temporary is removed
// and `path` is left as it was.
Status write_model(const ModelDef& def, const std::string& path, std::string* error = nullptr);

class Model;

// The ModelDef of a loaded model, every graph, tensor (weights referenced, not
// copied: they keep the mapping alive), op and metadata field as the file has
// them: write_model() of it writes the same model. For rewriting a file
// (Trainer::save merging LoRA adapters into int8 weights replaces those
// tensors). Fails only on op attributes of a file loaded with Minimal checks.
Result<ModelDef> model_def_of(const Model& model, std::string* error = nullptr);

namespace detail {
// serialize_model() without the final verification: for tests and fuzz seeds
// that need invalid files.
Status serialize_model_unverified(const ModelDef& def, std::vector<std::byte>* out,
                                  std::string* error = nullptr);
}  // namespace detail

}  // namespace ember
