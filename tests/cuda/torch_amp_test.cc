// ember's AMP loop on CUDA against PyTorch's torch.amp on the same GPU, data
// and initial weights (issue 13 item 7). Only in the GPU machine's bundle
// (//tests:cuda_device_tests): tools/cuda_device_check.sh first records
// PyTorch's loop with bench/cuda/torch_amp.py into $EMBER_TORCH_AMP_DIR.
#include <cstdlib>
#include <string>

#include "runtime/amp/autocast.h"
#include "runtime/amp/grad_scaler.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/model/npy.h"
#include "runtime/nn/loss.h"
#include "runtime/nn/module.h"
#include "runtime/optim/optimizer.h"
#include "tests/harness/testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

Tensor record(const std::string& dtype, const std::string& key) {
  const char* dir = std::getenv("EMBER_TORCH_AMP_DIR");
  REQUIRE_MESSAGE(dir != nullptr, "EMBER_TORCH_AMP_DIR is unset: run bench/cuda/torch_amp.py DIR first");
  const std::string path = std::string(dir) + "/" + dtype + "." + key + ".npy";
  std::string error;
  Result<Tensor> t = read_npy(path, &error);
  REQUIRE_MESSAGE(t.ok(), error);
  return *t;
}

}  // namespace

TEST_CASE("AMP on cuda: autocast + GradScaler follow torch.amp's loop step by step") {
  for (const auto& [name, low] : {std::pair<std::string, DType>{"float16", DType::Float16},
                                  std::pair<std::string, DType>{"bfloat16", DType::BFloat16}}) {
    CAPTURE(name);
    auto l0 = std::make_shared<nn::Linear>(8, 32);
    auto l1 = std::make_shared<nn::Linear>(32, 4);
    nn::Sequential model({l0, std::make_shared<nn::ReLU>(), l1});
    {
      NoGradGuard no_grad;
      l0->weight.copy_(record(name, "init_w0"));
      l0->bias.copy_(record(name, "init_b0"));
      l1->weight.copy_(record(name, "init_w1"));
      l1->bias.copy_(record(name, "init_b1"));
    }
    model.to(Device("cuda"));
    const Tensor x = record(name, "x").cuda(), target = record(name, "target").cuda();
    const Tensor want_losses = record(name, "losses"), want_scales = record(name, "scales");
    optim::SGD opt(model.parameters(), {0.1, 0.9});
    amp::GradScalerOptions so;
    so.init_scale = 16777216.0;  // 2^24
    so.growth_interval = 3;
    amp::GradScaler scaler(so);
    for (int64_t step = 0; step < 20; ++step) {
      CAPTURE(step);
      opt.zero_grad();
      Tensor loss;
      {
        amp::Autocast autocast(DeviceType::CUDA, low);
        loss = nn::cross_entropy(model(x), target);
      }
      scaler.scale(loss).backward();
      scaler.step(opt);
      scaler.update();
      CHECK(loss.item<double>() == doctest::Approx(want_losses[step].item<double>()).epsilon(2e-3));
      CHECK(scaler.get_scale() == want_scales[step].item<double>());
    }
    check_close(l0->weight.detach().cpu(), record(name, "final_w0"), 1e-2, 2e-3);
    check_close(l0->bias.detach().cpu(), record(name, "final_b0"), 1e-2, 2e-3);
    check_close(l1->weight.detach().cpu(), record(name, "final_w1"), 1e-2, 2e-3);
    check_close(l1->bias.detach().cpu(), record(name, "final_b1"), 1e-2, 2e-3);
  }
}
