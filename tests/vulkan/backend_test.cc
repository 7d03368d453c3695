// The Vulkan backend itself: device selection, memory, uploads and
// downloads, the command stream, errors.
#include <cstdlib>
#include <cstring>

#include "tests/vulkan/vulkan_testing.h"

using namespace ember;
using namespace ember::testing;

TEST_CASE("the device is lavapipe, with the capabilities ember uses") {
  Result<vk::Context*> c = vk::Context::get();
  REQUIRE(c.ok());
  const vk::Capabilities& caps = c.get()->caps();
  CHECK(caps.device_name.find("llvmpipe") != std::string::npos);
  CHECK(caps.device_type == VK_PHYSICAL_DEVICE_TYPE_CPU);
  CHECK(caps.float16);
  CHECK(caps.int8);
  CHECK(caps.int64);
  // lavapipe shares memory with the host; EMBER_VULKAN_STAGING=1 makes ember treat it as discrete.
  CHECK(caps.host_visible_device_memory == (std::getenv("EMBER_VULKAN_STAGING") == nullptr));
  CHECK(caps.max_push_constants >= 128);
  Result<std::vector<std::string>> names = vk::Context::list_devices();
  REQUIRE(names.ok());
  REQUIRE(names->size() >= 1);
  CHECK(names.get()[0].find("[cpu]") != std::string::npos);
}

TEST_CASE("selecting a device after the context is open is refused") {
  REQUIRE(vk::Context::get().ok());
  CHECK(vk::Context::select_device("0") == Status::InvalidState);
  CHECK(vk::Context::why().find("already open") != std::string::npos);
  CHECK_THROWS_WITH_AS(select_vulkan_device("llvmpipe"),
                       "select_vulkan_device(\"llvmpipe\"): the Vulkan device is already open; select it before "
                       "first use",
                       ember::Error);
  const std::vector<std::string> names = vulkan_devices();
  REQUIRE(!names.empty());
  CHECK(names[0].find("llvmpipe") != std::string::npos);
}

TEST_CASE("synchronize waits for recorded work") {
  Result<vk::Context*> c = vk::Context::get();
  REQUIRE(c.ok());
  const Tensor t = full({4096}, 1.0f, TensorOptions(kVulkan));
  const uint64_t before = c.get()->submit_count();
  synchronize(kVulkan);
  CHECK(c.get()->submit_count() == before + 1);
  synchronize(kVulkan);  // nothing recorded: no submit
  CHECK(c.get()->submit_count() == before + 1);
  synchronize(Device("cpu"));
  check_equal(to_cpu(t), full({4096}, 1.0f));
}

TEST_CASE("to(vulkan) and back keeps every byte, for each dtype and size") {
  for (int64_t n : {1, 3, 257, 100000, 5000000}) {
    const Tensor f = arange(n, DType::Float32) * 0.5;
    check_equal(to_cpu(to_vk(f)), f);
    const Tensor i = arange(n, DType::Int64) - 7;
    check_equal(to_cpu(to_vk(i)), i);
    const Tensor h = arange(n % 2049, DType::Float32).to(DType::Float16);
    check_equal(to_cpu(to_vk(h)), h);
    const Tensor b = gt(arange(n % 300, DType::Int32), 100);
    check_equal(to_cpu(to_vk(b)), b);
  }
  const Tensor v = to_vk(arange(12, DType::Float32));
  CHECK(v.device() == kVulkan);
  CHECK(v.device().str() == "vulkan:0");
  CHECK(v.sizes() == Shape{12});
}

TEST_CASE("to(\"vulkan\") is vulkan:0, as torch's to(\"cuda\") is cuda:0; other ordinals are refused") {
  const Tensor x = arange(6, DType::Float32);
  const Tensor a = x.to(Device("vulkan")), b = x.to(Device("vulkan:0"));
  CHECK(a.device().str() == "vulkan:0");
  CHECK(empty({2}, TensorOptions(Device("vulkan"))).device() == Device("vulkan:0"));
  check_equal(to_cpu(a + b), x * 2);  // one device: no mismatch
  CHECK(a.to(Device("vulkan")).data_ptr() == a.data_ptr());  // already there: no copy
  check_error([&] { x.to(Device("vulkan:7")); },
              "invalid device ordinal: vulkan:7 (ember uses one vulkan device, vulkan:0)");
  check_error([&] { empty({2}, TensorOptions(Device("vulkan:1"))); },
              "invalid device ordinal: vulkan:1 (ember uses one vulkan device, vulkan:0)");
}

TEST_CASE("uploads recorded behind pending work stay in order") {
  // fill() records a dispatch; the upload that follows must land after it.
  Tensor t = full({1000}, 3.0f, TensorOptions(kVulkan));
  const Tensor src = arange(1000, DType::Float32);
  t.copy_(src);
  check_equal(to_cpu(t), src);
  Tensor u = full({1000}, 5.0f, TensorOptions(kVulkan));
  check_equal(to_cpu(u), full({1000}, 5.0f));
}

TEST_CASE("views of Vulkan tensors copy back with their offsets") {
  const Tensor src = arange(24, DType::Float32).reshape({4, 6});
  const Tensor v = to_vk(src);
  check_equal(to_cpu(v.select(0, 2)), src.select(0, 2));
  check_equal(to_cpu(v.narrow(0, 1, 2)), src.narrow(0, 1, 2));
  // Not contiguous: to(cpu) makes it contiguous on the device first (the Copy kernel).
  check_equal(to_cpu(v.narrow(1, 1, 3)), src.narrow(1, 1, 3));
}

TEST_CASE("fill on vulkan, float32 and int32, sizes beyond one workgroup grid row") {
  for (int64_t n : {1, 255, 256, 257, 70000 * 256 + 3}) {
    const Tensor f = full({n}, -2.5f, TensorOptions(kVulkan));
    const Tensor back = to_cpu(f);
    check_equal(back, full({n}, -2.5f));
  }
  const Tensor z = zeros({5}, TensorOptions(DType::Int32).device(kVulkan));
  check_equal(to_cpu(z), zeros({5}, DType::Int32));
}

TEST_CASE("an op without a Vulkan kernel raises 'not implemented for vulkan'") {
  // (Float pad has a Vulkan kernel since feat/vk-pad; Int matmul has none.)
  const Tensor a = to_vk(arange(8, DType::Int32).reshape({2, 4}));
  const Tensor b = to_vk(arange(8, DType::Int32).reshape({4, 2}));
  CHECK_THROWS_WITH_AS(matmul(a, b), "\"matmul\" not implemented for 'Int' on vulkan", ember::Error);
}

TEST_CASE("mixing devices names both") {
  const Tensor a = to_vk(arange(4, DType::Float32));
  const Tensor b = arange(4, DType::Float32);
  CHECK_THROWS_WITH_AS(a + b, doctest::Contains("found at least two devices, vulkan:0 and cpu"), ember::Error);
}

TEST_CASE("a request beyond the device's memory is an error, not a crash") {
  CHECK_THROWS_WITH_AS(empty({int64_t{1} << 40}, TensorOptions(kVulkan)),
                       doctest::Contains("out of Vulkan device memory"), ember::Error);
  // The device still works afterwards.
  check_equal(to_cpu(to_vk(arange(3, DType::Float32))), arange(3, DType::Float32));
}

EMBER_VULKAN_NO_VALIDATION_ERRORS()
