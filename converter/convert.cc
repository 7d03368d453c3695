// convert_file(): ONNX bytes -> import -> passes -> lower -> `.ember` file.
#include <openssl/evp.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "converter/convert.h"
#include "converter/onnx_import.h"
#include "converter/report.h"
#include "runtime/core/error.h"
#include "runtime/model/writer.h"

namespace ember::converter {

namespace {

// "sha256:<hex>" of `bytes`, or "" when OpenSSL fails.
std::string sha256_hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr) != 1) return {};
  static const char* hex = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xf];
  }
  return out;
}

std::string fmt_double(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ConvertOptions::as_metadata() const {
  std::vector<std::pair<std::string, std::string>> out = {
      {"optimize", optimize ? "true" : "false"},
      {"quantize", quantize.empty() ? "none" : quantize},
      {"sparse_coo", sparse_coo ? fmt_double(sparse_min_zero_fraction) : "false"},
      {"prune", prune.empty() ? "none" : prune},
      {"weights", weights.empty() ? "fp32" : weights},
  };
  for (const auto& [name, values] : fixed_inputs) {  // "fix_input.sr": "16000"
    std::string v;
    for (double x : values) v += (v.empty() ? "" : ",") + fmt_double(x);
    out.emplace_back("fix_input." + name, v);
  }
  for (const auto& [name, dims] : input_shapes) {  // "input_shape.input": "1,576"
    std::string v;
    for (int64_t d : dims) v += (v.empty() ? "" : ",") + std::to_string(d);
    out.emplace_back("input_shape." + name, v);
  }
  return out;
}

static std::vector<std::pair<std::string, std::string>> quantize_metadata(const ConvertOptions& o) {
  if (o.quantize.empty()) return {};
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
    return s;
  };
  return {{"quantize_scheme", o.per_tensor ? "per_tensor" : "per_channel"},
          {"activations", o.activations == ActivationQuant::PerRow ? "per_row" : "per_tensor"},
          {"quantize_ops", join(o.quantize_ops)},
          {"min_weight_elements", std::to_string(o.min_weight_elements)},
          {"exclude", join(o.exclude)},
          {"weight_range", o.reduce_range ? "reduced" : "full"}};
}

Diag convert_file(const std::string& onnx_path, const std::string& out_path, const ConvertOptions& options,
                  ConvertReport* report) {
  if (!options.weights.empty() && options.weights != "fp32" && options.weights != "fp16")
    return {Status::InvalidArgument, "unknown weights '" + options.weights + "' (supported: fp32, fp16)"};
  if (!options.calibration_inputs.empty() && !options.report && !options.min_snr)
    return {Status::InvalidArgument, "--calibration-inputs needs --report or --min-snr"};
  std::string bytes;
  {
    std::ifstream in(onnx_path, std::ios::binary);
    if (!in) return {Status::IoError, "cannot open '" + onnx_path + "'"};
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return {Status::IoError, "cannot read '" + onnx_path + "'"};
    bytes = ss.str();
  }
  ConvertReport r;
  r.source_hash = sha256_hex(bytes);
  if (r.source_hash.empty()) return {Status::Internal, "OpenSSL could not compute the SHA-256 of '" + onnx_path + "'"};

  auto graph = import_onnx_bytes(bytes, onnx_path);
  if (!graph.ok()) return graph.diag();
  Graph& g = *graph;
  r.onnx_nodes = static_cast<int>(g.nodes.size());
  Diag shaped = fix_input_shapes(g, options.input_shapes);
  if (!shaped.ok()) return shaped;
  Diag fixed = fix_inputs(g, options.fixed_inputs);
  if (!fixed.ok()) return fixed;
  if (options.optimize) {
    const auto& ops = options.quantize_ops;
    const bool quantized_matmuls_only = !options.quantize.empty() &&
                                        std::find(ops.begin(), ops.end(), "MatMul") != ops.end() &&
                                        std::find(ops.begin(), ops.end(), "Gemm") == ops.end();
    const bool merge = options.merge_projections && (options.quantize.empty() || !options.per_tensor);
    auto passes = run_passes(g, !quantized_matmuls_only, merge);
    if (!passes.ok()) return passes.diag();
    r.passes = *passes;
  }
  Expected<ModelDef> def = [&]() -> Expected<ModelDef> {
    try {
      return lower(g);
    } catch (const Error& e) {
      return Diag{e.status(), std::string("lowering '") + onnx_path + "': " + e.what()};
    }
  }();
  if (!def.ok()) return def.diag();
  const bool measure = options.report || options.min_snr.has_value();
  std::vector<Tensor> inputs;
  if (measure) {
    if (options.calibration_inputs.empty()) {
      inputs = random_inputs(*def);
    } else {
      auto in = read_calibration_inputs(options.calibration_inputs, *def);
      if (!in.ok()) return in.diag();
      inputs = std::move(*in);
    }
  }
  const ModelDef fp32 = measure ? *def : ModelDef{};
  if (!options.prune.empty()) {
    Diag pd = prune_weights(*def, options.prune, &r);
    if (!pd.ok()) return pd;
  }
  def->metadata.producer = "ember";
  def->metadata.producer_version = "0.1";
  def->metadata.source_hash = r.source_hash;
  def->metadata.converter_options = options.as_metadata();
  {
    for (auto& kv : quantize_metadata(options)) def->metadata.converter_options.push_back(kv);
    // Without a scheme: nothing to do, or an error for options that need one.
    Diag q = quantize_weights(*def, options, report != nullptr ? &r.quantize : nullptr);
    if (!q.ok()) return q;
  }
  if (options.weights == "fp16") {
    Diag fd = convert_weights_fp16(*def);
    if (!fd.ok()) return fd;
  }
  // After quantization: int8 weights can be stored as COO too.
  if (options.sparse_coo) {
    Diag sd = store_sparse_coo(*def, options.sparse_min_zero_fraction, &r);
    if (!sd.ok()) return sd;
    // Sparse int8 weights run dequantized through SpMM: no activation quantization.
    for (TensorDef& t : def->tensors) {
      if (t.sparse && t.quant) t.quant->activations = ActivationQuant::PerTensor;
    }
  }
  if (options.min_snr) def->metadata.converter_options.emplace_back("min_snr", fmt_double(*options.min_snr));
  if (measure) {
    Diag ad = measure_accuracy(fp32, *def, inputs, options, r.sparse_layers, &r.accuracy);
    if (!ad.ok()) return ad;
    r.has_accuracy = true;
  }
  // The sparsity rows were filled before fp16 and --min-snr: their stored form now.
  for (SparseLayerReport& row : r.sparse_layers) {
    for (const TensorDef& t : def->tensors) {
      if (t.name != row.weight || !t.has_data) continue;
      row.coo = t.sparse.has_value();
      row.bytes_after = static_cast<int64_t>(t.byte_size()) +
                        (t.sparse ? static_cast<int64_t>(def->tensors[static_cast<size_t>(t.sparse->indices)].byte_size()) : 0);
    }
  }

  std::string error;
  const Status s = write_model(*def, out_path, &error);
  if (s != Status::Ok) return {s, "cannot write '" + out_path + "': " + error};

  r.ops = static_cast<int>(def->ops.size());
  r.tensors = static_cast<int>(def->tensors.size());
  auto add_weights = [&r](const ModelDef& g) {
    for (const TensorDef& t : g.tensors)
      if (t.has_data) r.weight_bytes += static_cast<int64_t>(t.byte_size());
  };
  add_weights(*def);
  for (const ModelDef& g : def->subgraphs) add_weights(g);  // If / Loop / Scan bodies
  if (report != nullptr) *report = r;
  return Diag::success();
}

}  // namespace ember::converter
