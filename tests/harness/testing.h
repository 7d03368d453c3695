// Test helpers: exact and tolerance comparisons of tensors, with messages that
// name the first mismatching element.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/ember.h"
#include "tests/harness/golden.h"

namespace ember::testing {

// A path for a test's scratch file: under Bazel's TEST_TMPDIR (else /tmp).
inline std::string tmp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

// Same shape, same dtype, same values (NaNs equal).
inline void check_equal(const Tensor& actual, const Tensor& expected) {
  REQUIRE_MESSAGE(actual.sizes() == expected.sizes(),
                  "shape " << shape_str(actual.sizes()) << " != " << shape_str(expected.sizes()));
  REQUIRE_MESSAGE(actual.dtype() == expected.dtype(), "dtype " << actual.dtype() << " != " << expected.dtype());
  const Tensor a = actual.to(DType::Float64).contiguous(), e = expected.to(DType::Float64).contiguous();
  const double* pa = a.data_ptr<double>();
  const double* pe = e.data_ptr<double>();
  if (!is_floating(actual.dtype())) {  // integers: compare as int64 (exact beyond 2^53)
    const Tensor ai = actual.to(DType::Int64).contiguous(), ei = expected.to(DType::Int64).contiguous();
    for (int64_t i = 0; i < a.numel(); ++i) {
      REQUIRE_MESSAGE(ai.data_ptr<int64_t>()[i] == ei.data_ptr<int64_t>()[i],
                      "element " << i << ": " << ai.data_ptr<int64_t>()[i] << " != " << ei.data_ptr<int64_t>()[i]);
    }
    return;
  }
  for (int64_t i = 0; i < a.numel(); ++i) {
    const bool same = (std::isnan(pa[i]) && std::isnan(pe[i])) || pa[i] == pe[i];
    REQUIRE_MESSAGE(same, "element " << i << ": " << pa[i] << " != " << pe[i]);
  }
}

// |a - e| <= atol + rtol * |e| elementwise (NaN matches NaN, inf matches inf).
inline void check_close(const Tensor& actual, const Tensor& expected, double rtol = 1e-5, double atol = 1e-6) {
  REQUIRE_MESSAGE(actual.sizes() == expected.sizes(),
                  "shape " << shape_str(actual.sizes()) << " != " << shape_str(expected.sizes()));
  REQUIRE_MESSAGE(actual.dtype() == expected.dtype(), "dtype " << actual.dtype() << " != " << expected.dtype());
  const Tensor a = actual.to(DType::Float64).contiguous(), e = expected.to(DType::Float64).contiguous();
  const double* pa = a.data_ptr<double>();
  const double* pe = e.data_ptr<double>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    bool ok;
    if (std::isnan(pe[i])) ok = std::isnan(pa[i]);
    else if (std::isinf(pe[i])) ok = pa[i] == pe[i];
    else ok = std::fabs(pa[i] - pe[i]) <= atol + rtol * std::fabs(pe[i]);
    REQUIRE_MESSAGE(ok, "element " << i << ": " << pa[i] << " vs expected " << pe[i]);
  }
}

// check_close with a tolerance for the dtype: float32 and float64 agree with
// PyTorch to rounding (ember accumulates in double where PyTorch uses float);
// the 16-bit floats may differ by about one unit in the last place.
inline void check_close_for_dtype(const Tensor& actual, const Tensor& expected) {
  switch (expected.dtype()) {
    case DType::Float64: check_close(actual, expected, 1e-12, 1e-12); break;
    case DType::Float16: check_close(actual, expected, 2e-3, 2e-3); break;
    case DType::BFloat16: check_close(actual, expected, 1.6e-2, 1.6e-2); break;
    default: check_close(actual, expected, 2e-6, 2e-6); break;
  }
}

#if defined(__cpp_exceptions)  // not in --config=noexcept (-fno-exceptions)
// Runs `fn` and checks it raises ember::Error whose message equals `message`.
template <typename F>
void check_error(F&& fn, const std::string& message) {
  std::string got = "<no error>";
  try {
    fn();
  } catch (const Error& e) {
    got = e.what();
  }
  CHECK(got == message);
}
#endif

// The activations a convolution kernel fuses (Conv2dParams::activation):
// none, ReLU, a clamp to [-0.5, 0.75], HardSwish.
inline std::vector<Activation> fused_activations() {
  std::vector<Activation> a(4);
  a[1].kind = ActivationKind::Relu;
  a[2].kind = ActivationKind::Clamp;
  a[2].min = -0.5;
  a[2].max = 0.75;
  a[3].kind = ActivationKind::HardSwish;
  return a;
}

}  // namespace ember::testing
