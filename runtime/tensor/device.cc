#include "runtime/tensor/device.h"

#include <cctype>

#include "runtime/core/error.h"

namespace ember {

std::string_view device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::Vulkan: return "vulkan";
    case DeviceType::CUDA: return "cuda";
  }
  return "unknown";
}

Device::Device(DeviceType type, int index) : type_(type), index_(index) {
  EMBER_ENFORCE(index >= -1, Status::InvalidArgument, "Device index must be -1 or non-negative, got ", index);
  EMBER_ENFORCE(!(type == DeviceType::CPU && index > 0), Status::InvalidArgument,
              "CPU device index must be -1 or zero, got ", index);
}

Device::Device(std::string_view spec) : type_(DeviceType::CPU), index_(-1) {
  const size_t colon = spec.find(':');
  const std::string_view type_str = spec.substr(0, colon);
  bool found = false;
  for (int i = 0; i < kNumDeviceTypes; ++i) {
    if (type_str == device_type_name(static_cast<DeviceType>(i))) {
      type_ = static_cast<DeviceType>(i);
      found = true;
    }
  }
  EMBER_ENFORCE(found, Status::InvalidArgument,
              "Expected one of cpu, vulkan, cuda device type at start of device string: ", spec);
  if (colon != std::string_view::npos) {
    const std::string_view idx = spec.substr(colon + 1);
    bool digits = !idx.empty() && idx.size() < 10 && (idx.size() == 1 || idx[0] != '0');
    for (char c : idx) digits = digits && std::isdigit(static_cast<unsigned char>(c));
    EMBER_ENFORCE(digits, Status::InvalidArgument, "Invalid device string: '", spec, "'");
    index_ = std::stoi(std::string(idx));
  }
  EMBER_ENFORCE(!(type_ == DeviceType::CPU && index_ > 0), Status::InvalidArgument,
              "CPU device index must be -1 or zero, got ", index_);
}

std::string Device::str() const {
  std::string s(device_type_name(type_));
  if (index_ >= 0) s += ":" + std::to_string(index_);
  return s;
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

Device storage_device(Device d) {
  if (d.is_cpu()) return Device(DeviceType::CPU);
  EMBER_ENFORCE(d.index() <= 0, Status::InvalidArgument, "invalid device ordinal: ", d, " (ember uses one ",
              device_type_name(d.type()), " device, ", device_type_name(d.type()), ":0)");
  return Device(d.type(), 0);
}

}  // namespace ember
