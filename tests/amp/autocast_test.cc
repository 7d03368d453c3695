// Autocast (runtime/amp/autocast.h) on the CPU in bfloat16 against
// torch.autocast("cpu", dtype=torch.bfloat16) (tests/golden/golden_amp.py):
// every listed op's output dtype exactly and its values, a small MLP's and a
// small CNN's forward and their float32 gradients; the state and guards; the
// policy table of the other devices.
//
// Tolerances. linear, matmul, mm and conv2d in bfloat16 are bit-exact: the
// reference kernels accumulate as PyTorch 1.13's CPU gemm does (float dot
// products for the transposed weight of a linear, the bias inside the sum;
// per-step bf16 rounding for slow_conv2d), so those outputs are compared
// exactly. Other bf16 outputs may differ in their last bit (bmm: PyTorch's
// small-batch kernel sums sequentially in float, ember in four partial sums):
// one bf16 step, rtol = atol = 2^-7. float32 outputs from the same inputs:
// 1e-5 (float32 reordering). The models' outputs are bit-exact on this data;
// the MLP's loss and gradients match within float32's 1e-5, the CNN's within
// 2e-2 of the tensor's largest value: conv2d's bf16 backward rounds
// differently from PyTorch's, by a bf16 step that every value computed after
// it inherits.
#include <functional>
#include <string>
#include <vector>

#include "runtime/amp/autocast.h"
#include "runtime/nn/loss.h"
#include "runtime/nn/module.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::golden;

namespace {

constexpr double kBf16Tol = 1.0 / 128;  // one bf16 step (2^-8 to 2^-7 relative)
constexpr double kModelTol = 2e-2;

using OpFn = std::function<Tensor(const std::function<Tensor(const Tensor&)>&)>;

struct OpCase {
  const char* name;
  OpFn fn;
  bool exact = false;  // bf16 output bit-exact with PyTorch's
};

std::vector<OpCase> op_cases() {
  const Tensor x = golden("amp.in.x"), w = golden("amp.in.w"), b = golden("amp.in.b");
  const Tensor img = golden("amp.in.img"), cw = golden("amp.in.cw"), cb = golden("amp.in.cb");
  const Tensor tw = golden("amp.in.tw"), target = golden("amp.in.target"), prob = golden("amp.in.prob");
  const Tensor grid = golden("amp.in.grid");
  return {
      {"linear", [=](auto h) { return linear(h(x), w, b); }, true},
      {"matmul", [=](auto h) { return matmul(h(x), w.t()); }, true},
      {"mm", [=](auto h) { return mm(h(x), w.t()); }, true},
      {"bmm", [=](auto h) { return bmm(h(x).unsqueeze(0), w.t().unsqueeze(0)); }},
      {"conv2d", [=](auto h) { return conv2d(h(img), cw, cb, {1, 1}, {1, 1}); }, true},
      {"conv_transpose2d", [=](auto h) { return conv_transpose2d(h(img), tw, Tensor(), {2}); }},
      {"softmax", [=](auto h) { return softmax(h(x), 1); }},
      {"log_softmax", [=](auto h) { return log_softmax(h(x), 1); }},
      {"layer_norm", [=](auto h) { return layer_norm(h(x), {8}); }},
      {"sum", [=](auto h) { return sum(h(x)); }},
      {"prod", [=](auto h) { return prod(h(x[0])); }},
      {"cumsum", [=](auto h) { return cumsum(h(x), 1); }},
      {"exp", [=](auto h) { return exp(h(x)); }},
      {"pow", [=](auto h) { return pow(h(x), 2); }},
      {"relu", [=](auto h) { return relu(h(x)); }},
      {"add", [=](auto h) { return h(x) + x; }},
      {"mse_loss", [=](auto h) { return nn::mse_loss(h(x), h(prob)); }},
      {"l1_loss", [=](auto h) { return nn::l1_loss(h(x), h(prob)); }},
      {"nll_loss", [=](auto h) { return nn::nll_loss(h(x), target); }},
      {"cross_entropy", [=](auto h) { return nn::cross_entropy(h(x), target); }},
      {"bce_with_logits", [=](auto h) { return nn::binary_cross_entropy_with_logits(h(x), h(prob)); }},
      {"cat", [=](auto h) { return cat({h(x), x}); }},
      {"cat_same", [=](auto h) { return cat({h(x), h(w)}); }},
      {"stack", [=](auto h) { return stack({h(x), x}); }},
      {"pad_reflect", [=](auto h) { return pad(h(img), {1, 1, 1, 1}, "reflect"); }},
      {"pad_constant", [=](auto h) { return pad(h(img), {1, 1, 1, 1}); }},
      {"grid_sample", [=](auto h) { return grid_sample(h(img), grid, "bilinear", "zeros", false); }},
  };
}

// Linear(8,16) ReLU Linear(16,4) / Conv2d(3,4,3,p=1) ReLU MaxPool2d(2) Flatten Linear(36,5),
// with PyTorch's initial weights.
std::shared_ptr<nn::Sequential> mlp(const std::string& prefix, int64_t hidden = 16) {
  auto model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(8, hidden), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(hidden, 4)});
  nn::StateDict init;
  for (const auto& [key, value] : model->state_dict()) init.emplace_back(key, golden(prefix + ".init." + key));
  model->load_state_dict(init);
  return model;
}

std::shared_ptr<nn::Sequential> cnn() {
  auto model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(3, 4, 3, 1, 1), std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(36, 5)});
  nn::StateDict init;
  for (const auto& [key, value] : model->state_dict()) init.emplace_back(key, golden("amp.cnn.init." + key));
  model->load_state_dict(init);
  return model;
}

// |a - e| <= tol * max|e| elementwise: an error relative to the tensor's scale
// (bf16 activations perturb small gradient entries as much as large ones).
void check_close_scaled(const Tensor& actual, const Tensor& expected, double tol) {
  const double scale = expected.abs().max().item<double>();
  const double diff = (actual.to(DType::Float64) - expected.to(DType::Float64)).abs().max().item<double>();
  MESSAGE("max |diff| / max |expected| = " << diff / scale);
  check_close(actual, expected, 0.0, tol * scale);
}

// Forward under autocast, backward outside it, as golden_amp.py's record_model.
void check_model(nn::Module& model, const std::string& prefix, const std::function<Tensor(const Tensor&)>& loss_fn,
                 double tol) {
  Tensor out, loss;
  {
    amp::Autocast autocast(DeviceType::CPU, DType::BFloat16);
    out = model(golden(prefix + ".x"));
    loss = loss_fn(out);
  }
  check_equal(out, golden(prefix + ".out"));  // bfloat16, bit-exact
  REQUIRE(loss.dtype() == DType::Float32);
  check_close(loss, golden(prefix + ".loss"), tol, 1e-6);
  loss.backward();
  for (const auto& [key, p] : model.named_parameters()) {
    INFO(prefix << " grad " << key);
    CHECK(p.grad().dtype() == DType::Float32);
    check_close_scaled(p.grad(), golden(prefix + ".grad." + key), tol);
  }
}

}  // namespace

TEST_CASE("autocast: per-op output dtypes and values match torch.autocast('cpu', bfloat16)") {
  for (const OpCase& c : op_cases()) {
    for (const bool bf16 : {false, true}) {
      const std::string name = std::string("amp.op.") + c.name + (bf16 ? ".bf16" : ".fp32");
      INFO(name);
      const auto h = [bf16](const Tensor& t) { return bf16 ? t.to(DType::BFloat16) : t; };
      Tensor out;
      {
        amp::Autocast autocast(DeviceType::CPU);
        out = c.fn(h);
      }
      const Tensor expected = golden(name);
      REQUIRE(out.dtype() == expected.dtype());
      if (c.exact) {
        check_equal(out, expected);
      } else if (out.dtype() == DType::BFloat16) {
        check_close(out, expected, kBf16Tol, kBf16Tol);
      } else {
        check_close(out, expected, 1e-5, 1e-5);
      }
      // Outside the guard nothing is cast: float32 inputs give float32.
      if (!bf16) CHECK(c.fn(h).dtype() == DType::Float32);
    }
  }
}

TEST_CASE("autocast: an MLP and a CNN forward in bf16, fp32 gradients match PyTorch") {
  auto m = mlp("amp.mlp");
  const Tensor target = golden("amp.mlp.target");
  // Every bf16 op of the MLP's forward and backward is bit-exact with PyTorch's: float32 tolerance.
  check_model(*m, "amp.mlp", [&](const Tensor& out) { return nn::cross_entropy(out, target); }, 1e-5);
  auto c = cnn();
  const Tensor y = golden("amp.cnn.y");
  // conv2d's bf16 backward rounds differently from PyTorch's (measured: 1.2e-2 of the largest weight gradient).
  check_model(*c, "amp.cnn", [&](const Tensor& out) { return nn::mse_loss(out, y); }, kModelTol);
}

TEST_CASE("autocast: casts are recorded by autograd; backward inside the region runs in the forward's types") {
  const Tensor x = golden("amp.in.x");
  Tensor outside_grad;
  for (const bool backward_inside : {false, true}) {
    Tensor w = golden("amp.in.w").clone().requires_grad_();
    amp::Autocast autocast(DeviceType::CPU);
    const Tensor y = linear(x, w);
    CHECK(y.dtype() == DType::BFloat16);
    CHECK(y.grad_fn() != nullptr);
    const Tensor loss = nn::mse_loss(y, zeros({4, 6}));
    CHECK(loss.dtype() == DType::Float32);
    if (backward_inside) {
      loss.backward();
      check_equal(w.grad(), outside_grad);  // same graph, same types: bit for bit
    } else {
      amp::Autocast off(DeviceType::CPU, std::nullopt, false);
      loss.backward();
      outside_grad = w.grad();
    }
    CHECK(w.grad().dtype() == DType::Float32);
  }
}

TEST_CASE("autocast: state, nesting and restoring") {
  CHECK_FALSE(amp::is_autocast_enabled(DeviceType::CPU));
  CHECK_FALSE(amp::is_autocast_enabled(DeviceType::CUDA));
  CHECK(amp::get_autocast_dtype(DeviceType::CPU) == DType::BFloat16);
  CHECK(amp::get_autocast_dtype(DeviceType::CUDA) == DType::Float16);
  CHECK(amp::get_autocast_dtype(DeviceType::Vulkan) == DType::Float16);
  const Tensor x = golden("amp.in.x"), w = golden("amp.in.w");
  {
    amp::Autocast outer(DeviceType::CPU);
    CHECK(amp::is_autocast_enabled(DeviceType::CPU));
    CHECK(mm(x, w.t()).dtype() == DType::BFloat16);
    {
      amp::Autocast inner(DeviceType::CPU, std::nullopt, /*enabled=*/false);
      CHECK_FALSE(amp::is_autocast_enabled(DeviceType::CPU));
      CHECK(mm(x, w.t()).dtype() == DType::Float32);
      {
        amp::Autocast again(DeviceType::CPU);
        CHECK(mm(x, w.t()).dtype() == DType::BFloat16);
      }
      CHECK(mm(x, w.t()).dtype() == DType::Float32);
    }
    CHECK(amp::is_autocast_enabled(DeviceType::CPU));
    CHECK(mm(x, w.t()).dtype() == DType::BFloat16);
    {
      // Another device type's guard leaves CPU ops alone and the CPU state too.
      amp::Autocast cuda(DeviceType::CUDA);
      CHECK(amp::is_autocast_enabled(DeviceType::CUDA));
      CHECK(amp::get_autocast_dtype(DeviceType::CUDA) == DType::Float16);
      CHECK(mm(x, w.t()).dtype() == DType::BFloat16);
    }
    CHECK_FALSE(amp::is_autocast_enabled(DeviceType::CUDA));
  }
  CHECK_FALSE(amp::is_autocast_enabled(DeviceType::CPU));
  CHECK(mm(x, w.t()).dtype() == DType::Float32);
  {
    // Ops on CPU tensors are unaffected by autocast on another device type.
    amp::Autocast cuda(DeviceType::CUDA, DType::BFloat16);
    CHECK(amp::get_autocast_dtype(DeviceType::CUDA) == DType::BFloat16);
    CHECK(mm(x, w.t()).dtype() == DType::Float32);
    CHECK(softmax(x.to(DType::BFloat16), 1).dtype() == DType::BFloat16);  // CUDA's list casts softmax; CPU tensor
  }
  CHECK(amp::get_autocast_dtype(DeviceType::CUDA) == DType::Float16);
  CHECK_THROWS_WITH(amp::Autocast(DeviceType::CPU, DType::Float16),
                    "Currently, AutocastCPU only support Bfloat16 as the autocast_cpu_dtype");
  CHECK_FALSE(amp::is_autocast_enabled(DeviceType::CPU));
}

TEST_CASE("autocast: only floating inputs are cast, float64 never; NoGradGuard still casts") {
  amp::Autocast autocast(DeviceType::CPU);
  const Tensor x = golden("amp.in.x"), w = golden("amp.in.w");
  CHECK(linear(x.to(DType::Float64), w.to(DType::Float64)).dtype() == DType::Float64);
  CHECK(cat({x.to(DType::Float64), x}).dtype() == DType::Float64);
  CHECK(cat({x.to(DType::Int64), x.to(DType::BFloat16)}).dtype() == DType::BFloat16);
  // bf16 and fp16 under bf16 autocast: float32, as PyTorch 1.13.
  CHECK(cat({x.to(DType::BFloat16), x.to(DType::Float16)}).dtype() == DType::Float32);
  CHECK(nn::cross_entropy(x.to(DType::BFloat16), golden("amp.in.target")).dtype() == DType::Float32);
  {
    NoGradGuard no_grad;
    CHECK(mm(x, w.t()).dtype() == DType::BFloat16);
  }
  // Explicit dtype arguments win (PyTorch's fp32_set_opt_dtype leaves them).
  CHECK(sum(x.to(DType::BFloat16), DType::BFloat16).dtype() == DType::BFloat16);
}

TEST_CASE("autocast: the policy table, CPU (torch 1.13's AutocastCPU) and other devices (AutocastCUDA)") {
  using amp::CastPolicy;
  using amp::Op;
  struct Row {
    Op op;
    CastPolicy cpu, cuda;
  };
  const Row rows[] = {
      {Op::Linear, CastPolicy::Lower, CastPolicy::Lower},
      {Op::Conv2d, CastPolicy::Lower, CastPolicy::Lower},
      {Op::ConvTranspose2d, CastPolicy::Float32, CastPolicy::Lower},
      {Op::Softmax, CastPolicy::None, CastPolicy::Float32},
      {Op::LayerNorm, CastPolicy::None, CastPolicy::Float32},
      {Op::Sum, CastPolicy::None, CastPolicy::Float32},
      {Op::Exp, CastPolicy::None, CastPolicy::Float32},
      {Op::Prod, CastPolicy::Float32, CastPolicy::Float32},
      {Op::CrossEntropy, CastPolicy::Float32, CastPolicy::Float32},
      {Op::ReflectionPad, CastPolicy::Float32, CastPolicy::None},
      {Op::Cat, CastPolicy::Promote, CastPolicy::Promote},
  };
  for (const Row& r : rows) {
    INFO(amp::op_name(r.op));
    CHECK(amp::cast_policy(DeviceType::CPU, r.op) == r.cpu);
    CHECK(amp::cast_policy(DeviceType::CUDA, r.op) == r.cuda);
    CHECK(amp::cast_policy(DeviceType::Vulkan, r.op) == r.cuda);
  }
  CHECK(std::string(amp::op_name(Op::CrossEntropy)) == "cross_entropy_loss");
  CHECK(amp::unary_autocast_op(OpKind::Exp) == Op::Exp);
  CHECK_FALSE(amp::unary_autocast_op(OpKind::Relu).has_value());
}

TEST_CASE("autocast: a weight is cast once per region (the cast cache), cleared by the outermost guard") {
  const Tensor x = golden("amp.in.x");
  Tensor single = golden("amp.in.w").clone().requires_grad_();
  {
    amp::Autocast autocast(DeviceType::CPU, std::nullopt, true, /*cache_enabled=*/false);
    CHECK_FALSE(amp::is_autocast_cache_enabled());
    linear(x, single).sum().backward();
    CHECK(amp::autocast_cache_size() == 0);
  }
  CHECK(amp::is_autocast_cache_enabled());
  Tensor w = golden("amp.in.w").clone().requires_grad_();
  Tensor y1, y2;
  {
    amp::Autocast autocast(DeviceType::CPU);
    y1 = linear(x, w);
    CHECK(amp::autocast_cache_size() == 1);  // w; x is not a leaf that requires grad
    y2 = linear(x, w);
    CHECK(amp::autocast_cache_size() == 1);
    {
      amp::Autocast inner(DeviceType::CPU);
      (void)mm(x, w.t());  // w.t() is not a leaf: cast, not cached
      CHECK(amp::autocast_cache_size() == 1);
    }
    CHECK(amp::autocast_cache_size() == 1);  // only the outermost guard clears it
    {
      NoGradGuard no_grad;  // a cast made without history is not cached
      Tensor other = golden("amp.in.w").clone().requires_grad_();
      CHECK(linear(x, other).dtype() == DType::BFloat16);
      CHECK(amp::autocast_cache_size() == 1);
    }
  }
  CHECK(amp::autocast_cache_size() == 0);
  // Both uses share one ToCopyBackward0: the gradient is the sum of both.
  (y1.sum() + y2.sum()).backward();
  check_equal(w.grad(), single.grad() * 2);
}
