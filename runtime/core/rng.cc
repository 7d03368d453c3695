#include "runtime/core/rng.h"

#include <cmath>

namespace ember {

double Generator::normal_double() {
  if (next_double_normal_) {
    const double v = *next_double_normal_;
    next_double_normal_.reset();
    return v;
  }
  const double u1 = uniform_double();
  const double u2 = uniform_double();
  const double r = std::sqrt(-2.0 * std::log(1.0 - u2));
  const double theta = 2.0 * M_PI * u1;
  next_double_normal_ = r * std::sin(theta);
  return r * std::cos(theta);
}

Generator& default_generator() {
  static Generator g;
  return g;
}

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(default_generator().mutex());
  default_generator().manual_seed(seed);
}

}  // namespace ember
