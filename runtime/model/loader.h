// Model: a verified `.ember` file mapped into memory (runtime/model/ember.fbs).
// Weights are ember::Tensor views on the mapping (zero copy); the mapping lives
// as long as the Model or any weight tensor does. Load time does not grow with
// the size of the weights (nothing is copied or hashed; sparse COO indices are
// the only weight bytes read, to check their bounds, order and uniqueness).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/model/format.h"
#include "runtime/model/model_def.h"
#include "runtime/tensor/tensor.h"

namespace ember {

enum class Verification : uint8_t {
  // flatbuffers Verifier, identifier, version, and the per-tensor checks the
  // loader needs to build weight views safely (dtype, shape, data in bounds).
  // For files already verified once (e.g. by the converter).
  Minimal,
  // Minimal plus every semantic check: indices in range, op ids known, attrs
  // of the right type and valid, sizes = numel x element size without
  // overflow, segments aligned and non-overlapping, unique tensor names, graph
  // in execution order (acyclic), quant params consistent, COO indices
  // (int16/int32/int64) in bounds, sorted row-major and unique, COO values
  // float32/float16/int8-with-quant-params.
  Full,
};

// Verifies the bytes of a whole `.ember` file. `data` must stay valid and be
// 64-byte aligned only if the caller then uses the weights. On failure returns
// Status::InvalidModel (or another code) and sets *error (when non-null) to a
// human-readable reason.
Status verify_model(const void* data, size_t size, Verification v, std::string* error = nullptr);

class Model {
 public:
  // mmaps `path` read-only (MAP_PRIVATE) and verifies it. On failure *error
  // says why ("cannot open 'x.ember': No such file or directory", ...).
  // Weight tensors are read-only: writing through them faults (clone first).
  static Result<Model> load(const std::string& path, Verification v = Verification::Full,
                            std::string* error = nullptr);
  // Same from bytes in memory, which are copied once into an aligned buffer
  // (for tests, fuzzing and models embedded in a binary).
  static Result<Model> load_from_bytes(const void* data, size_t size,
                                       Verification v = Verification::Full,
                                       std::string* error = nullptr);

  Model(Model&&) noexcept = default;
  Model& operator=(Model&&) noexcept = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  ~Model() = default;

  uint32_t version() const { return root_->version(); }
  const fb::Model& flatbuffer() const { return *root_; }
  // The file's bytes (the mapping).
  const std::byte* data() const { return base_; }
  size_t size() const { return size_; }

  int num_tensors() const { return static_cast<int>(weights_.size()); }
  const fb::Tensor& tensor(int i) const;
  std::string_view tensor_name(int i) const;
  DType tensor_dtype(int i) const;
  std::vector<int64_t> tensor_shape(int i) const;  // -1 for symbolic dims
  // The weight of tensor i as a view on the mapping; undefined for activations.
  // Sparse tensors: the [nnz] values (shape from tensor(i).sparse()).
  const Tensor& weight(int i) const { return weights_.at(static_cast<size_t>(i)); }
  // Index of the tensor named `name`, or -1.
  int find_tensor(std::string_view name) const;
  // Hands the mapped file's whole pages inside `t`'s bytes back to the OS
  // (madvise MADV_DONTNEED): for a weight packed into a private copy, so that
  // the original stops counting in the resident set. Reading it again faults
  // it back in from the file. A no-op for a model loaded from bytes or a
  // tensor outside the mapping.
  void release(const Tensor& t) const;

  int num_ops() const;
  const fb::Operator& op(int i) const;
  OpKind op_kind(int i) const;
  // Op i's params; the attrs were checked at load (Full), so this fails only
  // on files loaded with Verification::Minimal.
  Result<OpParams> op_params(int i, std::string* error = nullptr) const;

  Span<const int32_t> inputs() const;
  Span<const int32_t> outputs() const;
  ModelMetadata metadata() const;

  // The control-flow subgraphs (ember.fbs Model.subgraphs). subgraph(i) is a
  // Model of its own over the same mapping (its tensors, ops, inputs and
  // outputs are the subgraph's; metadata and subgraphs are the file's).
  int num_subgraphs() const;
  Result<Model> subgraph(int index, std::string* error = nullptr) const;

 private:
  Model(std::shared_ptr<void> owner, const std::byte* base, size_t size, const fb::Model* root,
        const fb::Graph* graph)
      : owner_(std::move(owner)), base_(base), size_(size), root_(root), graph_(graph) {}
  void init_weights();
  static Result<Model> init(std::shared_ptr<void> owner, const std::byte* base, size_t size,
                            Verification v, std::string* error);

  std::shared_ptr<void> owner_;  // the mapping (or aligned copy); weights hold it too
  const std::byte* base_ = nullptr;
  size_t size_ = 0;
  bool file_mapped_ = false;  // load(): a read-only file mapping, so release() may drop pages
  const fb::Model* root_ = nullptr;
  const fb::Graph* graph_ = nullptr;  // the main graph or a subgraph
  std::vector<Tensor> weights_;  // one per tensor; undefined for activations
};

}  // namespace ember
