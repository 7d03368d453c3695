// The explicit list of backends compiled in (no static-initializer registration).
#include "runtime/backend/backend.h"
#include "runtime/core/error.h"
#include "runtime/ops/ops.h"
#include "runtime/tensor/storage.h"
#if RT_WITH_VULKAN
#include "kernels/vulkan/context.h"
#endif

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

void synchronize(Device device) {
  Backend* backend = get_backend(device.type());
  EMBER_CHECK(backend != nullptr, Status::NotSupported, "ember is not built with support for ",
              device_type_name(device.type()), " devices");
  const Status status = backend->synchronize();
  EMBER_CHECK(status == Status::Ok, status, "synchronize(", device, ") failed: ", status_name(status),
              backend_error_detail(*backend));
}

void select_vulkan_device(const std::string& spec) {
#if RT_WITH_VULKAN
  const Status status = vk::Context::select_device(spec);
  EMBER_CHECK(status == Status::Ok, status, "select_vulkan_device(\"", spec, "\"): ", vk::Context::why());
#else
  EMBER_CHECK(false, Status::NotSupported, "ember is not built with support for vulkan devices (select_vulkan_device(\"",
              spec, "\"))");
#endif
}

std::vector<std::string> vulkan_devices() {
#if RT_WITH_VULKAN
  Result<std::vector<std::string>> names = vk::Context::list_devices();
  EMBER_CHECK(names.ok(), names.status(), "vulkan_devices(): ", vk::Context::why());
  return std::move(names.get());
#else
  EMBER_CHECK(false, Status::NotSupported, "ember is not built with support for vulkan devices");
  return {};
#endif
}

}  // namespace ember
