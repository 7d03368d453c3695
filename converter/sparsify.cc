// Magnitude pruning and sparse COO storage of weights (convert.h): run on the
// lowered ModelDef, after the passes, before the file is written.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

#include "converter/convert.h"
#include "quant/coo.h"
#include "quant/prune.h"
#include "runtime/core/error.h"

namespace ember::converter {
namespace {

// The weight input of the ops pruning and COO consider.
bool weight_input(OpKind k, size_t j) {
  return j == 1 && (k == OpKind::Linear || k == OpKind::MatMul || k == OpKind::Conv2d);
}

std::set<OpKind> kinds_of(const std::vector<std::string>& op_types, std::string* unknown) {
  std::set<OpKind> kinds;
  for (const std::string& t : op_types) {
    if (t == "Gemm" || t == "Linear") {
      kinds.insert(OpKind::Linear);
    } else if (t == "MatMul") {
      kinds.insert(OpKind::MatMul);
      kinds.insert(OpKind::Linear);  // MatMul + Add fuse into a linear
    } else if (t == "Conv") {
      kinds.insert(OpKind::Conv2d);
    } else if (unknown->empty()) {
      *unknown = t;
    }
  }
  return kinds;
}

// A weight's values as a contiguous tensor (a view on the TensorDef's bytes).
Tensor weight_tensor(TensorDef& t) {
  if (t.tensor.defined()) return t.tensor.contiguous();
  Tensor out = empty(t.shape, t.dtype);
  if (!t.data.empty()) std::memcpy(out.data_ptr(), t.data.data(), t.data.size());
  return out;
}

void set_weight(TensorDef& t, const Tensor& value) {
  t.data.clear();
  t.tensor = value.contiguous();
  t.dtype = value.dtype();
  t.has_data = true;
}

SparseLayerReport& row_for(ConvertReport* r, const ModelDef& def, const OpDef& op, int32_t w) {
  for (SparseLayerReport& row : r->sparse_layers)
    if (row.weight == def.tensors[static_cast<size_t>(w)].name) return row;
  SparseLayerReport row;
  row.op = op.name;
  row.op_type = std::string(op_name(op.op));
  row.weight = def.tensors[static_cast<size_t>(w)].name;
  row.shape = def.tensors[static_cast<size_t>(w)].shape;
  row.bytes_before = static_cast<int64_t>(def.tensors[static_cast<size_t>(w)].byte_size());
  row.bytes_after = row.bytes_before;
  r->sparse_layers.push_back(row);
  return r->sparse_layers.back();
}

bool coo_dtype_ok(const TensorDef& t) {
  if (t.dtype == DType::Float32 || t.dtype == DType::Float16) return true;
  // int8 with symmetric quantization: a stored 0 is a real 0.
  if (t.dtype == DType::Int8 && t.quant) {
    for (int64_t z : t.quant->zero_points)
      if (z != 0) return false;
    return t.quant->scales.size() == 1 || t.quant->axis == 0;
  }
  return false;
}

}  // namespace

Diag prune_weights(ModelDef& def, const std::string& spec_text, ConvertReport* report) {
  sparse::PruneSpec spec;
  std::string error;
  if (sparse::parse_prune_spec(spec_text, &spec, &error) != Status::Ok) return {Status::InvalidArgument, error};
  std::string unknown;
  const std::set<OpKind> kinds = kinds_of(spec.op_types, &unknown);
  if (!unknown.empty())
    return {Status::InvalidArgument, "bad prune spec '" + spec_text + "': unknown op type '" + unknown +
                                         "' (Gemm, MatMul, Conv)"};
  ConvertReport local;
  ConvertReport* r = report != nullptr ? report : &local;
  std::set<int32_t> done;
  int layers = 0;
  for (const OpDef& op : def.ops) {
    if (kinds.count(op.op) == 0) continue;
    for (size_t j = 0; j < op.inputs.size(); ++j) {
      const int32_t w = op.inputs[j];
      if (!weight_input(op.op, j) || w < 0 || done.count(w) != 0) continue;
      TensorDef& t = def.tensors[static_cast<size_t>(w)];
      if (!t.has_data || t.sparse || !is_floating(t.dtype)) continue;
      done.insert(w);
      try {
        const Tensor pruned = sparse::magnitude_prune(weight_tensor(t), spec.fraction);
        set_weight(t, pruned);
        SparseLayerReport& row = row_for(r, def, op, w);
        row.pruned = true;
        row.zero_fraction = sparse::zero_fraction(pruned);
        ++layers;
      } catch (const Error& e) {
        return {e.status(), "pruning '" + t.name + "': " + e.what()};
      }
    }
  }
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "magnitude pruning zeroed %.1f %% of the weights of %d layer%s: accuracy drops; check the model "
                "on real data",
                spec.fraction * 100.0, layers, layers == 1 ? "" : "s");
  r->warnings.emplace_back(buf);
  return Diag::success();
}

Diag store_sparse_coo(ModelDef& def, double min_zero_fraction, ConvertReport* report) {
  if (!(min_zero_fraction >= 0.0 && min_zero_fraction <= 1.0)) {
    char buf[128];
    std::snprintf(buf, sizeof(buf), "sparse COO threshold %g is not a fraction in [0, 1]", min_zero_fraction);
    return {Status::InvalidArgument, buf};
  }
  ConvertReport local;
  ConvertReport* r = report != nullptr ? report : &local;
  std::set<int32_t> done;
  const size_t n_ops = def.ops.size();
  for (size_t k = 0; k < n_ops; ++k) {
    const OpDef op = def.ops[k];
    for (size_t j = 0; j < op.inputs.size(); ++j) {
      const int32_t w = op.inputs[j];
      if (!weight_input(op.op, j) || w < 0 || done.count(w) != 0) continue;
      done.insert(w);
      const TensorDef& t = def.tensors[static_cast<size_t>(w)];
      if (!t.has_data || t.sparse || !coo_dtype_ok(t) || t.shape.empty()) continue;
      const std::string name = t.name;
      try {
        const Tensor dense = weight_tensor(def.tensors[static_cast<size_t>(w)]);
        const double zf = sparse::zero_fraction(dense);
        SparseLayerReport& row = row_for(r, def, op, w);
        row.zero_fraction = zf;
        // Never zero-sized, and only when the file gets smaller.
        if (zf < min_zero_fraction || dense.numel() == 0) continue;
        const sparse::CooParts coo = sparse::dense_to_coo(dense, sparse::coo_index_dtype(dense.sizes()));
        const int64_t after = static_cast<int64_t>(coo.values.nbytes() + coo.indices.nbytes());
        if (after >= row.bytes_before) continue;
        TensorDef idx;
        idx.name = name + ".coo_indices";
        for (int n = 2; std::any_of(def.tensors.begin(), def.tensors.end(),
                                    [&](const TensorDef& o) { return o.name == idx.name; });
             ++n)
          idx.name = name + ".coo_indices" + std::to_string(n);
        idx.shape = coo.indices.sizes();
        idx.dtype = coo.indices.dtype();
        idx.tensor = coo.indices;
        idx.has_data = true;
        const int32_t ii = def.add_tensor(idx);  // may reallocate: re-fetch t
        TensorDef& tv = def.tensors[static_cast<size_t>(w)];
        const std::vector<int64_t> shape = tv.shape;
        set_weight(tv, coo.values);
        tv.shape = shape;
        tv.sparse = SparseCooDef{ii, coo.values.numel()};
        SparseLayerReport& row2 = row_for(r, def, op, w);
        row2.coo = true;
        row2.bytes_after = after;
      } catch (const Error& e) {
        return {e.status(), "storing '" + name + "' as sparse COO: " + e.what()};
      }
    }
  }
  return Diag::success();
}

std::string sparse_table(const ConvertReport& report) {
  if (report.sparse_layers.empty()) return {};
  std::vector<std::vector<std::string>> rows = {
      {"layer", "op", "weight", "shape", "zeros", "stored", "bytes (dense -> stored)"}};
  int64_t before = 0, after = 0;
  for (const SparseLayerReport& row : report.sparse_layers) {
    std::string shape = "[";
    for (size_t d = 0; d < row.shape.size(); ++d) shape += (d ? ", " : "") + std::to_string(row.shape[d]);
    shape += "]";
    char zeros[32];
    std::snprintf(zeros, sizeof(zeros), "%.1f%%%s", row.zero_fraction * 100.0, row.pruned ? " (pruned)" : "");
    rows.push_back({row.op, row.op_type, row.weight, shape, zeros, row.coo ? "coo" : "dense",
                    std::to_string(row.bytes_before) + " -> " + std::to_string(row.bytes_after)});
    before += row.bytes_before;
    after += row.bytes_after;
  }
  // Columns padded to their widest cell, two spaces apart.
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  char buf[128];
  std::snprintf(buf, sizeof(buf), "total: %lld -> %lld bytes (%.3fx)\n", static_cast<long long>(before),
                static_cast<long long>(after), before > 0 ? static_cast<double>(after) / static_cast<double>(before) : 1.0);
  return out + buf;
}

}  // namespace ember::converter
