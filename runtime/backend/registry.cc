// The explicit list of backends compiled in (no static-initializer registration).
#include "runtime/backend/backend.h"
#include "runtime/core/error.h"
#include "runtime/ops/ops.h"
#include "runtime/tensor/storage.h"

namespace ember {

Backend* cpu_backend();
#if RT_WITH_VULKAN
Backend* vulkan_backend();
#endif
// Linked in by depending on //kernels/cuda (runtime:ember does with
// --config=cuda; tests link its host emulation): a weak reference, null otherwise.
Backend* cuda_backend() __attribute__((weak));

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
      return cuda_backend != nullptr ? cuda_backend() : nullptr;
  }
  return nullptr;
}

void synchronize(Device device) {
  Backend* backend = get_backend(device.type());
  EMBER_ENFORCE(backend != nullptr, Status::NotSupported, "ember is not built with support for ",
              device_type_name(device.type()), " devices");
  const Status status = backend->synchronize();
  EMBER_ENFORCE(status == Status::Ok, status, "synchronize(", device, ") failed: ", status_name(status),
              backend_error_detail(*backend));
}

namespace {

Backend* backend_or_raise(DeviceType type) {
  Backend* backend = get_backend(type);
  EMBER_ENFORCE(backend != nullptr, Status::NotSupported, "ember is not built with support for ",
              device_type_name(type), " devices");
  return backend;
}

}  // namespace

std::vector<std::string> device_names(DeviceType type) {
  Backend* backend = backend_or_raise(type);
  Result<std::vector<std::string>> names = backend->devices();
  EMBER_ENFORCE(names.ok(), names.status(), device_type_name(type), " devices: ", backend->last_error());
  return std::move(names.get());
}

void select_device(DeviceType type, const std::string& spec) {
  Backend* backend = backend_or_raise(type);
  const Status status = backend->select_device(spec);
  EMBER_ENFORCE(status == Status::Ok, status, "select_device(", device_type_name(type), ", \"", spec, "\"): ",
              backend->last_error());
}

void select_vulkan_device(const std::string& spec) {
  Backend* backend = backend_or_raise(DeviceType::Vulkan);
  const Status status = backend->select_device(spec);
  EMBER_ENFORCE(status == Status::Ok, status, "select_vulkan_device(\"", spec, "\"): ", backend->last_error());
}

std::vector<std::string> vulkan_devices() {
  Backend* backend = backend_or_raise(DeviceType::Vulkan);
  Result<std::vector<std::string>> names = backend->devices();
  EMBER_ENFORCE(names.ok(), names.status(), "vulkan_devices(): ", backend->last_error());
  return std::move(names.get());
}

bool cuda_is_available() { return cuda_device_count() > 0; }

int cuda_device_count() {
  Backend* backend = get_backend(DeviceType::CUDA);
  if (backend == nullptr) return 0;
  Result<std::vector<std::string>> names = backend->devices();
  return names.ok() ? static_cast<int>(names->size()) : 0;
}

size_t memory_allocated(Device device) { return backend_or_raise(device.type())->memory_stats().allocated; }

size_t memory_reserved(Device device) { return backend_or_raise(device.type())->memory_stats().reserved; }

void empty_cache(Device device) {
  Backend* backend = backend_or_raise(device.type());
  const Status status = backend->empty_cache();
  EMBER_ENFORCE(status == Status::Ok, status, "empty_cache(", device, ") failed: ", status_name(status),
              backend_error_detail(*backend));
}

}  // namespace ember
