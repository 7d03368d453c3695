// Training on CUDA tensors (issue 13 item 5): the same model, data and seed
// trained on the CPU and on "cuda" (the host emulation here, a GPU in the
// --config=cuda build) give the same per-step losses and final parameters.
// Tolerances: float32 rtol 1e-4 / atol 1e-5 (the CUDA GEMM and reductions
// accumulate in another order; a few optimizer steps amplify the rounding a
// little); float16 / bfloat16 autocast against a float32 CPU loop: 2e-2 / 5e-2
// (fp16 has an 11-bit significand, bf16 8 bits).
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "runtime/amp/autocast.h"
#include "runtime/amp/grad_scaler.h"
#include "runtime/nn/loss.h"
#include "runtime/nn/module.h"
#include "runtime/optim/clip_grad.h"
#include "runtime/optim/lr_scheduler.h"
#include "runtime/optim/optimizer.h"
#include "tests/harness/testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

const Device kCuda("cuda");

std::shared_ptr<nn::Sequential> make_mlp() {
  manual_seed(1);
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(8, 16), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(16, 4)});
}

// Conv2d without a bias before BatchNorm2d (as usual): the bias's gradient is
// zero in exact arithmetic, rounding noise (~1e-8) in practice, which Adam
// normalizes to steps of ~lr that differ between any two summation orders.
std::shared_ptr<nn::Sequential> make_cnn() {
  manual_seed(2);
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(2, 4, 3, 1, 1, 1, 1, /*bias=*/false), std::make_shared<nn::BatchNorm2d>(4),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(4 * 4 * 4, 3)});
}

using OptFactory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

std::vector<OptFactory> optimizers() {
  return {
      [](std::vector<Tensor> p) {
        return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{0.1, 0.9, 0.0, 1e-4, false});
      },
      [](std::vector<Tensor> p) {
        optim::AdamOptions o;
        o.lr = 1e-2;
        return std::make_unique<optim::Adam>(std::move(p), o);
      },
      [](std::vector<Tensor> p) {
        optim::AdamWOptions o;
        o.lr = 1e-2;
        return std::make_unique<optim::AdamW>(std::move(p), o);
      },
  };
}

struct Run {
  std::vector<double> losses;
  std::vector<Tensor> params;  // on the CPU
  std::vector<double> lrs;
};

// `steps` steps of `opt` on (x, y) moved to `device`; with clip and a StepLR when asked.
Run train(std::shared_ptr<nn::Module> model, Device device, const Tensor& x, const Tensor& y,
          const OptFactory& make_opt, int steps, bool clip_and_schedule = false) {
  model->to(device);
  for (const Tensor& p : model->parameters()) CHECK(p.device() == storage_device(device));
  auto opt = make_opt(model->parameters());
  optim::StepLR sched(*opt, 2, 0.5);
  const Tensor xd = x.to(device), yd = y.to(device);
  Run run;
  for (int s = 0; s < steps; ++s) {
    opt->zero_grad();
    const Tensor loss = nn::cross_entropy((*model)(xd), yd);
    CHECK(loss.device() == storage_device(device));
    loss.backward();
    for (const Tensor& p : model->parameters()) CHECK(p.grad().device() == storage_device(device));
    if (clip_and_schedule) optim::clip_grad_norm_(model->parameters(), 0.5);
    opt->step();
    if (clip_and_schedule) {
      sched.step();
      run.lrs.push_back(opt->lr());
    }
    run.losses.push_back(loss.item<double>());
  }
  for (const Tensor& p : model->parameters()) run.params.push_back(p.detach().cpu().clone());
  for (const Tensor& b : model->buffers()) run.params.push_back(b.cpu().clone());
  return run;
}

void check_runs(const Run& cuda, const Run& cpu, double rtol, double atol) {
  REQUIRE(cuda.losses.size() == cpu.losses.size());
  for (size_t i = 0; i < cpu.losses.size(); ++i) {
    CAPTURE(i);
    CHECK(cuda.losses[i] == doctest::Approx(cpu.losses[i]).epsilon(rtol));
  }
  REQUIRE(cuda.params.size() == cpu.params.size());
  for (size_t i = 0; i < cpu.params.size(); ++i) {
    CAPTURE(i);
    if (is_floating(cpu.params[i].dtype())) {
      check_close(cuda.params[i], cpu.params[i], rtol, atol);
    } else {
      check_equal(cuda.params[i], cpu.params[i]);
    }
  }
  CHECK(cuda.lrs == cpu.lrs);
}

}  // namespace

TEST_CASE("module.to(cuda) moves parameters and buffers in place, keeping their identity") {
  auto cnn = make_cnn();
  const Tensor w = cnn->parameters()[0];
  const Tensor before = w.detach().clone();
  cnn->to(kCuda);
  CHECK(w.device() == Device("cuda:0"));  // the same handle now lives on the device
  CHECK(w.requires_grad());
  CHECK(w.is_leaf());
  for (const Tensor& b : cnn->buffers()) CHECK(b.device() == Device("cuda:0"));
  check_equal(w.detach().cpu(), before);
  cnn->to(Device("cpu"));
  CHECK(w.device() == Device("cpu"));
  check_equal(w.detach(), before);
}

TEST_CASE("MLP and CNN: SGD (momentum), Adam and AdamW on cuda match the CPU") {
  manual_seed(10);
  const Tensor xm = randn({6, 8});
  const Tensor ym = randint(0, 4, {6});
  const Tensor xc = randn({4, 2, 8, 8});
  const Tensor yc = randint(0, 3, {4});
  const std::vector<OptFactory> opts = optimizers();
  for (size_t k = 0; k < opts.size(); ++k) {
    CAPTURE(k);  // SGD, Adam, AdamW
    const OptFactory& opt = opts[k];
    check_runs(train(make_mlp(), kCuda, xm, ym, opt, 5), train(make_mlp(), Device("cpu"), xm, ym, opt, 5), 1e-4,
               1e-5);
    check_runs(train(make_cnn(), kCuda, xc, yc, opt, 4), train(make_cnn(), Device("cpu"), xc, yc, opt, 4), 1e-4,
               1e-5);
  }
}

TEST_CASE("clip_grad_norm_ and StepLR on cuda parameters match the CPU") {
  manual_seed(11);
  const Tensor x = randn({6, 8});
  const Tensor y = randint(0, 4, {6});
  for (const OptFactory& opt : optimizers()) {
    check_runs(train(make_mlp(), kCuda, x, y, opt, 5, true), train(make_mlp(), Device("cpu"), x, y, opt, 5, true),
               1e-4, 1e-5);
  }
  // The total norm clip_grad_norm_ returns.
  auto a = make_mlp(), b = make_mlp();
  a->to(kCuda);
  nn::cross_entropy((*a)(x.cuda()), y.cuda()).backward();
  nn::cross_entropy((*b)(x), y).backward();
  CHECK(optim::clip_grad_norm_(a->parameters(), 0.1) ==
        doctest::Approx(optim::clip_grad_norm_(b->parameters(), 0.1)).epsilon(1e-5));
  for (size_t i = 0; i < a->parameters().size(); ++i) {
    check_close(a->parameters()[i].grad().cpu(), b->parameters()[i].grad(), 1e-4, 1e-6);
  }
}

TEST_CASE("AMP on cuda: float16 autocast + GradScaler tracks a float32 CPU loop") {
  manual_seed(12);
  const Tensor x = randn({6, 8});
  const Tensor y = randint(0, 4, {6});
  for (DType low : {DType::Float16, DType::BFloat16}) {
    CAPTURE(std::string(dtype_name(low)));
    auto amp_model = make_mlp();
    auto ref_model = make_mlp();
    amp_model->to(kCuda);
    optim::SGD amp_opt(amp_model->parameters(), {0.1, 0.9});
    optim::SGD ref_opt(ref_model->parameters(), {0.1, 0.9});
    amp::GradScaler scaler;
    const Tensor xd = x.cuda(), yd = y.cuda();
    for (int s = 0; s < 4; ++s) {
      amp_opt.zero_grad();
      Tensor loss;
      {
        amp::Autocast autocast(DeviceType::CUDA, low);
        const Tensor out = (*amp_model)(xd);
        CHECK(out.dtype() == low);  // linear: the lower precision
        CHECK(softmax(out, 1).dtype() == DType::Float32);
        loss = nn::cross_entropy(out, yd);
        CHECK(loss.dtype() == DType::Float32);  // losses: float32
        CHECK(matmul(xd, xd.t()).dtype() == low);
      }
      scaler.scale(loss).backward();
      for (const Tensor& p : amp_model->parameters()) {
        CHECK(p.dtype() == DType::Float32);
        CHECK(p.grad().dtype() == DType::Float32);
        CHECK(p.grad().device() == Device("cuda:0"));
      }
      CHECK(scaler.step(amp_opt));
      scaler.update();

      ref_opt.zero_grad();
      const Tensor ref_loss = nn::cross_entropy((*ref_model)(x), y);
      ref_loss.backward();
      ref_opt.step();
      const double tol = low == DType::Float16 ? 2e-2 : 5e-2;
      CHECK(loss.item<double>() == doctest::Approx(ref_loss.item<double>()).epsilon(tol));
    }
    for (size_t i = 0; i < ref_model->parameters().size(); ++i) {
      check_close(amp_model->parameters()[i].detach().cpu(), ref_model->parameters()[i].detach(), 5e-2, 5e-2);
    }
  }
}

TEST_CASE("AMP on cuda: conv2d autocasts to float16") {
  manual_seed(13);
  auto cnn = make_cnn();
  cnn->to(kCuda);
  amp::Autocast autocast(DeviceType::CUDA, DType::Float16);
  const Tensor x = randn({2, 2, 8, 8}).cuda();
  CHECK(conv2d(x, cnn->parameters()[0]).dtype() == DType::Float16);
}

TEST_CASE("AMP on cuda: an inf gradient skips the step and backs the scale off") {
  auto model = make_mlp();
  model->to(kCuda);
  optim::SGD opt(model->parameters(), {0.1});
  amp::GradScaler scaler;
  manual_seed(14);
  const Tensor x = randn({6, 8}).cuda();
  const Tensor y = randint(0, 4, {6}).cuda();
  Tensor loss;
  {
    amp::Autocast autocast(DeviceType::CUDA, DType::Float16);
    loss = nn::cross_entropy((*model)(x), y);
  }
  scaler.scale(loss).backward();
  std::vector<Tensor> before;
  for (const Tensor& p : model->parameters()) before.push_back(p.detach().cpu());
  Tensor g = model->parameters()[0].grad();
  g.select(0, 0).select(0, 0).fill_(std::numeric_limits<double>::infinity());
  const double scale = scaler.get_scale();
  CHECK_FALSE(scaler.step(opt));
  REQUIRE(scaler.found_inf(opt).has_value());
  CHECK(*scaler.found_inf(opt) == 1.0);
  scaler.update();
  CHECK(scaler.get_scale() == scale * 0.5);
  for (size_t i = 0; i < before.size(); ++i) check_equal(model->parameters()[i].detach().cpu(), before[i]);
}

TEST_CASE("errors: a CPU tensor in a CUDA step names both devices") {
  auto model = make_mlp();
  model->to(kCuda);
  const Tensor x = randn({6, 8});
  CHECK_THROWS_WITH_AS((*model)(x), doctest::Contains("found at least two devices"), ember::Error);
  const Tensor out = (*model)(x.cuda());
  CHECK_THROWS_WITH_AS(nn::cross_entropy(out, randint(0, 4, {6})), doctest::Contains("found at least two devices"),
                       ember::Error);
}

// PyTorch's single-tensor (for-loop) optimizers, the default when the
// parameters are not all on CUDA, step each parameter on its own device
// without an error; ember does the same.
TEST_CASE("an optimizer over parameters on two devices steps each on its own device") {
  manual_seed(15);
  Tensor a = randn({3}).cuda().requires_grad_();
  Tensor b = randn({3}).requires_grad_();
  const Tensor a0 = a.detach().cpu(), b0 = b.detach().clone();
  (a.sum() * 2.0).backward();
  (b.sum() * 3.0).backward();
  optim::SGD opt({a, b}, {0.1, 0.9});
  opt.step();
  CHECK(a.device() == Device("cuda:0"));
  CHECK(b.device() == Device("cpu"));
  check_close(a.detach().cpu(), a0 - 0.2, 1e-6, 1e-6);
  check_close(b.detach(), b0 - 0.3, 1e-6, 1e-6);
}

// torch.nn.utils.clip_grad_norm_ stacks the norms on the first gradient's
// device and scales each gradient on its own.
TEST_CASE("clip_grad_norm_ over gradients on two devices") {
  Tensor a = zeros({2}).cuda().requires_grad_();
  Tensor b = zeros({1}).requires_grad_();
  a.set_grad(full({2}, 3.0).cuda());
  b.set_grad(full({1}, 6.0));
  CHECK(optim::clip_grad_norm_({a, b}, 1.0) == doctest::Approx(std::sqrt(54.0)));
  const double c = 1.0 / (std::sqrt(54.0) + 1e-6);
  check_close(a.grad().cpu(), full({2}, 3.0 * c), 1e-5, 1e-6);
  check_close(b.grad(), full({1}, 6.0 * c), 1e-5, 1e-6);
  CHECK(a.grad().device() == Device("cuda:0"));
}

// The mask comes from the CPU generator, so the same seed drops the same elements on both devices.
TEST_CASE("Dropout on cuda drops what the CPU drops") {
  nn::Dropout drop(0.5), all(1.0);
  const Tensor x = arange(64, DType::Float32).reshape({8, 8}) + 1.0;
  manual_seed(16);
  const Tensor on_cpu = drop(x);
  manual_seed(16);
  const Tensor on_cuda = drop(x.cuda());
  CHECK(on_cuda.device() == Device("cuda:0"));
  check_equal(on_cuda.cpu(), on_cpu);
  check_equal(all(x.cuda()).cpu(), zeros({8, 8}));
}

namespace {

class Tagger : public nn::Module {
 public:
  Tagger() : Module("Tagger") {
    manual_seed(3);
    emb = register_module("emb", std::make_shared<nn::Embedding>(10, 8));
    norm = register_module("norm", std::make_shared<nn::LayerNorm>(Shape{8}));
    act = register_module("act", std::make_shared<nn::GELU>());
    head = register_module("head", std::make_shared<nn::Linear>(8, 2));
  }
  Tensor forward(const Tensor& ids) override { return (*head)((*act)((*norm)((*emb)(ids)))); }
  std::shared_ptr<nn::Embedding> emb;
  std::shared_ptr<nn::LayerNorm> norm;
  std::shared_ptr<nn::GELU> act;
  std::shared_ptr<nn::Linear> head;
};

}  // namespace

TEST_CASE("Embedding, LayerNorm, GELU with mse_loss and BCE-with-logits under AdamW on cuda match the CPU") {
  manual_seed(17);
  const Tensor ids = randint(0, 10, {3, 5});
  const Tensor target = randn({3, 5, 2});
  const Tensor labels = gt(randn({3, 5, 2}), 0.0).to(DType::Float32);
  std::vector<std::vector<double>> losses;
  std::vector<std::vector<Tensor>> params;
  for (Device device : {kCuda, Device("cpu")}) {
    Tagger model;
    model.to(device);
    optim::AdamW opt(model.parameters(), [] {
      optim::AdamWOptions o;
      o.lr = 1e-2;
      return o;
    }());
    const Tensor i = ids.to(device), t = target.to(device), l = labels.to(device);
    losses.emplace_back();
    for (int s = 0; s < 4; ++s) {
      opt.zero_grad();
      const Tensor out = model(i);
      const Tensor loss = nn::mse_loss(out, t) + nn::binary_cross_entropy_with_logits(out, l);
      loss.backward();
      opt.step();
      losses.back().push_back(loss.item<double>());
    }
    params.emplace_back();
    for (const Tensor& p : model.parameters()) params.back().push_back(p.detach().cpu().clone());
    // The optimizer's state stays on the parameters' device and reloads there.
    const optim::OptimizerState state = opt.state_dict();
    optim::AdamW again(model.parameters());
    again.load_state_dict(state);
    opt.zero_grad();
    model(i).sum().backward();
    again.step();
    for (const Tensor& p : model.parameters()) CHECK(p.device() == storage_device(device));
  }
  for (size_t s = 0; s < losses[0].size(); ++s) CHECK(losses[0][s] == doctest::Approx(losses[1][s]).epsilon(1e-4));
  for (size_t k = 0; k < params[0].size(); ++k) {
    CAPTURE(k);  // emb.weight, norm.weight, norm.bias, head.weight, head.bias
    check_close(params[0][k], params[1][k], 1e-4, 1e-5);
  }
}

TEST_CASE("AMP on cuda: the CNN (Conv2d, BatchNorm2d, MaxPool2d, Linear) trains under float16 autocast") {
  manual_seed(18);
  const Tensor x = randn({4, 2, 8, 8});
  const Tensor y = randint(0, 3, {4});
  auto amp_model = make_cnn();
  auto ref_model = make_cnn();
  amp_model->to(kCuda);
  optim::SGD amp_opt(amp_model->parameters(), {0.05, 0.9});
  optim::SGD ref_opt(ref_model->parameters(), {0.05, 0.9});
  amp::GradScaler scaler;
  for (int s = 0; s < 3; ++s) {
    CAPTURE(s);
    amp_opt.zero_grad();
    Tensor loss;
    {
      amp::Autocast autocast(DeviceType::CUDA, DType::Float16);
      loss = nn::cross_entropy((*amp_model)(x.cuda()), y.cuda());
    }
    CHECK(loss.dtype() == DType::Float32);
    scaler.scale(loss).backward();
    for (const Tensor& p : amp_model->parameters()) CHECK(p.grad().dtype() == DType::Float32);
    CHECK(scaler.step(amp_opt));
    scaler.update();
    ref_opt.zero_grad();
    const Tensor ref_loss = nn::cross_entropy((*ref_model)(x), y);
    ref_loss.backward();
    ref_opt.step();
    CHECK(loss.item<double>() == doctest::Approx(ref_loss.item<double>()).epsilon(2e-2));
  }
  for (const Tensor& b : amp_model->buffers()) CHECK(b.device() == Device("cuda:0"));
}

// The parameters keep their identity, so an optimizer built before the move
// (and not stepped yet: its state is made on the first step) steps them on cuda.
TEST_CASE("an optimizer built before module.to(cuda) steps the moved parameters") {
  auto model = make_mlp();
  optim::Adam opt(model->parameters());
  model->to(kCuda);
  manual_seed(19);
  nn::cross_entropy((*model)(randn({6, 8}).cuda()), randint(0, 4, {6}).cuda()).backward();
  const Tensor before = model->parameters()[0].detach().cpu().clone();
  opt.step();
  CHECK(opt.params()[0].device() == Device("cuda:0"));
  CHECK(ember::max(ember::abs(model->parameters()[0].detach().cpu() - before)).item<double>() > 0.0);
}
