#include "runtime/model/npz.h"

#include <cstdint>
#include <fstream>
#include <iterator>

#include "runtime/core/error.h"
#include "runtime/model/npy.h"

namespace ember {
namespace {

uint16_t le16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t le32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

}  // namespace

// Reads the local file headers in order (np.savez writes no data descriptors
// for stored entries of known size).
Result<std::vector<NpzEntry>> parse_npz(const void* data, size_t size, const std::string& name,
                                        std::string* error) {
  const auto* b = static_cast<const unsigned char*>(data);
  std::vector<NpzEntry> entries;
  size_t pos = 0;
  while (pos + 4 <= size && le32(b + pos) == 0x04034b50u) {
    if (size - pos < 30)
      return report_error(error, Status::InvalidArgument, "'", name, "': a zip entry header is truncated");
    const uint16_t flags = le16(b + pos + 6), method = le16(b + pos + 8);
    uint64_t bytes = le32(b + pos + 18);
    const uint16_t name_len = le16(b + pos + 26), extra_len = le16(b + pos + 28);
    if (size - pos - 30 < static_cast<size_t>(name_len) + extra_len)
      return report_error(error, Status::InvalidArgument, "'", name, "': a zip entry header is truncated");
    const std::string entry(reinterpret_cast<const char*>(b + pos + 30), name_len);
    const unsigned char* extra = b + pos + 30 + name_len;
    // ZIP64 (numpy forces it for large arrays): extra field 0x0001 holds the sizes.
    for (size_t e = 0; e + 4 <= extra_len;) {
      const uint16_t id = le16(extra + e), len = le16(extra + e + 2);
      if (id == 1 && len >= 16 && e + 4 + 16 <= extra_len)
        bytes = le32(extra + e + 4) | (static_cast<uint64_t>(le32(extra + e + 8)) << 32);
      e += 4u + len;
    }
    if (method != 0)
      return report_error(error, Status::NotSupported, "'", name, "': entry '", entry,
                          "' is compressed (write it with np.savez, not np.savez_compressed)");
    if ((flags & 8) != 0 && bytes == 0)
      return report_error(error, Status::NotSupported, "'", name, "': entry '", entry,
                          "' has its size after the data (a streamed zip)");
    const size_t start = pos + 30 + name_len + extra_len;
    if (bytes > size - start)
      return report_error(error, Status::InvalidArgument, "'", name, "': entry '", entry, "' is truncated");
    const bool npy = entry.size() > 4 && entry.compare(entry.size() - 4, 4, ".npy") == 0;
    if (!npy)
      return report_error(error, Status::InvalidArgument, "'", name, "': entry '", entry, "' is not a .npy array");
    Result<Tensor> value = parse_npy(b + start, static_cast<size_t>(bytes), name + ":" + entry, error);
    if (!value.ok()) return value.status();
    entries.push_back({entry.substr(0, entry.size() - 4), value.get()});
    pos = start + static_cast<size_t>(bytes);
  }
  if (entries.empty())
    return report_error(error, Status::InvalidArgument, "'", name, "' is not an .npz (zip) file with entries");
  return entries;
}

Result<std::vector<NpzEntry>> read_npz(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return report_error(error, Status::IoError, "cannot open '", path, "'");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return report_error(error, Status::IoError, "cannot read '", path, "'");
  return parse_npz(bytes.data(), bytes.size(), path, error);
}

}  // namespace ember
