// Device: where a tensor's storage lives ("cpu", "vulkan:0", "cuda:1").
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace ember {

enum class DeviceType : uint8_t { CPU = 0, Vulkan = 1, CUDA = 2 };
constexpr int kNumDeviceTypes = 3;

std::string_view device_type_name(DeviceType t);

class Device {
 public:
  Device(DeviceType type = DeviceType::CPU, int index = -1);  // NOLINT: implicit like torch
  // Parses "cpu", "vulkan", "vulkan:0", "cuda:1"; raises ember::Error on bad input.
  Device(std::string_view spec);  // NOLINT
  Device(const char* spec) : Device(std::string_view(spec)) {}  // NOLINT

  DeviceType type() const { return type_; }
  int index() const { return index_; }
  bool has_index() const { return index_ >= 0; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  std::string str() const;

  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  DeviceType type_;
  int index_;
};

std::ostream& operator<<(std::ostream& os, const Device& d);

// The device a tensor made for `d` lives on, as PyTorch reports it: "cpu"
// for any CPU device; a device type without an index is its device 0
// (to("vulkan") gives vulkan:0). Each backend opens one device (which one:
// the backend's selection, e.g. EMBER_VULKAN_DEVICE), so any other index is
// refused: "invalid device ordinal".
Device storage_device(Device d);

}  // namespace ember
