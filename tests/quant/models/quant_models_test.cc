// Proof of the dynamic int8 path end to end: ONNX (tests/golden/quant_models.py)
// -> convert_file(--quantize dynamic-int8 [--per-tensor]) -> Model::load ->
// Executor, against torch.ao.quantization.quantize_dynamic (qnnpack engine) on
// an MLP and a transformer encoder.
//  * Per tensor and per channel match torch within one output quantization
//    step, step = (max(y_torch) - min(y_torch)) / 255 (the uint8 step of the
//    output's range); measured: MLP bit-exact, encoder <= 1e-6.
//  * Per channel is at least as accurate against fp32 (mean |error|).
//  * An int8 Linear-dominated model is <= 0.27x its fp32 file.
// Plus the converter's options and errors, and the loader's quant checks.
#include <algorithm>
#include <cmath>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "converter/convert.h"
#include "quant/dynamic_linear.h"
#include "runtime/model/executor.h"
#include "runtime/model/loader.h"
#include "runtime/model/npy.h"
#include "runtime/model/writer.h"
#include "tests/harness/testing.h"

using ember::testing::tmp_path;
using namespace ember;
using converter::ConvertOptions;

namespace {

const std::string kDir = "tests/golden/quant_models/";

Tensor npy(const std::string& file) {
  std::string error;
  Result<Tensor> t = read_npy(kDir + file, &error);
  REQUIRE_MESSAGE(t.ok(), error);
  return t.get();
}

std::string convert(const std::string& model, const ConvertOptions& o, const std::string& out_name,
                    converter::ConvertReport* report = nullptr) {
  const std::string out = tmp_path(out_name);
  converter::Diag d = converter::convert_file(kDir + model + ".onnx", out, o, report);
  REQUIRE_MESSAGE(d.ok(), d.message);
  return out;
}

Tensor run(const std::string& path, const Tensor& x, ConvLayout layout = ConvLayout::Auto) {
  std::string error;
  Result<Model> m = Model::load(path, Verification::Full, &error);
  REQUIRE_MESSAGE(m.ok(), error);
  auto model = std::make_shared<const Model>(std::move(m.get()));
  ExecutorOptions options;
  options.conv_layout = layout;
  auto ex = Executor::create(model, options, &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  ExecutionContext ctx(ex.get());
  std::vector<Tensor> in{x};
  auto y = ctx.run(Span<const Tensor>(in.data(), in.size()), {}, &error);
  REQUIRE_MESSAGE(y.ok(), error);
  return y.get()[0].clone();
}

ConvertOptions dynamic_int8(bool per_tensor) {
  ConvertOptions o;
  o.quantize = "dynamic-int8";
  o.per_tensor = per_tensor;
  return o;
}

struct Stats {
  float max_diff = 0, mean_diff = 0;
};

Stats diff(const Tensor& a, const Tensor& b) {
  const auto va = a.contiguous().to_vector<float>(), vb = b.contiguous().to_vector<float>();
  REQUIRE(va.size() == vb.size());
  Stats s;
  double sum = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    const float d = std::abs(va[i] - vb[i]);
    s.max_diff = std::max(s.max_diff, d);
    sum += d;
  }
  s.mean_diff = static_cast<float>(sum / static_cast<double>(va.size()));
  return s;
}

float output_step(const Tensor& y) {
  const auto v = y.to_vector<float>();
  return (*std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end())) / 255.0f;
}

}  // namespace

TEST_CASE("dynamic int8: MLP and encoder match torch's quantize_dynamic within one output step") {
  for (const std::string m : {"mlp", "encoder"}) {
    const Tensor x = npy(m + ".x.npy"), fp32 = npy(m + ".fp32.npy");
    const Tensor t_pt = npy(m + ".int8_pt.npy"), t_pc = npy(m + ".int8_pc.npy");
    const Tensor e_pt = run(convert(m, dynamic_int8(true), m + ".pt.ember"), x);
    const Tensor e_pc = run(convert(m, dynamic_int8(false), m + ".pc.ember"), x);
    const Stats d_pt = diff(e_pt, t_pt), d_pc = diff(e_pc, t_pc);
    const float step = output_step(t_pt);
    MESSAGE(m << ": max |ember - torch| per tensor " << d_pt.max_diff << ", per channel " << d_pc.max_diff
              << "; output step " << step);
    CHECK(d_pt.max_diff <= step);
    CHECK(d_pc.max_diff <= output_step(t_pc));
    CHECK(d_pt.max_diff <= 1e-5f);  // the same formulas: only fp32 rounding elsewhere differs
    const Stats f_pt = diff(e_pt, fp32), f_pc = diff(e_pc, fp32);
    MESSAGE(m << ": mean |int8 - fp32| per tensor " << f_pt.mean_diff << ", per channel " << f_pc.mean_diff);
    CHECK(f_pc.mean_diff <= f_pt.mean_diff);
    // The unquantized conversion still matches fp32.
    const Tensor e_fp = run(convert(m, ConvertOptions{}, m + ".fp32.ember"), x);
    CHECK(diff(e_fp, fp32).max_diff <= 1e-4f);
  }
}

TEST_CASE("dynamic int8: an int8 Linear-dominated file is <= 0.27x its fp32 file") {
  const std::string f32 = convert("mlp", ConvertOptions{}, "size.fp32.ember");
  converter::ConvertReport r;
  const std::string i8 = convert("mlp", dynamic_int8(false), "size.int8.ember", &r);
  const double ratio = static_cast<double>(std::filesystem::file_size(i8)) /
                       static_cast<double>(std::filesystem::file_size(f32));
  MESSAGE("int8 / fp32 file size: " << ratio);
  CHECK(ratio <= 0.27);
  CHECK(r.quantize.quantized == 3);
  CHECK(r.quantize.bytes_before == 4 * (256 * 512 + 512 * 512 + 512 * 10));
  CHECK(r.quantize.bytes_after == 256 * 512 + 512 * 512 + 512 * 10);
  // The file says what it holds: int8 weights with per-channel scales on axis 0.
  std::string error;
  Result<Model> m = Model::load(i8, Verification::Full, &error);
  REQUIRE(m.ok());
  const int w = m.get().find_tensor("fc2.weight");
  REQUIRE(w >= 0);
  CHECK(m.get().tensor_dtype(w) == DType::Int8);
  REQUIRE(m.get().tensor(w).quant() != nullptr);
  CHECK(m.get().tensor(w).quant()->scales()->size() == 512);
  CHECK(m.get().tensor(w).quant()->axis() == 0);
}

TEST_CASE("dynamic int8: converter options select the weights") {
  converter::ConvertReport r;
  ConvertOptions o = dynamic_int8(false);
  o.exclude = {"/fc1/Gemm"};
  convert("mlp", o, "ex.ember", &r);
  CHECK(r.quantize.quantized == 2);
  CHECK(std::find(r.quantize.nodes.begin(), r.quantize.nodes.end(), "/fc1/Gemm") == r.quantize.nodes.end());
  o = dynamic_int8(false);
  o.min_weight_elements = 10000;  // fc3 (5,120 elements) stays fp32
  convert("mlp", o, "min.ember", &r);
  CHECK(r.quantize.quantized == 2);
  o = dynamic_int8(false);
  o.quantize_ops = {"MatMul"};  // the MLP's layers are Gemm: nothing to do
  convert("mlp", o, "mm.ember", &r);
  CHECK(r.quantize.quantized == 0);
  convert("encoder", o, "enc_mm.ember", &r);  // 3-D Linears export as MatMul
  CHECK(r.quantize.quantized == 12);
}

TEST_CASE("dynamic int8: converter errors") {
  auto err = [](const ConvertOptions& o) {
    converter::Diag d = converter::convert_file(kDir + "mlp.onnx", tmp_path("bad.ember"), o);
    return d.message;
  };
  ConvertOptions o = dynamic_int8(false);
  o.quantize_ops = {"Gemm", "Foo"};
  CHECK(err(o) == "unknown op type 'Foo' in --quantize-ops (supported: MatMul, Gemm, Conv)");
  o = dynamic_int8(false);
  o.quantize = "int4";
  CHECK(err(o) == "unknown quantization 'int4' (supported: dynamic-int8)");
  o = dynamic_int8(false);
  o.min_weight_elements = -1;
  CHECK(err(o) == "--min-weight-elements must be >= 0");
}

namespace {

// A one-Linear model: x [2, 4] -> y [2, 3] with an int8 weight and `q`.
ModelDef linear_def(const QuantDef& q, DType dtype = DType::Int8) {
  ModelDef def;
  TensorDef x;
  x.name = "x";
  x.shape = {2, 4};
  TensorDef w;
  w.name = "w";
  w.shape = {3, 4};
  w.dtype = dtype;
  w.data.assign(12 * element_size(dtype), std::byte{1});
  w.has_data = true;
  w.quant = q;
  TensorDef y;
  y.name = "y";
  y.shape = {2, 3};
  const int32_t xi = def.add_tensor(x), wi = def.add_tensor(w), yi = def.add_tensor(y);
  OpDef op;
  op.op = OpKind::Linear;
  op.inputs = {xi, wi, -1};
  op.outputs = {yi};
  op.name = "fc";
  op.params = LinearParams{};
  def.ops.push_back(op);
  def.inputs = {xi};
  def.outputs = {yi};
  return def;
}

std::string load_error(const ModelDef& def) {
  const std::string path = tmp_path("q.ember");
  std::string error;
  // The writer verifies what it wrote (Full): a bad file is refused there.
  if (write_model(def, path, &error) != Status::Ok) return "write: " + error;
  Result<Model> m = Model::load(path, Verification::Full, &error);
  if (!m.ok()) return "load: " + error;
  auto ex = Executor::create(std::make_shared<const Model>(std::move(m.get())), &error);
  return ex.ok() ? "(loaded)" : error;
}

}  // namespace

TEST_CASE("loader and executor: quantization parameters are checked") {
  QuantDef q;
  q.scales = {0.5f};
  CHECK(load_error(linear_def(q)) == "(loaded)");
  auto has = [](const std::string& s, const std::string& part) {
    INFO(s);
    CHECK(s.find(part) != std::string::npos);
  };
  q.scales = {0.0f};
  has(load_error(linear_def(q)), "quantization scale 0 is 0 (must be positive and finite)");
  q.scales = {-1.0f};
  has(load_error(linear_def(q)), "quantization scale 0 is -1 (must be positive and finite)");
  q.scales = {NAN};
  has(load_error(linear_def(q)), "quantization scale 0 is nan (must be positive and finite)");
  q.scales = {0.5f, 0.5f, INFINITY};
  q.axis = 0;
  has(load_error(linear_def(q)), "quantization scale 2 is inf (must be positive and finite)");
  q.scales = {0.5f, 0.5f};
  has(load_error(linear_def(q)), "2 scales for 3 channels on axis 0");
  q.scales = {0.5f};
  q.zero_points = {200};
  q.axis = -1;
  has(load_error(linear_def(q)), "zero point 0 (200) is out of range [-128, 127] for int8");
  q.zero_points = {-1};
  has(load_error(linear_def(q, DType::UInt8)), "zero point 0 (-1) is out of range [0, 255] for uint8");
  q.zero_points = {};
  has(load_error(linear_def(q, DType::Float32)), "quantization parameters on a float32 tensor");
  // Valid for the loader, refused by the executor: asymmetric int8 weights.
  q.zero_points = {3};
  has(load_error(linear_def(q)),
      "int8 weights must be symmetric (zero points 0) for dynamic quantization");
  // Per channel on axis 1 of a Linear weight: the loader accepts it, the executor does not.
  q.zero_points = {};
  q.scales = {1, 1, 1, 1};
  q.axis = 1;
  has(load_error(linear_def(q)), "int8 weight scales must be per tensor or per output channel (axis 0)");
  // An int8 weight without quantization parameters.
  ModelDef d = linear_def(q);
  d.tensors[1].quant.reset();
  has(load_error(d), "an int8 weight must be a 2-D constant with quantization parameters");
}

TEST_CASE("executor: an int8 Linear computes the dynamic int8 product") {
  QuantDef q;
  q.scales = {0.5f};
  ModelDef def = linear_def(q);  // every weight byte 1 -> w = 0.5 everywhere
  const std::string path = tmp_path("lin.ember");
  std::string error;
  REQUIRE(write_model(def, path, &error) == Status::Ok);
  // x in [0, 1.5]: scale 1.5/255, zp 0; y = 0.5 * sum(x) up to activation rounding.
  const Tensor x = tensor<float>({{0.0f, 0.5f, 1.0f, 1.5f}, {1.5f, 1.5f, 1.5f, 1.5f}});
  const Tensor y = run(path, x);
  const auto v = y.to_vector<float>();
  REQUIRE(v.size() == 6);
  for (int j = 0; j < 3; ++j) {
    CHECK(std::abs(v[j] - 1.5f) <= 0.5f * 4 * 1.5f / 255 / 2);
    CHECK(v[3 + j] == doctest::Approx(3.0f).epsilon(1e-6));
  }
}

TEST_CASE("dynamic int8: one loaded int8 model, several threads, identical outputs") {
  const Tensor x = npy("encoder.x.npy");
  const std::string path = convert("encoder", dynamic_int8(false), "threads.ember");
  const Tensor want = run(path, x);
  std::string error;
  Result<Model> m = Model::load(path, Verification::Full, &error);
  REQUIRE(m.ok());
  auto ex = Executor::create(std::make_shared<const Model>(std::move(m.get())), &error);
  REQUIRE(ex.ok());
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0}, failures{0};
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      ExecutionContext ctx(ex.get());
      std::vector<Tensor> in{x};
      RunOptions o;
      o.num_threads = 1 + t % 2;
      for (int i = 0; i < 10; ++i) {
        auto y = ctx.run(Span<const Tensor>(in.data(), in.size()), o);
        if (!y.ok()) {
          ++failures;
          continue;
        }
        const auto a = y.get()[0].to_vector<float>(), b = want.to_vector<float>();
        if (a != b) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures.load() == 0);
  CHECK(mismatches.load() == 0);
}

namespace {

// The bytes of a valid one-Linear file whose quant params hold marker values,
// patched in place (the writer refuses bad params, so the loader is tested on
// bytes it never produced).
std::vector<char> patched(float scale_marker, int64_t zp_marker, const void* scale, const void* zp,
                          DType dtype = DType::Int8) {
  QuantDef q;
  q.scales = {scale_marker};
  q.zero_points = {zp_marker};
  const std::string path = tmp_path("patch.ember");
  std::string error;
  REQUIRE(write_model(linear_def(q, dtype), path, &error) == Status::Ok);
  std::ifstream in(path, std::ios::binary);
  std::vector<char> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto replace = [&](const void* from, const void* to, size_t n) {
    if (to == nullptr) return;
    auto it = std::search(b.begin(), b.end(), static_cast<const char*>(from), static_cast<const char*>(from) + n);
    REQUIRE(it != b.end());
    REQUIRE(std::search(it + 1, b.end(), static_cast<const char*>(from), static_cast<const char*>(from) + n) ==
            b.end());
    std::memcpy(&*it, to, n);
  };
  replace(&scale_marker, scale, sizeof(float));
  replace(&zp_marker, zp, sizeof(int64_t));
  return b;
}

std::string load_bytes_error(const std::vector<char>& b) {
  std::string error;
  Result<Model> m = Model::load_from_bytes(b.data(), b.size(), Verification::Full, &error);
  return m.ok() ? "(loaded)" : error;
}

}  // namespace

TEST_CASE("loader: bad quantization parameters in the bytes of a file") {
  const float marker = 0.123456789f;
  const int64_t zmarker = 77;  // valid for int8; unique in the file (checked)
  const float zero = 0.0f, neg = -2.0f, nan = NAN;
  const int64_t z_ok = 0, z_bad = 300, z_neg = -129;
  CHECK(load_bytes_error(patched(marker, zmarker, nullptr, nullptr)) == "(loaded)");
  auto has = [](const std::string& s, const std::string& part) {
    INFO(s);
    CHECK(s.find(part) != std::string::npos);
  };
  std::vector<char> b = patched(marker, zmarker, &zero, &z_ok);
  has(load_bytes_error(b), "quantization scale 0 is 0 (must be positive and finite)");
  has(load_bytes_error(patched(marker, zmarker, &neg, &z_ok)), "quantization scale 0 is -2");
  has(load_bytes_error(patched(marker, zmarker, &nan, &z_ok)), "quantization scale 0 is nan");
  has(load_bytes_error(patched(marker, zmarker, nullptr, &z_bad)),
      "zero point 0 (300) is out of range [-128, 127] for int8");
  has(load_bytes_error(patched(marker, zmarker, nullptr, &z_neg)),
      "zero point 0 (-129) is out of range [-128, 127] for int8");
  // Minimal verification skips the semantic checks (documented): the file loads.
  std::string error;
  CHECK(Model::load_from_bytes(b.data(), b.size(), Verification::Minimal, &error).ok());
}

TEST_CASE("dynamic int8: --quantize-ops Conv,Gemm on a CNN stays close to fp32") {
  const Tensor x = npy("cnn.x.npy"), fp32 = npy("cnn.fp32.npy");
  const float range = output_step(fp32) * 255.0f;
  float err[2];
  for (bool per_tensor : {true, false}) {
    ConvertOptions o = dynamic_int8(per_tensor);
    o.quantize_ops = {"Conv", "Gemm"};
    converter::ConvertReport r;
    const Tensor y = run(convert("cnn", o, "cnn.ember", &r), x);
    CHECK(r.quantize.quantized == 3);  // two convolutions and the classifier
    err[per_tensor ? 0 : 1] = diff(y, fp32).max_diff;
    MESSAGE("cnn " << std::string(per_tensor ? "per tensor" : "per channel") << ": max |int8 - fp32| "
                   << diff(y, fp32).max_diff << " of an output range " << range);
    CHECK(diff(y, fp32).max_diff <= 0.03f * range);
  }
  CHECK(err[1] <= err[0]);
  // The executor's channels_last layout: the int8 convolutions read and write
  // channels_last tensors; the same values as in NCHW, bit for bit.
  ConvertOptions o = dynamic_int8(false);
  o.quantize_ops = {"Conv", "Gemm"};
  const std::string path = convert("cnn", o, "cnn_cl.ember");
  const Tensor nchw = run(path, x, ConvLayout::Contiguous);
  CHECK(diff(nchw, fp32).max_diff <= 0.03f * range);
  CHECK(diff(run(path, x, ConvLayout::ChannelsLast), nchw).max_diff == 0.0f);
  // Without Conv in the list only the classifier is quantized.
  converter::ConvertReport r;
  convert("cnn", dynamic_int8(false), "cnn_gemm.ember", &r);
  CHECK(r.quantize.quantized == 1);
}

// --- per-row activation quantization (--activations per-row) -----------------------

namespace {

// The MLP's input with its rows scaled by factors from 0.01 to 100: a batch
// whose rows have very different ranges (where one per-tensor scale is too
// coarse for the small rows).
Tensor mixed_range_rows() {
  const Tensor x = npy("mlp.x.npy").contiguous();
  std::vector<float> v = x.to_vector<float>();
  const int64_t rows = x.size(0), k = x.size(1);
  const float factor[8] = {1.0f, 100.0f, 0.01f, 3.0f, 30.0f, 0.03f, 0.3f, 10.0f};
  REQUIRE(rows == 8);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < k; ++j) v[static_cast<size_t>(i * k + j)] *= factor[i];
  }
  return tensor<float>(v, {rows, k});
}

// What quant/dynamic_linear's reference formulas compute, layer after layer, on
// the weights, scales, biases and fused activations of the Linears of `path`
// (a chain of Linear ops, as the converted MLP is).
Tensor reference_chain(const std::string& path, const Tensor& x, bool per_row) {
  std::string error;
  Result<Model> loaded = Model::load(path, Verification::Full, &error);
  REQUIRE_MESSAGE(loaded.ok(), error);
  const Model& m = loaded.get();
  std::vector<float> h = x.contiguous().to_vector<float>();
  const int64_t rows = x.size(0);
  for (int k = 0; k < m.num_ops(); ++k) {
    REQUIRE(m.op_kind(k) == OpKind::Linear);
    const auto* in = m.op(k).inputs();
    const int32_t wi = in->Get(1), bi = in->size() > 2 ? in->Get(2) : -1;
    REQUIRE(m.tensor_dtype(wi) == DType::Int8);
    const fb::QuantParams* q = m.tensor(wi).quant();
    REQUIRE(q != nullptr);
    CHECK(q->activations() == (per_row ? fb::ActivationQuant::PerRow : fb::ActivationQuant::PerTensor));
    const Tensor& w = m.weight(wi);
    const int64_t out = w.size(0), kdim = w.size(1);
    REQUIRE(static_cast<int64_t>(h.size()) == rows * kdim);
    std::vector<float> scales(q->scales()->begin(), q->scales()->end());
    Result<OpParams> p = m.op_params(k, &error);
    REQUIRE_MESSAGE(p.ok(), error);
    std::vector<float> y(static_cast<size_t>(rows * out));
    quant::DynamicQuantOptions o;
    o.per_row = per_row;
    quant::dynamic_linear_ref(h.data(), rows, kdim, static_cast<const int8_t*>(w.data_ptr()), out, scales.data(),
                              scales.size() > 1, bi >= 0 ? m.weight(bi).data_ptr<float>() : nullptr, y.data(),
                              std::get<LinearParams>(p.get()).activation, o);
    h.swap(y);
  }
  return tensor<float>(h, {rows, static_cast<int64_t>(h.size()) / rows});
}

// The largest error of a row relative to that row's largest |fp32| value.
float max_row_relative_error(const Tensor& y, const Tensor& fp32) {
  const auto a = y.to_vector<float>(), b = fp32.to_vector<float>();
  const int64_t rows = fp32.size(0), n = fp32.numel() / rows;
  float worst = 0;
  for (int64_t i = 0; i < rows; ++i) {
    float err = 0, mag = 0;
    for (int64_t j = 0; j < n; ++j) {
      const size_t p = static_cast<size_t>(i * n + j);
      err = std::max(err, std::abs(a[p] - b[p]));
      mag = std::max(mag, std::abs(b[p]));
    }
    worst = std::max(worst, err / mag);
  }
  return worst;
}

}  // namespace

TEST_CASE("dynamic int8: --activations per-row runs dynamic_linear's per-row formulas, closer to fp32") {
  const Tensor x = mixed_range_rows();
  const Tensor fp32 = run(convert("mlp", ConvertOptions{}, "rows.fp32.ember"), x);
  float rel[2];
  for (bool per_row : {false, true}) {
    ConvertOptions o = dynamic_int8(false);
    if (per_row) o.activations = ActivationQuant::PerRow;
    const std::string path = convert("mlp", o, per_row ? "rows.per_row.ember" : "rows.per_tensor.ember");
    const Tensor y = run(path, x);
    // The integer path is exact: the executor's output equals the reference
    // formulas (quant/dynamic_linear.h, per_row as the file says) on its weights.
    const Stats d = diff(y, reference_chain(path, x, per_row));
    MESSAGE(std::string(per_row ? "per row" : "per tensor") << ": max |executor - reference| " << d.max_diff);
    CHECK(d.max_diff <= 1e-6f);
    rel[per_row ? 1 : 0] = max_row_relative_error(y, fp32);
  }
  MESSAGE("worst row's max |int8 - fp32| / max |fp32|: per tensor " << rel[0] << ", per row " << rel[1]);
  CHECK(rel[1] <= rel[0]);
  CHECK(rel[1] <= 0.05f);  // every row keeps its precision
  CHECK(rel[0] >= 0.2f);   // one scale for rows 10^4 apart: the small rows lose it
}

TEST_CASE("dynamic int8: per-row activations in the file, the metadata and the errors") {
  ConvertOptions o = dynamic_int8(false);
  o.activations = ActivationQuant::PerRow;
  o.quantize_ops = {"Conv", "Gemm"};
  const std::string path = convert("cnn", o, "cnn.rows.ember");
  std::string error;
  Result<Model> m = Model::load(path, Verification::Full, &error);
  REQUIRE(m.ok());
  // Convolutions stay per tensor; the classifier's Linear is per row.
  CHECK(m.get().tensor(m.get().find_tensor("c1.weight")).quant()->activations() == fb::ActivationQuant::PerTensor);
  CHECK(m.get().tensor(m.get().find_tensor("fc.weight")).quant()->activations() == fb::ActivationQuant::PerRow);
  bool found = false;
  for (const auto& [k, v] : m.get().metadata().converter_options) {
    if (k == "activations") found = v == "per_row";
  }
  CHECK(found);
  // The CNN still runs, close to fp32.
  const Tensor x = npy("cnn.x.npy"), fp32 = npy("cnn.fp32.npy");
  CHECK(diff(run(path, x), fp32).max_diff <= 0.03f * output_step(fp32) * 255.0f);

  // Per row needs a quantization scheme.
  ConvertOptions bad;
  bad.activations = ActivationQuant::PerRow;
  const std::string out = tmp_path("rows.bad.ember");
  converter::Diag d = converter::convert_file(kDir + "mlp.onnx", out, bad);
  CHECK(d.status == Status::InvalidArgument);
  CHECK(d.message == "--activations per-row needs --quantize dynamic-int8");
  CHECK(!std::filesystem::exists(out));
}

TEST_CASE("loader and executor: the activation quantization of int8 weights is checked") {
  QuantDef q;
  q.scales = {0.5f};
  q.activations = ActivationQuant::PerRow;
  CHECK(load_error(linear_def(q)) == "(loaded)");
  // A value the format does not define: refused by the writer's full verification.
  q.activations = static_cast<ActivationQuant>(2);
  const std::string e = load_error(linear_def(q));
  INFO(e);
  CHECK(e.find("activation quantization 2 is unknown (0: per tensor, 1: per row)") != std::string::npos);

  // Per row on an int8 Conv2d: the loader accepts it, the executor does not.
  ModelDef def;
  TensorDef x, w, y;
  x.name = "x";
  x.shape = {1, 1, 3, 3};
  w.name = "w";
  w.shape = {1, 1, 1, 1};
  w.dtype = DType::Int8;
  w.data.assign(1, std::byte{1});
  w.has_data = true;
  QuantDef cq;
  cq.scales = {0.5f};
  cq.activations = ActivationQuant::PerRow;
  w.quant = cq;
  y.name = "y";
  y.shape = {1, 1, 3, 3};
  const int32_t xi = def.add_tensor(x), wi = def.add_tensor(w), yi = def.add_tensor(y);
  OpDef op;
  op.op = OpKind::Conv2d;
  op.inputs = {xi, wi, -1};
  op.outputs = {yi};
  op.name = "conv";
  op.params = Conv2dParams{};
  def.ops.push_back(op);
  def.inputs = {xi};
  def.outputs = {yi};
  const std::string c = load_error(def);
  INFO(c);
  CHECK(c.find("per-row activation quantization is supported for int8 Linear only (Conv2d: per tensor)") !=
        std::string::npos);
  // The same Conv2d per tensor loads.
  def.tensors[1].quant->activations = ActivationQuant::PerTensor;
  CHECK(load_error(def) == "(loaded)");
}
