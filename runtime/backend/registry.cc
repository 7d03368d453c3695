// The explicit list of backends compiled in (no static-initializer registration).
#include "runtime/backend/backend.h"

namespace ember {

Backend* cpu_backend();
#if RT_WITH_VULKAN
Backend* vulkan_backend();
#endif
#if RT_WITH_CUDA
Backend* cuda_backend();
#endif

Backend* get_backend(DeviceType type) {
  switch (type) {
    case DeviceType::CPU:
      return cpu_backend();
    case DeviceType::Vulkan:
#if RT_WITH_VULKAN
      return vulkan_backend();
#else
      return nullptr;
#endif
    case DeviceType::CUDA:
#if RT_WITH_CUDA
      return cuda_backend();
#else
      return nullptr;
#endif
  }
  return nullptr;
}

}  // namespace ember
