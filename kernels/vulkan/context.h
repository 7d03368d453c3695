// The Vulkan device ember runs on: instance and device selection, memory
// sub-allocated from a few large blocks, one command stream recorded op after
// op and submitted when the host needs results, and a pipeline cache.
//
// Device addresses: a Vulkan Buffer's `data` is not a host pointer but an
// opaque address, (block + 1) << 40 | offset, so tensor views keep doing
// pointer arithmetic on it; kernels resolve it back to (VkBuffer, offset)
// through Context::resolve. Never dereference it on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/vulkan/vk_api.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/core/status.h"

namespace ember::vk {

// SPIR-V of one shader (kernels/vulkan/shaders/NAME.comp, embedded at build time).
struct ShaderCode {
  const char* name;
  const uint32_t* words;
  size_t count;
};

// What the device can do, read once at start.
struct Capabilities {
  std::string device_name;
  VkPhysicalDeviceType device_type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t api_version = 0;
  bool float16 = false;          // shaderFloat16 + 16-bit storage
  bool int8 = false;             // shaderInt8 + 8-bit storage
  bool int64 = false;            // shaderInt64
  bool integer_dot_product = false;  // VK_KHR_shader_integer_dot_product
  bool host_visible_device_memory = false;  // device-local memory the host can map (UMA, lavapipe)
  uint32_t max_push_constants = 128;
  uint64_t max_storage_buffer_range = 0;
  uint64_t min_storage_buffer_offset_alignment = 16;
  uint32_t max_workgroup_invocations = 128;
  uint32_t max_workgroup_count[3] = {65535, 65535, 65535};
  uint32_t max_shared_memory = 16384;
  uint32_t subgroup_size = 1;
};

// A storage-buffer binding for one tensor and the element index, inside the
// binding, of the tensor's first element.
struct BoundTensor {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize range = 0;
  uint32_t first = 0;
};

class Context {
 public:
  // The process-wide context, created on first use. Fails (with why()) when
  // there is no loader, no device, or the device lacks what ember needs.
  static Result<Context*> get();
  // Why get() failed, or the last error a kernel or copy reported on this thread.
  static const std::string& why();
  static void set_why(std::string message);

  // Picks the device get() will open: an index into the list of devices
  // (sorted discrete, integrated, virtual, CPU) or a case-insensitive
  // substring of its name. Also read from EMBER_VULKAN_DEVICE. Must be called
  // before first use; returns InvalidState after.
  static Status select_device(const std::string& spec);
  // Validation messages of severity error seen so far (EMBER_VULKAN_VALIDATION=1
  // enables the Khronos validation layer).
  static int validation_errors();
  // Every device the loader reports, in selection order ("llvmpipe (...) [cpu]").
  static Result<std::vector<std::string>> list_devices();

  const Capabilities& caps() const { return caps_; }
  const Api& api() const { return api_; }
  VkDevice device() const { return device_; }

  // Memory: sub-allocated from large blocks; returns the device address.
  Result<uint64_t> allocate(size_t bytes);
  void release(uint64_t address, size_t bytes);
  // Host -> device and device -> host (ordered after every recorded command).
  Status upload(uint64_t address, const void* src, size_t bytes);
  Status download(void* dst, uint64_t address, size_t bytes);
  // Several downloads, one submit for all of them (and for the work before).
  struct Download {
    void* dst = nullptr;
    uint64_t address = 0;
    size_t bytes = 0;
  };
  Status download(Span<const Download> items);
  Status fill_zero(uint64_t address, size_t bytes);

  // The binding for a tensor that spans `bytes` from `address` (a view's first
  // element address and its extent); `elem_size` divides the offset.
  Result<BoundTensor> resolve(uint64_t address, size_t bytes, size_t elem_size);

  // Records one dispatch of `shader` into the stream, a barrier after it.
  // `spec`: specialization constants 0..n-1 (the pipeline is cached per set).
  Status dispatch(const ShaderCode& shader, Span<const BoundTensor> bindings, const void* push,
                  uint32_t push_bytes, const uint32_t groups[3], Span<const uint32_t> spec);
  // Submits what was recorded and waits for it.
  Status flush();
  // Dispatches recorded since start (for tests and profiles).
  uint64_t dispatch_count() const { return dispatches_; }
  uint64_t submit_count() const { return submits_; }
  // Compute pipelines created (and cached) so far.
  size_t pipeline_count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return pipelines_.size();
  }

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();

 private:
  Context() = default;
  Status init();
  Status init_instance();
  Status pick_device();
  Status init_device();

  struct Block {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize size = 0;
    void* mapped = nullptr;          // host address when the memory is host-visible
    bool staging = false;            // host-visible transfer memory, not tensor memory
    std::map<VkDeviceSize, VkDeviceSize> free;  // offset -> size, coalesced
  };
  Result<int> new_block(VkDeviceSize size, bool staging);
  Result<uint64_t> allocate_locked(size_t bytes, bool staging);
  void release_locked(uint64_t address, size_t bytes);
  Block* block_of(uint64_t address, VkDeviceSize* offset);
  Status begin_locked();
  Status flush_locked();
  void barrier_locked();

  struct Pipeline {
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
  };
  Result<Pipeline*> pipeline_locked(const ShaderCode& shader, uint32_t bindings, Span<const uint32_t> spec);

  std::mutex mutex_;
  Api api_;
  void* library_ = nullptr;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  uint32_t device_memory_type_ = 0;
  uint32_t staging_memory_type_ = 0;
  Capabilities caps_;

  std::vector<Block> blocks_;  // index + 1 is an address's block field
  std::vector<std::pair<uint64_t, size_t>> staging_in_flight_;  // released after the next flush

  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  bool recording_ = false;
  uint32_t recorded_ = 0;  // commands in the open command buffer
  uint64_t dispatches_ = 0;
  uint64_t submits_ = 0;

  std::map<std::pair<const uint32_t*, std::vector<uint32_t>>, Pipeline> pipelines_;
};

}  // namespace ember::vk
