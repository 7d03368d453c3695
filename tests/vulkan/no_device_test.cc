// Run twice by tests/BUILD: with no Vulkan loader (EMBER_VULKAN_LOADER points
// nowhere) and with no device (VK_ICD_FILENAMES points nowhere). Either way a
// Vulkan tensor is a clear error and the CPU keeps working.
#include <cstdlib>

#include "kernels/vulkan/context.h"
#include "tests/harness/testing.h"

using namespace ember;

TEST_CASE("no Vulkan: a clear error naming the cause") {
  const bool no_loader = std::getenv("EMBER_VULKAN_LOADER") != nullptr;
  const std::string expected = no_loader ? "Vulkan loader not found (/nonexistent/libvulkan.so.1)" : "no Vulkan device found";
  CHECK_THROWS_WITH_AS(empty({4}, TensorOptions(Device("vulkan"))), doctest::Contains(expected.c_str()), ember::Error);
  CHECK_THROWS_WITH_AS(arange(4, DType::Float32).to(Device("vulkan")), doctest::Contains(expected.c_str()), ember::Error);
  // Reported again, the same way, on a second use.
  Result<vk::Context*> c = vk::Context::get();
  CHECK(c.status() == Status::UnsupportedHardware);
  CHECK(vk::Context::why().find(expected) != std::string::npos);
  // The CPU is unaffected.
  CHECK(arange(4, DType::Float32).sum().item<float>() == 6.0f);
}
