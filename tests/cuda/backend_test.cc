// The CUDA backend itself: tensors on the device, the caching allocator's
// bookkeeping and messages, device errors, cuBLAS through the table. Runs on
// the host emulation here (kernels/cuda/emu) and on a GPU in the
// --config=cuda build (tools/cuda_device_check.sh).
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/context.h"
#include "kernels/cuda/cublas_api.h"
#include "tests/harness/testing.h"

using namespace ember;
using namespace ember::testing;

namespace {
const Device kCuda("cuda");
}

TEST_CASE("a CUDA device is there, opened once, listed with its capability") {
  CHECK(cuda_is_available());
  CHECK(cuda_device_count() >= 1);
  Result<cuda::Context*> c = cuda::Context::get();
  REQUIRE(c.ok());
  CHECK(c.get()->caps().major >= 8);
  const std::vector<std::string> names = device_names(DeviceType::CUDA);
  REQUIRE(!names.empty());
  CHECK(names[0].find("[sm_") != std::string::npos);
  CHECK_THROWS_WITH_AS(select_device(DeviceType::CUDA, "0"),
                       doctest::Contains("the CUDA device is already open; select it before first use"),
                       ember::Error);
}

TEST_CASE("to(cuda), cuda(), cpu(): every byte, every dtype, strided sources") {
  for (int64_t n : {1, 3, 257, 100000}) {
    const Tensor f = arange(n, DType::Float32) * 0.5;
    const Tensor d = f.cuda();
    CHECK(d.device() == Device("cuda:0"));
    check_equal(d.cpu(), f);
    const Tensor i = arange(n, DType::Int64) - 7;
    check_equal(i.to(kCuda).cpu(), i);
  }
  const Tensor h = (arange(12, DType::Float32) / 3).to(DType::Float16).reshape({3, 4});
  check_equal(h.cuda().t().cpu(), h.t());  // a transposed view read back as it is
  check_equal(h.cuda().t().contiguous().cpu(), h.t().contiguous());
  const Tensor b = gt(arange(6, DType::Float32), 2.0);
  check_equal(b.cuda().cpu(), b);
}

TEST_CASE("ops on CUDA tensors match the CPU") {
  manual_seed(0);
  const Tensor a = randn({5, 7}), b = randn({7, 3}), c = randn({3});
  check_close(matmul(a.cuda(), b.cuda()).cpu(), matmul(a, b), 1e-5, 1e-6);
  check_close(relu(matmul(a.cuda(), b.cuda()) + c.cuda()).cpu(), relu(matmul(a, b) + c), 1e-5, 1e-6);
  check_close(a.cuda().t().matmul(a.cuda()).cpu(), a.t().matmul(a), 1e-5, 1e-6);  // a transposed operand
  check_equal(where(gt(a.cuda(), 0.0), a.cuda(), zeros({5, 7}).cuda()).cpu(), where(gt(a, 0.0), a, zeros({5, 7})));
}

TEST_CASE("mixing devices names both, as PyTorch") {
  const Tensor a = arange(4, DType::Float32).cuda();
  const Tensor b = arange(4, DType::Float32);
  CHECK_THROWS_WITH_AS(a + b, doctest::Contains("found at least two devices, cuda:0 and cpu"), ember::Error);
  CHECK_THROWS_WITH_AS(empty({2}, TensorOptions(Device("cuda:7"))), doctest::Contains("invalid device ordinal"),
                       ember::Error);
}

TEST_CASE("an op without a CUDA kernel is named, no silent CPU fallback") {
  const Tensor a = arange(8, DType::Int32).reshape({2, 4}).cuda();
  const Tensor b = arange(8, DType::Int32).reshape({4, 2}).cuda();
  CHECK_THROWS_WITH_AS(matmul(a, b), "\"matmul\" not implemented for 'Int' on cuda", ember::Error);
}

TEST_CASE("the caching allocator: blocks are kept, counted and given back") {
  empty_cache(kCuda);
  const size_t base_alloc = memory_allocated(kCuda), base_reserved = memory_reserved(kCuda);
  {
    const Tensor t = empty({1000}, TensorOptions(kCuda));  // 4,000 bytes + 64 tail: one 4,096-byte block
    CHECK(memory_allocated(kCuda) == base_alloc + 4096);
    CHECK(memory_reserved(kCuda) == base_reserved + 4096);
  }
  CHECK(memory_allocated(kCuda) == base_alloc);
  CHECK(memory_reserved(kCuda) == base_reserved + 4096);  // cached, as PyTorch
  {
    const Tensor t = empty({1000}, TensorOptions(kCuda));  // the cached block again
    CHECK(memory_reserved(kCuda) == base_reserved + 4096);
    const Tensor big = empty({1 << 20}, TensorOptions(kCuda));  // 4 MiB + 64: two 2 MiB pages rounded up
    CHECK(memory_allocated(kCuda) == base_alloc + 4096 + (size_t{6} << 20));
  }
  empty_cache(kCuda);
  CHECK(memory_reserved(kCuda) == base_reserved);
  CHECK(memory_allocated(kCuda) == base_alloc);
}

TEST_CASE("block sizes and byte counts as PyTorch prints them") {
  CHECK(cuda::round_block(1) == 512);
  CHECK(cuda::round_block(513) == 1024);
  CHECK(cuda::round_block(size_t{1} << 20) == size_t{1} << 20);
  CHECK(cuda::round_block((size_t{1} << 20) + 1) == size_t{2} << 20);
  CHECK(cuda::format_bytes(512) == "512 bytes");
  CHECK(cuda::format_bytes(size_t{20} << 20) == "20.00 MiB");
  CHECK(cuda::format_bytes(size_t{3} << 29) == "1.50 GiB");
}

TEST_CASE("TF32 is off unless asked for, as torch.backends.cuda.matmul.allow_tf32") {
  CHECK_FALSE(cuda::allow_tf32());
  cuda::set_allow_tf32(true);
  CHECK(cuda::allow_tf32());
  cuda::set_allow_tf32(false);
}

TEST_CASE("a sparse Linear weight the CUDA backend cannot pack is refused in words") {
  Backend* b = get_backend(DeviceType::CUDA);
  REQUIRE(b != nullptr);
  const Tensor values = tensor<float>({1.0f, 2.0f, 3.0f});
  auto refused = [&](const std::vector<int64_t>& coo, const std::string& why, Status want) {
    const Tensor idx = tensor<int64_t>(coo, {2, 3});
    WeightDesc d;
    d.weight = values.kernel_view();
    d.indices = idx.kernel_view();
    d.rows = 4;
    d.cols = 5;
    Result<std::shared_ptr<const PreparedWeight>> r = b->prepare_weight(OpKind::SparseLinear, d);
    CHECK(r.status() == want);
    CHECK(b->last_error().find(why) != std::string::npos);
  };
  refused({0, 2, 1, 0, 1, 0}, "nonzero 2 at (1, 0) is not sorted in row-major order or repeats a coordinate",
          Status::InvalidArgument);
  refused({0, 2, 2, 0, 1, 1}, "nonzero 2 at (2, 1) is not sorted", Status::InvalidArgument);  // repeated
  refused({0, 2, 4, 0, 1, 1}, "nonzero 2 at (4, 1) is outside [4, 5]", Status::OutOfRange);
  refused({0, 2, 3, 0, 1, 5}, "nonzero 2 at (3, 5) is outside [4, 5]", Status::OutOfRange);
  // int8 values need their scales.
  const Tensor q = tensor({1, 2, 3}).to(DType::Int8);
  const Tensor idx = tensor<int64_t>({0, 1, 2, 0, 0, 0}, {2, 3});
  WeightDesc d;
  d.weight = q.kernel_view();
  d.indices = idx.kernel_view();
  d.rows = 4;
  d.cols = 5;
  CHECK(b->prepare_weight(OpKind::SparseLinear, d).status() == Status::InvalidArgument);
  CHECK(b->last_error().find("int8 values need 1 or N scales") != std::string::npos);
}
