// The CPU backend: host memory and the kernel table (CPU overrides first, then
// the reference kernels).
#include <cstdlib>
#include <cstring>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/ref/ref_kernels.h"

namespace ember {
namespace {

constexpr KernelEntry kCpuKernels[] = {
#define RT_KERNEL(op, dtypes, fn) {OpKind::op, dtypes, &cpu::fn, nullptr},
#define RT_KERNEL_WS(op, dtypes, fn, ws) {OpKind::op, dtypes, &cpu::fn, &cpu::ws},
#include "kernels/cpu/kernels.inc"
#undef RT_KERNEL
#undef RT_KERNEL_WS
#define RT_KERNEL(op, dtypes, fn) {OpKind::op, dtypes, &ref::fn, nullptr},
#define RT_KERNEL_WS(op, dtypes, fn, ws) {OpKind::op, dtypes, &ref::fn, &ref::ws},
#include "kernels/ref/kernels.inc"
#undef RT_KERNEL
#undef RT_KERNEL_WS
};

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  DeviceType device_type() const override { return DeviceType::CPU; }
  // bfloat16: the GEMM's bf16 kernel (Precision::BFloat16 packs weights for it).
  Result<DeviceInfo> open() override { return DeviceInfo{"cpu", false, cpu::sgemm_bf16_supported()}; }
  Span<const KernelEntry> kernels() const override {
    return Span<const KernelEntry>(kCpuKernels, sizeof(kCpuKernels) / sizeof(kCpuKernels[0]));
  }

  Result<std::shared_ptr<const PreparedWeight>> prepare_weight(OpKind op, const WeightDesc& w) override {
    return cpu::prepare_weight(op, w);
  }
  std::string last_error() const override { return cpu::last_prepare_error(); }

  Result<Buffer> allocate(size_t bytes, size_t alignment) override {
    if (alignment < 64) alignment = 64;
    // More than any address space ember runs in (x86-64 and aarch64 user
    // space: 2^47..2^48 bytes) cannot succeed: refused without asking malloc
    // (which sanitizers abort on instead of returning null).
    if (bytes > (size_t{1} << 47)) return Status::OutOfMemory;
    const size_t padded = (bytes + kTensorTailPadding + alignment - 1) / alignment * alignment;
    void* p = std::aligned_alloc(alignment, padded);
    if (p == nullptr) return Status::OutOfMemory;
    Buffer b;
    b.data = p;
    b.bytes = bytes;
    return b;
  }
  void release(Buffer& buffer) override {
    std::free(buffer.data);
    buffer = Buffer{};
  }
  Status copy_in(Buffer& dst, size_t offset, Span<const std::byte> src) override {
    EMBER_CHECK(offset <= dst.bytes && src.size() <= dst.bytes - offset, Status::OutOfRange);
    if (!src.empty()) std::memcpy(static_cast<std::byte*>(dst.data) + offset, src.data(), src.size());
    return Status::Ok;
  }
  Status copy_out(Span<std::byte> dst, const Buffer& src, size_t offset) override {
    EMBER_CHECK(offset <= src.bytes && dst.size() <= src.bytes - offset, Status::OutOfRange);
    if (!dst.empty()) std::memcpy(dst.data(), static_cast<const std::byte*>(src.data) + offset, dst.size());
    return Status::Ok;
  }
};

}  // namespace

Backend* cpu_backend() {
  static CpuBackend backend;
  return &backend;
}

}  // namespace ember
