#include "kernels/vulkan/context.h"
#include "kernels/vulkan/context_util.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace ember::vk {
namespace {

std::mutex g_select_mutex;
std::string g_device_spec;  // select_device(); empty: EMBER_VULKAN_DEVICE or the best one
bool g_created = false;
std::atomic<int> g_validation_errors{0};

thread_local std::string t_why;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT,
                                                     const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    g_validation_errors.fetch_add(1);
    std::fprintf(stderr, "ember vulkan validation error: %s\n", data->pMessage);
  } else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
    std::fprintf(stderr, "ember vulkan validation warning: %s\n", data->pMessage);
  }
  return VK_FALSE;
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

}  // namespace

const char* result_name(VkResult r) {
  switch (r) {
#define CASE(x) \
  case x:       \
    return #x;
    CASE(VK_SUCCESS)
    CASE(VK_NOT_READY)
    CASE(VK_TIMEOUT)
    CASE(VK_INCOMPLETE)
    CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    CASE(VK_ERROR_INITIALIZATION_FAILED)
    CASE(VK_ERROR_DEVICE_LOST)
    CASE(VK_ERROR_MEMORY_MAP_FAILED)
    CASE(VK_ERROR_LAYER_NOT_PRESENT)
    CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    CASE(VK_ERROR_TOO_MANY_OBJECTS)
    CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
#undef CASE
    default:
      return "VkResult error";
  }
}

const std::string& Context::why() { return t_why; }
void Context::set_why(std::string message) { t_why = std::move(message); }
int Context::validation_errors() { return g_validation_errors.load(); }

Status Context::select_device(const std::string& spec) {
  std::lock_guard<std::mutex> lock(g_select_mutex);
  if (g_created) return fail_why(Status::InvalidState, "the Vulkan device is already open; select it before first use");
  g_device_spec = spec;
  return Status::Ok;
}

Result<Context*> Context::get() {
  // Created once; a failure is remembered (with its message) and reported again.
  static Context* context = nullptr;
  static Status status = Status::Ok;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    {
      std::lock_guard<std::mutex> lock(g_select_mutex);
      g_created = true;
    }
    auto* c = new Context();
    status = c->init();
    if (status == Status::Ok) {
      context = c;
    } else {
      failure = why();
      delete c;
    }
  });
  if (context == nullptr) {
    set_why(failure);
    return status;
  }
  return context;
}

Status Context::init() {
  if (Status s = init_instance(); s != Status::Ok) return s;
  if (Status s = pick_device(); s != Status::Ok) return s;
  return init_device();
}

Status Context::init_instance() {
  const char* path = std::getenv("EMBER_VULKAN_LOADER");
  const char* lib = (path != nullptr && *path != '\0') ? path : "libvulkan.so.1";
  library_ = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    return fail_why(Status::UnsupportedHardware, "Vulkan loader not found (", lib, "): ", dlerror(),
                "; install the Vulkan loader (Debian: libvulkan1) and a driver");
  }
  api_.vkGetInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(library_, "vkGetInstanceProcAddr"));
  if (api_.vkGetInstanceProcAddr == nullptr) {
    return fail_why(Status::UnsupportedHardware, lib, " has no vkGetInstanceProcAddr");
  }
#define LOAD_GLOBAL(name) \
  api_.name = reinterpret_cast<PFN_##name>(api_.vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));
  EMBER_VK_GLOBAL_FNS(LOAD_GLOBAL)
#undef LOAD_GLOBAL

  const bool validate = env_flag("EMBER_VULKAN_VALIDATION");
  std::vector<const char*> layers;
  std::vector<const char*> extensions;
  if (validate) {
    uint32_t n = 0;
    api_.vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> props(n);
    api_.vkEnumerateInstanceLayerProperties(&n, props.data());
    const bool found = std::any_of(props.begin(), props.end(), [](const VkLayerProperties& p) {
      return std::strcmp(p.layerName, "VK_LAYER_KHRONOS_validation") == 0;
    });
    if (!found) {
      return fail_why(Status::UnsupportedHardware,
                  "EMBER_VULKAN_VALIDATION is set but VK_LAYER_KHRONOS_validation is not installed "
                  "(Debian: vulkan-validationlayers)");
    }
    layers.push_back("VK_LAYER_KHRONOS_validation");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "ember";
  app.pEngineName = "ember";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  const VkResult r = api_.vkCreateInstance(&info, nullptr, &instance_);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
    return fail_why(Status::UnsupportedHardware, "no Vulkan device found: the loader has no Vulkan 1.1 driver");
  }
  VK_TRY(r, "vkCreateInstance");
#define LOAD_INSTANCE(name) \
  api_.name = reinterpret_cast<PFN_##name>(api_.vkGetInstanceProcAddr(instance_, #name));
  EMBER_VK_INSTANCE_FNS(LOAD_INSTANCE)
  if (validate) {
    LOAD_INSTANCE(vkCreateDebugUtilsMessengerEXT)
    LOAD_INSTANCE(vkDestroyDebugUtilsMessengerEXT)
    VkDebugUtilsMessengerCreateInfoEXT m{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    m.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    m.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    m.pfnUserCallback = on_validation_message;
    VK_TRY(api_.vkCreateDebugUtilsMessengerEXT(instance_, &m, nullptr, &messenger_),
           "vkCreateDebugUtilsMessengerEXT");
  }
#undef LOAD_INSTANCE
  return Status::Ok;
}

namespace {
struct Candidate {
  VkPhysicalDevice device;
  VkPhysicalDeviceProperties props;
};

std::vector<Candidate> sorted_devices(const Api& api, VkInstance instance) {
  uint32_t n = 0;
  api.vkEnumeratePhysicalDevices(instance, &n, nullptr);
  std::vector<VkPhysicalDevice> devices(n);
  api.vkEnumeratePhysicalDevices(instance, &n, devices.data());
  std::vector<Candidate> out;
  for (VkPhysicalDevice d : devices) {
    Candidate c{d, {}};
    api.vkGetPhysicalDeviceProperties(d, &c.props);
    if (c.props.apiVersion < VK_API_VERSION_1_1) continue;
    out.push_back(c);
  }
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return type_rank(a.props.deviceType) < type_rank(b.props.deviceType);
  });
  return out;
}

std::string describe(const Candidate& c) {
  return std::string(c.props.deviceName) + " [" + type_name(c.props.deviceType) + "]";
}
}  // namespace

Result<std::vector<std::string>> Context::list_devices() {
  EMBER_ASSIGN_OR_RETURN(Context * c, get());
  std::vector<std::string> names;
  for (const Candidate& d : sorted_devices(c->api_, c->instance_)) names.push_back(describe(d));
  return names;
}

Status Context::pick_device() {
  const std::vector<Candidate> devices = sorted_devices(api_, instance_);
  if (devices.empty()) return fail_why(Status::UnsupportedHardware, "no Vulkan device found (no Vulkan 1.1 device)");
  std::string spec;
  {
    std::lock_guard<std::mutex> lock(g_select_mutex);
    spec = g_device_spec;
  }
  if (spec.empty()) {
    const char* env = std::getenv("EMBER_VULKAN_DEVICE");
    if (env != nullptr) spec = env;
  }
  size_t chosen = 0;
  if (!spec.empty()) {
    const bool numeric = std::all_of(spec.begin(), spec.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    size_t found = devices.size();
    if (numeric && spec.size() < 6) {
      const size_t index = std::stoul(spec);
      if (index < devices.size()) found = index;
    } else {
      for (size_t i = 0; i < devices.size() && found == devices.size(); ++i) {
        if (lower(devices[i].props.deviceName).find(lower(spec)) != std::string::npos) found = i;
      }
    }
    if (found == devices.size()) {
      std::string list;
      for (size_t i = 0; i < devices.size(); ++i) list += (i ? ", " : "") + std::to_string(i) + ": " + describe(devices[i]);
      return fail_why(Status::NotFound, "no Vulkan device matches \"", spec, "\"; devices: ", list);
    }
    chosen = found;
  }
  physical_ = devices[chosen].device;
  const VkPhysicalDeviceProperties& p = devices[chosen].props;
  caps_.device_name = p.deviceName;
  caps_.device_type = p.deviceType;
  caps_.api_version = p.apiVersion;
  caps_.max_push_constants = p.limits.maxPushConstantsSize;
  caps_.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  caps_.min_storage_buffer_offset_alignment = p.limits.minStorageBufferOffsetAlignment;
  caps_.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) caps_.max_workgroup_count[i] = p.limits.maxComputeWorkGroupCount[i];
  caps_.max_shared_memory = p.limits.maxComputeSharedMemorySize;
  return Status::Ok;
}

Status Context::init_device() {
  // Extensions.
  uint32_t n = 0;
  api_.vkEnumerateDeviceExtensionProperties(physical_, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  api_.vkEnumerateDeviceExtensionProperties(physical_, nullptr, &n, ext.data());
  auto has = [&](const char* name) {
    return std::any_of(ext.begin(), ext.end(), [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
  };
  if (!has(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME)) {
    return fail_why(Status::UnsupportedHardware, "Vulkan device ", caps_.device_name, " lacks ",
                VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  }
  std::vector<const char*> enabled = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
  // The version the device is used at: the instance asks for 1.1, so features
  // promoted to core later still need their extensions enabled by name (else
  // shaders declaring SPV_KHR_8bit_storage, SPV_KHR_integer_dot_product... fail validation).
  const uint32_t api = std::min<uint32_t>(caps_.api_version, VK_API_VERSION_1_1);
  const bool has_f16i8 = api >= VK_API_VERSION_1_2 || has(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  if (api < VK_API_VERSION_1_2 && has_f16i8) enabled.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  const bool has_8bit = api >= VK_API_VERSION_1_2 || has(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  if (api < VK_API_VERSION_1_2 && has_8bit) enabled.push_back(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  const bool has_dot = api >= VK_API_VERSION_1_3 || has(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  if (api < VK_API_VERSION_1_3 && has_dot) enabled.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);

  // Features: query what exists, enable the useful subset.
  VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR dot{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
  VkPhysicalDevice8BitStorageFeaturesKHR s8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES_KHR};
  VkPhysicalDeviceShaderFloat16Int8FeaturesKHR f16i8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR};
  VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &s16;
  void** tail = &s16.pNext;
  if (has_f16i8) { *tail = &f16i8; tail = &f16i8.pNext; }
  if (has_8bit) { *tail = &s8; tail = &s8.pNext; }
  if (has_dot) { *tail = &dot; tail = &dot.pNext; }
  api_.vkGetPhysicalDeviceFeatures2(physical_, &features);
  VkPhysicalDeviceFeatures2 want = features;
  want.features = VkPhysicalDeviceFeatures{};
  want.features.shaderInt64 = features.features.shaderInt64;
  want.features.shaderInt16 = features.features.shaderInt16;
  caps_.int64 = features.features.shaderInt64 == VK_TRUE;
  caps_.float16 = has_f16i8 && f16i8.shaderFloat16 && s16.storageBuffer16BitAccess;
  caps_.int8 = has_f16i8 && has_8bit && f16i8.shaderInt8 && s8.storageBuffer8BitAccess;
  caps_.integer_dot_product = has_dot && dot.shaderIntegerDotProduct;
  // Enable only what caps_ claims (the structs keep the queried values otherwise).
  s16.storageBuffer16BitAccess = caps_.float16;
  s16.uniformAndStorageBuffer16BitAccess = VK_FALSE;
  s16.storagePushConstant16 = VK_FALSE;
  s16.storageInputOutput16 = VK_FALSE;
  f16i8.shaderFloat16 = caps_.float16;
  f16i8.shaderInt8 = caps_.int8;
  s8.storageBuffer8BitAccess = caps_.int8;
  s8.uniformAndStorageBuffer8BitAccess = VK_FALSE;
  s8.storagePushConstant8 = VK_FALSE;
  dot.shaderIntegerDotProduct = caps_.integer_dot_product;

  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props2.pNext = &sub;
  api_.vkGetPhysicalDeviceProperties2(physical_, &props2);
  caps_.subgroup_size = sub.subgroupSize;

  // A compute queue (prefer a compute-only family).
  api_.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  api_.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &n, families.data());
  int family = -1;
  for (uint32_t i = 0; i < n; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (family < 0 || !(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) family = static_cast<int>(i);
  }
  if (family < 0) return fail_why(Status::UnsupportedHardware, "Vulkan device ", caps_.device_name, " has no compute queue");
  queue_family_ = static_cast<uint32_t>(family);

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  q.queueFamilyIndex = queue_family_;
  q.queueCount = 1;
  q.pQueuePriorities = &priority;
  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &want;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &q;
  info.enabledExtensionCount = static_cast<uint32_t>(enabled.size());
  info.ppEnabledExtensionNames = enabled.data();
  VK_TRY(api_.vkCreateDevice(physical_, &info, nullptr, &device_), "vkCreateDevice");
#define LOAD_DEVICE(name) api_.name = reinterpret_cast<PFN_##name>(api_.vkGetDeviceProcAddr(device_, #name));
  EMBER_VK_DEVICE_FNS(LOAD_DEVICE)
  LOAD_DEVICE(vkCmdPushDescriptorSetKHR)
#undef LOAD_DEVICE
  api_.vkGetDeviceQueue(device_, queue_family_, 0, &queue_);

  // Memory types: device-local for tensors (host-visible too when the device
  // shares memory with the host), host-visible + coherent for staging.
  VkPhysicalDeviceMemoryProperties mem;
  api_.vkGetPhysicalDeviceMemoryProperties(physical_, &mem);
  int device_type = -1, uma_type = -1, staging_type = -1, cached_staging = -1;
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags f = mem.memoryTypes[i].propertyFlags;
    const bool local = f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    const bool visible = (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    if (local && device_type < 0) device_type = static_cast<int>(i);
    if (local && visible && uma_type < 0) uma_type = static_cast<int>(i);
    if (visible && staging_type < 0) staging_type = static_cast<int>(i);
    if (visible && (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) && cached_staging < 0) cached_staging = static_cast<int>(i);
  }
  if (staging_type < 0) return fail_why(Status::UnsupportedHardware, "Vulkan device has no host-visible coherent memory");
  if (device_type < 0) device_type = staging_type;
  // UMA devices (integrated GPUs, lavapipe): tensors in memory the host maps.
  // EMBER_VULKAN_STAGING=1 treats the device as discrete (every upload and
  // download through staging buffers), so that path is tested on lavapipe.
  const bool uma = uma_type >= 0 && caps_.device_type != VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU &&
                   !env_flag("EMBER_VULKAN_STAGING");
  device_memory_type_ = static_cast<uint32_t>(uma ? uma_type : device_type);
  staging_memory_type_ = static_cast<uint32_t>(cached_staging >= 0 ? cached_staging : staging_type);
  caps_.host_visible_device_memory = uma;

  VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = queue_family_;
  VK_TRY(api_.vkCreateCommandPool(device_, &pool, nullptr, &pool_), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  VK_TRY(api_.vkAllocateCommandBuffers(device_, &alloc, &cmd_), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VK_TRY(api_.vkCreateFence(device_, &fence, nullptr, &fence_), "vkCreateFence");
  return Status::Ok;
}

Context::~Context() {
  if (device_ != VK_NULL_HANDLE) {
    api_.vkDeviceWaitIdle(device_);
    for (auto& [key, p] : pipelines_) {
      api_.vkDestroyPipeline(device_, p.pipeline, nullptr);
      api_.vkDestroyPipelineLayout(device_, p.layout, nullptr);
      api_.vkDestroyDescriptorSetLayout(device_, p.set_layout, nullptr);
    }
    for (Block& b : blocks_) {
      api_.vkDestroyBuffer(device_, b.buffer, nullptr);
      api_.vkFreeMemory(device_, b.memory, nullptr);
    }
    if (fence_ != VK_NULL_HANDLE) api_.vkDestroyFence(device_, fence_, nullptr);
    if (pool_ != VK_NULL_HANDLE) api_.vkDestroyCommandPool(device_, pool_, nullptr);
    api_.vkDestroyDevice(device_, nullptr);
  }
  if (messenger_ != VK_NULL_HANDLE) api_.vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (instance_ != VK_NULL_HANDLE) api_.vkDestroyInstance(instance_, nullptr);
  if (library_ != nullptr) dlclose(library_);
}

// ---- commands ----

Status Context::begin_locked() {
  if (recording_) return Status::Ok;
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VK_TRY(api_.vkBeginCommandBuffer(cmd_, &begin), "vkBeginCommandBuffer");
  recording_ = true;
  recorded_ = 0;
  return Status::Ok;
}

void Context::barrier_locked() {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                          VK_ACCESS_TRANSFER_WRITE_BIT;
  api_.vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier, 0,
                            nullptr, 0, nullptr);
}

Status Context::flush_locked() {
  if (!recording_) return Status::Ok;
  recording_ = false;
  VK_TRY(api_.vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
  if (recorded_ > 0) {
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd_;
    VK_TRY(api_.vkQueueSubmit(queue_, 1, &submit, fence_), "vkQueueSubmit");
    ++submits_;
    const VkResult r = api_.vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX);
    api_.vkResetFences(device_, 1, &fence_);
    if (r != VK_SUCCESS) return vk_fail(r, "vkWaitForFences");
  }
  api_.vkResetCommandBuffer(cmd_, 0);
  for (const auto& [address, bytes] : staging_in_flight_) release_locked(address, bytes);
  staging_in_flight_.clear();
  return Status::Ok;
}

Status Context::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  return flush_locked();
}

Status Context::upload(uint64_t address, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok;
  std::lock_guard<std::mutex> lock(mutex_);
  VkDeviceSize offset = 0;
  Block* dst = block_of(address, &offset);
  if (dst == nullptr) return fail_why(Status::InvalidArgument, "not a Vulkan tensor address");
  // Nothing pending and host-visible memory: write it directly.
  if (!recording_ && dst->mapped != nullptr) {
    std::memcpy(static_cast<std::byte*>(dst->mapped) + offset, src, bytes);
    return Status::Ok;
  }
  // Otherwise through staging memory, ordered after what is already recorded.
  EMBER_ASSIGN_OR_RETURN(const uint64_t staging, allocate_locked(bytes, /*staging=*/true));
  staging_in_flight_.emplace_back(staging, bytes);
  VkDeviceSize staging_offset = 0;
  Block* s = block_of(staging, &staging_offset);
  std::memcpy(static_cast<std::byte*>(s->mapped) + staging_offset, src, bytes);
  dst = block_of(address, &offset);  // blocks_ may have grown
  if (Status st = begin_locked(); st != Status::Ok) return st;
  VkBufferCopy region{staging_offset, offset, bytes};
  api_.vkCmdCopyBuffer(cmd_, s->buffer, dst->buffer, 1, &region);
  barrier_locked();
  ++recorded_;
  return Status::Ok;
}

Status Context::download(void* dst, uint64_t address, size_t bytes) {
  const Download one{dst, address, bytes};
  return download(Span<const Download>(&one, 1));
}

Status Context::download(Span<const Download> items) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Where each item is read from once the stream has run: the tensor's own
  // mapped memory, or a staging copy recorded behind the pending work.
  std::vector<const std::byte*> from(items.size(), nullptr);
  for (size_t i = 0; i < items.size(); ++i) {
    const Download& d = items[i];
    if (d.bytes == 0) continue;
    VkDeviceSize offset = 0;
    Block* src = block_of(d.address, &offset);
    if (src == nullptr) return fail_why(Status::InvalidArgument, "not a Vulkan tensor address");
    if (src->mapped != nullptr) {
      from[i] = static_cast<const std::byte*>(src->mapped) + offset;
      continue;
    }
    EMBER_ASSIGN_OR_RETURN(const uint64_t staging, allocate_locked(d.bytes, /*staging=*/true));
    staging_in_flight_.emplace_back(staging, d.bytes);
    VkDeviceSize staging_offset = 0;
    Block* s = block_of(staging, &staging_offset);
    src = block_of(d.address, &offset);  // blocks_ may have grown
    if (Status st = begin_locked(); st != Status::Ok) return st;
    VkBufferCopy region{offset, staging_offset, d.bytes};
    api_.vkCmdCopyBuffer(cmd_, src->buffer, s->buffer, 1, &region);
    ++recorded_;
    // Mapped for good: still readable after flush_locked() returns the range.
    from[i] = static_cast<const std::byte*>(s->mapped) + staging_offset;
  }
  if (Status st = flush_locked(); st != Status::Ok) return st;
  for (size_t i = 0; i < items.size(); ++i) {
    if (from[i] != nullptr) std::memcpy(items[i].dst, from[i], items[i].bytes);
  }
  return Status::Ok;
}

Status Context::fill_zero(uint64_t address, size_t bytes) {
  if (bytes == 0) return Status::Ok;
  std::lock_guard<std::mutex> lock(mutex_);
  VkDeviceSize offset = 0;
  Block* b = block_of(address, &offset);
  if (b == nullptr) return fail_why(Status::InvalidArgument, "not a Vulkan tensor address");
  if (!recording_ && b->mapped != nullptr) {
    std::memset(static_cast<std::byte*>(b->mapped) + offset, 0, bytes);
    return Status::Ok;
  }
  if (offset % 4 != 0 || bytes % 4 != 0) return fail_why(Status::InvalidArgument, "fill_zero needs 4-byte alignment");
  if (Status st = begin_locked(); st != Status::Ok) return st;
  api_.vkCmdFillBuffer(cmd_, b->buffer, offset, bytes, 0);
  barrier_locked();
  ++recorded_;
  return Status::Ok;
}

Result<Context::Pipeline*> Context::pipeline_locked(const ShaderCode& shader, uint32_t bindings,
                                                    Span<const uint32_t> spec) {
  std::pair<const uint32_t*, std::vector<uint32_t>> key(shader.words, std::vector<uint32_t>(spec.begin(), spec.end()));
  key.second.push_back(bindings);
  auto it = pipelines_.find(key);
  if (it != pipelines_.end()) return &it->second;

  Pipeline p;
  std::vector<VkDescriptorSetLayoutBinding> slots(bindings);
  for (uint32_t i = 0; i < bindings; ++i) {
    slots[i] = VkDescriptorSetLayoutBinding{i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  }
  VkDescriptorSetLayoutCreateInfo set{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  set.bindingCount = bindings;
  set.pBindings = slots.data();
  VK_TRY(api_.vkCreateDescriptorSetLayout(device_, &set, nullptr, &p.set_layout), "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, caps_.max_push_constants < 128 ? caps_.max_push_constants : 128};
  VkPipelineLayoutCreateInfo layout{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout.setLayoutCount = 1;
  layout.pSetLayouts = &p.set_layout;
  layout.pushConstantRangeCount = 1;
  layout.pPushConstantRanges = &range;
  VK_TRY(api_.vkCreatePipelineLayout(device_, &layout, nullptr, &p.layout), "vkCreatePipelineLayout");

  VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module_info.codeSize = shader.count * sizeof(uint32_t);
  module_info.pCode = shader.words;
  VkShaderModule module = VK_NULL_HANDLE;
  VK_TRY(api_.vkCreateShaderModule(device_, &module_info, nullptr, &module), "vkCreateShaderModule");
  std::vector<VkSpecializationMapEntry> entries(spec.size());
  for (size_t i = 0; i < spec.size(); ++i) {
    entries[i] = VkSpecializationMapEntry{static_cast<uint32_t>(i), static_cast<uint32_t>(i * 4), 4};
  }
  VkSpecializationInfo spec_info{static_cast<uint32_t>(spec.size()), entries.data(), spec.size() * 4, spec.data()};
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = VkPipelineShaderStageCreateInfo{VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = spec.empty() ? nullptr : &spec_info;
  info.layout = p.layout;
  const VkResult r = api_.vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &info, nullptr, &p.pipeline);
  api_.vkDestroyShaderModule(device_, module, nullptr);
  if (r != VK_SUCCESS) {
    api_.vkDestroyPipelineLayout(device_, p.layout, nullptr);
    api_.vkDestroyDescriptorSetLayout(device_, p.set_layout, nullptr);
    return fail_why(Status::Internal, "creating the Vulkan pipeline for shader ", shader.name, " failed: ", result_name(r));
  }
  return &pipelines_.emplace(std::move(key), p).first->second;
}

Status Context::dispatch(const ShaderCode& shader, Span<const BoundTensor> bindings, const void* push,
                         uint32_t push_bytes, const uint32_t groups[3], Span<const uint32_t> spec) {
  if (push_bytes > 128 || push_bytes > caps_.max_push_constants) {
    return fail_why(Status::Internal, "shader ", shader.name, ": ", push_bytes, " bytes of push constants");
  }
  for (int i = 0; i < 3; ++i) {
    if (groups[i] > caps_.max_workgroup_count[i]) {
      return fail_why(Status::NotSupported, "shader ", shader.name, ": ", groups[i], " workgroups in dimension ", i,
                  " exceed the device's limit of ", caps_.max_workgroup_count[i]);
    }
  }
  if (groups[0] == 0 || groups[1] == 0 || groups[2] == 0) return Status::Ok;
  std::lock_guard<std::mutex> lock(mutex_);
  EMBER_ASSIGN_OR_RETURN(Pipeline * p, pipeline_locked(shader, static_cast<uint32_t>(bindings.size()), spec));
  if (Status st = begin_locked(); st != Status::Ok) return st;
  std::vector<VkDescriptorBufferInfo> infos(bindings.size());
  std::vector<VkWriteDescriptorSet> writes(bindings.size());
  for (size_t i = 0; i < bindings.size(); ++i) {
    infos[i] = VkDescriptorBufferInfo{bindings[i].buffer, bindings[i].offset, bindings[i].range};
    writes[i] = VkWriteDescriptorSet{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  api_.vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
  api_.vkCmdPushDescriptorSetKHR(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0,
                                 static_cast<uint32_t>(writes.size()), writes.data());
  if (push_bytes > 0) api_.vkCmdPushConstants(cmd_, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
  api_.vkCmdDispatch(cmd_, groups[0], groups[1], groups[2]);
  barrier_locked();
  ++recorded_;
  ++dispatches_;
  return Status::Ok;
}

}  // namespace ember::vk
