// Fine-tuning on Vulkan (lavapipe) against the same run on the CPU: a small
// MLP and a small CNN with max, average and adaptive average pooling, built
// as ModelDefs here, trained a few SGD and Adam steps by runtime/train's
// loop on each device; per-step losses within 1e-4 relative, the trained
// weights within 1e-4. The forward and the backward run on the device; the
// parameters and the optimizer stay on the CPU (TrainerOptions::device).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/model/executor.h"
#include "runtime/model/writer.h"
#include "runtime/ops/ops.h"
#include "runtime/train/finetune.h"
#include "runtime/train/trainer.h"
#include "tests/harness/testing.h"
#include "tests/vulkan/vulkan_testing.h"

namespace ember {
namespace {

int32_t weight(ModelDef& def, const std::string& name, std::vector<int64_t> shape, double scale) {
  TensorDef t;
  t.name = name;
  t.shape = shape;
  t.tensor = (randn(shape) * scale).contiguous();
  t.has_data = true;
  t.trainable = true;
  return def.add_tensor(std::move(t));
}

int32_t activation(ModelDef& def, const std::string& name, std::vector<int64_t> shape) {
  TensorDef t;
  t.name = name;
  t.shape = shape;
  if (!shape.empty() && shape[0] < 0) {
    t.dim_names.assign(shape.size(), "");
    t.dim_names[0] = "batch";
  }
  return def.add_tensor(std::move(t));
}

void op(ModelDef& def, OpKind kind, std::vector<int32_t> in, int32_t out, OpParams params = NoParams{}) {
  OpDef o;
  o.op = kind;
  o.inputs = std::move(in);
  o.outputs = {out};
  o.name = std::string(op_name(kind)) + std::to_string(def.ops.size());
  o.params = params;
  def.ops.push_back(std::move(o));
}

std::shared_ptr<const Model> load(const ModelDef& def) {
  std::vector<std::byte> bytes;
  std::string error;
  REQUIRE_MESSAGE(serialize_model(def, &bytes, &error) == Status::Ok, error);
  Result<Model> m = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Full, &error);
  REQUIRE_MESSAGE(m.ok(), error);
  return std::make_shared<const Model>(std::move(m.get()));
}

// x [B, 8] -> Linear(8, 16) -> ReLU -> Linear(16, 4).
std::shared_ptr<const Model> mlp() {
  manual_seed(1);
  ModelDef def;
  const int32_t x = activation(def, "x", {-1, 8});
  const int32_t w1 = weight(def, "fc1.weight", {16, 8}, 0.3), b1 = weight(def, "fc1.bias", {16}, 0.1);
  const int32_t w2 = weight(def, "fc2.weight", {4, 16}, 0.3), b2 = weight(def, "fc2.bias", {4}, 0.1);
  const int32_t h = activation(def, "h", {-1, 16}), r = activation(def, "r", {-1, 16}), y = activation(def, "y", {-1, 4});
  op(def, OpKind::Linear, {x, w1, b1}, h, LinearParams{});
  op(def, OpKind::Relu, {h}, r);
  op(def, OpKind::Linear, {r, w2, b2}, y, LinearParams{});
  def.inputs = {x};
  def.outputs = {y};
  return load(def);
}

// x [B, 1, 9, 9] -> Conv2d(1, 4, 3, pad 1) -> ReLU -> MaxPool2d(3, 2, pad 1) [B, 4, 5, 5]
// -> AvgPool2d(3, 2, pad 1, ceil, !count_include_pad) [B, 4, 3, 3] -> AdaptiveAvgPool2d(2, 2)
// -> Flatten [B, 16] -> Linear(16, 3).
std::shared_ptr<const Model> cnn() {
  manual_seed(2);
  ModelDef def;
  const int32_t x = activation(def, "x", {-1, 1, 9, 9});
  const int32_t cw = weight(def, "conv.weight", {4, 1, 3, 3}, 0.4), cb = weight(def, "conv.bias", {4}, 0.1);
  const int32_t fw = weight(def, "fc.weight", {3, 16}, 0.3), fb = weight(def, "fc.bias", {3}, 0.1);
  const int32_t c = activation(def, "c", {-1, 4, 9, 9}), r = activation(def, "r", {-1, 4, 9, 9});
  const int32_t mp = activation(def, "mp", {-1, 4, 5, 5}), ap = activation(def, "ap", {-1, 4, 3, 3});
  const int32_t aa = activation(def, "aa", {-1, 4, 2, 2}), fl = activation(def, "fl", {-1, 16});
  const int32_t y = activation(def, "y", {-1, 3});
  Conv2dParams conv;
  conv.padding[0] = conv.padding[1] = 1;
  op(def, OpKind::Conv2d, {x, cw, cb}, c, conv);
  op(def, OpKind::Relu, {c}, r);
  Pool2dParams max;
  max.kernel[0] = max.kernel[1] = 3;
  max.stride[0] = max.stride[1] = 2;
  max.padding[0] = max.padding[1] = 1;
  op(def, OpKind::MaxPool2d, {r}, mp, max);
  Pool2dParams avg = max;
  avg.ceil_mode = true;
  avg.count_include_pad = false;
  op(def, OpKind::AvgPool2d, {mp}, ap, avg);
  op(def, OpKind::AdaptiveAvgPool2d, {ap}, aa);
  op(def, OpKind::Flatten, {aa}, fl, AxisParams{1});
  op(def, OpKind::Linear, {fl, fw, fb}, y, LinearParams{});
  def.inputs = {x};
  def.outputs = {y};
  return load(def);
}

struct Run {
  std::vector<double> losses;
  std::vector<Tensor> weights;  // the trained parameters, on the CPU
};

Run train(std::shared_ptr<const Model> m, DeviceType device, const std::vector<NpzEntry>& data,
          const FinetuneConfig& c) {
  TrainerOptions o;
  o.train = {"*"};
  o.device = device;
  std::string error;
  Result<std::unique_ptr<Trainer>> t = Trainer::create(std::move(m), o, &error);
  REQUIRE_MESSAGE(t.ok(), error);
  Result<FinetuneResult> r = finetune(*t.get(), data, "data", c, {}, &error);
  REQUIRE_MESSAGE(r.ok(), device_type_name(device) << ": " << error);
  Run out;
  for (const StepLog& s : r->steps) out.losses.push_back(s.loss);
  for (const Tensor& p : t.get()->parameters()) {
    CHECK(p.device().is_cpu());
    out.weights.push_back(p.detach().clone());
  }
  return out;
}

void check_same_run(std::shared_ptr<const Model> m, const std::vector<NpzEntry>& data, FinetuneConfig c) {
  c.inputs = {{"x", "x"}};
  c.target = "y";
  c.shuffle = false;
  const Run cpu = train(m, DeviceType::CPU, data, c);
  const Run vk = train(m, DeviceType::Vulkan, data, c);
  REQUIRE(cpu.losses.size() == vk.losses.size());
  REQUIRE(cpu.losses.size() >= 3);
  double worst = 0;
  for (size_t i = 0; i < cpu.losses.size(); ++i) {
    worst = std::max(worst, std::fabs(vk.losses[i] - cpu.losses[i]) / std::fabs(cpu.losses[i]));
    CHECK_MESSAGE(std::fabs(vk.losses[i] - cpu.losses[i]) <= 1e-4 * std::fabs(cpu.losses[i]),
                  c.optimizer << " step " << i + 1 << ": vulkan " << vk.losses[i] << ", cpu " << cpu.losses[i]);
  }
  std::printf("%s, %zu steps: largest relative loss difference vulkan vs cpu %.3g\n", c.optimizer.c_str(),
              cpu.losses.size(), worst);
  CHECK(cpu.losses.back() < cpu.losses.front());  // it trains
  REQUIRE(cpu.weights.size() == vk.weights.size());
  for (size_t i = 0; i < cpu.weights.size(); ++i) testing::check_close(vk.weights[i], cpu.weights[i], 1e-4, 1e-4);
}

std::vector<NpzEntry> data_set(std::vector<int64_t> x_shape, int64_t classes) {
  manual_seed(3);
  const int64_t n = x_shape[0];
  Tensor y = empty({n}, DType::Int64);
  for (int64_t i = 0; i < n; ++i) y.data_ptr<int64_t>()[i] = (i * 7) % classes;
  return {{"x", randn(x_shape)}, {"y", y}};
}

TEST_CASE("an MLP fine-tuned on vulkan matches the cpu run: SGD with momentum, then Adam") {
  const std::vector<NpzEntry> d = data_set({10, 8}, 4);
  FinetuneConfig c;
  c.optimizer = "sgd";
  c.lr = 0.1;
  c.momentum = 0.9;
  c.batch_size = 4;  // a partial last batch
  c.epochs = 2;
  check_same_run(mlp(), d, c);
  c.optimizer = "adam";
  c.lr = 0.01;
  check_same_run(mlp(), d, c);
}

TEST_CASE("a CNN with max, average and adaptive pooling fine-tuned on vulkan matches the cpu run") {
  const std::vector<NpzEntry> d = data_set({6, 1, 9, 9}, 3);
  FinetuneConfig c;
  c.optimizer = "sgd";
  c.lr = 0.05;
  c.batch_size = 3;
  c.epochs = 2;
  check_same_run(cnn(), d, c);
  c.optimizer = "adam";
  c.lr = 0.01;
  check_same_run(cnn(), d, c);
}

// Eager autograd on Vulkan leaves: the gradients of embedding (padding_idx's
// row learns nothing) and of reflect / replicate / circular padding equal the
// CPU's (the same float32 sums in the same order: exactly).
TEST_CASE("eager backward on vulkan: embedding with padding_idx, and padding of every mode") {
  manual_seed(5);
  const Tensor w = randn({7, 5});
  const Tensor idx = tensor(std::vector<int64_t>{3, 1, 3, 6, 1, 1, 0, 3}, {2, 4});
  const Tensor g = randn({2, 4, 5});
  auto embedding_grad = [&](const Device& d) {
    Tensor leaf = w.to(d).detach().requires_grad_(true);
    (embedding(leaf, idx.to(d), 1) * g.to(d)).sum().backward();
    return testing::to_cpu(leaf.grad());
  };
  const Tensor want = embedding_grad(Device("cpu"));
  CHECK(want.select(0, 1).abs().sum().item<double>() == 0.0);
  testing::check_equal(embedding_grad(testing::kVulkan), want);
  const Tensor x = randn({2, 3, 5, 6});
  const Tensor gy = randn({2, 3, 8, 10});
  for (const char* mode : {"reflect", "replicate", "circular"}) {
    CAPTURE(mode);
    auto pad_grad = [&](const Device& d) {
      Tensor leaf = x.to(d).detach().requires_grad_(true);
      (pad(leaf, {2, 2, 1, 2}, mode) * gy.to(d)).sum().backward();
      return testing::to_cpu(leaf.grad());
    };
    testing::check_equal(pad_grad(testing::kVulkan), pad_grad(Device("cpu")));
  }
}

TEST_CASE("a node without a Vulkan kernel is an error at create naming it, never a CPU fallback") {
  manual_seed(4);
  ModelDef def;
  const int32_t x = activation(def, "x", {-1, 8});
  const int32_t w = weight(def, "fc.weight", {4, 8}, 0.3);
  const int32_t h = activation(def, "h", {-1, 4}), y = activation(def, "y", {-1, 4});
  op(def, OpKind::Linear, {x, w, -1}, h, LinearParams{});
  ScanParams scan;
  scan.axis = 1;
  op(def, OpKind::CumSum, {h, -1}, y, scan);
  def.inputs = {x};
  def.outputs = {y};
  TrainerOptions o;
  o.train = {"*"};
  o.device = DeviceType::Vulkan;
  std::string error;
  CHECK(!Trainer::create(load(def), o, &error).ok());
  CHECK_MESSAGE(error.find("(cumsum, float32): not implemented for vulkan") != std::string::npos, error);
}

}  // namespace
}  // namespace ember

EMBER_VULKAN_NO_VALIDATION_ERRORS()
