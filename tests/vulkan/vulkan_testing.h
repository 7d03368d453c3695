// Helpers for the Vulkan suites (tests/vulkan): every suite runs on lavapipe
// with the Khronos validation layer on (tests/BUILD sets the environment), and
// ends by asserting that the layer reported no error.
#pragma once

#include <doctest/doctest.h>

#include "kernels/vulkan/context.h"
#include "tests/harness/testing.h"

namespace ember::testing {

inline const Device kVulkan("vulkan:0");  // what tensors moved with to("vulkan") report

// The CPU tensor `t` copied to the Vulkan device (same strides when `t` is
// contiguous; a non-contiguous CPU tensor arrives contiguous).
inline Tensor to_vk(const Tensor& t) { return t.to(kVulkan); }
inline Tensor to_cpu(const Tensor& t) { return t.to(Device("cpu")); }

// A non-contiguous Vulkan view with `t`'s values: t transposed on the device
// and transposed back as a view (strides swapped).
inline Tensor vk_transposed_view(const Tensor& t) {
  return to_vk(t.transpose(-1, -2).contiguous()).transpose(-1, -2);
}

}  // namespace ember::testing

// Put last in each Vulkan suite's file: doctest runs test cases in file order.
#define EMBER_VULKAN_NO_VALIDATION_ERRORS()                                        \
  TEST_CASE("the validation layer reported no error") {                            \
    CHECK(std::getenv("EMBER_VULKAN_VALIDATION") != nullptr);                      \
    CHECK(::ember::vk::Context::validation_errors() == 0);                         \
  }
