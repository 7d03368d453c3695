// The main demo's last step: the top-5 classes of ember's MobileNetV2 output
// and how far it is from PyTorch's.
//
//   classify EMBER_LOGITS.npy TORCH_LOGITS.npy
//
// Both files hold [batch, classes] logits (`ember run` and PyTorch wrote
// them). Prints, per image, the five best classes (index, logit, softmax
// probability) by ember and by PyTorch, then the largest absolute difference.
// Exits 1 when a file is unreadable, the shapes differ, or the difference is
// above kTolerance.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "runtime/model/npy.h"

namespace {

constexpr double kTolerance = 1e-4;  // float32 with other summation orders: a few 1e-6 seen

bool load(const char* path, ember::Tensor* out) {
  std::string error;
  ember::Result<ember::Tensor> r = ember::read_npy(path, &error);
  if (!r.ok()) {
    std::fprintf(stderr, "classify: %s\n", error.c_str());
    return false;
  }
  if (r->dim() != 2 || r->dtype() != ember::DType::Float32) {
    std::fprintf(stderr, "classify: '%s' is not float32 [batch, classes] logits\n", path);
    return false;
  }
  *out = r.get();
  return true;
}

// Indices of the k largest values, largest first.
std::vector<int64_t> top_k(const float* v, int64_t n, int64_t k) {
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min(k, n);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int64_t a, int64_t b) { return v[a] > v[b]; });
  idx.resize(static_cast<size_t>(k));
  return idx;
}

std::vector<double> softmax(const float* v, int64_t n) {
  const double mx = *std::max_element(v, v + n);
  std::vector<double> p(static_cast<size_t>(n));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += p[static_cast<size_t>(i)] = std::exp(v[i] - mx);
  for (double& x : p) x /= sum;
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: classify EMBER_LOGITS.npy TORCH_LOGITS.npy\n");
    return 2;
  }
  ember::Tensor ours, ref;
  if (!load(argv[1], &ours) || !load(argv[2], &ref)) return 1;
  if (ours.sizes() != ref.sizes()) {
    std::fprintf(stderr, "classify: shapes differ: [%lld, %lld] vs PyTorch's [%lld, %lld]\n",
                 static_cast<long long>(ours.size(0)), static_cast<long long>(ours.size(1)),
                 static_cast<long long>(ref.size(0)), static_cast<long long>(ref.size(1)));
    return 1;
  }
  const int64_t batch = ours.size(0), classes = ours.size(1);
  const float* a = ours.data_ptr<float>();
  const float* e = ref.data_ptr<float>();
  double max_diff = 0;
  for (int64_t i = 0; i < ours.numel(); ++i) max_diff = std::max(max_diff, std::fabs(double(a[i]) - double(e[i])));

  for (int64_t b = 0; b < batch; ++b) {
    const float* row = a + b * classes;
    const float* ref_row = e + b * classes;
    const std::vector<double> p = softmax(row, classes);
    const std::vector<int64_t> top = top_k(row, classes, 5), ref_top = top_k(ref_row, classes, 5);
    std::printf("image %lld: top-5 of %lld classes (random weights: the classes mean nothing)\n",
                static_cast<long long>(b), static_cast<long long>(classes));
    std::printf("  rank  class     logit    prob   | PyTorch: class     logit\n");
    for (size_t r = 0; r < top.size(); ++r) {
      std::printf("  %4zu  %5lld  %8.4f  %6.2f%%  |          %5lld  %8.4f\n", r + 1, static_cast<long long>(top[r]),
                  row[top[r]], 100.0 * p[static_cast<size_t>(top[r])], static_cast<long long>(ref_top[r]),
                  ref_row[ref_top[r]]);
    }
    std::printf("  same top-5 as PyTorch: %s\n", top == ref_top ? "yes" : "NO");
  }
  std::printf("largest |ember - PyTorch| over %lld logits: %.3g (tolerance %.0e): %s\n",
              static_cast<long long>(ours.numel()), max_diff, kTolerance, max_diff <= kTolerance ? "ok" : "TOO LARGE");
  return max_diff <= kTolerance ? 0 : 1;
}
