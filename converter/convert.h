// `ember convert`: ONNX file -> optimized IR -> ModelDef -> `.ember` file.
//
// lower() turns the optimized IR into a ModelDef of ember ops (ops.def): each
// ONNX node becomes one op (Gemm becomes Linear, Transpose Permute, Shape
// ShapeOf, Cast a Copy into a tensor of the target dtype, ...) whose
// attributes become the op's params; constant inputs that must be attributes
// (Unsqueeze axes, ReduceMean axes, Clip bounds, Pad pads) are read at
// conversion. What cannot be lowered (a Gemm with alpha != 1, a Pad with
// non-constant pads, ...) is listed all at once, with node names, like the
// importer's unsupported ops.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "converter/ir.h"
#include "converter/passes.h"
#include "runtime/model/model_def.h"

namespace ember::converter {

// Options of `ember convert`. The quantization issue fills in the reserved ones;
// until then a reserved option that is set is refused (NotSupported).
struct ConvertOptions {
  bool optimize = true;           // run_passes()
  std::string quantize;           // reserved: "" (none), "int8"
  bool sparse_coo = false;        // reserved
  double prune = 0.0;             // reserved: fraction of weights zeroed
  std::string weights;            // reserved: which weights to quantize/sparsify
  std::string report;             // reserved: path of an accuracy report

  // The options as (key, value) pairs for the file's metadata.
  std::vector<std::pair<std::string, std::string>> as_metadata() const;
};

struct ConvertReport {
  PassReport passes;
  int onnx_nodes = 0;   // nodes imported
  int ops = 0;          // ops written
  int tensors = 0;
  int64_t weight_bytes = 0;
  std::string source_hash;  // "sha256:<hex>" of the ONNX file
};

// IR -> ModelDef (graph inputs/outputs, tensors with shapes, dim names and
// dtypes, ops in order, node names; constants of float dtype read as weights
// by Conv/Gemm/MatMul/LayerNorm/Gather (data) and BatchNorm's scale and bias
// are marked trainable; running statistics are not). Every value an op or the
// graph reads needs a known rank and dtype (dtypes the IR lacks are inferred:
// comparisons bool, Shape int64, Cast its target, others the first input's).
// All problems are returned at once: NotSupported, "the graph cannot be
// lowered to ember ops (N problems): <Op> '<node>': <reason>; ...".
Expected<ModelDef> lower(const Graph& graph);

// Imports `onnx_path`, optimizes (options.optimize), lowers and writes
// `out_path` atomically (nothing is written on error). Metadata: producer
// "ember", version "0.1", "sha256:<hex>" of the ONNX bytes (OpenSSL) and
// options.as_metadata(). A reserved option that is set: NotSupported.
Diag convert_file(const std::string& onnx_path, const std::string& out_path,
                  const ConvertOptions& options, ConvertReport* report = nullptr);

}  // namespace ember::converter
