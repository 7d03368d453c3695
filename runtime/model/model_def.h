// ModelDef: a plain in-memory description of a model, what the converter fills
// and write_model() serializes into a `.ember` file (runtime/model/ember.fbs).
// Host-side only: it owns its strings and, optionally, its weight bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/graph/op_kind.h"
#include "runtime/graph/op_params.h"
#include "runtime/tensor/dtype.h"
#include "runtime/tensor/tensor.h"

namespace ember {

// How dynamic quantization quantizes the float input of an int8 weight's op at
// run time (ember.fbs ActivationQuant; the ids are the file's).
enum class ActivationQuant : uint8_t {
  PerTensor = 0,  // one (scale, zero point) per input tensor (PyTorch, ONNX Runtime)
  PerRow = 1,     // one per row of the input [M, K] (int8 Linear only)
};

// Affine quantization: real = scale * (q - zero_point). One scale: per tensor;
// several: per channel along `axis` (scales.size() == shape[axis]).
struct QuantDef {
  std::vector<float> scales;
  std::vector<int64_t> zero_points;  // empty (all zero) or one per scale
  int32_t axis = -1;
  ActivationQuant activations = ActivationQuant::PerTensor;
};

// Sparse COO: the tensor's data holds `nnz` values; tensor `indices` (int16,
// int32 or int64, shape [rank, nnz], with data) holds their coordinates,
// sorted in row-major order, unique (quant/coo.h builds them).
struct SparseCooDef {
  int32_t indices = -1;
  int64_t nnz = 0;
};

struct TensorDef {
  std::string name;                    // unique in the model, non-empty
  std::vector<int64_t> shape;          // -1: symbolic (activations only)
  std::vector<std::string> dim_names;  // empty, or one per dim ("batch"; "" for fixed dims)
  DType dtype = DType::Float32;
  // Weights: either `data` (owned bytes) or `tensor` (a contiguous CPU tensor
  // of this dtype, referenced, not copied until written). Neither: an activation.
  std::vector<std::byte> data;
  Tensor tensor;
  bool has_data = false;               // true for weights (even zero-size ones)
  std::optional<QuantDef> quant;
  std::optional<SparseCooDef> sparse;
  bool trainable = false;

  // Bytes of the weight (from `tensor` when defined, else `data`).
  const std::byte* bytes() const {
    return tensor.defined() ? static_cast<const std::byte*>(tensor.data_ptr()) : data.data();
  }
  size_t byte_size() const { return tensor.defined() ? tensor.nbytes() : data.size(); }
};

struct OpDef {
  OpKind op = OpKind::Copy;
  uint16_t version = 1;
  std::vector<int32_t> inputs;   // op_num_inputs(op) entries (variadic, -1: at least one); -1: absent
  std::vector<int32_t> outputs;  // op_num_outputs(op) entries (likewise); -1: unused output
  std::string name;              // node name from the source model
  OpParams params;               // must hold the params type ops.def names for `op`
};

struct ModelMetadata {
  std::string producer;
  std::string producer_version;
  std::string source_hash;
  std::vector<std::pair<std::string, std::string>> converter_options;
};

struct ModelDef {
  std::vector<TensorDef> tensors;
  std::vector<OpDef> ops;        // in execution order
  std::vector<int32_t> inputs;   // tensor indices
  std::vector<int32_t> outputs;
  ModelMetadata metadata;
  // The control-flow ops' subgraphs (IfParams, LoopParams, ScanLoopParams
  // index them): closed graphs, each referring only to subgraphs of lower
  // index. Kept on the top-level ModelDef only (a subgraph's own list is empty).
  std::vector<ModelDef> subgraphs;

  // Appends a tensor and returns its index.
  int32_t add_tensor(TensorDef t) {
    tensors.push_back(std::move(t));
    return static_cast<int32_t>(tensors.size() - 1);
  }
};

}  // namespace ember
