// The model zoo (tests/golden/model_zoo.py) for the conformance suites: its
// manifest, .npy inputs and torch outputs, conversion + loading (cached per
// file), and the tolerance comparison. Shared by tests/model/conformance_test.cc
// (CPU) and tests/vulkan/conformance.cc (Vulkan).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "runtime/model/loader.h"
#include "tests/harness/testing.h"

namespace ember::zoo {

inline const std::string kZoo = "tests/golden/model_zoo/";

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A .npy file (format 1.0-3.0, little-endian, C order) of float32, float64,
// int64, int32 or bool.
inline Tensor read_npy(const std::string& path) {
  const std::string b = read_bytes(path);
  const bool magic = b.size() >= 10 && std::memcmp(b.data(), "\x93NUMPY", 6) == 0;
  REQUIRE_MESSAGE(magic, path << " is not a .npy file");
  const int major = static_cast<unsigned char>(b[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(b[8]) | (static_cast<size_t>(static_cast<unsigned char>(b[9])) << 8);
    offset = 10;
  } else {
    REQUIRE(b.size() >= 12);
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(b[8 + i])) << (8 * i);
    offset = 12;
  }
  const std::string header = b.substr(offset, header_len);
  offset += header_len;
  auto field = [&](const std::string& key) {
    const size_t k = header.find("'" + key + "':");
    REQUIRE_MESSAGE(k != std::string::npos, path << ": no " << key << " in " << header);
    return header.substr(k + key.size() + 3);
  };
  std::string descr = field("descr");
  descr = descr.substr(descr.find('\'') + 1);
  descr = descr.substr(0, descr.find('\''));
  REQUIRE_MESSAGE(field("fortran_order").find("False") == 1, path << ": Fortran order");
  std::string shape_str = field("shape");
  shape_str = shape_str.substr(shape_str.find('(') + 1);
  shape_str = shape_str.substr(0, shape_str.find(')'));
  Shape shape;
  std::istringstream dims(shape_str);
  std::string tok;
  while (std::getline(dims, tok, ',')) {
    if (tok.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(tok));
  }
  DType dtype = DType::Float32;
  if (descr == "<f4") dtype = DType::Float32;
  else if (descr == "<f8") dtype = DType::Float64;
  else if (descr == "<i8") dtype = DType::Int64;
  else if (descr == "<i4") dtype = DType::Int32;
  else if (descr == "|b1") dtype = DType::Bool;
  else if (descr == "|u1") dtype = DType::UInt8;
  else if (descr == "|i1") dtype = DType::Int8;
  else FAIL(path << ": unsupported dtype " << descr);
  Tensor t = empty(shape, dtype);
  const size_t bytes = static_cast<size_t>(t.numel()) * element_size(dtype);
  REQUIRE_MESSAGE(b.size() - offset == bytes, path << ": " << b.size() - offset << " data bytes, expected " << bytes);
  if (bytes != 0) std::memcpy(t.data_ptr(), b.data() + offset, bytes);
  return t;
}

struct Case {
  std::string name, file;
  std::vector<std::string> inputs, outputs;
  double rtol = 1e-4, atol = 1e-4;
};

inline std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string tok;
  while (std::getline(in, tok, ',')) out.push_back(tok);
  return out;
}

inline std::vector<Case> manifest() {
  std::vector<Case> cases;
  std::istringstream in(read_bytes(kZoo + "manifest.txt"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream ls(line);
    Case c;
    ls >> c.name;
    std::string kv;
    while (ls >> kv) {
      const size_t eq = kv.find('=');
      REQUIRE(eq != std::string::npos);
      const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (k == "file") c.file = v;
      else if (k == "inputs") c.inputs = split_commas(v);
      else if (k == "outputs") c.outputs = split_commas(v);
      else if (k == "rtol") c.rtol = std::stod(v);
      else if (k == "atol") c.atol = std::stod(v);
      else FAIL("manifest: unknown key " << k);
    }
    cases.push_back(c);
  }
  return cases;
}


// Converts (once per .onnx file) and loads the model; the error says which step failed.
inline std::shared_ptr<const Model> load_model(const std::string& onnx_file, std::string* error) {
  static std::map<std::string, std::shared_ptr<const Model>> cache;
  auto it = cache.find(onnx_file);
  if (it != cache.end()) return it->second;
  const std::string out = testing::tmp_path(onnx_file + ".ember");
  converter::ConvertReport report;
  const converter::Diag d = converter::convert_file(kZoo + onnx_file, out, converter::ConvertOptions{}, &report);
  if (!d.ok()) {
    *error = "convert: " + d.message;
    return nullptr;
  }
  std::string why;
  Result<Model> model = Model::load(out, Verification::Full, &why);
  if (!model.ok()) {
    *error = "load: " + why;
    return nullptr;
  }
  auto shared = std::make_shared<const Model>(std::move(model.get()));
  cache[onnx_file] = shared;
  return shared;
}

struct Comparison {
  bool ok = true;
  double max_abs = 0.0;
  std::string detail;  // the first mismatch
};

inline Comparison compare(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  Comparison c;
  if (actual.sizes() != expected.sizes() || actual.dtype() != expected.dtype()) {
    c.ok = false;
    std::ostringstream os;
    os << "got " << shape_str(actual.sizes()) << " " << actual.dtype() << ", torch " << shape_str(expected.sizes())
       << " " << expected.dtype();
    c.detail = os.str();
    return c;
  }
  const bool exact = !is_floating(expected.dtype());
  const Tensor a = actual.to(DType::Float64).contiguous(), e = expected.to(DType::Float64).contiguous();
  const double* pa = a.data_ptr<double>();
  const double* pe = e.data_ptr<double>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double diff = std::fabs(pa[i] - pe[i]);
    if (!std::isnan(diff)) c.max_abs = std::max(c.max_abs, diff);
    const bool good = exact ? pa[i] == pe[i] : (std::isnan(pe[i]) ? std::isnan(pa[i]) : diff <= atol + rtol * std::fabs(pe[i]));
    if (!good && c.ok) {
      c.ok = false;
      std::ostringstream os;
      os << std::setprecision(9) << "element " << i << ": " << pa[i] << " vs torch " << pe[i];
      c.detail = os.str();
    }
  }
  return c;
}

inline std::vector<Tensor> load_tensors(const std::string& name, const char* kind, size_t n) {
  std::vector<Tensor> out;
  for (size_t k = 0; k < n; ++k) out.push_back(read_npy(kZoo + name + "." + kind + std::to_string(k) + ".npy"));
  return out;
}

}  // namespace ember::zoo
