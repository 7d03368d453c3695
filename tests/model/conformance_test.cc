// Conformance: every model of tests/golden/model_zoo.py (real networks and one
// tiny model per supported ONNX op) goes ONNX -> convert_file -> .ember ->
// Model::load -> Executor and must reproduce torch's outputs: float32 within
// the manifest's rtol/atol (1e-4 unless it says otherwise), other dtypes
// exactly. The max abs diff of every case is printed. Also: the symbolic batch
// (the *_b2 cases and one context replanning between batch sizes) and 4
// threads x 50 runs on one loaded model giving bit-identical outputs, and the
// real models bit-identical when the pool's workers lag (work stealing).
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
#include "runtime/core/thread_pool.h"
#include "runtime/model/executor.h"
#include "runtime/model/loader.h"
#include "tests/harness/testing.h"
#include "tests/model/model_zoo.h"

namespace ember {
namespace {

using namespace zoo;

// Converts (once per .onnx file) and loads an executor (once per file and
// layout); the error says which step failed.
std::shared_ptr<const Executor> load_executor(const std::string& onnx_file, std::string* error,
                                              ConvLayout layout = ConvLayout::Auto) {
  static std::map<std::string, std::shared_ptr<const Model>> models;
  static std::map<std::pair<std::string, ConvLayout>, std::shared_ptr<const Executor>> cache;
  auto it = cache.find({onnx_file, layout});
  if (it != cache.end()) return it->second;
  std::shared_ptr<const Model>& model = models[onnx_file];
  if (model == nullptr) model = load_model(onnx_file, error);
  if (model == nullptr) return nullptr;
  std::string why;
  ExecutorOptions options;
  options.conv_layout = layout;
  Result<std::shared_ptr<const Executor>> ex = Executor::create(model, options, &why);
  if (!ex.ok()) {
    *error = "executor: " + why;
    return nullptr;
  }
  cache[{onnx_file, layout}] = ex.get();
  return ex.get();
}

bool has_conv(const Model& m) {
  for (int k = 0; k < m.num_ops(); ++k) {
    if (m.op_kind(k) == OpKind::Conv2d) return true;
  }
  return false;
}

// Every case (with `only_conv`: whose model has a Conv2d) against torch, with
// the executors' convolution activations in `layout`.
void check_cases(ConvLayout layout, bool only_conv) {
  const std::vector<Case> cases = manifest();
  REQUIRE(cases.size() > 80);
  std::ostringstream table;
  table << std::left << std::setw(34) << "case" << "max abs diff\n";
  int passed = 0, checked = 0;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    std::string error;
    auto ex = load_executor(c.file, &error, layout);
    if (ex != nullptr && only_conv && !has_conv(ex->model())) continue;
    ++checked;
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
  MESSAGE("conformance: " << passed << "/" << checked << " cases match torch\n" << table.str());
  CHECK(passed == checked);
}

}  // namespace

TEST_CASE("conformance: every model-zoo case matches torch") { check_cases(ConvLayout::Auto, false); }

// ExecutorOptions::conv_layout: Auto runs the models with a depthwise
// convolution channels_last and the others NCHW; each layout forced on every
// model with a convolution (the ops after them then see channels_last inputs).
TEST_CASE("conformance: the models with convolutions match torch with channels_last and with NCHW activations") {
  check_cases(ConvLayout::ChannelsLast, true);
  check_cases(ConvLayout::Contiguous, true);
}

// torch 1.13 exports nn.LayerNorm below opset 17 as 9 nodes (ReduceMean, Sub,
// Pow, ReduceMean, Add, Sqrt, Div, Mul, Add); the converter fuses them into
// one LayerNorm (fuse_layer_norms). The fused and the unfused (--no-optimize)
// transformer both match torch, and each other within 1e-5.
TEST_CASE("conformance: the transformer's LayerNorms are fused and match the unfused graph and torch") {
  std::string error;
  auto fused = load_executor("transformer.onnx", &error);
  REQUIRE_MESSAGE(fused != nullptr, error);
  const std::string raw_path = testing::tmp_path("transformer_unfused.ember");
  converter::ConvertOptions raw;
  raw.optimize = false;
  const converter::Diag d = converter::convert_file(kZoo + "transformer.onnx", raw_path, raw);
  REQUIRE_MESSAGE(d.ok(), d.message);
  Result<Model> raw_model = Model::load(raw_path, Verification::Full, &error);
  REQUIRE_MESSAGE(raw_model.ok(), error);
  auto count = [](const Model& m, OpKind kind) {
    int n = 0;
    for (int k = 0; k < m.num_ops(); ++k) n += m.op_kind(k) == kind;
    return n;
  };
  CHECK(count(fused->model(), OpKind::LayerNorm) == 4);  // 2 layers x (norm1, norm2)
  CHECK(count(fused->model(), OpKind::Pow) == 0);
  CHECK(count(raw_model.get(), OpKind::LayerNorm) == 0);
  CHECK(count(raw_model.get(), OpKind::Pow) == 4);
  auto unfused = Executor::create(std::make_shared<const Model>(std::move(raw_model.get())), &error);
  REQUIRE_MESSAGE(unfused.ok(), error);
  for (const char* name : {"transformer", "transformer_b2"}) {
    CAPTURE(name);
    const std::vector<Tensor> in = load_tensors(name, "in", 1), expected = load_tensors(name, "out", 1);
    ExecutionContext a(fused), b(unfused.get());
    auto ya = a.run(Span<const Tensor>(in.data(), in.size()), {}, &error);
    REQUIRE_MESSAGE(ya.ok(), error);
    auto yb = b.run(Span<const Tensor>(in.data(), in.size()), {}, &error);
    REQUIRE_MESSAGE(yb.ok(), error);
    for (const Tensor& y : {ya.get()[0], yb.get()[0]}) {
      const Comparison vs_torch = compare(y, expected[0], 1e-4, 1e-4);
      CHECK_MESSAGE(vs_torch.ok, vs_torch.detail);
    }
    const Comparison fused_vs_unfused = compare(ya.get()[0], yb.get()[0], 0.0, 1e-5);
    CHECK_MESSAGE(fused_vs_unfused.ok, fused_vs_unfused.detail);
  }
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

TEST_CASE("conformance: the real models are bit-identical when the pool's workers lag (work stealing)") {
  // The workers wait before each item they claim, as a slow core would, so
  // the caller takes over the end of their shares: every kernel's tasks then
  // run on other threads' scratch slots than planned, and must give the same
  // bits (conv pairs, channels-last depthwise and stem, Winograd, im2col
  // bands, the GEMM's cut tiles, attention).
  const int saved = get_num_threads();
  int checked = 0;
  for (int threads : {2, 3}) {
    CAPTURE(threads);
    set_num_threads(threads);
    for (const Case& c : manifest()) {
      if (c.name != "mobilenet_v2" && c.name != "resnet18" && c.name != "transformer" && c.name != "bert_opset14_b1")
        continue;
      CAPTURE(c.name);
      std::string error;
      auto ex = load_executor(c.file, &error);
      REQUIRE_MESSAGE(ex != nullptr, error);
      const std::vector<Tensor> in = load_tensors(c.name, "in", c.inputs.size());
      auto run = [&] {
        ExecutionContext ctx(ex);
        auto out = ctx.run(Span<const Tensor>(in.data(), in.size()), {}, &error);
        REQUIRE_MESSAGE(out.ok(), error);
        return out.get()[0].contiguous();
      };
      const Tensor reference = run();
      const int64_t steals = parallel_steals();
      set_worker_lag_for_testing(200 * 1000);
      const Tensor lagged = run();
      set_worker_lag_for_testing(0);
      CHECK(parallel_steals() > steals);
      REQUIRE(lagged.sizes() == reference.sizes());
      CHECK(std::memcmp(lagged.data_ptr(), reference.data_ptr(),
                        static_cast<size_t>(reference.numel()) * element_size(reference.dtype())) == 0);
      const Comparison cmp = compare(lagged, load_tensors(c.name, "out", 1)[0], c.rtol, c.atol);
      CHECK_MESSAGE(cmp.ok, cmp.detail);
      ++checked;
    }
  }
  CHECK(checked == 8);  // the four models at 2 and 3 threads
  set_num_threads(saved);
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
