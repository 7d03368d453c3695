// ember side of the training-step benchmark: one SGD step (zero_grad, forward,
// cross-entropy, backward, update) of the train_digits MLP and CNN on a batch
// of 64 8x8 images. torch_train.py times the same in PyTorch; compare with
//   bazel build //bench/train:train_bench
//   /usr/bin/python3 bench/compare.py bench/train/train_bench bench/train/torch_train.py
// The finetune_* cases are the eager twins of finetune_bench.py's models (the
// same layers, batch, optimizer and trained weights): the baseline of `ember
// finetune`'s "a step at most 1.1x ember's own eager step".
#include <benchmark/benchmark.h>

#include <string>

#include "runtime/ember.h"
#include "runtime/nn/loss.h"
#include "runtime/nn/module.h"
#include "runtime/optim/optimizer.h"

using namespace ember;

namespace {

std::shared_ptr<nn::Sequential> mlp() {
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(64, 128), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(128, 10)});
}

std::shared_ptr<nn::Sequential> cnn() {
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(1, 16, 3, 1, 1), std::make_shared<nn::BatchNorm2d>(16),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Conv2d>(16, 32, 3, 1, 1),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(128, 10)});
}

void step(benchmark::State& state, std::shared_ptr<nn::Sequential> (*build)(), int threads) {
  set_num_threads(threads);
  manual_seed(0);
  auto model = build();
  optim::SGDOptions o;
  o.lr = 0.01;
  o.momentum = 0.9;
  optim::SGD opt(model->parameters(), o);
  const Tensor x = rand({64, 1, 8, 8});
  const Tensor y = randint(0, 10, {64});
  for (auto _ : state) {
    opt.zero_grad();
    const Tensor loss = nn::cross_entropy((*model)(x), y);
    loss.backward();
    opt.step();
  }
}

// finetune_bench.py's MLPs: in -> h1 -> ReLU -> h2 -> ReLU -> 10, batch 64,
// SGD momentum 0.9; head trains the last Linear only, the rest are frozen.
void finetune_step(benchmark::State& state, int64_t in, int64_t h1, int64_t h2, bool head_only, int threads) {
  set_num_threads(threads);
  manual_seed(0);
  auto head = std::make_shared<nn::Linear>(h2, 10);
  nn::Sequential model({std::make_shared<nn::Linear>(in, h1), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Linear>(h1, h2), std::make_shared<nn::ReLU>(), head});
  if (head_only)
    for (Tensor& p : model.parameters()) p.requires_grad_(false);
  std::vector<Tensor> trained = head_only ? head->parameters() : model.parameters();
  for (Tensor& p : trained) p.requires_grad_(true);
  optim::SGDOptions o;
  o.lr = 0.01;
  o.momentum = 0.9;
  optim::SGD opt(trained, o);
  const Tensor x = randn({64, in});
  const Tensor y = randint(0, 10, {64});
  for (auto _ : state) {
    opt.zero_grad();
    const Tensor loss = nn::cross_entropy(model(x), y);
    loss.backward();
    opt.step();
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int threads : {1, 2}) {
    const std::string t = "/threads:" + std::to_string(threads);
    benchmark::RegisterBenchmark(("mlp_step_b64" + t).c_str(), step, mlp, threads)
        ->Unit(benchmark::kMicrosecond)->MinTime(0.5);
    benchmark::RegisterBenchmark(("cnn_step_b64" + t).c_str(), step, cnn, threads)
        ->Unit(benchmark::kMicrosecond)->MinTime(0.5);
    for (bool head : {true, false}) {
      const std::string c = head ? "_head" : "_all";
      benchmark::RegisterBenchmark(("finetune_mlp" + c + t).c_str(), finetune_step, 64, 256, 128, head, threads)
          ->Unit(benchmark::kMicrosecond)->MinTime(0.5);
      benchmark::RegisterBenchmark(("finetune_wide" + c + t).c_str(), finetune_step, 256, 1024, 1024, head, threads)
          ->Unit(benchmark::kMicrosecond)->MinTime(0.5);
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
