// Helpers of the Vulkan context's own files (context.cc, memory.cc): failing
// with the thread's message (Context::why()).
#pragma once

#include <sstream>

#include "kernels/vulkan/context.h"

namespace ember::vk {

// Sets the thread's Vulkan message (Context::why()) and returns `status`.
template <typename... Args>
Status fail_why(Status status, const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  Context::set_why(os.str());
  return status;
}

// A failed Vulkan call: OutOfMemory for the out-of-memory results, else Internal.
inline Status vk_fail(VkResult r, const char* what) {
  const Status s = (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
                       ? Status::OutOfMemory
                       : Status::Internal;
  return fail_why(s, what, " failed: ", result_name(r));
}

}  // namespace ember::vk

#define VK_TRY(call, what)                                      \
  do {                                                          \
    const VkResult vk_try_r = (call);                           \
    if (vk_try_r != VK_SUCCESS) return ::ember::vk::vk_fail(vk_try_r, what); \
  } while (0)
