// The Vulkan backend: device memory from kernels/vulkan/context.h and the
// kernel table of kernels/vulkan/kernels.inc (no reference fallback: an op
// without a Vulkan kernel is reported as not implemented for vulkan).
#include <vector>

#include "kernels/vulkan/context.h"
#include "kernels/vulkan/quant_linear.h"
#include "kernels/vulkan/vk_kernels.h"

namespace ember {
namespace {

constexpr KernelEntry kVulkanKernels[] = {
#define RT_KERNEL(op, dtypes, fn) {OpKind::op, dtypes, &vk::fn, nullptr, false},
#define RT_KERNEL_DENSE(op, dtypes, fn) {OpKind::op, dtypes, &vk::fn, nullptr, true},
#define RT_KERNEL_WS(op, dtypes, fn, ws) {OpKind::op, dtypes, &vk::fn, &vk::ws, false},
#define RT_KERNEL_DENSE_WS(op, dtypes, fn, ws) {OpKind::op, dtypes, &vk::fn, &vk::ws, true},
#include "kernels/vulkan/kernels.inc"
#undef RT_KERNEL
#undef RT_KERNEL_DENSE
#undef RT_KERNEL_WS
#undef RT_KERNEL_DENSE_WS
};

class VulkanBackend final : public Backend {
 public:
  std::string_view name() const override { return "vulkan"; }
  DeviceType device_type() const override { return DeviceType::Vulkan; }
  Span<const KernelEntry> kernels() const override {
    return Span<const KernelEntry>(kVulkanKernels, sizeof(kVulkanKernels) / sizeof(kVulkanKernels[0]));
  }

  Result<Buffer> allocate(size_t bytes, size_t) override {
    EMBER_ASSIGN_OR_RETURN(vk::Context * c, vk::Context::get());
    EMBER_ASSIGN_OR_RETURN(const uint64_t address, c->allocate(bytes));
    Buffer b;
    b.data = reinterpret_cast<void*>(address);
    b.bytes = bytes;
    return b;
  }
  void release(Buffer& buffer) override {
    Result<vk::Context*> c = vk::Context::get();
    if (c.ok() && buffer.data != nullptr) c.get()->release(reinterpret_cast<uint64_t>(buffer.data), buffer.bytes);
    buffer = Buffer{};
  }
  Status copy_in(Buffer& dst, size_t offset, Span<const std::byte> src) override {
    EMBER_CHECK(offset <= dst.bytes && src.size() <= dst.bytes - offset, Status::OutOfRange);
    EMBER_ASSIGN_OR_RETURN(vk::Context * c, vk::Context::get());
    return c->upload(reinterpret_cast<uint64_t>(dst.data) + offset, src.data(), src.size());
  }
  Status copy_out(Span<std::byte> dst, const Buffer& src, size_t offset) override {
    EMBER_CHECK(offset <= src.bytes && dst.size() <= src.bytes - offset, Status::OutOfRange);
    EMBER_ASSIGN_OR_RETURN(vk::Context * c, vk::Context::get());
    return c->download(dst.data(), reinterpret_cast<uint64_t>(src.data) + offset, dst.size());
  }
  Status copy_out_batch(Span<const CopyOut> copies) override {
    EMBER_ASSIGN_OR_RETURN(vk::Context * c, vk::Context::get());
    std::vector<vk::Context::Download> items;
    items.reserve(copies.size());
    for (const CopyOut& o : copies) {
      EMBER_CHECK(o.offset <= o.src->bytes && o.dst.size() <= o.src->bytes - o.offset, Status::OutOfRange);
      items.push_back({o.dst.data(), reinterpret_cast<uint64_t>(o.src->data) + o.offset, o.dst.size()});
    }
    return c->download(Span<const vk::Context::Download>(items.data(), items.size()));
  }
  Status synchronize() override {
    EMBER_ASSIGN_OR_RETURN(vk::Context * c, vk::Context::get());
    return c->flush();
  }
  std::string last_error() const override { return vk::Context::why(); }
  Result<DeviceInfo> open() override {
    EMBER_ASSIGN_OR_RETURN(vk::Context * c, vk::Context::get());
    return DeviceInfo{c->caps().device_name, c->caps().float16, false};
  }
  Result<std::vector<std::string>> devices() override { return vk::Context::list_devices(); }
  Status select_device(const std::string& spec) override { return vk::Context::select_device(spec); }
  Result<std::shared_ptr<const PreparedWeight>> prepare_weight(OpKind op, const WeightDesc& w) override {
    return vk::prepare_weight(op, w);
  }
};

}  // namespace

Backend* vulkan_backend() {
  static VulkanBackend backend;
  return &backend;
}

}  // namespace ember
