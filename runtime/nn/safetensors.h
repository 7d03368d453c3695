// The safetensors file format (huggingface/safetensors), read and written
// without external dependencies:
//   8 bytes   N, the header length (little-endian u64)
//   N bytes   JSON: {"__metadata__": {"k": "v"}, "name": {"dtype": "F32",
//             "shape": [2, 3], "data_offsets": [begin, end]}, ...}, padded
//             with spaces to a multiple of 8
//   the rest  the tensors' raw little-endian bytes, offsets relative to here
// Files are written byte for byte as the Python library writes them: tensors
// ordered by dtype (widest first: I64, F64, F32, I32, BF16, F16, I16, I8, U8,
// BOOL), then by name; metadata keys sorted.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "runtime/nn/named_tensors.h"

namespace ember::nn {

class Module;
using Metadata = std::map<std::string, std::string>;

// The file's bytes. Raises for undefined tensors, duplicate or reserved names.
std::string serialize_safetensors(const NamedTensors& tensors, const Metadata& metadata = {});
// Parses and validates `bytes` (header length, JSON syntax, dtype names,
// shapes, offsets in range, contiguous and consistent with shape * itemsize,
// total size); raises ember::Error (Status::InvalidModel) naming the problem.
// Tensors come back in header order; metadata, when asked for, is filled.
NamedTensors deserialize_safetensors(std::string_view bytes, Metadata* metadata = nullptr);

// Writes atomically: to "<path>.tmp.<pid>", then renamed over `path`; on any
// error the temporary file is removed and `path` is left as it was.
void save_safetensors(const std::string& path, const NamedTensors& tensors, const Metadata& metadata = {});
// Raises Status::IoError when the file cannot be read.
NamedTensors load_safetensors(const std::string& path, Metadata* metadata = nullptr);

// module.state_dict() to a file, and back through load_state_dict(strict).
void save(const Module& module, const std::string& path, const Metadata& metadata = {});
void load(Module& module, const std::string& path, bool strict = true);

}  // namespace ember::nn
