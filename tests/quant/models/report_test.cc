// ember convert --weights fp16, --report (per-layer SNR vs fp32) and
// --min-snr, on the MLP and CNN of tests/golden/quant_models.py.
//  * fp16: the file is ~0.5x the fp32 file; outputs match the fp32
//    conversion within fp16 weight rounding: max |y16 - y32| <= 2e-3 x max |y32|
//    (measured 4.2e-4 mlp, 4.5e-4 cnn, 5.9e-4 encoder)
//    (each weight is rounded to 11 significant bits, relative error <= 2^-11).
//  * The report's SNR is 10 log10(sum y^2 / sum (y - yq)^2), checked against the
//    outputs of the written files; --min-snr keeps exactly the layers below it fp32.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "converter/convert.h"
#include "converter/report.h"
#include "runtime/model/executor.h"
#include "runtime/model/loader.h"
#include "runtime/model/npy.h"
#include "tests/harness/testing.h"

using ember::testing::tmp_path;
using namespace ember;
using converter::ConvertOptions;
using converter::ConvertReport;

namespace {

const std::string kDir = "tests/golden/quant_models/";
const std::string kDigits = "tests/golden/digits/";

Tensor npy(const std::string& file) {
  std::string error;
  Result<Tensor> t = read_npy(file, &error);
  REQUIRE_MESSAGE(t.ok(), error);
  return t.get();
}

std::string convert(const std::string& model, const ConvertOptions& o, const std::string& out_name,
                    ConvertReport* report = nullptr) {
  const std::string out = tmp_path(out_name);
  converter::Diag d = converter::convert_file(kDir + model + ".onnx", out, o, report);
  REQUIRE_MESSAGE(d.ok(), d.message);
  return out;
}

Model load(const std::string& path) {
  std::string error;
  Result<Model> m = Model::load(path, Verification::Full, &error);
  REQUIRE_MESSAGE(m.ok(), error);
  return std::move(m.get());
}

Tensor run(const std::string& path, const Tensor& x) {
  std::string error;
  auto model = std::make_shared<const Model>(load(path));
  auto ex = Executor::create(model, &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  ExecutionContext ctx(ex.get());
  std::vector<Tensor> in{x};
  auto y = ctx.run(Span<const Tensor>(in.data(), in.size()), {}, &error);
  REQUIRE_MESSAGE(y.ok(), error);
  return y.get()[0].clone();
}

// The SNR formula written out again, independently of converter::snr_db.
double snr(const Tensor& ref, const Tensor& q) {
  const auto a = ref.contiguous().to_vector<float>(), b = q.contiguous().to_vector<float>();
  REQUIRE(a.size() == b.size());
  double s = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    s += double(a[i]) * a[i];
    n += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  }
  return 10 * std::log10(s / n);
}

// A directory holding x.npy (the model's input) for --calibration-inputs.
std::string calib_dir(const std::string& model) {
  const std::string dir = tmp_path(model + "_calib");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kDir + model + ".x.npy", dir + "/x.npy",
                             std::filesystem::copy_options::overwrite_existing);
  return dir;
}

const converter::LayerAccuracy* layer(const ConvertReport& r, const std::string& op) {
  for (const auto& l : r.accuracy.layers) {
    if (l.op == op) return &l;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("snr_db: 10 log10(sum y^2 / sum (y - yq)^2), inf when equal") {
  const Tensor y = tensor({1.0f, 2.0f, 3.0f, 4.0f});
  CHECK(converter::snr_db(y, tensor({1.0f, 2.0f, 3.0f, 5.0f})) == doctest::Approx(10 * std::log10(30.0)));
  CHECK(converter::snr_db(y, y) == std::numeric_limits<double>::infinity());
  CHECK_THROWS_WITH(converter::snr_db(y, tensor({1.0f})), doctest::Contains("element counts differ"));
}

TEST_CASE("--weights fp16: half the file, outputs within fp16 rounding of fp32") {
  for (const std::string m : {"mlp", "cnn", "encoder"}) {  // encoder: LayerNorm weights too
    const Tensor x = npy(kDir + m + ".x.npy");
    ConvertReport r32, r16;
    const std::string f32 = convert(m, {}, m + ".f32.ember", &r32);
    ConvertOptions o;
    o.weights = "fp16";
    const std::string f16 = convert(m, o, m + ".f16.ember", &r16);
    if (m != "encoder") CHECK(2 * r16.weight_bytes == r32.weight_bytes);  // all float weights: exactly half
    const double ratio = double(std::filesystem::file_size(f16)) / double(std::filesystem::file_size(f32));
    const Tensor y32 = run(f32, x), y16 = run(f16, x);
    const auto a = y32.to_vector<float>(), b = y16.to_vector<float>();
    float max_ref = 0, max_diff = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      max_ref = std::max(max_ref, std::abs(a[i]));
      max_diff = std::max(max_diff, std::abs(a[i] - b[i]));
    }
    MESSAGE(m << ": fp16 / fp32 file size " << ratio << ", max |y16 - y32| / max |y32| " << max_diff / max_ref);
    CHECK(ratio >= 0.49);
    CHECK(ratio <= (m == "encoder" ? 0.55 : 0.52));  // plus the fixed part: names, shapes, ops
    CHECK(max_diff > 0);  // the weights did change
    CHECK(max_diff <= 2e-3f * max_ref);
    const auto t = npy(kDir + m + ".fp32.npy").to_vector<float>();
    for (size_t i = 0; i < a.size(); ++i) CHECK(std::abs(a[i] - t[i]) <= 1e-4f);  // ember fp32 is torch's
    const Model model = load(f16);
    for (const char* w : {"fc1.weight", "fc.weight", "c1.bias"}) {
      const int t = model.find_tensor(w);
      if (t >= 0) CHECK(model.tensor_dtype(t) == DType::Float16);
    }
    bool has_fp16 = false;
    for (const auto& kv : model.metadata().converter_options) has_fp16 |= kv == std::make_pair(std::string("weights"), std::string("fp16"));
    CHECK(has_fp16);
  }
  // With pruned COO conv weights (fp16 values): densified, then upcast, at create.
  {
    ConvertOptions o;
    o.weights = "fp16";
    o.prune = "magnitude:0.9:Conv";
    o.sparse_coo = true;
    ConvertReport r;
    const std::string p = convert("cnn", o, "cnn.f16.coo.ember", &r);
    // The sparsity table shows what was stored: fp16 values, int16 indices [4, nnz].
    bool seen = false;
    for (const auto& row : r.sparse_layers) {
      if (row.weight != "c2.weight") continue;
      seen = true;
      CHECK(row.coo);
      const int64_t nnz = 32 * 16 * 3 * 3 - std::llround(0.9 * 32 * 16 * 3 * 3);
      CHECK(row.bytes_after == 2 * nnz + 2 * 4 * nnz);
    }
    CHECK(seen);
    const Model model = load(p);
    const int t = model.find_tensor("c2.weight");
    CHECK(model.tensor(t).sparse() != nullptr);
    CHECK(model.tensor_dtype(t) == DType::Float16);
    ConvertOptions o32 = o;
    o32.weights = "";
    const Tensor x = npy(kDir + "cnn.x.npy");
    const Tensor y16 = run(p, x), y32 = run(convert("cnn", o32, "cnn.f32.coo.ember"), x);
    MESSAGE("cnn pruned COO: SNR fp16 vs fp32 weights " << snr(y32, y16) << " dB");
    CHECK(snr(y32, y16) > 50);
  }
  // With int8: weights int8, the int8 Linear biases stay float32, the rest fp16.
  ConvertOptions o;
  o.weights = "fp16";
  o.quantize = "dynamic-int8";
  o.quantize_ops = {"Gemm"};
  const std::string p = convert("cnn", o, "cnn.f16.int8.ember");
  const Model model = load(p);
  CHECK(model.tensor_dtype(model.find_tensor("fc.weight")) == DType::Int8);
  CHECK(model.tensor_dtype(model.find_tensor("fc.bias")) == DType::Float32);
  CHECK(model.tensor_dtype(model.find_tensor("c2.weight")) == DType::Float16);
  const Tensor x = npy(kDir + "cnn.x.npy");
  CHECK(snr(npy(kDir + "cnn.fp32.npy"), run(p, x)) > 30);
}

TEST_CASE("--report: per-layer bytes, sparsity and SNR; the output SNR is that of the written file") {
  ConvertOptions o;
  o.quantize = "dynamic-int8";
  o.report = true;
  o.calibration_inputs = calib_dir("mlp");
  ConvertReport r;
  const std::string p = convert("mlp", o, "mlp.report.ember", &r);
  REQUIRE(r.has_accuracy);
  REQUIRE(r.accuracy.layers.size() == 3);
  const int64_t sizes[3][2] = {{512, 256}, {512, 512}, {10, 512}};
  const char* names[3] = {"/fc1/Gemm", "/fc2/Gemm", "/fc3/Gemm"};
  for (int i = 0; i < 3; ++i) {
    const auto& l = r.accuracy.layers[static_cast<size_t>(i)];
    CHECK(l.op == names[i]);
    CHECK(l.op_type == "linear");
    CHECK(l.storage == "int8");
    CHECK(l.bytes_before == 4 * (sizes[i][0] * sizes[i][1] + sizes[i][0]));
    CHECK(l.bytes_after == sizes[i][0] * sizes[i][1] + 4 * sizes[i][0]);  // int8 weight, fp32 bias
    CHECK(l.snr_db > 30);
    CHECK(l.snr_db < 80);
    CHECK(!l.kept_fp32);
  }
  const Tensor x = npy(kDir + "mlp.x.npy");
  const Tensor y32 = run(convert("mlp", {}, "mlp.report.f32.ember"), x);
  REQUIRE(r.accuracy.output_snr_db.size() == 1);
  CHECK(r.accuracy.output_snr_db[0].first == "y");
  CHECK(r.accuracy.output_snr_db[0].second == doctest::Approx(snr(y32, run(p, x))).epsilon(1e-9));
  CHECK(r.accuracy.weight_bytes_fp32 == 4 * (256 * 512 + 512 * 512 + 512 * 10 + 512 + 512 + 10));
  CHECK(r.accuracy.weight_bytes_after == 256 * 512 + 512 * 512 + 512 * 10 + 4 * (512 + 512 + 10));
  // Only fc3 quantized: its output is the model's, so the layer SNR is the output SNR.
  o.exclude = {"/fc1/Gemm", "/fc2/Gemm"};
  ConvertReport r3;
  convert("mlp", o, "mlp.report3.ember", &r3);
  REQUIRE(r3.accuracy.layers.size() == 1);
  CHECK(r3.accuracy.layers[0].snr_db == doctest::Approx(r3.accuracy.output_snr_db[0].second).epsilon(1e-12));
  const std::string table = converter::accuracy_table(r.accuracy);
  MESSAGE(table);
  CHECK(table.find("  layer      op      stored  bytes fp32    bytes  zeros  SNR dB\n") != std::string::npos);
  CHECK(table.find("  /fc2/Gemm  linear  int8     1,050,624  264,192") != std::string::npos);
  CHECK(table.find("  model weights: 1,597,480 -> 402,472 bytes (0.252x)\n") != std::string::npos);
  CHECK(table.find("  output 'y' SNR: ") != std::string::npos);

  // Pruning and COO: the zero fraction and the COO bytes (int8 values + int16 indices + fp32 bias).
  ConvertOptions s;
  s.quantize = "dynamic-int8";
  s.prune = "magnitude:0.75";
  s.sparse_coo = true;
  s.report = true;
  ConvertReport rs;
  convert("mlp", s, "mlp.sparse.report.ember", &rs);
  const auto* l2 = layer(rs, "/fc2/Gemm");
  REQUIRE(l2 != nullptr);
  CHECK(l2->storage == "int8+coo+pruned");
  CHECK(l2->zero_fraction >= 0.75);
  const int64_t nnz = std::llround((1 - l2->zero_fraction) * 512 * 512);
  CHECK(nnz <= 512 * 512 / 4);
  CHECK(l2->bytes_after == nnz + 2 * 2 * nnz + 4 * 512);
  CHECK(rs.accuracy.inputs == "random normal (seed 0), symbolic dims 1");
}

TEST_CASE("--calibration-inputs: errors name the problem") {
  ConvertOptions o;
  o.report = true;
  o.calibration_inputs = tmp_path("empty_calib_dir");
  std::filesystem::create_directories(o.calibration_inputs);
  converter::Diag d = converter::convert_file(kDir + "mlp.onnx", tmp_path("x.ember"), o);
  CHECK(d.status == Status::InvalidArgument);
  CHECK(d.message == "calibration inputs '" + o.calibration_inputs + "' have no array for input 'x'");
  o.calibration_inputs = kDigits + "digits.calib_compressed.npz";
  d = converter::convert_file(kDigits + "digits_mlp.onnx", tmp_path("x.ember"), o);
  CHECK(d.status == Status::NotSupported);
  CHECK(d.message == "calibration inputs '" + o.calibration_inputs +
                         "': entry 'x.npy' is compressed (write it with np.savez, not np.savez_compressed)");
  o.calibration_inputs = kDir + "mlp.x.npy";  // not a zip
  d = converter::convert_file(kDir + "mlp.onnx", tmp_path("x.ember"), o);
  CHECK(d.status == Status::InvalidArgument);
  CHECK(d.message == "calibration inputs '" + o.calibration_inputs + "' is not an .npz (zip) file with entries");
  CHECK(!std::filesystem::exists(tmp_path("x.ember")));
}

TEST_CASE("--min-snr: exactly the layers below the threshold stay fp32") {
  ConvertOptions o;
  o.quantize = "dynamic-int8";
  o.quantize_ops = {"Gemm", "Conv"};
  o.prune = "magnitude:0.5";
  o.report = true;
  ConvertReport r;
  convert("cnn", o, "cnn.all.ember", &r);
  REQUIRE(r.accuracy.layers.size() == 3);
  std::vector<std::pair<double, std::string>> snrs;
  for (const auto& l : r.accuracy.layers) snrs.emplace_back(l.snr_db, l.op);
  std::sort(snrs.begin(), snrs.end());
  MESSAGE("SNRs: " << snrs[0].second << " " << snrs[0].first << ", " << snrs[1].second << " " << snrs[1].first << ", "
                   << snrs[2].second << " " << snrs[2].first);
  REQUIRE(snrs[1].first - snrs[0].first > 0.5);
  REQUIRE(snrs[2].first - snrs[1].first > 0.5);
  const std::map<std::string, std::string> weight = {
      {"/c1/Conv", "c1.weight"}, {"/c2/Conv", "c2.weight"}, {"/fc/Gemm", "fc.weight"}};
  for (int kept = 1; kept <= 2; ++kept) {
    ConvertOptions m = o;
    m.min_snr = (snrs[static_cast<size_t>(kept - 1)].first + snrs[static_cast<size_t>(kept)].first) / 2;
    ConvertReport rm;
    const std::string p = convert("cnn", m, "cnn.min_snr.ember", &rm);
    const Model model = load(p);
    for (size_t i = 0; i < 3; ++i) {
      const bool below = static_cast<int>(i) < kept;
      const auto* l = layer(rm, snrs[i].second);
      REQUIRE(l != nullptr);
      CHECK(l->snr_db == doctest::Approx(snrs[i].first).epsilon(1e-12));  // measured alone: unchanged
      CHECK(l->kept_fp32 == below);
      const int t = model.find_tensor(weight.at(snrs[i].second));
      CHECK(model.tensor_dtype(t) == (below ? DType::Float32 : DType::Int8));
      CHECK((model.tensor(t).quant() == nullptr) == below);
    }
    const std::string table = converter::accuracy_table(rm.accuracy);
    MESSAGE(table);
    size_t count = 0;
    for (size_t at = table.find("kept fp32"); at != std::string::npos; at = table.find("kept fp32", at + 1)) ++count;
    CHECK(count == static_cast<size_t>(kept));
    // A kept layer runs its original (unpruned) fp32 weights: the output is closer to fp32.
    CHECK(rm.accuracy.output_snr_db[0].second > r.accuracy.output_snr_db[0].second);
  }
}
