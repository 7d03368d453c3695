// The trainer and the fine-tuning loop (runtime/train) against PyTorch: the
// models of tests/golden/finetune_models.py converted by the converter, then
// fine-tuned on the same batches as PyTorch's runs; per-step losses within
// 1e-5 relative, final outputs within 1e-4. Plus saving, the weight selection
// and the data checks' messages.
#include <string>
#include <vector>

#include "converter/convert.h"
#include "runtime/model/executor.h"
#include "runtime/nn/loss.h"
#include "runtime/model/npy.h"
#include "runtime/model/npz.h"
#include "runtime/nn/safetensors.h"
#include "runtime/train/delta.h"
#include "runtime/train/finetune.h"
#include "runtime/train/trainer.h"
#include "tests/harness/testing.h"

namespace ember {
namespace {

using testing::check_close;
using testing::tmp_path;

const std::string kDir = "tests/golden/finetune/";

std::shared_ptr<const Model> convert(const std::string& name, converter::ConvertOptions options = {},
                                     const std::string& suffix = "") {
  const std::string out = tmp_path(name + suffix + ".ember");
  const converter::Diag d = converter::convert_file(kDir + name + ".onnx", out, options);
  REQUIRE_MESSAGE(d.ok(), d.message);
  std::string error;
  Result<Model> m = Model::load(out, Verification::Full, &error);
  REQUIRE_MESSAGE(m.ok(), error);
  return std::make_shared<const Model>(std::move(m.get()));
}

std::vector<NpzEntry> data() {
  std::string error;
  Result<std::vector<NpzEntry>> d = read_npz(kDir + "data.npz", &error);
  REQUIRE_MESSAGE(d.ok(), error);
  return d.get();
}

Tensor npy(const std::string& file) {
  std::string error;
  Result<Tensor> t = read_npy(kDir + file, &error);
  REQUIRE_MESSAGE(t.ok(), error);
  return t.get();
}

std::unique_ptr<Trainer> trainer(std::shared_ptr<const Model> m, std::vector<std::string> train) {
  std::string error;
  Result<std::unique_ptr<Trainer>> t = Trainer::create(std::move(m), {std::move(train), {}}, &error);
  REQUIRE_MESSAGE(t.ok(), error);
  return std::move(t.get());
}

Tensor outputs(Trainer& t, const Tensor& x) {
  NoGradGuard no_grad;
  std::string error;
  Result<std::vector<Tensor>> out = t.forward(Span<const Tensor>(&x, 1), &error);
  REQUIRE_MESSAGE(out.ok(), error);
  return out.get()[0];
}

// A config that feeds array x to the mlp's input x, with `target` as the targets.
FinetuneConfig on_x(const std::string& target) {
  FinetuneConfig c;
  c.inputs = {{"x", "x"}};
  c.target = target;
  return c;
}

// Fine-tunes like scenario `name` of finetune_models.py and compares with torch.
void check_scenario(const std::string& name, Trainer& t, FinetuneConfig c, const std::string& x_key,
                    double rtol = 1e-5) {
  c.shuffle = false;
  const std::vector<NpzEntry> d = data();
  std::string error;
  Result<FinetuneResult> r = finetune(t, d, "data.npz", c, {}, &error);
  REQUIRE_MESSAGE(r.ok(), error);
  const Tensor expected = npy(name + ".losses.npy");
  REQUIRE(static_cast<int64_t>(r->steps.size()) == expected.numel());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double e = expected.data_ptr<double>()[i];
    CHECK_MESSAGE(std::fabs(r->steps[static_cast<size_t>(i)].loss - e) <= rtol * std::fabs(e),
                  name << " step " << i + 1 << ": " << r->steps[static_cast<size_t>(i)].loss << " vs torch " << e);
  }
  for (const NpzEntry& e : d) {
    // The outputs within 1e-4 (int8 forwards: within the two int8 schemes' difference).
    if (e.name == x_key) check_close(outputs(t, e.value), npy(name + ".out.npy"), rtol < 1e-4 ? 1e-4 : 2e-2, rtol < 1e-4 ? 1e-5 : 1.5e-2);
  }
}

TEST_CASE("head only, SGD with momentum: per-step losses and outputs match PyTorch") {
  auto t = trainer(convert("mlp"), {"fc2.*"});
  CHECK(t->parameter_names() == std::vector<std::string>{"fc2.weight", "fc2.bias"});
  CHECK(t->trainable_elements() == 16 * 4 + 4);
  FinetuneConfig c = on_x("y");
  c.optimizer = "sgd";
  c.lr = 0.1;
  c.momentum = 0.9;
  c.batch_size = 4;
  c.epochs = 2;
  check_scenario("head_sgd", *t, c, "x");
}

TEST_CASE("the default selection is the last layer") {
  auto t = trainer(convert("mlp"), {});
  CHECK(t->parameter_names() == std::vector<std::string>{"fc2.weight", "fc2.bias"});
}

TEST_CASE("every weight, Adam (fused Linear+ReLU masks the gradient)") {
  auto t = trainer(convert("mlp"), {"*"});
  CHECK(t->parameters().size() == 4);
  FinetuneConfig c = on_x("y");
  c.optimizer = "adam";
  c.lr = 0.01;
  c.batch_size = 4;
  c.epochs = 2;
  check_scenario("all_adam", *t, c, "x");
}

TEST_CASE("AdamW, weight decay, gradient clipping, StepLR, MSE, a partial last batch") {
  auto t = trainer(convert("mlp"), {"fc1.*", "fc2.*"});
  FinetuneConfig c;
  c.inputs = {{"x", "x"}};
  c.target = "t";
  c.loss = "mse";
  c.optimizer = "adamw";
  c.lr = 0.02;
  c.weight_decay = 0.05;
  c.clip_grad_norm = 0.5;
  c.scheduler = "step:1:0.5";
  c.batch_size = 3;
  c.epochs = 3;
  check_scenario("all_adamw_clip", *t, c, "x");
}

TEST_CASE("a CNN with BatchNorm folded at conversion trains as torch's fuse_conv_bn_eval model") {
  auto t = trainer(convert("cnn"), {"*"});
  CHECK(t->parameters().size() == 4);  // the folded conv weight and bias, fc.weight, fc.bias
  FinetuneConfig c;
  c.inputs = {{"x", "img"}};
  c.target = "cls";
  c.optimizer = "sgd";
  c.lr = 0.05;
  c.batch_size = 5;
  c.epochs = 2;
  check_scenario("cnn_sgd", *t, c, "img");
}

TEST_CASE("an LSTM and a GRU (Recurrence ops, dynamic length) train every weight as PyTorch does") {
  auto t = trainer(convert("rnn"), {"*"});
  CHECK(t->parameters().size() == 8);  // W, R, B of each recurrence, fc.weight, fc.bias
  FinetuneConfig c;
  c.inputs = {{"x", "seq"}};
  c.target = "cls";
  c.optimizer = "sgd";
  c.lr = 0.1;
  c.momentum = 0.9;
  c.batch_size = 4;
  c.epochs = 2;
  check_scenario("rnn_sgd", *t, c, "seq");
}

TEST_CASE("LoRA on an int8 Linear (only the adapter trains) matches PyTorch's quantize_dynamic model") {
  converter::ConvertOptions q;
  q.quantize = "dynamic-int8";
  q.per_tensor = true;
  q.min_weight_elements = 100;  // fc1 (128 elements) int8, fc2 (64) float32
  TrainerOptions o;
  o.lora_rank = 2;
  o.lora_alpha = 4;
  o.lora_targets = {"fc1.*"};
  std::string error;
  auto made = Trainer::create(convert("mlp", q, "_int8"), o, &error);
  REQUIRE_MESSAGE(made.ok(), error);
  Trainer& t = *made.get();
  CHECK(t.parameter_names() == std::vector<std::string>{"fc1.weight.lora_A", "fc1.weight.lora_B"});
  {
    NoGradGuard no_grad;
    Tensor a = t.parameters()[0];
    a.copy_(npy("lora_int8.A.npy"));  // torch's initial A (the init draws differ)
  }
  FinetuneConfig c = on_x("y");
  c.optimizer = "adam";
  c.lr = 0.01;
  c.batch_size = 4;
  c.epochs = 2;
  // The two int8 forwards differ (PyTorch 1.13's dynamic Linear here runs on
  // its onednn engine, with its own activation quantization): before any
  // training their outputs differ by up to 9.4e-3 (ember vs fp32 5.9e-3,
  // PyTorch vs fp32 7.2e-3), the losses by ~4e-4 relative. The training
  // itself adds no difference beyond that.
  check_scenario("lora_int8", t, c, "x", 2e-3);
  // An adapter on an int8 weight cannot be merged into the file: save says to write a delta.
  CHECK(t.save(tmp_path("never.ember"), &error) == Status::NotSupported);
  CHECK(error == "LoRA adapters on the int8 weight 'fc1.weight' cannot be merged into it: save them as a delta "
                 "(--save-delta), or merge them into a float32 weight (--merge-lora)");
}

// The mlp with fc1 int8 (per channel) and a rank-2 LoRA on it (alpha 4: scale 2), trained so that B is not zero.
std::unique_ptr<Trainer> int8_lora_trainer(std::shared_ptr<const Model> base) {
  TrainerOptions o;
  o.lora_rank = 2;
  o.lora_alpha = 4;
  o.lora_targets = {"fc1.weight"};
  std::string error;
  auto made = Trainer::create(std::move(base), o, &error);
  REQUIRE_MESSAGE(made.ok(), error);
  FinetuneConfig c = on_x("y");
  c.optimizer = "adam";
  c.lr = 0.05;
  c.batch_size = 5;
  c.epochs = 2;
  REQUIRE_MESSAGE(finetune(*made.get(), data(), "data.npz", c, {}, &error).ok(), error);
  return std::move(made.get());
}

std::shared_ptr<const Model> int8_fc1() {
  converter::ConvertOptions q;
  q.quantize = "dynamic-int8";
  q.min_weight_elements = 100;  // fc1 (128 elements) int8, fc2 (64) float32
  return convert("mlp", q, "_int8_fc1");
}

Tensor run_model(std::shared_ptr<const Model> m, const Tensor& x, ExecutorOptions options = {}) {
  std::string error;
  auto ex = Executor::create(std::move(m), options, &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  ExecutionContext ctx(ex.get());
  Result<std::vector<Tensor>> out = ctx.run(Span<const Tensor>(&x, 1), {}, &error);
  REQUIRE_MESSAGE(out.ok(), error);
  return out.get()[0].clone();
}

TEST_CASE("LoRA on an int8 Linear: a delta runs its adapters unmerged on the int8 kernel, as the trainer's forward") {
  auto base = int8_fc1();
  auto t = int8_lora_trainer(base);
  const Tensor x = data()[0].value;
  const Tensor expected = outputs(*t, x);
  std::string error;
  const std::string path = tmp_path("lora_int8.safetensors");
  REQUIRE_MESSAGE(save_delta(*t, path, &error) == Status::Ok, error);
  Result<TunedModel> tuned = load_delta(*base, path, &error);
  REQUIRE_MESSAGE(tuned.ok(), error);
  REQUIRE(tuned->adapters.size() == 1);
  CHECK(tuned->adapters[0].first == t->adapters()[0].first);  // fc1's op
  CHECK(tuned->adapters[0].second.scale == 2.0);
  CHECK(max(abs(tuned->adapters[0].second.b)).item<double>() > 1e-3);  // trained
  ExecutorOptions options;
  options.adapters = tuned->adapters;
  // The same runner code (QLinear: the int8 kernel, then + scale B (A x), then the ReLU): the same values.
  const Tensor out = run_model(std::make_shared<const Model>(std::move(tuned->model)), x, options);
  testing::check_equal(out, expected);
  // Without the adapters the int8 base gives other outputs.
  CHECK(max(abs(run_model(base, x) - expected)).item<double>() > 1e-3);
  // apply_delta (a model alone) cannot hold unmerged adapters.
  CHECK(apply_delta(*base, path, &error).status() == Status::NotSupported);
  CHECK(error == "delta '" + path + "': LoRA adapters on the int8 weight 'fc1.weight' stay unmerged: load the delta "
                 "with load_delta and run its adapters (ExecutorOptions::adapters), as ember run --weights does");
}

TEST_CASE("LoRA on an int8 Linear merges into a float32 Linear on request: dequant(W) + scale B A") {
  auto base = int8_fc1();
  auto t = int8_lora_trainer(base);
  const Tensor x = data()[0].value;
  std::string error;
  const std::string path = tmp_path("lora_int8_merged.ember");
  CHECK(t->save(path, &error) == Status::NotSupported);  // not without asking
  SaveOptions merge;
  merge.merge_int8_lora = true;
  REQUIRE_MESSAGE(t->save(path, merge, &error) == Status::Ok, error);
  Result<Model> loaded = Model::load(path, Verification::Full, &error);
  REQUIRE_MESSAGE(loaded.ok(), error);
  auto merged = std::make_shared<const Model>(std::move(loaded.get()));
  // fc1.weight is float32 now (no quant params, a parameter); everything else as in the base file.
  const int w1 = merged->find_tensor("fc1.weight");
  REQUIRE(w1 >= 0);
  CHECK(merged->tensor_dtype(w1) == DType::Float32);
  CHECK(merged->tensor(w1).quant() == nullptr);
  CHECK(merged->tensor(w1).trainable());
  REQUIRE(merged->num_tensors() == base->num_tensors());
  REQUIRE(merged->num_ops() == base->num_ops());
  for (int i = 0; i < base->num_tensors(); ++i) {
    CAPTURE(base->tensor_name(i));
    CHECK(merged->tensor_name(i) == base->tensor_name(i));
    CHECK(merged->tensor_shape(i) == base->tensor_shape(i));
    if (i == w1 || !base->weight(i).defined()) continue;
    CHECK(merged->tensor_dtype(i) == base->tensor_dtype(i));
    testing::check_equal(merged->weight(i), base->weight(i));
  }
  for (int k = 0; k < base->num_ops(); ++k) CHECK(merged->op_kind(k) == base->op_kind(k));  // a Linear stays a Linear
  // The merged weight, computed here from the int8 file: per output channel (q - zero_point) * scale + 2 B A.
  const int q1 = base->find_tensor("fc1.weight");
  const fb::QuantParams* qp = base->tensor(q1).quant();
  REQUIRE(qp != nullptr);
  REQUIRE(qp->scales()->size() == 16);  // per channel, axis 0
  const Tensor a = t->parameters()[0].detach().contiguous();  // [2, 8]
  const Tensor b = t->parameters()[1].detach().contiguous();  // [16, 2]
  Tensor w = empty({16, 8});
  const Tensor q = base->weight(q1).contiguous();
  for (int64_t o = 0; o < 16; ++o) {
    const uint32_t uo = static_cast<uint32_t>(o);
    const double zp =
        qp->zero_points() != nullptr && qp->zero_points()->size() == 16 ? static_cast<double>(qp->zero_points()->Get(uo)) : 0;
    for (int64_t i = 0; i < 8; ++i) {
      double ba = 0;
      for (int64_t r = 0; r < 2; ++r)
        ba += static_cast<double>(b.data_ptr<float>()[o * 2 + r]) * static_cast<double>(a.data_ptr<float>()[r * 8 + i]);
      w.data_ptr<float>()[o * 8 + i] =
          static_cast<float>((q.data_ptr<int8_t>()[o * 8 + i] - zp) * static_cast<double>(qp->scales()->Get(uo)) + 2.0 * ba);
    }
  }
  check_close(merged->weight(w1), w, 1e-6, 1e-6);
  // Its outputs: the float32 model's, by hand, within float32 rounding.
  const Tensor out = run_model(merged, x);
  {
    NoGradGuard no_grad;
    const auto weight = [&](const char* n) { return merged->weight(merged->find_tensor(n)); };
    const Tensor h = relu(linear(x, w, weight("fc1.bias")));
    check_close(out, linear(h, weight("fc2.weight"), weight("fc2.bias")), 1e-5, 1e-5);
  }
  // The trainer's forward runs the int8 kernel (activations quantized at run
  // time): the float32 merge differs from it by that quantization's error only.
  const Tensor expected = outputs(*t, x);
  const double diff = max(abs(out - expected)).item<double>();
  CHECK(diff > 0);
  CHECK(diff < 2e-2);
  // A trainer of the merged file (float32 fc1 now, nothing trained) has the executor's outputs exactly.
  testing::check_equal(outputs(*trainer(merged, {"fc2.*"}), x), out);
}

TEST_CASE("LoRA deltas on int8 weights: an adapter without its pair, wrong shapes, a weight that is not a Linear's") {
  auto base = int8_fc1();
  std::string error;
  const std::string fp = model_fingerprint(*base);
  const auto write = [&](const char* file, nn::NamedTensors tensors) {
    const std::string path = tmp_path(file);
    nn::save_safetensors(path, tensors, {{"format", "ember-delta"}, {"base", fp}, {"lora_scale", "2"}});
    return path;
  };
  std::string p = write("only_a.safetensors", {{"fc1.weight.lora_A", zeros({2, 8})}});
  CHECK(!load_delta(*base, p, &error).ok());
  CHECK(error == "delta '" + p + "': adapter 'fc1.weight' lacks its lora_B");
  p = write("only_b.safetensors", {{"fc1.weight.lora_B", zeros({16, 2})}});
  CHECK(!load_delta(*base, p, &error).ok());
  CHECK(error == "delta '" + p + "': adapter 'fc1.weight' lacks its lora_A");
  p = write("bad_shape.safetensors", {{"fc1.weight.lora_A", zeros({2, 7})}, {"fc1.weight.lora_B", zeros({16, 2})}});
  CHECK(load_delta(*base, p, &error).status() == Status::ShapeMismatch);
  CHECK(error == "delta '" + p + "': adapter 'fc1.weight' (A float32 [2, 7], B float32 [16, 2]) does not fit int8 "
                 "[16, 8] (A float32 [rank, 8], B float32 [16, rank])");
  p = write("bad_rank.safetensors", {{"fc1.weight.lora_A", zeros({2, 8})}, {"fc1.weight.lora_B", zeros({16, 3})}});
  CHECK(load_delta(*base, p, &error).status() == Status::ShapeMismatch);
  p = write("bias.safetensors", {{"fc1.bias.lora_A", zeros({2, 8})}, {"fc1.bias.lora_B", zeros({16, 2})}});
  CHECK(!load_delta(*base, p, &error).ok());
  CHECK(error == "delta '" + p + "': adapter 'fc1.bias': no Linear layer reads it as its weight");
  p = write("nope.safetensors", {{"fc9.weight.lora_A", zeros({2, 8})}, {"fc9.weight.lora_B", zeros({16, 2})}});
  CHECK(!load_delta(*base, p, &error).ok());
  CHECK(error == "delta '" + p + "': adapter 'fc9.weight' is not on a weight of the model");
  // The executor checks adapters it is given directly too.
  ExecutorOptions options;
  const int fc1 = lora_ops(*base, base->find_tensor("fc1.weight")).at(0);
  options.adapters = {{fc1, LoraAdapter{zeros({2, 8}), zeros({15, 2}), 1.0}}};
  CHECK(Executor::create(base, options, &error).status() == Status::ShapeMismatch);
  CHECK(error.find("do not fit its weight [16, 8]") != std::string::npos);
  options.adapters = {{base->num_ops(), LoraAdapter{zeros({2, 8}), zeros({16, 2}), 1.0}}};
  CHECK(Executor::create(base, options, &error).status() == Status::InvalidArgument);
  CHECK(error == "LoRA adapter on op " + std::to_string(base->num_ops()) + ": the model has " +
                     std::to_string(base->num_ops()) + " ops");
}

TEST_CASE("a sparse COO weight trains its nonzeros only, and gradients flow back through a frozen one") {
  converter::ConvertOptions o;
  o.sparse_coo = true;  // fc1 and fc2 are 60 % zeros: both stored as COO
  auto model = convert("mlp_sparse", o);
  const int w1 = model->find_tensor("fc1.weight");
  REQUIRE(w1 >= 0);
  REQUIRE(model->tensor(w1).sparse() != nullptr);
  REQUIRE(model->tensor(model->find_tensor("fc2.weight")).sparse() != nullptr);
  const int64_t nnz = model->tensor(w1).sparse()->nnz();
  CHECK(nnz == 128 - 77);
  auto t = trainer(model, {"fc1.*", "fc2.bias"});
  CHECK(t->trainable_elements() == nnz + 16 + 4);  // the values, not the dense [16, 8]
  FinetuneConfig c = on_x("y");
  c.optimizer = "sgd";
  c.lr = 0.1;
  c.momentum = 0.9;
  c.batch_size = 4;
  c.epochs = 2;
  check_scenario("sparse_sgd", *t, c, "x");
  // Saved in place: still COO with the same nnz, run by the sparse kernel to the trainer's outputs.
  std::string error;
  const std::string path = tmp_path("sparse_tuned.ember");
  REQUIRE_MESSAGE(t->save(path, &error) == Status::Ok, error);
  Result<Model> m = Model::load(path, Verification::Full, &error);
  REQUIRE_MESSAGE(m.ok(), error);
  REQUIRE(m->tensor(w1).sparse() != nullptr);
  CHECK(m->tensor(w1).sparse()->nnz() == nnz);
  auto ex = Executor::create(std::make_shared<const Model>(std::move(m.get())), &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  ExecutionContext ctx(ex.get());
  const Tensor x = data()[0].value;
  Result<std::vector<Tensor>> out = ctx.run(Span<const Tensor>(&x, 1), {}, &error);
  REQUIRE_MESSAGE(out.ok(), error);
  check_close(out.get()[0], outputs(*t, x), 1e-5, 1e-6);
}

TEST_CASE("the bias of a frozen int8 Linear or Conv trains as the float32 layer's does") {
  // The int8 kernels hold the file's bias in their prepared weight: the trained one must replace it.
  // (The cnn's conv bias has the name torch.onnx.export gave it when it folded the BatchNorm.)
  struct Case {
    const char* model;
    const char* bias;
    const char* x;
    const char* target;
  };
  for (const Case& k : {Case{"mlp", "fc1.bias", "x", "y"}, Case{"cnn", "onnx::Conv_17", "img", "cls"}}) {
    CAPTURE(k.model);
    converter::ConvertOptions q;
    q.quantize = "dynamic-int8";
    q.min_weight_elements = 30;  // mlp: both Linears int8; cnn: the conv (36) int8, fc (432) too
    FinetuneConfig c;
    c.inputs = {{"x", k.x}};
    c.target = k.target;
    c.lr = 0.5;
    c.epochs = 20;
    c.batch_size = 10;
    std::string error;
    std::vector<double> losses[2];
    for (int i = 0; i < 2; ++i) {
      auto t = trainer(i == 0 ? convert(k.model, q, "_int8_all") : convert(k.model), {k.bias});
      Result<FinetuneResult> r = finetune(*t, data(), "data.npz", c, {}, &error);
      REQUIRE_MESSAGE(r.ok(), error);
      losses[i] = r->epoch_loss;
    }
    CHECK(losses[1].back() < losses[1].front() - 0.03);  // the float32 layer learns (int8 with a stale bias would not)
    for (size_t e = 0; e < losses[0].size(); ++e) {
      CHECK_MESSAGE(std::fabs(losses[0][e] - losses[1][e]) < 1e-2, "epoch ", e + 1, ": int8 ", losses[0][e],
                    " vs float32 ", losses[1][e]);
    }
  }
}

TEST_CASE("LoRA on a float32 Linear merges into the weight on save and in a delta") {
  auto base = convert("mlp");
  TrainerOptions o;
  o.lora_rank = 2;
  o.lora_targets = {"fc1.weight"};
  std::string error;
  auto made = Trainer::create(base, o, &error);
  REQUIRE_MESSAGE(made.ok(), error);
  Trainer& t = *made.get();
  FinetuneConfig c = on_x("y");
  c.optimizer = "adam";
  c.lr = 0.05;
  c.batch_size = 5;
  REQUIRE_MESSAGE(finetune(t, data(), "data.npz", c, {}, &error).ok(), error);
  const Tensor x = data()[0].value;
  const Tensor expected = outputs(t, x);
  REQUIRE_MESSAGE(save_delta(t, tmp_path("lora.safetensors"), &error) == Status::Ok, error);
  REQUIRE_MESSAGE(t.save(tmp_path("lora.ember"), &error) == Status::Ok, error);
  for (const bool delta : {false, true}) {
    Result<Model> m = delta ? apply_delta(*base, tmp_path("lora.safetensors"), &error)
                            : Model::load(tmp_path("lora.ember"), Verification::Full, &error);
    REQUIRE_MESSAGE(m.ok(), error);
    auto ex = Executor::create(std::make_shared<const Model>(std::move(m.get())), &error);
    REQUIRE_MESSAGE(ex.ok(), error);
    ExecutionContext ctx(ex.get());
    Result<std::vector<Tensor>> out = ctx.run(Span<const Tensor>(&x, 1), {}, &error);
    REQUIRE_MESSAGE(out.ok(), error);
    check_close(out.get()[0], expected, 1e-5, 1e-5);
  }
  CHECK(!Trainer::create(base, {{}, {}, 2, 0, {"conv*"}}, &error).ok());
  CHECK(error == "--lora-targets 'conv*' matches no Linear weight");
}

TEST_CASE("a gradient flows through a frozen int8 Linear to the float32 layer before it") {
  // fc2 int8, fc1 float32 and trained: fc1's gradient is the one of the float32
  // model whose fc2 holds the dequantized int8 weight (straight-through).
  converter::ConvertOptions q;
  q.quantize = "dynamic-int8";
  q.exclude = {"/fc1/Gemm"};
  auto int8 = convert("mlp", q, "_int8_fc2");
  auto t = trainer(int8, {"fc1.*"});
  auto f = trainer(convert("mlp"), {"fc1.*", "fc2.weight"});
  {
    NoGradGuard no_grad;
    const int w = int8->find_tensor("fc2.weight");
    const fb::QuantParams* qp = int8->tensor(w).quant();
    REQUIRE(qp != nullptr);
    Tensor scales = empty({4}, DType::Float32);
    for (int i = 0; i < 4; ++i) scales.data_ptr<float>()[i] = qp->scales()->Get(static_cast<uint32_t>(i));
    Tensor fc2 = f->parameters()[2];
    fc2.copy_(int8->weight(w).to(DType::Float32) * scales.reshape({4, 1}));
  }
  const std::vector<NpzEntry> d = data();
  std::string error;
  for (Trainer* tr : {t.get(), f.get()}) {
    Result<std::vector<Tensor>> out = tr->forward(Span<const Tensor>(&d[0].value, 1), &error);
    REQUIRE_MESSAGE(out.ok(), error);
    nn::cross_entropy(out.get()[0], d[1].value).backward();
  }
  REQUIRE(t->parameters()[0].grad().defined());
  check_close(t->parameters()[0].grad(), f->parameters()[0].grad(), 2e-2, 2e-3);
  check_close(t->parameters()[1].grad(), f->parameters()[1].grad(), 2e-2, 2e-3);
}

TEST_CASE("save writes the trained weights: the saved file runs as the trainer does") {
  auto t = trainer(convert("mlp"), {"fc2.*"});
  FinetuneConfig c = on_x("y");
  c.lr = 0.5;
  c.batch_size = 5;
  c.seed = 3;
  std::string error;
  REQUIRE_MESSAGE(finetune(*t, data(), "data.npz", c, {}, &error).ok(), error);
  const std::string path = tmp_path("tuned.ember");
  REQUIRE_MESSAGE(t->save(path, &error) == Status::Ok, error);
  Result<Model> m = Model::load(path, Verification::Full, &error);
  REQUIRE_MESSAGE(m.ok(), error);
  auto ex = Executor::create(std::make_shared<const Model>(std::move(m.get())), &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  ExecutionContext ctx(ex.get());
  const Tensor x = data()[0].value;
  Result<std::vector<Tensor>> out = ctx.run(Span<const Tensor>(&x, 1), {}, &error);
  REQUIRE_MESSAGE(out.ok(), error);
  testing::check_equal(out.get()[0], outputs(*t, x));
  // The original file's outputs differ (the weights did move).
  auto t0 = trainer(convert("mlp"), {"fc2.*"});
  CHECK(max(abs(outputs(*t0, x) - out.get()[0])).item<double>() > 1e-3);
}

TEST_CASE("a delta holds the trained tensors, is bound to its base and overlays it") {
  auto base = convert("mlp");
  auto t = trainer(base, {"fc2.*"});
  FinetuneConfig c = on_x("y");
  c.lr = 0.5;
  c.batch_size = 5;
  std::string error;
  REQUIRE_MESSAGE(finetune(*t, data(), "data.npz", c, {}, &error).ok(), error);
  const std::string path = tmp_path("delta.safetensors");
  REQUIRE_MESSAGE(save_delta(*t, path, &error) == Status::Ok, error);
  Result<Model> tuned = apply_delta(*base, path, &error);
  REQUIRE_MESSAGE(tuned.ok(), error);
  auto ex = Executor::create(std::make_shared<const Model>(std::move(tuned.get())), &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  ExecutionContext ctx(ex.get());
  const Tensor x = data()[0].value;
  Result<std::vector<Tensor>> out = ctx.run(Span<const Tensor>(&x, 1), {}, &error);
  REQUIRE_MESSAGE(out.ok(), error);
  testing::check_equal(out.get()[0], outputs(*t, x));
  // Another base (the CNN) is refused, naming both fingerprints.
  auto other = convert("cnn");
  CHECK(!apply_delta(*other, path, &error).ok());
  CHECK(error == "delta '" + path + "' was trained from another model (its base " + model_fingerprint(*base) +
                     ", this model " + model_fingerprint(*other) + ")");
  CHECK(model_fingerprint(*base).size() == 8 + 16);
}

TEST_CASE("checkpoints: 10 steps + resume + 10 equal 20 straight, bit for bit (shuffled, Adam, StepLR, clipping)") {
  auto base = convert("mlp");
  FinetuneConfig c = on_x("y");
  c.optimizer = "adam";
  c.lr = 0.02;
  c.clip_grad_norm = 1.0;
  c.scheduler = "step:1:0.7";
  c.batch_size = 3;  // 4 steps per epoch: the checkpoint at step 10 is mid-epoch
  c.epochs = 5;
  c.seed = 11;
  std::string error;
  auto straight = trainer(base, {"*"});
  Result<FinetuneResult> all = finetune(*straight, data(), "data.npz", c, {}, &error);
  REQUIRE_MESSAGE(all.ok(), error);
  REQUIRE(all->steps.size() == 20);

  FinetuneConfig first = c;
  first.checkpoint = tmp_path("ckpt.safetensors");
  first.checkpoint_every = 10;
  first.epochs = 3;  // stops after 12 steps; the checkpoint holds step 10
  auto a = trainer(base, {"*"});
  REQUIRE_MESSAGE(finetune(*a, data(), "data.npz", first, {}, &error).ok(), error);
  FinetuneConfig second = c;
  second.resume = first.checkpoint;
  auto b = trainer(base, {"*"});
  Result<FinetuneResult> rest = finetune(*b, data(), "data.npz", second, {}, &error);
  REQUIRE_MESSAGE(rest.ok(), error);
  REQUIRE(rest->steps.size() == 10);
  for (size_t i = 0; i < 10; ++i) {
    CHECK(rest->steps[i].step == all->steps[10 + i].step);
    CHECK(rest->steps[i].loss == all->steps[10 + i].loss);  // bit for bit
    CHECK(rest->steps[i].lr == all->steps[10 + i].lr);
  }
  for (size_t i = 0; i < b->parameters().size(); ++i) testing::check_equal(b->parameters()[i], straight->parameters()[i]);
  CHECK(rest->epoch_loss.back() == all->epoch_loss.back());
  // A checkpoint of another selection or another model is refused.
  auto head = trainer(base, {"fc2.*"});
  FinetuneConfig wrong = c;
  wrong.resume = first.checkpoint;
  CHECK(!finetune(*head, data(), "data.npz", wrong, {}, &error).ok());
  CHECK(error == "checkpoint '" + first.checkpoint + "' trains fc1.bias, fc1.weight, fc2.bias, fc2.weight; this run "
                 "trains fc2.bias, fc2.weight (use the same --train / --freeze / --lora)");
  auto cnn = trainer(convert("cnn"), {"*"});
  wrong.inputs = {{"x", "img"}};
  wrong.target = "cls";
  CHECK(!finetune(*cnn, data(), "data.npz", wrong, {}, &error).ok());
  CHECK(error.find("was made for another model") != std::string::npos);
}

TEST_CASE("the weight selection explains what cannot be trained") {
  std::string error;
  CHECK(!Trainer::create(convert("mlp"), {{"fc3.*"}, {}}, &error).ok());
  CHECK(error == "--train 'fc3.*' matches no weight; trainable weights: fc1.weight, fc1.bias, fc2.weight, fc2.bias");
  CHECK(!Trainer::create(convert("mlp"), {{"*"}, {"*"}}, &error).ok());
  CHECK(error == "no weight selected for training; trainable weights: fc1.weight, fc1.bias, fc2.weight, fc2.bias");
  // int8: fc1's weight (128 elements) quantized, fc2's (64) left in float32.
  converter::ConvertOptions q;
  q.quantize = "dynamic-int8";
  q.min_weight_elements = 100;
  auto int8 = convert("mlp", q, "_int8");
  CHECK(!Trainer::create(int8, {{"fc1.weight"}, {}}, &error).ok());
  CHECK(error == "weight 'fc1.weight' cannot be trained: an int8 (quantized) weight (train a LoRA adapter on it, "
                 "--lora, or convert without --quantize)");
  // A head on an int8 backbone trains (the int8 layer is frozen; nothing flows back through it).
  auto head = trainer(int8, {"fc2.*"});
  FinetuneConfig c = on_x("y");
  c.lr = 0.5;
  c.epochs = 20;
  c.batch_size = 10;
  Result<FinetuneResult> r = finetune(*head, data(), "data.npz", c, {}, &error);
  REQUIRE_MESSAGE(r.ok(), error);
  CHECK(r->epoch_loss.back() < 0.7 * r->epoch_loss.front());  // 1.47 -> 0.83
}

TEST_CASE("data checks name the key and the file") {
  auto t = trainer(convert("mlp"), {"fc2.*"});
  FinetuneConfig c;
  c.inputs = {{"x", "x"}};
  c.target = "nope";
  std::string error;
  CHECK(finetune(*t, data(), "data.npz", c, {}, &error).status() == Status::InvalidArgument);
  CHECK(error == "'data.npz' has no array 'nope' (it has x, y, t, img, cls, seq)");
  c.target = "t";  // float targets for cross-entropy
  CHECK(finetune(*t, data(), "data.npz", c, {}, &error).status() == Status::DTypeMismatch);
  CHECK(error == "'data.npz': target 't' is float32; cross-entropy takes integer class labels");
  c.target = "cls";
  c.inputs = {{"x", "img"}};
  CHECK(finetune(*t, data(), "data.npz", c, {}, &error).status() == Status::ShapeMismatch);
  CHECK(error == "'data.npz': array 'img' has rank 4, model input 'x' rank 2 (the first dim is the batch)");
  c.inputs = {{"x", "x"}};
  c.loss = "mse";
  c.target = "y";
  CHECK(finetune(*t, data(), "data.npz", c, {}, &error).status() == Status::DTypeMismatch);
  c.loss = "cross-entropy";
  c.lr = 0;
  CHECK(finetune(*t, data(), "data.npz", c, {}, &error).status() == Status::InvalidArgument);
  CHECK(error == "--lr must be positive");
  c.lr = 0.01;
  c.scheduler = "step:0.5";
  CHECK(finetune(*t, data(), "data.npz", c, {}, &error).status() == Status::InvalidArgument);
  CHECK(error == "--scheduler 'step:0.5': expected step:SIZE:GAMMA or cosine:TMAX (e.g. step:10:0.5)");
  // Labels out of range for the model's 4 classes.
  std::vector<NpzEntry> d = data();
  d[1].value = full({10}, 7, DType::Int64);
  c.scheduler = "";
  CHECK(finetune(*t, d, "data.npz", c, {}, &error).status() == Status::InvalidArgument);
  CHECK(error == "'data.npz': target 'y' holds label 7 at 0, outside [0, 4)");
}

}  // namespace
}  // namespace ember
