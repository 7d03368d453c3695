// The Vulkan entry points ember uses, loaded at run time from the loader
// library (dlopen), so a binary runs on machines without Vulkan and reports
// that clearly instead of failing to start.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace ember::vk {

// X(name) for every function; global ones need no instance, instance ones an
// instance, device ones a device.
#define EMBER_VK_GLOBAL_FNS(X) \
  X(vkCreateInstance)          \
  X(vkEnumerateInstanceLayerProperties)

#define EMBER_VK_INSTANCE_FNS(X)             \
  X(vkDestroyInstance)                       \
  X(vkEnumeratePhysicalDevices)              \
  X(vkGetPhysicalDeviceProperties)           \
  X(vkGetPhysicalDeviceProperties2)          \
  X(vkGetPhysicalDeviceFeatures2)            \
  X(vkGetPhysicalDeviceMemoryProperties)     \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkEnumerateDeviceExtensionProperties)    \
  X(vkCreateDevice)                          \
  X(vkGetDeviceProcAddr)

#define EMBER_VK_DEVICE_FNS(X)          \
  X(vkDestroyDevice)                    \
  X(vkGetDeviceQueue)                   \
  X(vkDeviceWaitIdle)                   \
  X(vkAllocateMemory)                   \
  X(vkFreeMemory)                       \
  X(vkMapMemory)                        \
  X(vkCreateBuffer)                     \
  X(vkDestroyBuffer)                    \
  X(vkGetBufferMemoryRequirements)      \
  X(vkBindBufferMemory)                 \
  X(vkCreateShaderModule)               \
  X(vkDestroyShaderModule)              \
  X(vkCreateDescriptorSetLayout)        \
  X(vkDestroyDescriptorSetLayout)       \
  X(vkCreatePipelineLayout)             \
  X(vkDestroyPipelineLayout)            \
  X(vkCreateComputePipelines)           \
  X(vkDestroyPipeline)                  \
  X(vkCreateCommandPool)                \
  X(vkDestroyCommandPool)               \
  X(vkAllocateCommandBuffers)           \
  X(vkBeginCommandBuffer)               \
  X(vkEndCommandBuffer)                 \
  X(vkResetCommandBuffer)               \
  X(vkCmdBindPipeline)                  \
  X(vkCmdPushConstants)                 \
  X(vkCmdDispatch)                      \
  X(vkCmdPipelineBarrier)               \
  X(vkCmdCopyBuffer)                    \
  X(vkCmdFillBuffer)                    \
  X(vkCreateFence)                      \
  X(vkDestroyFence)                     \
  X(vkResetFences)                      \
  X(vkWaitForFences)                    \
  X(vkQueueSubmit)

struct Api {
#define EMBER_VK_DECLARE(name) PFN_##name name = nullptr;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  EMBER_VK_GLOBAL_FNS(EMBER_VK_DECLARE)
  EMBER_VK_INSTANCE_FNS(EMBER_VK_DECLARE)
  EMBER_VK_DEVICE_FNS(EMBER_VK_DECLARE)
  PFN_vkCmdPushDescriptorSetKHR vkCmdPushDescriptorSetKHR = nullptr;
  PFN_vkCreateDebugUtilsMessengerEXT vkCreateDebugUtilsMessengerEXT = nullptr;
  PFN_vkDestroyDebugUtilsMessengerEXT vkDestroyDebugUtilsMessengerEXT = nullptr;
#undef EMBER_VK_DECLARE
};

// Short name of a VkResult ("VK_ERROR_OUT_OF_DEVICE_MEMORY").
const char* result_name(VkResult r);

}  // namespace ember::vk
