// Run three times by tests/BUILD, on the host emulation: no driver, no
// device, and a device with 64 MiB. CUDA entry points give clear errors
// naming CUDA and the cause; nothing crashes; the CPU keeps working.
#include <cstdlib>
#include <string>

#include "kernels/cuda/context.h"
#include "runtime/model/executor.h"
#include "tests/harness/testing.h"
#include "tests/model/graph_builder.h"

using namespace ember;

namespace {
bool env(const char* name) { return std::getenv(name) != nullptr; }
}  // namespace

TEST_CASE("no CUDA: a clear error naming CUDA and the cause, reported the same way each time") {
  if (env("EMBER_CUDA_EMU_MEMORY")) return;  // the out-of-memory run has a device
  const std::string expected =
      env("EMBER_CUDA_EMU_NO_DRIVER")
          ? "CUDA is not available: no NVIDIA driver is loaded, or it is older than the CUDA runtime ember was "
            "built with (CUDA driver version is insufficient for CUDA runtime version)"
          : "CUDA is not available: no CUDA-capable device is detected";
  CHECK_FALSE(cuda_is_available());
  CHECK(cuda_device_count() == 0);
  for (int attempt = 0; attempt < 2; ++attempt) {
    CHECK_THROWS_WITH_AS(empty({4}, TensorOptions(Device("cuda"))), doctest::Contains(expected.c_str()),
                         ember::Error);
    CHECK_THROWS_WITH_AS(arange(4, DType::Float32).cuda(), doctest::Contains(expected.c_str()), ember::Error);
  }
  CHECK_THROWS_WITH_AS(device_names(DeviceType::CUDA), doctest::Contains(expected.c_str()), ember::Error);
  Result<cuda::Context*> c = cuda::Context::get();
  CHECK(c.status() == Status::UnsupportedHardware);
  CHECK(cuda::Context::why() == expected);
  CHECK(arange(4, DType::Float32).sum().item<float>() == 6.0f);
}

TEST_CASE("no CUDA: the executor refuses the device at create, with the reason (what `ember run` prints)") {
  if (env("EMBER_CUDA_EMU_MEMORY")) return;
  testing::Graph g;
  const int x = g.input("x", {2});
  const int y = g.act("y", {2});
  g.op(OpKind::Relu, {x}, {y}, "relu");
  g.output(y);
  ExecutorOptions options;
  options.device = DeviceType::CUDA;
  std::string error;
  Result<std::shared_ptr<const Executor>> ex = g.create(options, &error);
  CHECK(ex.status() == Status::UnsupportedHardware);
  CHECK(error.find("CUDA is not available: ") == 0);
  options.device = DeviceType::CPU;  // the CPU executor is unaffected
  CHECK(g.create(options, &error).ok());
}

TEST_CASE("out of device memory: PyTorch's message, and the device still works") {
  if (!env("EMBER_CUDA_EMU_MEMORY")) return;
  const Device cuda("cuda");
  const Tensor keep = empty({1 << 20}, TensorOptions(cuda));  // 4 MiB (+64): 6 MiB of blocks
  CHECK_THROWS_WITH_AS(
      empty({int64_t{100} << 18}, TensorOptions(cuda)),
      "CUDA out of memory. Tried to allocate 100.00 MiB. GPU 0 has a total capacity of 64.00 MiB of which "
      "58.00 MiB is free. Of the allocated memory 6.00 MiB is allocated by ember, and 0 bytes is reserved by "
      "ember but unallocated.",
      ember::Error);
  testing::check_equal(arange(3, DType::Float32).cuda().cpu(), arange(3, DType::Float32));
}
