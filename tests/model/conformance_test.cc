// Conformance: every model of tests/golden/model_zoo.py (real networks and one
// tiny model per supported ONNX op) goes ONNX -> convert_file -> .ember ->
// Model::load -> Executor and must reproduce torch's outputs: float32 within
// the manifest's rtol/atol (1e-4 unless it says otherwise), other dtypes
// exactly. The max abs diff of every case is printed. Also: the symbolic batch
// (the *_b2 cases and one context replanning between batch sizes) and 4
// threads x 50 runs on one loaded model giving bit-identical outputs.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "converter/convert.h"
#include "runtime/model/executor.h"
#include "runtime/model/loader.h"
#include "tests/harness/testing.h"

namespace ember {
namespace {

const std::string kZoo = "tests/golden/model_zoo/";

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A .npy file (format 1.0-3.0, little-endian, C order) of float32, float64,
// int64, int32 or bool.
Tensor read_npy(const std::string& path) {
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

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string tok;
  while (std::getline(in, tok, ',')) out.push_back(tok);
  return out;
}

std::vector<Case> manifest() {
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

std::string tmp_dir() {
  const char* d = std::getenv("TEST_TMPDIR");
  return d != nullptr ? std::string(d) + "/" : std::string("/tmp/");
}

// Converts (once per .onnx file) and loads an executor; the error says which step failed.
std::shared_ptr<const Executor> load_executor(const std::string& onnx_file, std::string* error) {
  static std::map<std::string, std::shared_ptr<const Executor>> cache;
  auto it = cache.find(onnx_file);
  if (it != cache.end()) return it->second;
  const std::string out = tmp_dir() + onnx_file + ".ember";
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
  Result<std::shared_ptr<const Executor>> ex = Executor::create(shared, &why);
  if (!ex.ok()) {
    *error = "executor: " + why;
    return nullptr;
  }
  cache[onnx_file] = ex.get();
  return ex.get();
}

struct Comparison {
  bool ok = true;
  double max_abs = 0.0;
  std::string detail;  // the first mismatch
};

Comparison compare(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
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

std::vector<Tensor> load_tensors(const std::string& name, const char* kind, size_t n) {
  std::vector<Tensor> out;
  for (size_t k = 0; k < n; ++k) out.push_back(read_npy(kZoo + name + "." + kind + std::to_string(k) + ".npy"));
  return out;
}

}  // namespace

TEST_CASE("conformance: every model-zoo case matches torch") {
  const std::vector<Case> cases = manifest();
  REQUIRE(cases.size() > 80);
  std::ostringstream table;
  table << std::left << std::setw(34) << "case" << "max abs diff\n";
  int passed = 0;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    std::string error;
    auto ex = load_executor(c.file, &error);
    CHECK_MESSAGE(ex != nullptr, error);
    if (ex == nullptr) {
      table << std::setw(34) << c.name << "FAILED " << error << "\n";
      continue;
    }
    // The executor's inputs are the ONNX graph inputs, in order and by name.
    REQUIRE(ex->inputs().size() == c.inputs.size());
    for (size_t k = 0; k < c.inputs.size(); ++k) CHECK(ex->inputs()[k].name == c.inputs[k]);
    REQUIRE(ex->outputs().size() == c.outputs.size());
    const std::vector<Tensor> inputs = load_tensors(c.name, "in", c.inputs.size());
    const std::vector<Tensor> expected = load_tensors(c.name, "out", c.outputs.size());
    ExecutionContext ctx(ex);
    Result<std::vector<Tensor>> out = ctx.run(Span<const Tensor>(inputs.data(), inputs.size()), {}, &error);
    CHECK_MESSAGE(out.ok(), error);
    if (!out.ok()) {
      table << std::setw(34) << c.name << "FAILED run: " << error << "\n";
      continue;
    }
    REQUIRE(out.get().size() == expected.size());
    double max_abs = 0.0;
    bool ok = true;
    for (size_t k = 0; k < expected.size(); ++k) {
      CAPTURE(c.outputs[k]);
      const Comparison cmp = compare(out.get()[k], expected[k], c.rtol, c.atol);
      CHECK_MESSAGE(cmp.ok, cmp.detail);
      ok = ok && cmp.ok;
      max_abs = std::max(max_abs, cmp.max_abs);
    }
    passed += ok ? 1 : 0;
    table << std::setw(34) << c.name << std::scientific << std::setprecision(2) << max_abs << (ok ? "" : "  MISMATCH")
          << "\n";
  }
  MESSAGE("conformance: " << passed << "/" << cases.size() << " cases match torch\n" << table.str());
  CHECK(passed == static_cast<int>(cases.size()));
}

TEST_CASE("conformance: one context replans between batch sizes (symbolic batch)") {
  for (const char* model : {"mlp", "mobilenet_v2"}) {
    CAPTURE(model);
    std::string error;
    auto ex = load_executor(std::string(model) + ".onnx", &error);
    REQUIRE_MESSAGE(ex != nullptr, error);
    REQUIRE(ex->inputs().size() == 1);
    CHECK(ex->inputs()[0].shape[0] == -1);
    REQUIRE(ex->inputs()[0].dim_names.size() == ex->inputs()[0].shape.size());
    CHECK(ex->inputs()[0].dim_names[0] == "batch");
    ExecutionContext ctx(ex);
    for (const std::string& name : {std::string(model), std::string(model) + "_b2", std::string(model)}) {
      CAPTURE(name);
      const std::vector<Tensor> in = load_tensors(name, "in", 1), expected = load_tensors(name, "out", 1);
      auto out = ctx.run(Span<const Tensor>(in.data(), in.size()), {}, &error);
      REQUIRE_MESSAGE(out.ok(), error);
      const Comparison cmp = compare(out.get()[0], expected[0], 1e-4, 1e-4);
      CHECK_MESSAGE(cmp.ok, cmp.detail);
    }
  }
}

TEST_CASE("conformance: 4 threads x 50 runs on one loaded model are bit-identical") {
  for (const char* model : {"mlp", "op_conv_groups_dilation"}) {
    CAPTURE(model);
    std::string error;
    auto ex = load_executor(std::string(model) + ".onnx", &error);
    REQUIRE_MESSAGE(ex != nullptr, error);
    const std::vector<Tensor> in = load_tensors(model, "in", 1);
    Tensor reference;
    {
      ExecutionContext ctx(ex);
      auto out = ctx.run(Span<const Tensor>(in.data(), in.size()), {}, &error);
      REQUIRE_MESSAGE(out.ok(), error);
      reference = out.get()[0].clone();
    }
    const size_t bytes = static_cast<size_t>(reference.numel()) * element_size(reference.dtype());
    std::vector<int> mismatches(4, 0), failures(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        ExecutionContext ctx(ex);
        for (int run = 0; run < 50; ++run) {
          auto out = ctx.run(Span<const Tensor>(in.data(), in.size()));
          if (!out.ok()) {
            ++failures[static_cast<size_t>(t)];
            continue;
          }
          const Tensor y = out.get()[0].contiguous();
          if (y.sizes() != reference.sizes() || std::memcmp(y.data_ptr(), reference.data_ptr(), bytes) != 0) {
            ++mismatches[static_cast<size_t>(t)];
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < 4; ++t) {
      CAPTURE(t);
      CHECK(failures[static_cast<size_t>(t)] == 0);
      CHECK(mismatches[static_cast<size_t>(t)] == 0);
    }
    // And the reference itself is torch's.
    const Comparison cmp = compare(reference, load_tensors(model, "out", 1)[0], 1e-4, 1e-4);
    CHECK_MESSAGE(cmp.ok, cmp.detail);
  }
}

TEST_CASE("conformance: the .npy reader") {
  // op_equal's first input: int64 [[1, 2, 3], [4, 5, 6]]; its output is bool.
  const Tensor x = read_npy(kZoo + "op_equal.in0.npy");
  testing::check_equal(x, tensor({{int64_t{1}, int64_t{2}, int64_t{3}}, {int64_t{4}, int64_t{5}, int64_t{6}}}));
  const Tensor y = read_npy(kZoo + "op_equal.out0.npy");
  testing::check_equal(y, tensor({{true, false, false}, {false, true, true}}));
  const Tensor f = read_npy(kZoo + "op_cast_bool.in0.npy");
  testing::check_equal(f, tensor({{0.0f, 1.5f, -2.0f, 0.0f}}));
}

}  // namespace ember
