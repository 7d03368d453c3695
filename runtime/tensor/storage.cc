#include "runtime/tensor/storage.h"

#include "runtime/core/error.h"

namespace ember {

Storage allocate_storage(size_t bytes, Device device) {
  Backend* backend = get_backend(device.type());
  EMBER_CHECK(backend != nullptr, Status::NotSupported, "ember is not built with support for ",
              device_type_name(device.type()), " devices");
  Result<Buffer> buffer = backend->allocate(bytes, 64);
  EMBER_CHECK(buffer.ok(), buffer.status(), "failed to allocate ", bytes, " bytes on ", device,
              ": ", status_name(buffer.status()));
  return std::make_shared<StorageImpl>(backend, buffer.get(), device);
}

}  // namespace ember
