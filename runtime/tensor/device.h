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

}  // namespace ember
