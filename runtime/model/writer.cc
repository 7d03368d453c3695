// write_model / serialize_model: ModelDef -> `.ember` bytes -> file.
#include "runtime/model/writer.h"

#include <cstring>

#include "runtime/core/error.h"
#include "runtime/core/file.h"
#include "runtime/model/format.h"
#include "runtime/model/loader.h"

namespace ember {
namespace {

uint64_t align_up(uint64_t n) { return (n + kSegmentAlignment - 1) / kSegmentAlignment * kSegmentAlignment; }

bool is_weight(const TensorDef& t) { return t.has_data || t.tensor.defined() || !t.data.empty(); }

// What serialization itself needs; everything else is left to verify_model.
Status precheck(const ModelDef& def, std::string* error) {
  for (size_t i = 0; i < def.tensors.size(); ++i) {
    const TensorDef& t = def.tensors[i];
    const std::string where = str_cat("tensor ", i, " '", t.name, "'");
    if (t.tensor.defined()) {
      if (!t.data.empty())
        return report_error(error, Status::InvalidArgument, where, ": has both owned data and a referenced tensor");
      if (!t.tensor.device().is_cpu() || !t.tensor.is_contiguous())
        return report_error(error, Status::InvalidArgument, where, ": the referenced tensor must be a contiguous CPU tensor");
      if (t.tensor.dtype() != t.dtype)
        return report_error(error, Status::DTypeMismatch, where, ": the referenced tensor is ", dtype_name(t.tensor.dtype()),
                    ", the TensorDef says ", dtype_name(t.dtype));
    }
  }
  return Status::Ok;
}

// The graphs of a model in file order: the main graph, then the subgraphs.
std::vector<const ModelDef*> graphs_of(const ModelDef& def) {
  std::vector<const ModelDef*> graphs = {&def};
  for (const ModelDef& g : def.subgraphs) graphs.push_back(&g);
  return graphs;
}

// One graph's table; its weights take the next segments (*seg counts them).
flatbuffers::Offset<fb::Graph> build_graph(const ModelDef& def, const std::vector<uint64_t>& seg_offsets,
                                           flatbuffers::FlatBufferBuilder& fbb, uint32_t* seg,
                                           std::vector<flatbuffers::Offset<fb::Segment>>* segments) {
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  for (const TensorDef& t : def.tensors) {
    auto name = fbb.CreateString(t.name);
    auto shape = fbb.CreateVector(t.shape);
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> dim_names;
    if (!t.dim_names.empty()) dim_names = fbb.CreateVectorOfStrings(t.dim_names);
    flatbuffers::Offset<fb::DataRef> data;
    if (is_weight(t)) {
      const uint64_t size = t.byte_size();
      data = fb::CreateDataRef(fbb, *seg, 0, size);
      segments->push_back(fb::CreateSegment(fbb, seg_offsets[*seg], size));
      ++*seg;
    }
    flatbuffers::Offset<fb::QuantParams> quant;
    if (t.quant) {
      quant = fb::CreateQuantParams(fbb, fbb.CreateVector(t.quant->scales),
                                    fbb.CreateVector(t.quant->zero_points), t.quant->axis,
                                    static_cast<fb::ActivationQuant>(t.quant->activations));
    }
    flatbuffers::Offset<fb::SparseCoo> sparse;
    if (t.sparse) sparse = fb::CreateSparseCoo(fbb, t.sparse->indices, t.sparse->nnz, fb::SparseLayout::Coo);
    tensors.push_back(fb::CreateTensor(fbb, name, shape, dim_names, static_cast<uint8_t>(t.dtype), data, quant,
                                       sparse, t.trainable));
  }
  std::vector<flatbuffers::Offset<fb::Operator>> ops;
  for (const OpDef& op : def.ops) {
    auto inputs = fbb.CreateVector(op.inputs);
    auto outputs = fbb.CreateVector(op.outputs);
    auto name = fbb.CreateString(op.name);
    fb::OpAttrs type = fb::OpAttrs::NONE;
    auto attrs = params_to_attrs(fbb, op.params, &type);
    ops.push_back(fb::CreateOperator(fbb, static_cast<uint16_t>(op.op), op.version, inputs, outputs, name, type,
                                     attrs));
  }
  return fb::CreateGraph(fbb, fbb.CreateVector(tensors), fbb.CreateVector(ops), fbb.CreateVector(def.inputs),
                         fbb.CreateVector(def.outputs));
}

// Builds the size-prefixed flatbuffer with the given segment file offsets.
void build(const ModelDef& def, const std::vector<uint64_t>& seg_offsets, flatbuffers::FlatBufferBuilder& fbb) {
  fbb.Clear();
  fbb.ForceDefaults(true);  // the size must not depend on the offsets' values
  std::vector<flatbuffers::Offset<fb::Segment>> segments;
  uint32_t seg = 0;
  auto graph = build_graph(def, seg_offsets, fbb, &seg, &segments);
  std::vector<flatbuffers::Offset<fb::Graph>> subgraphs;
  for (const ModelDef& g : def.subgraphs) subgraphs.push_back(build_graph(g, seg_offsets, fbb, &seg, &segments));
  std::vector<flatbuffers::Offset<fb::KeyValue>> options;
  for (const auto& kv : def.metadata.converter_options)
    options.push_back(fb::CreateKeyValue(fbb, fbb.CreateString(kv.first), fbb.CreateString(kv.second)));
  auto metadata = fb::CreateMetadata(fbb, fbb.CreateString(def.metadata.producer),
                                     fbb.CreateString(def.metadata.producer_version),
                                     fbb.CreateString(def.metadata.source_hash), fbb.CreateVector(options));
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Graph>>> subs;
  if (!subgraphs.empty()) subs = fbb.CreateVector(subgraphs);  // files without control flow: as before
  auto model = fb::CreateModel(fbb, kFormatVersion, graph, metadata, fbb.CreateVector(segments), subs);
  fb::FinishSizePrefixedModelBuffer(fbb, model);
}

// One graph of a loaded model (its subgraphs are the caller's).
Status graph_def_of(const Model& m, ModelDef* def, std::string* error) {
  for (int t = 0; t < m.num_tensors(); ++t) {
    const fb::Tensor& ft = m.tensor(t);
    TensorDef td;
    td.name = std::string(m.tensor_name(t));
    td.shape = m.tensor_shape(t);
    if (ft.dim_names() != nullptr) {
      for (const auto* n : *ft.dim_names()) td.dim_names.emplace_back(n != nullptr ? n->str() : std::string());
    }
    td.dtype = m.tensor_dtype(t);
    td.has_data = ft.data() != nullptr;
    if (m.weight(t).defined() && m.weight(t).nbytes() > 0) td.tensor = m.weight(t);
    if (const fb::QuantParams* q = ft.quant()) {
      QuantDef qd;
      if (q->scales() != nullptr) qd.scales.assign(q->scales()->begin(), q->scales()->end());
      if (q->zero_points() != nullptr) qd.zero_points.assign(q->zero_points()->begin(), q->zero_points()->end());
      qd.axis = q->axis();
      qd.activations = static_cast<ActivationQuant>(q->activations());
      td.quant = qd;
    }
    if (const fb::SparseCoo* sp = ft.sparse()) td.sparse = SparseCooDef{sp->indices(), sp->nnz()};
    td.trainable = ft.trainable();
    def->tensors.push_back(std::move(td));
  }
  for (int k = 0; k < m.num_ops(); ++k) {
    const fb::Operator& op = m.op(k);
    OpDef od;
    od.op = m.op_kind(k);
    od.version = op.version();
    if (op.inputs() != nullptr) od.inputs.assign(op.inputs()->begin(), op.inputs()->end());
    if (op.outputs() != nullptr) od.outputs.assign(op.outputs()->begin(), op.outputs()->end());
    od.name = op.name() != nullptr ? op.name()->str() : std::string();
    Result<OpParams> params = m.op_params(k, error);
    if (!params.ok()) return params.status();
    od.params = params.get();
    def->ops.push_back(std::move(od));
  }
  def->inputs.assign(m.inputs().begin(), m.inputs().end());
  def->outputs.assign(m.outputs().begin(), m.outputs().end());
  return Status::Ok;
}

}  // namespace

Result<ModelDef> model_def_of(const Model& model, std::string* error) {
  ModelDef def;
  EMBER_TRY(graph_def_of(model, &def, error));
  def.metadata = model.metadata();
  for (int i = 0; i < model.num_subgraphs(); ++i) {
    Result<Model> sub = model.subgraph(i, error);
    if (!sub.ok()) return sub.status();
    ModelDef g;
    EMBER_TRY(graph_def_of(sub.get(), &g, error));
    def.subgraphs.push_back(std::move(g));
  }
  return def;
}

namespace detail {
Status serialize_model_unverified(const ModelDef& def, std::vector<std::byte>* out, std::string* error) {
  std::vector<const TensorDef*> weights;
  for (const ModelDef* g : graphs_of(def)) {
    EMBER_TRY(precheck(*g, error));
    for (const TensorDef& t : g->tensors)
      if (is_weight(t)) weights.push_back(&t);
  }
  // The flatbuffer's size does not depend on the offsets (ForceDefaults), so
  // one sizing pass gives the layout; the second pass writes the real offsets.
  std::vector<uint64_t> offsets(weights.size(), 0);
  flatbuffers::FlatBufferBuilder fbb(4096);
  build(def, offsets, fbb);
  const size_t fb_size = fbb.GetSize();
  uint64_t end = fb_size;  // end of the last thing written
  for (size_t k = 0; k < weights.size(); ++k) {
    offsets[k] = align_up(end);
    end = offsets[k] + weights[k]->byte_size();
  }
  // Exactly kTensorTailPadding bytes follow the last segment, so any
  // truncation of a written file is detected.
  const uint64_t total = end + kTensorTailPadding;
  build(def, offsets, fbb);
  if (fbb.GetSize() != fb_size)
    return report_error(error, Status::Internal, "flatbuffer size changed between passes (", fb_size, " then ",
                fbb.GetSize(), ")");
  out->assign(static_cast<size_t>(total), std::byte{0});
  std::memcpy(out->data(), fbb.GetBufferPointer(), fb_size);
  for (size_t k = 0; k < weights.size(); ++k) {
    if (weights[k]->byte_size() > 0)
      std::memcpy(out->data() + offsets[k], weights[k]->bytes(), weights[k]->byte_size());
  }
  return Status::Ok;
}
}  // namespace detail

Status serialize_model(const ModelDef& def, std::vector<std::byte>* out, std::string* error) {
  EMBER_TRY(detail::serialize_model_unverified(def, out, error));
  // The writer's own validation is the loader's: one set of rules.
  Status s = verify_model(out->data(), out->size(), Verification::Full, error);
  if (s != Status::Ok) out->clear();
  return s;
}

Status write_model(const ModelDef& def, const std::string& path, std::string* error) {
  std::vector<std::byte> bytes;
  EMBER_TRY(serialize_model(def, &bytes, error));
  return write_file_atomic(path, bytes.data(), bytes.size(), error);
}

}  // namespace ember
