#include "runtime/tensor/storage.h"

#include "runtime/core/error.h"

namespace ember {
namespace {

thread_local StorageAllocator* tls_allocator = nullptr;

}  // namespace

std::string backend_error_detail(const Backend& backend) {
  std::string why = backend.last_error();
  return why.empty() ? why : " (" + why + ")";
}

StorageAllocator* current_storage_allocator() { return tls_allocator; }

StorageAllocatorGuard::StorageAllocatorGuard(StorageAllocator* allocator) : previous_(tls_allocator) {
  tls_allocator = allocator;
}

StorageAllocatorGuard::~StorageAllocatorGuard() { tls_allocator = previous_; }

Result<Storage> allocate_storage(size_t bytes, Device requested) {
  const Device device = storage_device(requested);
  if (tls_allocator != nullptr && device.type() == DeviceType::CPU) {
    StorageAllocator* allocator = tls_allocator;
    StorageAllocatorGuard uninstalled(nullptr);  // restores the hook whatever allocate() returns
    return allocator->allocate(bytes);
  }
  Backend* backend = get_backend(device.type());
  EMBER_CHECK(backend != nullptr, Status::NotSupported, "ember is not built with support for ",
              device_type_name(device.type()), " devices");
  Result<Buffer> buffer = backend->allocate(bytes, 64);
  // A device out of memory: the backend's own words, which name the request
  // (PyTorch's "CUDA out of memory. Tried to allocate ...").
  const std::string why = backend->last_error();
  EMBER_CHECK(buffer.ok() || buffer.status() != Status::OutOfMemory || why.empty(), Status::OutOfMemory, why);
  EMBER_CHECK(buffer.ok(), buffer.status(), "failed to allocate ", bytes, " bytes on ", device,
              ": ", status_name(buffer.status()), backend_error_detail(*backend));
  return Storage(std::make_shared<StorageImpl>(backend, buffer.get(), device));
}

}  // namespace ember
