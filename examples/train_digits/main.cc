// Trains an MLP and a small CNN on the handwritten-digits data set that
// Debian's python3-sklearn ships (8x8 images, 1,797 samples), 80/20 split, with
// a progress bar; saves each model as safetensors, reloads it into a fresh
// model and checks the reloaded model scores the same.
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/ember.h"
#include "runtime/nn/loss.h"
#include "runtime/nn/module.h"
#include "runtime/nn/safetensors.h"
#include "runtime/optim/optimizer.h"

using namespace ember;

namespace {

constexpr const char* kDigits = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";

struct Dataset {
  Tensor images;  // [N, 1, 8, 8], pixel values scaled to [0, 1]
  Tensor labels;  // [N] int64
};

// Reads the gzipped CSV: 64 pixel values (0..16) and the label per line.
Dataset load_digits(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  EMBER_ENFORCE(f != nullptr, Status::IoError, "cannot open ", path,
              " (install python3-sklearn: bash tools/setup.sh)");
  std::vector<float> pixels;
  std::vector<int64_t> labels;
  char line[1024];
  while (gzgets(f, line, sizeof(line)) != nullptr) {
    std::stringstream row(line);
    std::string cell;
    std::vector<double> values;
    while (std::getline(row, cell, ',')) values.push_back(std::stod(cell));
    if (values.empty()) continue;
    EMBER_ENFORCE(values.size() == 65, Status::InvalidArgument, path, ": expected 65 values per row, got ",
                values.size());
    for (int i = 0; i < 64; ++i) pixels.push_back(static_cast<float>(values[i] / 16.0));
    labels.push_back(static_cast<int64_t>(values[64]));
  }
  gzclose(f);
  const int64_t n = static_cast<int64_t>(labels.size());
  return {tensor(pixels, {n, 1, 8, 8}), tensor(labels, {n})};
}

Dataset take(const Dataset& d, const std::vector<int64_t>& rows) {
  std::vector<Tensor> xs, ys;
  for (int64_t r : rows) {
    xs.push_back(d.images[r]);
    ys.push_back(d.labels[r]);
  }
  return {stack(xs), stack(ys)};
}

double accuracy(nn::Module& model, const Dataset& d) {
  NoGradGuard no_grad;
  model.eval();
  const Tensor predicted = argmax(model(d.images), 1);
  return (predicted == d.labels).to(DType::Float64).mean().item<double>();
}

void progress(int epoch, int epochs, int64_t done, int64_t total, double loss, double seconds) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / total);
  std::printf("\r  epoch %2d/%d [%s%s] %4lld/%lld  loss %.4f  %.1fs", epoch, epochs, std::string(filled, '#').c_str(),
              std::string(kWidth - filled, '.').c_str(), static_cast<long long>(done),
              static_cast<long long>(total), loss, seconds);
  std::fflush(stdout);
}

// Trains `model` with AdamW and cross-entropy, batch 64, printing a progress bar
// and the accuracies after every epoch.
void train(nn::Module& model, const Dataset& train_set, const Dataset& test_set, int epochs) {
  optim::AdamW opt(model.parameters(), optim::AdamWOptions{/*lr=*/3e-3});
  const int64_t n = train_set.labels.numel(), batch = 64;
  std::mt19937 shuffle_rng(7);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), shuffle_rng);
    model.train();
    double loss_sum = 0;
    int64_t seen = 0;
    for (int64_t b = 0; b < n; b += batch) {
      const std::vector<int64_t> rows(order.begin() + b, order.begin() + std::min(n, b + batch));
      const Dataset mini = take(train_set, rows);
      opt.zero_grad();
      const Tensor loss = nn::cross_entropy(model(mini.images), mini.labels);
      loss.backward();
      opt.step();
      loss_sum += loss.item<double>() * static_cast<double>(rows.size());
      seen += static_cast<int64_t>(rows.size());
      progress(epoch, epochs, seen, n, loss_sum / static_cast<double>(seen),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::printf("  train acc %5.1f%%  test acc %5.1f%%\n", 100 * accuracy(model, train_set),
                100 * accuracy(model, test_set));
  }
}

std::shared_ptr<nn::Sequential> make_mlp() {
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Flatten>());
  net->push_back(std::make_shared<nn::Linear>(64, 128));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::Linear>(128, 10));
  return net;
}

std::shared_ptr<nn::Sequential> make_cnn() {
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Conv2d>(1, 16, 3, /*stride=*/1, /*padding=*/1));
  net->push_back(std::make_shared<nn::BatchNorm2d>(16));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Conv2d>(16, 32, 3, /*stride=*/1, /*padding=*/1));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Flatten>());
  net->push_back(std::make_shared<nn::Linear>(32 * 2 * 2, 10));
  return net;
}

// Trains, saves, reloads into a fresh model and compares; returns the test accuracy.
double run(const char* name, std::shared_ptr<nn::Sequential> (*make)(), const Dataset& train_set,
           const Dataset& test_set, int epochs) {
  std::printf("\n%s: %zu parameter tensors\n", name, make()->parameters().size());
  auto model = make();
  train(*model, train_set, test_set, epochs);
  const double acc = accuracy(*model, test_set);
  const std::string path = std::string("digits_") + name + ".safetensors";
  nn::save(*model, path);
  auto reloaded = make();
  nn::load(*reloaded, path);
  const double reloaded_acc = accuracy(*reloaded, test_set);
  std::printf("  saved %s; reloaded model test acc %.1f%% (%s)\n", path.c_str(), 100 * reloaded_acc,
              reloaded_acc == acc ? "same as trained" : "DIFFERENT");
  EMBER_ENFORCE(reloaded_acc == acc, Status::Internal, "reloaded model scores differently");
  return acc;
}

}  // namespace

int main() {
  try {
    manual_seed(0);
    const Dataset all = load_digits(kDigits);
    const int64_t n = all.labels.numel();
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(42));
    const int64_t n_train = n * 8 / 10;
    const Dataset train_set = take(all, std::vector<int64_t>(order.begin(), order.begin() + n_train));
    const Dataset test_set = take(all, std::vector<int64_t>(order.begin() + n_train, order.end()));
    std::printf("digits: %lld images of 8x8 pixels, %lld for training, %lld for testing\n",
                static_cast<long long>(n), static_cast<long long>(n_train), static_cast<long long>(n - n_train));
    const double mlp = run("mlp", make_mlp, train_set, test_set, 15);
    const double cnn = run("cnn", make_cnn, train_set, test_set, 10);
    std::printf("\ntest accuracy: MLP %.1f%%, CNN %.1f%% (target: at least 95%%)\n", 100 * mlp, 100 * cnn);
    return mlp >= 0.95 && cnn >= 0.95 ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "train_digits: %s\n", e.what());
    return 1;
  }
}
