// Model loading: mmap, flatbuffers verification, semantic checks, weight views.
#include "runtime/model/loader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <unordered_set>

#include "runtime/core/error.h"

namespace ember {
namespace {

constexpr size_t kHeaderBytes = 12;  // uint32 size prefix, uint32 root offset, "EMBR"

template <typename... Args>
Status invalid(std::string* error, const Args&... args) {
  return report_error(error, Status::InvalidModel, args...);
}

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }
bool add_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_add_overflow(a, b, out); }

std::string printable(const uint8_t* p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7f) {
      s += static_cast<char>(p[i]);
    } else {
      static const char kHex[] = "0123456789abcdef";
      s += "\\x";
      s += kHex[p[i] >> 4];
      s += kHex[p[i] & 15];
    }
  }
  return s;
}

std::string_view str(const flatbuffers::String* s) {
  return s == nullptr ? std::string_view() : std::string_view(s->c_str(), s->size());
}

template <typename T>
uint32_t len(const flatbuffers::Vector<T>* v) {
  return v == nullptr ? 0 : v->size();
}

std::string shape_text(const flatbuffers::Vector<int64_t>* shape) {
  std::string s = "[";
  for (uint32_t d = 0; d < len(shape); ++d) s += str_cat(d ? ", " : "", shape->Get(d));
  return s + "]";
}

// What the per-tensor pass learns and the graph pass reuses.
struct TensorFacts {
  bool has_data = false;
};

class Checker {
 public:
  Checker(const uint8_t* data, size_t size, Verification v, std::string* error)
      : data_(data), size_(size), full_(v == Verification::Full), error_(error) {}

  Status run();
  const fb::Model* root() const { return root_; }

 private:
  Status check_header();
  Status check_segments();
  Status check_tensor(uint32_t i);
  Status check_coo(uint32_t i, const fb::Tensor& t, const std::string& where);
  Status check_quant(const fb::Tensor& t, const std::string& where);
  Status check_graph(const fb::Graph& g, int self);
  Status check_control_op(const fb::Operator& op, const OpParams& params, int self, const std::string& where);
  Status check_one_graph(const fb::Graph& g, int self);
  std::string tensor_where(uint32_t i) const {
    return str_cat("tensor ", i, " '", str(tensors_->Get(i)->name()), "'");
  }
  // A tensor reference inside operator/graph messages.
  std::string tensor_ref(int32_t i) const {
    return str_cat("tensor ", i, " '", str(tensors_->Get(static_cast<uint32_t>(i))->name()), "'");
  }

  const uint8_t* data_;
  size_t size_;
  bool full_;
  std::string* error_;
  uint64_t fb_end_ = 0;
  const fb::Model* root_ = nullptr;
  const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* tensors_ = nullptr;
  std::vector<TensorFacts> facts_;
};

Status Checker::check_header() {
  if (size_ == 0) return invalid(error_, "file is empty");
  if (size_ < kHeaderBytes)
    return invalid(error_, "file is too small to be an ember model (", size_, " bytes)");
  if (static_cast<uint64_t>(size_) > kMaxModelFileSize)
    return invalid(error_, "file is too large (", size_, " bytes)");
  if (!fb::ModelBufferHasIdentifier(data_ + sizeof(flatbuffers::uoffset_t)))
    return invalid(error_, "not an ember model: file identifier is '", printable(data_ + 8, 4),
                   "', expected '", fb::ModelIdentifier(), "'");
  const uint64_t fb_size = flatbuffers::ReadScalar<flatbuffers::uoffset_t>(data_);
  fb_end_ = fb_size + sizeof(flatbuffers::uoffset_t);
  if (fb_end_ > size_)
    return invalid(error_, "flatbuffer of ", fb_size, " bytes does not fit in the file (", size_,
                   " bytes): truncated file?");
  if (fb_size >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return invalid(error_, "flatbuffer of ", fb_size, " bytes is too large");
  flatbuffers::Verifier::Options options;
  options.max_tables = 1u << 24;
  options.max_depth = 64;
  flatbuffers::Verifier verifier(data_, static_cast<size_t>(fb_end_), options.max_depth,
                                 options.max_tables);
  if (!fb::VerifySizePrefixedModelBuffer(verifier))
    return invalid(error_, "flatbuffers verification failed: corrupt or truncated file");
  root_ = fb::GetSizePrefixedModel(data_);
  if (root_->version() < kMinFormatVersion || root_->version() > kFormatVersion)
    return report_error(error_, Status::NotSupported, "unsupported format version ", root_->version(),
                " (this build reads versions ", kMinFormatVersion, " to ", kFormatVersion, ")");
  if (root_->graph() == nullptr) return invalid(error_, "model has no graph");
  for (uint32_t i = 0; i < len(root_->subgraphs()); ++i) {
    if (root_->subgraphs()->Get(i) == nullptr) return invalid(error_, "subgraph ", i, " is missing");
  }
  return Status::Ok;
}

Status Checker::check_segments() {
  const auto* segs = root_->segments();
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < len(segs); ++i) {
    const fb::Segment* s = segs->Get(i);
    const std::string where = str_cat("segment ", i, " (offset ", s->offset(), ", size ", s->size(), ")");
    if (s->offset() % kSegmentAlignment != 0)
      return invalid(error_, where, " is not ", kSegmentAlignment, "-byte aligned");
    if (s->offset() < fb_end_)
      return invalid(error_, where, " overlaps the flatbuffer (", fb_end_, " bytes)");
    uint64_t end = 0, padded = 0;
    if (add_overflows(s->offset(), s->size(), &end) || add_overflows(end, kTensorTailPadding, &padded) ||
        padded > size_)
      return invalid(error_, where, " ends past the end of the file (", size_, " bytes, of which the last ",
                     kTensorTailPadding, " are padding)");
    order.push_back(i);
  }
  if (full_) {
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return segs->Get(a)->offset() < segs->Get(b)->offset();
    });
    for (size_t k = 1; k < order.size(); ++k) {
      const fb::Segment* prev = segs->Get(order[k - 1]);
      if (prev->offset() + prev->size() > segs->Get(order[k])->offset())
        return invalid(error_, "segments ", std::min(order[k - 1], order[k]), " and ",
                       std::max(order[k - 1], order[k]), " overlap");
    }
  }
  return Status::Ok;
}

Status Checker::check_tensor(uint32_t i) {
  const fb::Tensor& t = *tensors_->Get(i);
  const std::string where = tensor_where(i);
  if (t.dtype() >= kNumDTypes) return invalid(error_, where, ": unknown dtype id ", int{t.dtype()});
  const DType dtype = static_cast<DType>(t.dtype());
  const auto* shape = t.shape();
  if (len(shape) > static_cast<uint32_t>(kMaxRank))
    return invalid(error_, where, ": rank ", len(shape), " exceeds the maximum ", kMaxRank);
  if (len(t.dim_names()) != 0 && len(t.dim_names()) != len(shape))
    return invalid(error_, where, ": ", len(t.dim_names()), " dim_names for rank ", len(shape));
  bool symbolic = false;
  uint64_t numel = 1;
  uint64_t extent = 1;  // product of max(n, 1): what contiguous strides reach, even when numel is 0
  bool numel_overflow = false;
  for (uint32_t d = 0; d < len(shape); ++d) {
    const int64_t n = shape->Get(d);
    if (n < -1) return invalid(error_, where, ": negative dimension in shape ", shape_text(shape));
    if (n == -1) {
      symbolic = true;
      continue;
    }
    if (mul_overflows(numel, static_cast<uint64_t>(n), &numel) ||
        mul_overflows(extent, static_cast<uint64_t>(n > 0 ? n : 1), &extent) || extent > (uint64_t{1} << 62)) {
      numel_overflow = true;
    }
  }
  if (numel_overflow) return invalid(error_, where, ": shape ", shape_text(shape), " has too many elements");
  const fb::DataRef* ref = t.data();
  facts_[i].has_data = ref != nullptr;
  if (ref == nullptr) {
    if (t.sparse() != nullptr) return invalid(error_, where, ": sparse tensor without data");
    return Status::Ok;
  }
  if (symbolic) return invalid(error_, where, ": a weight cannot have symbolic dimensions");
  uint64_t count = numel;
  if (const fb::SparseCoo* sp = t.sparse()) {
    if (sp->nnz() < 0 || static_cast<uint64_t>(sp->nnz()) > numel)
      return invalid(error_, where, ": nnz ", sp->nnz(), " out of range for shape ", shape_text(shape));
    count = static_cast<uint64_t>(sp->nnz());
  }
  uint64_t bytes = 0;
  if (mul_overflows(count, element_size(dtype), &bytes))
    return invalid(error_, where, ": byte size overflows");
  if (ref->size() != bytes) {
    return invalid(error_, where, ": data is ", ref->size(), " bytes, ",
                   t.sparse() ? str_cat("nnz ", count) : str_cat("shape ", shape_text(shape)), " x ",
                   dtype_name(dtype), " needs ", bytes);
  }
  const auto* segs = root_->segments();
  if (ref->segment() >= len(segs))
    return invalid(error_, where, ": segment ", ref->segment(), " out of range (", len(segs), " segments)");
  const fb::Segment* seg = segs->Get(ref->segment());
  uint64_t end = 0;
  if (ref->offset() % kSegmentAlignment != 0)
    return invalid(error_, where, ": data offset ", ref->offset(), " is not ", kSegmentAlignment,
                   "-byte aligned");
  if (add_overflows(ref->offset(), ref->size(), &end) || end > seg->size())
    return invalid(error_, where, ": data (offset ", ref->offset(), ", size ", ref->size(),
                   ") exceeds segment ", ref->segment(), " (", seg->size(), " bytes)");
  if (full_) {
    EMBER_TRY(check_quant(t, where));
  }
  return Status::Ok;
}

Status Checker::check_quant(const fb::Tensor& t, const std::string& where) {
  const fb::QuantParams* q = t.quant();
  if (q == nullptr) return Status::Ok;
  const uint32_t n = len(q->scales());
  if (n == 0) return invalid(error_, where, ": quantization without scales");
  if (len(q->zero_points()) != 0 && len(q->zero_points()) != n)
    return invalid(error_, where, ": ", len(q->zero_points()), " zero points for ", n, " scales");
  for (uint32_t j = 0; j < n; ++j) {
    const float s = q->scales()->Get(j);
    if (!(s > 0.0f) || !std::isfinite(s))
      return invalid(error_, where, ": quantization scale ", j, " is ", s, " (must be positive and finite)");
  }
  const auto act = static_cast<uint8_t>(q->activations());
  if (act > static_cast<uint8_t>(fb::ActivationQuant::MAX))
    return invalid(error_, where, ": activation quantization ", static_cast<int>(act),
                   " is unknown (0: per tensor, 1: per row)");
  const DType dt = static_cast<DType>(t.dtype());
  if (dt == DType::Int8 || dt == DType::UInt8 || dt == DType::Int16 || dt == DType::Int32) {
    const int64_t lo = dt == DType::Int8 ? -128 : dt == DType::UInt8 ? 0 : dt == DType::Int16 ? -32768 : INT32_MIN;
    const int64_t hi = dt == DType::Int8 ? 127 : dt == DType::UInt8 ? 255 : dt == DType::Int16 ? 32767 : INT32_MAX;
    for (uint32_t j = 0; j < len(q->zero_points()); ++j) {
      const int64_t z = q->zero_points()->Get(j);
      if (z < lo || z > hi)
        return invalid(error_, where, ": zero point ", j, " (", z, ") is out of range [", lo, ", ", hi, "] for ",
                       dtype_name(dt));
    }
  } else {
    return invalid(error_, where, ": quantization parameters on a ", dtype_name(dt),
                   " tensor (int8, uint8, int16 or int32 only)");
  }
  if (n > 1) {
    const uint32_t rank = len(t.shape());
    if (q->axis() < 0 || static_cast<uint32_t>(q->axis()) >= rank)
      return invalid(error_, where, ": quantization axis ", q->axis(), " out of range for rank ", rank);
    const int64_t channels = t.shape()->Get(static_cast<uint32_t>(q->axis()));
    if (channels != -1 && static_cast<uint64_t>(channels) != n)
      return invalid(error_, where, ": ", n, " scales for ", channels, " channels on axis ", q->axis());
  }
  return Status::Ok;
}

Status Checker::check_coo(uint32_t i, const fb::Tensor& t, const std::string& where) {
  const fb::SparseCoo* sp = t.sparse();
  if (sp->layout() != fb::SparseLayout::Coo)
    return invalid(error_, where, ": unknown sparse layout ", static_cast<int>(sp->layout()));
  const int32_t idx = sp->indices();
  if (idx < 0 || static_cast<uint32_t>(idx) >= tensors_->size() || static_cast<uint32_t>(idx) == i)
    return invalid(error_, where, ": COO indices tensor ", idx, " out of range");
  const fb::Tensor& it = *tensors_->Get(static_cast<uint32_t>(idx));
  const uint32_t rank = len(t.shape());
  const int64_t nnz = sp->nnz();
  const uint8_t idt = it.dtype();
  const bool idx_dtype_ok = idt == static_cast<uint8_t>(DType::Int16) || idt == static_cast<uint8_t>(DType::Int32) ||
                            idt == static_cast<uint8_t>(DType::Int64);
  if (!facts_[static_cast<uint32_t>(idx)].has_data || it.sparse() != nullptr || !idx_dtype_ok ||
      len(it.shape()) != 2 || it.shape()->Get(0) != static_cast<int64_t>(rank) || it.shape()->Get(1) != nnz)
    return invalid(error_, where, ": COO indices ", tensor_ref(idx),
                   " must be a dense int16, int32 or int64 weight of shape [", rank, ", ", nnz, "]");
  // Values: float32, float16, or int8 with quantization parameters.
  const DType vdt = static_cast<DType>(t.dtype());
  if (vdt == DType::Int8) {
    if (t.quant() == nullptr)
      return invalid(error_, where, ": sparse int8 values need quantization parameters");
  } else if (vdt != DType::Float32 && vdt != DType::Float16) {
    return invalid(error_, where, ": sparse values must be float32, float16 or int8 (quantized), got ",
                   dtype_name(vdt));
  }
  // int16 indices only when every dimension fits.
  if (idt == static_cast<uint8_t>(DType::Int16)) {
    for (uint32_t d = 0; d < rank; ++d) {
      if (t.shape()->Get(d) > 32768)
        return invalid(error_, where, ": int16 COO indices cannot address dimension ", d, " of size ",
                       t.shape()->Get(d));
    }
  }
  // The only weight bytes the loader reads: coordinates must lie inside the
  // shape, in row-major order, without duplicates.
  const fb::Segment* seg = root_->segments()->Get(it.data()->segment());
  const uint8_t* p = data_ + seg->offset() + it.data()->offset();
  const size_t esize = element_size(static_cast<DType>(idt));
  auto coord = [&](uint32_t d, int64_t k) -> int64_t {
    const uint8_t* q = p + (static_cast<uint64_t>(d) * static_cast<uint64_t>(nnz) + static_cast<uint64_t>(k)) * esize;
    if (esize == 2) {
      int16_t v;
      std::memcpy(&v, q, 2);
      return v;
    }
    if (esize == 4) {
      int32_t v;
      std::memcpy(&v, q, 4);
      return v;
    }
    int64_t v;
    std::memcpy(&v, q, 8);
    return v;
  };
  for (uint32_t d = 0; d < rank; ++d) {
    const int64_t dim = t.shape()->Get(d);
    for (int64_t k = 0; k < nnz; ++k) {
      const int64_t v = coord(d, k);
      if (v < 0 || v >= dim)
        return invalid(error_, where, ": COO index ", v, " of value ", k, " out of bounds for dimension ", d,
                       " of size ", dim);
    }
  }
  for (int64_t k = 1; k < nnz; ++k) {
    int cmp = 0;
    for (uint32_t d = 0; d < rank && cmp == 0; ++d) {
      const int64_t a = coord(d, k - 1), b = coord(d, k);
      cmp = a < b ? -1 : (a > b ? 1 : 0);
    }
    if (cmp == 0) return invalid(error_, where, ": COO values ", k - 1, " and ", k, " have the same coordinates");
    if (cmp > 0)
      return invalid(error_, where, ": COO coordinates are not sorted in row-major order (value ", k,
                     " comes before value ", k - 1, ")");
  }
  return Status::Ok;
}

// The subgraphs a control-flow op runs: in range, of lower index than the
// graph holding the op (self; -1: the main graph, which may use any), with
// the inputs and outputs the op hands them.
Status Checker::check_control_op(const fb::Operator& op, const OpParams& params, int self,
                                 const std::string& where) {
  const uint32_t n_in = len(op.inputs()), n_out = len(op.outputs());
  const uint32_t n_sub = len(root_->subgraphs());
  auto graph_ok = [&](int32_t index, const char* what, uint32_t want_in, uint32_t want_out) -> Status {
    const bool in_range = index >= 0 && static_cast<uint32_t>(index) < n_sub && (self < 0 || index < self);
    if (!in_range)
      return invalid(error_, where, ": ", what, " subgraph index ", index, " out of range (", n_sub, " subgraphs",
                     self >= 0 ? str_cat(", and a subgraph may only run subgraphs of lower index than its own, ", self)
                               : std::string(), ")");
    const fb::Graph& g = *root_->subgraphs()->Get(static_cast<uint32_t>(index));
    if (len(g.inputs()) != want_in || len(g.outputs()) != want_out)
      return invalid(error_, where, ": ", what, " subgraph ", index, " has ", len(g.inputs()), " inputs and ",
                     len(g.outputs()), " outputs, expected ", want_in, " and ", want_out);
    return Status::Ok;
  };
  if (const auto* p = std::get_if<IfParams>(&params)) {
    if (n_in < 1) return invalid(error_, where, ": needs its condition input");
    EMBER_TRY(graph_ok(p->then_graph, "then", n_in - 1, n_out));
    return graph_ok(p->else_graph, "else", n_in - 1, n_out);
  }
  if (const auto* p = std::get_if<LoopParams>(&params)) {
    const uint32_t carried = static_cast<uint32_t>(p->carried);
    if (n_in < 2 + carried || n_out < carried)
      return invalid(error_, where, ": ", carried, " carried values need at least ", 2 + carried, " inputs and ",
                     carried, " outputs, got ", n_in, " and ", n_out);
    return graph_ok(p->body, "body", n_in, n_out + 1);
  }
  if (const auto* p = std::get_if<ScanLoopParams>(&params)) {
    const uint32_t state = static_cast<uint32_t>(p->state), scans = static_cast<uint32_t>(p->scan_inputs);
    if (n_in < state + scans || n_out < state || n_out - state > static_cast<uint32_t>(kMaxScanValues))
      return invalid(error_, where, ": ", state, " states and ", scans, " scan inputs do not fit ", n_in,
                     " inputs and ", n_out, " outputs (at most ", kMaxScanValues, " scan outputs)");
    for (uint32_t j = 0; j < state + scans; ++j) {
      if (op.inputs()->Get(j) == -1) return invalid(error_, where, ": input ", j, " is missing");
    }
    return graph_ok(p->body, "body", n_in, n_out);
  }
  return Status::Ok;
}

Status Checker::check_graph(const fb::Graph& g, int self) {
  const uint32_t nt = len(tensors_);
  auto in_range = [&](int32_t t) { return t >= 0 && static_cast<uint32_t>(t) < nt; };
  // Unique names.
  std::unordered_set<std::string_view> names;
  for (uint32_t i = 0; i < nt; ++i) {
    const std::string_view name = str(tensors_->Get(i)->name());
    if (name.empty()) return invalid(error_, "tensor ", i, " has no name");
    if (!names.insert(name).second) return invalid(error_, "tensor ", i, ": duplicate name '", name, "'");
    if (tensors_->Get(i)->sparse() != nullptr)
      EMBER_TRY(check_coo(i, *tensors_->Get(i), tensor_where(i)));
  }
  std::vector<uint8_t> defined(nt, 0);
  for (uint32_t i = 0; i < nt; ++i) defined[i] = facts_[i].has_data;
  for (uint32_t k = 0; k < len(g.inputs()); ++k) {
    const int32_t t = g.inputs()->Get(k);
    if (!in_range(t)) return invalid(error_, "graph input ", k, ": tensor index ", t, " out of range (", nt, " tensors)");
    if (defined[static_cast<uint32_t>(t)])
      return invalid(error_, "graph input ", k, ": ", tensor_ref(t), " is a weight or listed twice");
    defined[static_cast<uint32_t>(t)] = 1;
  }
  const auto* ops = g.operators();
  for (uint32_t k = 0; k < len(ops); ++k) {
    const fb::Operator& op = *ops->Get(k);
    if (op.op() >= kNumOps)
      return invalid(error_, "operator ", k, " '", str(op.name()), "': unknown op id ", op.op());
    const OpKind kind = static_cast<OpKind>(op.op());
    const std::string where = str_cat("operator ", k, " '", str(op.name()), "' (", op_name(kind), ")");
    // Variadic counts (-1) need at least one; inputs from op_min_inputs up to op_num_inputs.
    const auto count_ok = [](uint32_t have, int least, int want) {
      return want < 0 ? have >= 1 : have >= static_cast<uint32_t>(least) && have <= static_cast<uint32_t>(want);
    };
    const auto count_str = [](int least, int want) {
      return want < 0 ? std::string("at least 1")
             : least == want ? std::to_string(want)
                             : std::to_string(least) + " to " + std::to_string(want);
    };
    const int in_least = op_min_inputs(kind), in_want = op_num_inputs(kind), out_want = op_num_outputs(kind);
    if (!count_ok(len(op.inputs()), in_least, in_want) || !count_ok(len(op.outputs()), out_want, out_want))
      return invalid(error_, where, ": has ", len(op.inputs()), " inputs and ", len(op.outputs()),
                     " outputs, expected ", count_str(in_least, in_want), " and ", count_str(out_want, out_want));
    for (uint32_t j = 0; j < len(op.inputs()); ++j) {
      const int32_t t = op.inputs()->Get(j);
      if (t == -1) continue;
      if (!in_range(t))
        return invalid(error_, where, ": input ", j, ": tensor index ", t, " out of range (", nt, " tensors)");
      if (!defined[static_cast<uint32_t>(t)])
        return invalid(error_, where, ": input ", j, " (", tensor_ref(t),
                       ") is not a graph input, a weight or an earlier operator's output (cycle or wrong order)");
    }
    for (uint32_t j = 0; j < len(op.outputs()); ++j) {
      const int32_t t = op.outputs()->Get(j);
      if (t == -1) continue;
      if (!in_range(t))
        return invalid(error_, where, ": output ", j, ": tensor index ", t, " out of range (", nt, " tensors)");
      if (defined[static_cast<uint32_t>(t)])
        return invalid(error_, where, ": output ", j, " (", tensor_ref(t), ") is already defined");
      defined[static_cast<uint32_t>(t)] = 1;
    }
    OpParams params;
    std::string why;
    if (attrs_to_params(op, &params, &why) != Status::Ok) return invalid(error_, where, ": ", why);
    EMBER_TRY(check_control_op(op, params, self, where));
  }
  for (uint32_t k = 0; k < len(g.outputs()); ++k) {
    const int32_t t = g.outputs()->Get(k);
    if (!in_range(t)) return invalid(error_, "graph output ", k, ": tensor index ", t, " out of range (", nt, " tensors)");
    if (!defined[static_cast<uint32_t>(t)])
      return invalid(error_, "graph output ", k, ": ", tensor_ref(t), " is never computed");
  }
  return Status::Ok;
}

Status Checker::check_one_graph(const fb::Graph& g, int self) {
  tensors_ = g.tensors();
  facts_.assign(len(tensors_), TensorFacts{});
  for (uint32_t i = 0; i < len(tensors_); ++i) EMBER_TRY(check_tensor(i));
  if (full_) EMBER_TRY(check_graph(g, self));
  return Status::Ok;
}

Status Checker::run() {
  EMBER_TRY(check_header());
  EMBER_TRY(check_segments());
  EMBER_TRY(check_one_graph(*root_->graph(), -1));
  for (uint32_t i = 0; i < len(root_->subgraphs()); ++i) {
    const Status s = check_one_graph(*root_->subgraphs()->Get(i), static_cast<int>(i));
    if (s != Status::Ok) {
      if (error_ != nullptr) *error_ = str_cat("subgraph ", i, ": ", *error_);
      return s;
    }
  }
  return Status::Ok;
}

struct Mapping {
  void* addr = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (addr != nullptr) munmap(addr, size);
  }
};

}  // namespace

Status verify_model(const void* data, size_t size, Verification v, std::string* error) {
  if (data == nullptr && size != 0) return invalid(error, "no data");
  Checker checker(static_cast<const uint8_t*>(data), size, v, error);
  return checker.run();
}

Result<Model> Model::init(std::shared_ptr<void> owner, const std::byte* base, size_t size, Verification v,
                          std::string* error) {
  Checker checker(reinterpret_cast<const uint8_t*>(base), size, v, error);
  EMBER_TRY(checker.run());
  Model model(std::move(owner), base, size, checker.root(), checker.root()->graph());
  model.init_weights();
  return model;
}

Result<Model> Model::subgraph(int index, std::string* error) const {
  if (index < 0 || index >= num_subgraphs())
    return report_error(error, Status::InvalidArgument, "subgraph ", index, " out of range (", num_subgraphs(),
                        " subgraphs)");
  Model model(owner_, base_, size_, root_, root_->subgraphs()->Get(static_cast<uint32_t>(index)));
  model.file_mapped_ = file_mapped_;
  model.init_weights();
  return model;
}

void Model::release(const Tensor& t) const {
  if (!file_mapped_ || !t.defined()) return;
  const auto* begin = static_cast<const std::byte*>(t.data_ptr());
  const auto* end = begin + t.nbytes();
  if (begin < base_ || end > base_ + size_) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + page - 1) / page * page;
  const uintptr_t last = reinterpret_cast<uintptr_t>(end) / page * page;
  // Clean pages of a PROT_READ file mapping: dropping them loses nothing.
  if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

int Model::num_subgraphs() const { return static_cast<int>(len(root_->subgraphs())); }

void Model::init_weights() {
  Model& model = *this;
  const auto* tensors = graph_->tensors();
  model.weights_.resize(len(tensors));
  std::vector<int64_t> sizes;
  for (uint32_t i = 0; i < len(tensors); ++i) {
    const fb::Tensor& t = *tensors->Get(i);
    if (t.data() == nullptr) continue;
    sizes.clear();
    if (t.sparse() != nullptr) {
      sizes.push_back(t.sparse()->nnz());
    } else {
      for (uint32_t d = 0; d < len(t.shape()); ++d) sizes.push_back(t.shape()->Get(d));
    }
    const fb::Segment* seg = model.root_->segments()->Get(t.data()->segment());
    // Read-only mapping: the const_cast only satisfies from_blob's signature.
    void* p = const_cast<std::byte*>(base_ + seg->offset() + t.data()->offset());
    std::shared_ptr<void> keep = model.owner_;
    model.weights_[i] = from_blob(p, sizes, static_cast<DType>(t.dtype()), [keep](void*) {});
  }
}

Result<Model> Model::load(const std::string& path, Verification v, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return report_error(error, Status::IoError, "cannot open '", path, "': ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return report_error(error, Status::IoError, "cannot read '", path, "': not a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  auto mapping = std::make_shared<Mapping>();
  if (size > 0) {
    void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return report_error(error, Status::IoError, "cannot map '", path, "': ", std::strerror(err));
    }
    mapping->addr = addr;
    mapping->size = size;
  }
  ::close(fd);
  const auto* base = static_cast<const std::byte*>(mapping->addr);
  std::string why;
  auto model = init(std::move(mapping), base, size, v, &why);
  if (!model.ok() && error != nullptr) *error = str_cat(path, ": ", why);
  if (model.ok()) model.get().file_mapped_ = true;
  return model;
}

Result<Model> Model::load_from_bytes(const void* data, size_t size, Verification v, std::string* error) {
  const size_t rounded = (size + kSegmentAlignment - 1) / kSegmentAlignment * kSegmentAlignment;
  std::shared_ptr<void> buffer(std::aligned_alloc(kSegmentAlignment, rounded == 0 ? kSegmentAlignment : rounded),
                               [](void* p) { std::free(p); });
  if (buffer == nullptr) return report_error(error, Status::OutOfMemory, "cannot allocate ", size, " bytes");
  if (size > 0) std::memcpy(buffer.get(), data, size);
  const auto* base = static_cast<const std::byte*>(buffer.get());
  return init(std::move(buffer), base, size, v, error);
}

const fb::Tensor& Model::tensor(int i) const {
  EMBER_ASSERT(i >= 0 && i < num_tensors(), "Model::tensor: index out of range");
  return *graph_->tensors()->Get(static_cast<uint32_t>(i));
}

std::string_view Model::tensor_name(int i) const { return str(tensor(i).name()); }
DType Model::tensor_dtype(int i) const { return static_cast<DType>(tensor(i).dtype()); }

std::vector<int64_t> Model::tensor_shape(int i) const {
  const auto* shape = tensor(i).shape();
  return shape == nullptr ? std::vector<int64_t>() : std::vector<int64_t>(shape->begin(), shape->end());
}

int Model::find_tensor(std::string_view name) const {
  for (int i = 0; i < num_tensors(); ++i)
    if (tensor_name(i) == name) return i;
  return -1;
}

int Model::num_ops() const { return static_cast<int>(len(graph_->operators())); }

const fb::Operator& Model::op(int i) const {
  EMBER_ASSERT(i >= 0 && i < num_ops(), "Model::op: index out of range");
  return *graph_->operators()->Get(static_cast<uint32_t>(i));
}

OpKind Model::op_kind(int i) const { return static_cast<OpKind>(op(i).op()); }

Result<OpParams> Model::op_params(int i, std::string* error) const {
  const fb::Operator& o = op(i);
  if (o.op() >= kNumOps) return report_error(error, Status::InvalidModel, "unknown op id ", o.op());
  OpParams params;
  EMBER_TRY(attrs_to_params(o, &params, error));
  return params;
}

namespace {
Span<const int32_t> span_of(const flatbuffers::Vector<int32_t>* v) {
  return v == nullptr ? Span<const int32_t>() : Span<const int32_t>(v->data(), v->size());
}
}  // namespace

Span<const int32_t> Model::inputs() const { return span_of(graph_->inputs()); }
Span<const int32_t> Model::outputs() const { return span_of(graph_->outputs()); }

ModelMetadata Model::metadata() const {
  ModelMetadata m;
  const fb::Metadata* md = root_->metadata();
  if (md == nullptr) return m;
  m.producer = std::string(str(md->producer()));
  m.producer_version = std::string(str(md->producer_version()));
  m.source_hash = std::string(str(md->source_hash()));
  for (uint32_t k = 0; k < len(md->converter_options()); ++k) {
    const fb::KeyValue* kv = md->converter_options()->Get(k);
    m.converter_options.emplace_back(std::string(str(kv->key())), std::string(str(kv->value())));
  }
  return m;
}

}  // namespace ember
