// Generator: a seedable mt19937 stream. Its draws follow PyTorch's CPU
// generator, so manual_seed(s) followed by rand/randn/randint gives the values
// torch.manual_seed(s) gives.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <random>

namespace ember {

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ull) { manual_seed(seed); }

  void manual_seed(uint64_t seed) {
    engine_.seed(static_cast<uint32_t>(seed));
    next_double_normal_.reset();
    seed_ = seed;
  }
  uint64_t initial_seed() const { return seed_; }

  uint32_t random() { return static_cast<uint32_t>(engine_()); }
  uint64_t random64() {
    const uint64_t hi = random(), lo = random();
    return (hi << 32) | lo;
  }
  // Uniform in [0, 1) with 24 (float) or 53 (double) random bits, as PyTorch.
  float uniform_float() { return static_cast<float>(random() & ((1u << 24) - 1)) * (1.0f / (1u << 24)); }
  double uniform_double() {
    return static_cast<double>(random64() & ((1ull << 53) - 1)) * (1.0 / (1ull << 53));
  }
  // One standard normal draw (Box-Muller on two doubles, caching the second).
  double normal_double();

  std::mutex& mutex() { return mutex_; }

 private:
  std::mt19937 engine_;
  std::optional<double> next_double_normal_;
  uint64_t seed_ = 0;
  std::mutex mutex_;
};

// Box-Muller over 16 uniforms in [0, 1) in place, bit for bit as PyTorch's
// float32 randn of 16 or more contiguous elements on x86-64 (its AVX2 path:
// normal_fill_16_AVX2 with the Cephes single-precision log and sincos
// polynomials of avx_mathfun, as GCC fused them), in scalar float arithmetic: d[j] = r cos t, d[j + 8] = r sin t, r = sqrt(-2 log(1 - d[j])),
// t = 2 pi d[j + 8], for j < 8.
void normal_fill_16(float* d);

// The default generator that rand/randn/randint use.
Generator& default_generator();
// Seeds the default generator (torch.manual_seed).
void manual_seed(uint64_t seed);

}  // namespace ember
