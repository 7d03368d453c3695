// The accuracy report and --min-snr (see report.h).
#include "converter/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>

#include "runtime/autograd/grad_mode.h"
#include "runtime/core/error.h"
#include "runtime/core/rng.h"
#include "runtime/model/executor.h"
#include "runtime/model/loader.h"
#include "runtime/model/npy.h"
#include "runtime/model/npz.h"
#include "runtime/model/writer.h"

namespace ember::converter {

namespace {

std::string commas(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return (v < 0 ? "-" : "") + s;
}

std::string fixed(double v, int decimals) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

bool is_float(DType d) { return d == DType::Float32 || d == DType::Float16 || d == DType::Float64 || d == DType::BFloat16; }

uint16_t le16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// Runs `def` with the tensors `want` made graph outputs; returns them (float32 copies).
Expected<std::vector<Tensor>> run_def(ModelDef def, const std::vector<int32_t>& want, const std::vector<Tensor>& inputs,
                                      const std::string& what) {
  for (int32_t t : want) {
    if (std::find(def.outputs.begin(), def.outputs.end(), t) == def.outputs.end()) def.outputs.push_back(t);
  }
  std::vector<std::byte> bytes;
  std::string error;
  Status s = serialize_model(def, &bytes, &error);
  if (s != Status::Ok) return Diag{s, "report: cannot build the " + what + ": " + error};
  Result<Model> m = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Full, &error);
  if (!m.ok()) return Diag{m.status(), "report: cannot load the " + what + ": " + error};
  auto ex = Executor::create(std::make_shared<const Model>(std::move(m.get())), &error);
  if (!ex.ok()) return Diag{ex.status(), "report: cannot run the " + what + ": " + error};
  ExecutionContext ctx(ex.get());
  auto y = ctx.run(Span<const Tensor>(inputs.data(), inputs.size()), {}, &error);
  if (!y.ok()) return Diag{y.status(), "report: running the " + what + ": " + error};
  std::vector<Tensor> out;
  NoGradGuard no_grad;
  for (int32_t t : want) {
    const size_t k = static_cast<size_t>(std::find(def.outputs.begin(), def.outputs.end(), t) - def.outputs.begin());
    const Tensor& v = y.get()[k];
    out.push_back(is_float(v.dtype()) ? v.to(DType::Float32, true).contiguous() : Tensor());
  }
  return out;
}

bool tensor_changed(const TensorDef& a, const TensorDef& b) {
  if (a.dtype != b.dtype || a.shape != b.shape || a.quant.has_value() != b.quant.has_value() ||
      a.sparse.has_value() != b.sparse.has_value() || a.byte_size() != b.byte_size())
    return true;
  return a.byte_size() > 0 && std::memcmp(a.bytes(), b.bytes(), a.byte_size()) != 0;
}

// Fraction of zeros of a weight as stored (COO: 1 - nnz / numel).
double zero_fraction(const TensorDef& t) {
  int64_t numel = 1;
  for (int64_t d : t.shape) numel *= d;
  if (numel <= 0) return 0;
  if (t.sparse) return 1.0 - static_cast<double>(t.sparse->nnz) / static_cast<double>(numel);
  const auto* p = reinterpret_cast<const unsigned char*>(t.bytes());
  int64_t zeros = 0;
  if (t.dtype == DType::Float32) {
    for (int64_t i = 0; i < numel; ++i) {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      zeros += v == 0.0f;
    }
  } else if (t.dtype == DType::Float16) {
    for (int64_t i = 0; i < numel; ++i) zeros += (le16(p + 2 * i) & 0x7fff) == 0;
  } else if (t.dtype == DType::Int8) {
    for (int64_t i = 0; i < numel; ++i) zeros += p[i] == 0;
  } else {
    return 0;
  }
  return static_cast<double>(zeros) / static_cast<double>(numel);
}

// `converted` with the layers not in `take` restored from `fp32` (ops and
// the constants they read, except constants a taken layer reads); COO index
// tensors left unused are emptied.
ModelDef mixed(const ModelDef& fp32, const ModelDef& converted, const std::vector<char>& layer,
               const std::vector<char>& take) {
  ModelDef m = converted;
  std::set<int32_t> keep;
  for (size_t j = 0; j < m.ops.size(); ++j) {
    if (layer[j] && take[j]) keep.insert(m.ops[j].inputs.begin(), m.ops[j].inputs.end());
  }
  for (size_t j = 0; j < m.ops.size(); ++j) {
    if (!layer[j] || take[j]) continue;
    m.ops[j] = fp32.ops[j];
    for (int32_t t : fp32.ops[j].inputs) {
      if (t >= 0 && fp32.tensors[static_cast<size_t>(t)].has_data && keep.count(t) == 0)
        m.tensors[static_cast<size_t>(t)] = fp32.tensors[static_cast<size_t>(t)];
    }
  }
  std::set<int32_t> used_indices;
  for (const TensorDef& t : m.tensors) {
    if (t.sparse) used_indices.insert(t.sparse->indices);
  }
  for (const TensorDef& t : converted.tensors) {
    if (!t.sparse || used_indices.count(t.sparse->indices) > 0) continue;
    TensorDef& idx = m.tensors[static_cast<size_t>(t.sparse->indices)];
    idx.tensor = Tensor();
    idx.data.clear();
    if (!idx.shape.empty()) idx.shape.back() = 0;
  }
  return m;
}

}  // namespace

double snr_db(const Tensor& ref, const Tensor& approx) {
  const std::vector<float> a = ref.contiguous().to_vector<float>(), b = approx.contiguous().to_vector<float>();
  if (a.size() != b.size()) throw Error(Status::InvalidArgument, "snr_db: element counts differ");
  double sig = 0, noise = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sig += static_cast<double>(a[i]) * a[i];
    const double d = static_cast<double>(a[i]) - b[i];
    noise += d * d;
  }
  if (noise == 0) return std::numeric_limits<double>::infinity();
  if (sig == 0) return -std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(sig / noise);
}

std::vector<Tensor> random_inputs(const ModelDef& def) {
  Generator gen(0);
  std::vector<Tensor> out;
  for (int32_t i : def.inputs) {
    const TensorDef& t = def.tensors[static_cast<size_t>(i)];
    std::vector<int64_t> shape = t.shape;
    for (int64_t& d : shape) d = d < 0 ? 1 : d;
    Tensor x = zeros(shape, is_float(t.dtype) ? DType::Float32 : t.dtype);
    if (is_float(t.dtype)) {
      float* p = x.data_ptr<float>();
      for (int64_t k = 0; k < x.numel(); ++k) p[k] = static_cast<float>(gen.normal_double());
      x = x.to(t.dtype);
    }
    out.push_back(x);
  }
  return out;
}

Expected<std::vector<Tensor>> read_calibration_inputs(const std::string& path, const ModelDef& def) {
  std::vector<NpzEntry> entries;
  std::error_code ec;
  std::string error;
  if (std::filesystem::is_directory(path, ec)) {
    for (int32_t i : def.inputs) {
      const std::string name = def.tensors[static_cast<size_t>(i)].name;
      const std::string file = path + "/" + name + ".npy";
      if (!std::filesystem::exists(file, ec)) continue;
      Result<Tensor> x = read_npy(file, &error);
      if (!x.ok()) return Diag{x.status(), "calibration inputs: " + error};
      entries.push_back({name, x.get()});
    }
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Diag{Status::IoError, "cannot open calibration inputs '" + path + "'"};
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Result<std::vector<NpzEntry>> z = parse_npz(bytes.data(), bytes.size(), path, &error);
    if (!z.ok()) return Diag{z.status(), "calibration inputs " + error};
    entries = std::move(z.get());
  }
  std::vector<Tensor> out;
  for (int32_t i : def.inputs) {
    const TensorDef& t = def.tensors[static_cast<size_t>(i)];
    auto it = std::find_if(entries.begin(), entries.end(), [&](const NpzEntry& e) { return e.name == t.name; });
    if (it == entries.end())
      return Diag{Status::InvalidArgument, "calibration inputs '" + path + "' have no array for input '" + t.name + "'"};
    Tensor v = it->value;
    if (v.dtype() != t.dtype) v = v.to(t.dtype);  // np.savez keeps float64 when the caller does
    out.push_back(v);
  }
  return out;
}

Diag measure_accuracy(const ModelDef& fp32, ModelDef& converted, const std::vector<Tensor>& inputs,
                      const ConvertOptions& options, const std::vector<SparseLayerReport>& pruned,
                      AccuracyReport* report) {
  if (fp32.ops.size() != converted.ops.size() || fp32.tensors.size() > converted.tensors.size())
    return {Status::Internal, "report: the converted model does not line up with the fp32 model"};
  AccuracyReport r;
  r.min_snr_set = options.min_snr.has_value();
  r.min_snr = options.min_snr.value_or(0);
  r.inputs = options.calibration_inputs.empty() ? "random normal (seed 0), symbolic dims 1"
                                                : "'" + options.calibration_inputs + "'";
  const size_t n_ops = fp32.ops.size();
  std::vector<char> layer(n_ops, 0);
  std::vector<int32_t> want;  // layer outputs, then the graph outputs
  for (size_t j = 0; j < n_ops; ++j) {
    const OpDef& a = fp32.ops[j];
    const OpDef& b = converted.ops[j];
    bool changed = a.op != b.op || a.inputs != b.inputs;
    for (int32_t t : a.inputs) {
      if (t >= 0 && fp32.tensors[static_cast<size_t>(t)].has_data)
        changed = changed || tensor_changed(fp32.tensors[static_cast<size_t>(t)], converted.tensors[static_cast<size_t>(t)]);
    }
    if (!changed || a.outputs.empty() || a.outputs[0] < 0) continue;
    layer[j] = 1;
    want.push_back(a.outputs[0]);
  }
  const size_t n_layer_outputs = want.size();
  for (int32_t t : fp32.outputs) want.push_back(t);
  auto ref = run_def(fp32, want, inputs, "fp32 model");
  if (!ref.ok()) return ref.diag();

  size_t k = 0;
  std::vector<char> take(n_ops, 0);
  for (size_t j = 0; j < n_ops; ++j) {
    if (!layer[j]) continue;
    LayerAccuracy l;
    const OpDef& op = converted.ops[j];
    l.op = op.name;
    l.op_type = std::string(op_name(op.op));
    for (int32_t t : fp32.ops[j].inputs) {
      if (t >= 0 && fp32.tensors[static_cast<size_t>(t)].has_data)
        l.bytes_before += static_cast<int64_t>(fp32.tensors[static_cast<size_t>(t)].byte_size());
    }
    for (int32_t t : op.inputs) {
      if (t < 0 || !converted.tensors[static_cast<size_t>(t)].has_data) continue;
      const TensorDef& td = converted.tensors[static_cast<size_t>(t)];
      l.bytes_after += static_cast<int64_t>(td.byte_size());
      if (td.sparse) l.bytes_after += static_cast<int64_t>(converted.tensors[static_cast<size_t>(td.sparse->indices)].byte_size());
    }
    const int32_t w = op.inputs.size() > 1 && op.inputs[1] >= 0 && converted.tensors[static_cast<size_t>(op.inputs[1])].has_data
                          ? op.inputs[1]
                          : -1;
    if (w >= 0) {
      const TensorDef& td = converted.tensors[static_cast<size_t>(w)];
      l.zero_fraction = zero_fraction(td);
      l.storage = td.dtype == DType::Int8 ? "int8" : td.dtype == DType::Float16 ? "fp16" : "fp32";
      if (td.sparse) l.storage += "+coo";
      const int32_t wf = fp32.ops[j].inputs[1];
      if (wf >= 0 && fp32.tensors[static_cast<size_t>(wf)].has_data)
        l.zero_fraction_fp32 = zero_fraction(fp32.tensors[static_cast<size_t>(wf)]);
      for (const SparseLayerReport& s : pruned) {
        if (s.op == op.name && s.pruned) l.storage += "+pruned";
      }
    } else {
      l.storage = "fp16";
    }
    std::fill(take.begin(), take.end(), 0);
    take[j] = 1;
    auto y = run_def(mixed(fp32, converted, layer, take), {op.outputs[0]}, inputs, "model with layer '" + op.name + "' converted");
    if (!y.ok()) return y.diag();
    const Tensor& yr = (*ref)[k++];
    l.snr_db = (*y)[0].defined() && yr.defined() ? snr_db(yr, (*y)[0]) : std::numeric_limits<double>::infinity();
    l.kept_fp32 = r.min_snr_set && l.snr_db < r.min_snr;
    r.layers.push_back(l);
  }
  if (r.min_snr_set) {
    size_t li = 0;
    for (size_t j = 0; j < n_ops; ++j) take[j] = layer[j] ? !r.layers[li++].kept_fp32 : 0;
    converted = mixed(fp32, converted, layer, take);
  }
  auto y = run_def(converted, converted.outputs, inputs, "converted model");
  if (!y.ok()) return y.diag();
  for (size_t o = 0; o < converted.outputs.size(); ++o) {
    const Tensor& yr = (*ref)[n_layer_outputs + o];
    if (!yr.defined()) continue;
    r.output_snr_db.emplace_back(converted.tensors[static_cast<size_t>(converted.outputs[o])].name, snr_db(yr, (*y)[o]));
  }
  for (const TensorDef& t : fp32.tensors) {
    if (t.has_data) r.weight_bytes_fp32 += static_cast<int64_t>(t.byte_size());
  }
  for (const TensorDef& t : converted.tensors) {
    if (t.has_data) r.weight_bytes_after += static_cast<int64_t>(t.byte_size());
  }
  if (report != nullptr) *report = std::move(r);
  return Diag::success();
}

std::string accuracy_table(const AccuracyReport& r) {
  std::vector<std::vector<std::string>> rows = {
      {"layer", "op", "stored", "bytes fp32", "bytes", "zeros", "SNR dB", ""}};
  for (const LayerAccuracy& l : r.layers) {
    rows.push_back({l.op, l.op_type, l.kept_fp32 ? "fp32" : l.storage, commas(l.bytes_before),
                    commas(l.kept_fp32 ? l.bytes_before : l.bytes_after), fixed(100.0 * (l.kept_fp32 ? l.zero_fraction_fp32 : l.zero_fraction), 1) + "%",
                    fixed(l.snr_db, 2),
                    l.kept_fp32 ? "kept fp32 (" + l.storage + " below " + fixed(r.min_snr, 2) + " dB)" : ""});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::ostringstream os;
  os << "accuracy report (inputs: " << r.inputs << "; SNR of each layer's output alone vs fp32):\n";
  for (const auto& row : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < row.size(); ++c) {
      const bool left = c < 3 || c == 7;
      const std::string pad(width[c] - row[c].size(), ' ');
      line += (c > 0 ? "  " : "") + (left ? row[c] + (c == 7 ? "" : pad) : pad + row[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    os << line << "\n";
  }
  const double ratio = r.weight_bytes_fp32 > 0 ? static_cast<double>(r.weight_bytes_after) / r.weight_bytes_fp32 : 1.0;
  os << "  model weights: " << commas(r.weight_bytes_fp32) << " -> " << commas(r.weight_bytes_after) << " bytes ("
     << fixed(ratio, 3) << "x)\n";
  for (const auto& [name, snr] : r.output_snr_db) os << "  output '" << name << "' SNR: " << fixed(snr, 2) << " dB\n";
  return os.str();
}

}  // namespace ember::converter
