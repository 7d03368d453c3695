// The Vulkan context's device memory: 64 MiB blocks sub-allocated first fit
// (coalescing on release), addressed by opaque device addresses.
#include <algorithm>
#include <cstring>

#include "kernels/vulkan/context.h"
#include "kernels/vulkan/context_util.h"

namespace ember::vk {
namespace {

constexpr VkDeviceSize kBlockBytes = VkDeviceSize{64} << 20;  // tensor blocks
constexpr VkDeviceSize kStagingBlockBytes = VkDeviceSize{16} << 20;
constexpr VkDeviceSize kAlign = 256;  // every sub-allocation (>= any minStorageBufferOffsetAlignment)
constexpr int kAddressShift = 40;
constexpr uint64_t kOffsetMask = (uint64_t{1} << kAddressShift) - 1;

}  // namespace


Result<int> Context::new_block(VkDeviceSize size, bool staging) {
  Block b;
  b.size = size;
  b.staging = staging;
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = size;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VK_TRY(api_.vkCreateBuffer(device_, &info, nullptr, &b.buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  api_.vkGetBufferMemoryRequirements(device_, b.buffer, &req);
  const uint32_t type = staging ? staging_memory_type_ : device_memory_type_;
  if (!(req.memoryTypeBits & (1u << type))) {
    api_.vkDestroyBuffer(device_, b.buffer, nullptr);
    return fail_why(Status::UnsupportedHardware, "Vulkan buffers cannot live in the chosen memory type");
  }
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = type;
  const VkResult r = api_.vkAllocateMemory(device_, &alloc, nullptr, &b.memory);
  if (r != VK_SUCCESS) {
    api_.vkDestroyBuffer(device_, b.buffer, nullptr);
    return fail_why(Status::OutOfMemory, "out of Vulkan device memory: vkAllocateMemory of ", req.size,
                " bytes failed (", result_name(r), ")");
  }
  api_.vkBindBufferMemory(device_, b.buffer, b.memory, 0);
  if (staging || caps_.host_visible_device_memory) {
    VK_TRY(api_.vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
  }
  b.free[0] = size;
  blocks_.push_back(std::move(b));
  return static_cast<int>(blocks_.size() - 1);
}

Result<uint64_t> Context::allocate_locked(size_t bytes, bool staging) {
  const VkDeviceSize need = std::max<VkDeviceSize>(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    Block& b = blocks_[i];
    if (b.staging != staging) continue;
    for (auto it = b.free.begin(); it != b.free.end(); ++it) {
      if (it->second < need) continue;
      const VkDeviceSize offset = it->first, size = it->second;
      b.free.erase(it);
      if (size > need) b.free[offset + need] = size - need;
      return (uint64_t{i + 1} << kAddressShift) | offset;
    }
  }
  const VkDeviceSize block_bytes = std::max(need, staging ? kStagingBlockBytes : kBlockBytes);
  if (block_bytes > kOffsetMask) return fail_why(Status::OutOfMemory, "a Vulkan allocation of ", bytes, " bytes is too large");
  EMBER_ASSIGN_OR_RETURN(const int index, new_block(block_bytes, staging));
  Block& b = blocks_[static_cast<size_t>(index)];
  b.free.clear();
  if (block_bytes > need) b.free[need] = block_bytes - need;
  return uint64_t{static_cast<uint64_t>(index) + 1} << kAddressShift;
}

Context::Block* Context::block_of(uint64_t address, VkDeviceSize* offset) {
  const uint64_t block = address >> kAddressShift;
  if (block == 0 || block > blocks_.size()) return nullptr;
  *offset = address & kOffsetMask;
  return &blocks_[block - 1];
}

void Context::release_locked(uint64_t address, size_t bytes) {
  VkDeviceSize offset = 0;
  Block* b = block_of(address, &offset);
  if (b == nullptr) return;
  VkDeviceSize size = std::max<VkDeviceSize>(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  auto next = b->free.lower_bound(offset);
  if (next != b->free.end() && offset + size == next->first) {
    size += next->second;
    next = b->free.erase(next);
  }
  if (next != b->free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += size;
      return;
    }
  }
  b->free[offset] = size;
}

Result<uint64_t> Context::allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Fail early, and clearly, for sizes no single Vulkan allocation can hold.
  if (bytes > (uint64_t{1} << 36)) {
    return fail_why(Status::OutOfMemory, "out of Vulkan device memory: ", bytes, " bytes requested");
  }
  return allocate_locked(bytes, /*staging=*/false);
}

void Context::release(uint64_t address, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  release_locked(address, bytes);
}

Result<BoundTensor> Context::resolve(uint64_t address, size_t bytes, size_t elem_size) {
  std::lock_guard<std::mutex> lock(mutex_);
  VkDeviceSize offset = 0;
  Block* b = block_of(address, &offset);
  if (b == nullptr || b->staging || offset > b->size || bytes > b->size - offset) {
    return fail_why(Status::InvalidArgument, "not a Vulkan tensor address");
  }
  const VkDeviceSize align = std::max<VkDeviceSize>(caps_.min_storage_buffer_offset_alignment, elem_size);
  BoundTensor t;
  t.buffer = b->buffer;
  t.offset = offset / align * align;
  const VkDeviceSize lead = offset - t.offset;
  if (lead % elem_size != 0) return fail_why(Status::InvalidArgument, "misaligned Vulkan tensor view");
  t.first = static_cast<uint32_t>(lead / elem_size);
  // Bind to the end of the block (capped at the device limit) so that
  // kernels may read the tail padding; the tensor itself must fit.
  const VkDeviceSize limit = caps_.max_storage_buffer_range;
  if (lead + bytes > limit) {
    return fail_why(Status::NotSupported, "a Vulkan tensor view of ", bytes, " bytes exceeds this device's maxStorageBufferRange (",
                limit, " bytes)");
  }
  t.range = std::min<VkDeviceSize>(b->size - t.offset, limit);
  return t;
}

}  // namespace ember::vk
