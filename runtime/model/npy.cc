#include "runtime/model/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "runtime/core/error.h"
#include "runtime/core/file.h"

namespace ember {
namespace {

static_assert(sizeof(float) == 4 && sizeof(double) == 8, "IEEE floats expected");

constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kMaxHeaderLen = size_t{1} << 20;  // numpy itself refuses headers over 10 kB by default
constexpr size_t kMaxRank = 64;
constexpr const char* kSupported = "<f4 <f2 <f8 <i8 <i4 <i2 |i1 |u1 <u2 <u4 <u8 |b1, and |V1 |V2 as the model's dtype";

bool host_is_little_endian() {
  const uint16_t one = 1;
  unsigned char b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

std::string shape_tuple(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

struct Header {
  std::optional<DType> raw_as;  // in: the dtype raw '|Vn' data holds (the model's), if known
  DType dtype = DType::Float32;
  Shape shape;
  size_t data_offset = 0;  // bytes from the start of the file
  size_t data_bytes = 0;   // numel x element size
};

// The fixed part: magic, version, header length. `n` bytes of the file are at `p`.
Status parse_prelude(const unsigned char* p, size_t n, const std::string& name, size_t* header_start,
                     size_t* header_len, std::string* error) {
  if (n > 0 && std::memcmp(p, kMagic, n < 6 ? n : 6) != 0) {
    return report_error(error, Status::InvalidArgument, "'", name, "' is not a .npy file (bad magic)");
  }
  if (n < 8) {
    return report_error(error, Status::InvalidArgument, "'", name, "': truncated header (", n,
                " bytes; the magic string and version need 8)");
  }
  const int major = p[6], minor = p[7];
  if (major != 1 && major != 2 && major != 3) {
    return report_error(error, Status::NotSupported, "'", name, "': unsupported .npy version ", major, ".", minor,
                " (ember reads 1.0, 2.0 and 3.0)");
  }
  const size_t len_bytes = major == 1 ? 2 : 4;
  if (n < 8 + len_bytes) {
    return report_error(error, Status::InvalidArgument, "'", name, "': truncated header (", n, " bytes; version ", major,
                ".", minor, " needs ", 8 + len_bytes, " before the header)");
  }
  size_t len = 0;
  for (size_t i = 0; i < len_bytes; ++i) len |= static_cast<size_t>(p[8 + i]) << (8 * i);
  if (len > kMaxHeaderLen) {
    return report_error(error, Status::InvalidArgument, "'", name, "': header length ", len, " exceeds the limit of ",
                kMaxHeaderLen, " bytes");
  }
  *header_start = 8 + len_bytes;
  *header_len = len;
  return Status::Ok;
}

// A reader of the header's Python dict literal.
class DictParser {
 public:
  DictParser(const char* s, size_t n, const std::string& name, std::string* error)
      : s_(s), n_(n), name_(name), error_(error) {}

  Status parse(Header* h) {
    bool have_descr = false, have_order = false, have_shape = false;
    std::string descr;
    bool fortran = false;
    skip_ws();
    if (!eat('{')) return bad("the header is not a dict");
    while (true) {
      skip_ws();
      if (eat('}')) break;
      std::string key;
      if (!string_literal(&key)) return bad("expected a quoted key at byte ", i_);
      skip_ws();
      if (!eat(':')) return bad("expected ':' after '", key, "'");
      skip_ws();
      if (key == "descr") {
        if (!string_literal(&descr)) {
          return report_error(error_, Status::NotSupported, "'", name_,
                      "': structured or non-string descr is not supported (ember reads ", kSupported, ")");
        }
        have_descr = true;
      } else if (key == "fortran_order") {
        if (word("True")) fortran = true;
        else if (word("False")) fortran = false;
        else return bad("fortran_order is neither True nor False");
        have_order = true;
      } else if (key == "shape") {
        Status s = shape_tuple_literal(&h->shape);
        if (s != Status::Ok) return s;
        have_shape = true;
      } else {
        return bad("unexpected key '", key, "'");
      }
      skip_ws();
      if (eat(',')) continue;
      skip_ws();
      if (eat('}')) break;
      return bad("expected ',' or '}' after '", key, "'");
    }
    for (; i_ < n_; ++i_) {
      if (s_[i_] != ' ' && s_[i_] != '\n' && s_[i_] != '\t' && s_[i_] != '\r' && s_[i_] != '\0') {
        return bad("unexpected text after the dict");
      }
    }
    if (!have_descr) return bad("the header has no 'descr'");
    if (!have_order) return bad("the header has no 'fortran_order'");
    if (!have_shape) return bad("the header has no 'shape'");
    if (fortran) {
      return report_error(error_, Status::NotSupported, "'", name_,
                  "': fortran_order True is not supported (write a C-order array, "
                  "e.g. numpy.ascontiguousarray)");
    }
    return parse_descr(descr, h->raw_as, &h->dtype);
  }

 private:
  template <typename... Args>
  Status bad(const Args&... args) {
    return report_error(error_, Status::InvalidArgument, "'", name_, "': malformed header: ", args...);
  }

  void skip_ws() {
    while (i_ < n_ && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    if (i_ < n_ && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool word(const char* w) {
    const size_t len = std::strlen(w);
    if (n_ - i_ >= len && std::memcmp(s_ + i_, w, len) == 0) {
      i_ += len;
      return true;
    }
    return false;
  }
  bool string_literal(std::string* out) {
    if (i_ >= n_ || (s_[i_] != '\'' && s_[i_] != '"')) return false;
    const char quote = s_[i_++];
    const size_t start = i_;
    while (i_ < n_ && s_[i_] != quote) {
      if (s_[i_] == '\\') return false;  // numpy never escapes in keys or descrs
      ++i_;
    }
    if (i_ >= n_) return false;
    out->assign(s_ + start, i_ - start);
    ++i_;
    return true;
  }
  Status shape_tuple_literal(Shape* shape) {
    if (!eat('(')) return bad("shape is not a tuple");
    shape->clear();
    while (true) {
      skip_ws();
      if (eat(')')) break;
      if (i_ >= n_) return bad("unterminated shape tuple");
      if (s_[i_] == '-') return bad("negative dimension in shape");
      if (s_[i_] < '0' || s_[i_] > '9') return bad("shape holds a non-integer");
      int64_t v = 0;
      while (i_ < n_ && s_[i_] >= '0' && s_[i_] <= '9') {
        const int d = s_[i_++] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - d) / 10) {
          return report_error(error_, Status::InvalidArgument, "'", name_, "': shape overflows: a dimension exceeds 2^63 - 1");
        }
        v = v * 10 + d;
      }
      eat('L');  // Python 2 longs
      shape->push_back(v);
      if (shape->size() > kMaxRank) {
        return report_error(error_, Status::InvalidArgument, "'", name_, "': shape has more than ", kMaxRank, " dimensions");
      }
      skip_ws();
      if (eat(',')) continue;
      skip_ws();
      if (eat(')')) break;
      return bad("expected ',' or ')' in shape");
    }
    return Status::Ok;
  }
  Status parse_descr(const std::string& d, std::optional<DType> raw_as, DType* dtype) {
    if ((d == "|V1" || d == "|V2") && raw_as) {  // ml_dtypes arrays (bfloat16, float8, int4...) saved as bytes
      if (npy_descr(*raw_as) != d) {
        return report_error(error_, Status::DTypeMismatch, "'", name_, "': raw descr '", d, "' does not hold ",
                            dtype_name(*raw_as), " (", npy_descr(*raw_as), ")");
      }
      *dtype = *raw_as;
      return Status::Ok;
    }
    if (d.size() == 3) {
      const char order = d[0];
      const std::string type = d.substr(1);
      struct Entry {
        const char* type;
        DType dtype;
      };
      static const Entry kTypes[] = {
          {"f4", DType::Float32}, {"f2", DType::Float16}, {"f8", DType::Float64},
          {"i8", DType::Int64},   {"i4", DType::Int32},   {"i2", DType::Int16},
          {"i1", DType::Int8},    {"u1", DType::UInt8},   {"b1", DType::Bool},
          {"u2", DType::UInt16},  {"u4", DType::UInt32},  {"u8", DType::UInt64},
      };
      for (const Entry& e : kTypes) {
        if (type != e.type) continue;
        const bool one_byte = element_size(e.dtype) == 1;
        if (one_byte && (order == '|' || order == '<' || order == '>' || order == '=')) {
          *dtype = e.dtype;
          return Status::Ok;
        }
        if (!one_byte && (order == '<' || (order == '=' && host_is_little_endian()))) {
          *dtype = e.dtype;
          return Status::Ok;
        }
        if (!one_byte && order == '>') {
          return report_error(error_, Status::NotSupported, "'", name_, "': big-endian descr '", d,
                      "' is not supported (ember reads little-endian data)");
        }
      }
    }
    return report_error(error_, Status::NotSupported, "'", name_, "': unsupported descr '", d, "' (ember reads ",
                kSupported, ")");
  }

  const char* s_;
  size_t n_;
  size_t i_ = 0;
  const std::string& name_;
  std::string* error_;
};

// Header (at p, `header_len` bytes, after `header_start` bytes of prelude) ->
// dtype, shape and data size, checked against the `file_size`.
Status parse_header(const char* p, size_t header_start, size_t header_len, size_t file_size,
                    const std::string& name, Header* h, std::string* error) {
  EMBER_TRY(DictParser(p, header_len, name, error).parse(h));
  // numel and the contiguous strides must fit int64 even when a dim is 0.
  const size_t esize = element_size(h->dtype);
  int64_t numel = 1, extent = static_cast<int64_t>(esize);
  for (int64_t d : h->shape) {
    const int64_t nz = d == 0 ? 1 : d;
    if (extent > std::numeric_limits<int64_t>::max() / nz) {
      return report_error(error, Status::InvalidArgument, "'", name, "': shape ", shape_tuple(h->shape),
                  " overflows (", dtype_name(h->dtype), " bytes exceed 2^63 - 1)");
    }
    extent *= nz;
    numel *= d;
  }
  h->data_offset = header_start + header_len;
  h->data_bytes = static_cast<size_t>(numel) * esize;
  const size_t have = file_size - h->data_offset;
  if (have != h->data_bytes) {
    return report_error(error, Status::InvalidArgument, "'", name, "': ", have < h->data_bytes ? "truncated data: " : "",
                "data is ", have, " bytes, shape ", shape_tuple(h->shape), " x ", dtype_name(h->dtype), " needs ",
                h->data_bytes);
  }
  return Status::Ok;
}

// The 4- and 2-bit types as ember holds them: ml_dtypes' bytes keep only the
// low bits (int2 -2 is 0b10); the integers are sign-extended, the rest masked.
void canonical_sub_byte(Tensor& t) {
  int bits = 0;
  switch (t.dtype()) {
    case DType::Int4: case DType::UInt4: case DType::Float4E2M1FN: bits = 4; break;
    case DType::Int2: case DType::UInt2: bits = 2; break;
    default: return;
  }
  const bool is_signed = t.dtype() == DType::Int4 || t.dtype() == DType::Int2;
  const unsigned mask = (1u << bits) - 1;
  auto* p = static_cast<unsigned char*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const unsigned v = p[i] & mask;
    p[i] = static_cast<unsigned char>(is_signed && (v >> (bits - 1)) ? v | ~mask : v);
  }
}

Status check_values(Tensor& t, const std::string& name, std::string* error) {
  canonical_sub_byte(t);
  if (t.dtype() != DType::Bool) return Status::Ok;
  const unsigned char* b = static_cast<const unsigned char*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (b[i] > 1) {
      return report_error(error, Status::InvalidArgument, "'", name, "': bool element ", i, " is ",
                  static_cast<int>(b[i]), " (not 0 or 1)");
    }
  }
  return Status::Ok;
}

Status truncated_header(const std::string& name, size_t have, size_t need, std::string* error) {
  return report_error(error, Status::InvalidArgument, "'", name, "': truncated header (file has ", have,
              " bytes, the header ends at ", need, ")");
}

// Reads exactly n bytes at `offset`.
bool read_at(int fd, void* dst, size_t n, size_t offset, int* err) {
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return false;
    }
    if (got == 0) {
      *err = EIO;  // the file shrank under us
      return false;
    }
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<size_t>(got);
  }
  return true;
}

}  // namespace

const char* npy_descr(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "<f4";
    case DType::Float16: return "<f2";
    case DType::Float64: return "<f8";
    case DType::Int64: return "<i8";
    case DType::Int32: return "<i4";
    case DType::Int16: return "<i2";
    case DType::Int8: return "|i1";
    case DType::UInt8: return "|u1";
    case DType::Bool: return "|b1";
    case DType::UInt16: return "<u2";
    case DType::UInt32: return "<u4";
    case DType::UInt64: return "<u8";
    // numpy has no such types: ml_dtypes' arrays, saved by numpy as raw bytes.
    case DType::BFloat16: return "|V2";
    case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2: case DType::Float8E5M2FNUZ:
    case DType::Float8E8M0FNU: case DType::Float4E2M1FN: case DType::Int4: case DType::UInt4: case DType::Int2:
    case DType::UInt2:
      return "|V1";
  }
  return "";
}

Result<Tensor> parse_npy(const void* data, size_t size, const std::string& name, std::string* error,
                         std::optional<DType> raw_as) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  size_t start = 0, len = 0;
  Status s = parse_prelude(p, size, name, &start, &len, error);
  if (s != Status::Ok) return s;
  if (size < start + len) return truncated_header(name, size, start + len, error);
  Header h;
  h.raw_as = raw_as;
  s = parse_header(reinterpret_cast<const char*>(p) + start, start, len, size, name, &h, error);
  if (s != Status::Ok) return s;
  Tensor t = empty(h.shape, h.dtype);
  if (h.data_bytes > 0) std::memcpy(t.data_ptr(), p + h.data_offset, h.data_bytes);
  s = check_values(t, name, error);
  if (s != Status::Ok) return s;
  return t;
}

Result<Tensor> read_npy(const std::string& path, std::string* error, std::optional<DType> raw_as) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return report_error(error, Status::IoError, "cannot open '", path, "': ", std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return report_error(error, Status::IoError, "cannot stat '", path, "': ", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return report_error(error, Status::IoError, "'", path, "' is not a regular file");
  const size_t size = static_cast<size_t>(st.st_size);

  unsigned char prelude[12];
  const size_t n = size < sizeof(prelude) ? size : sizeof(prelude);
  int err = 0;
  if (!read_at(fd, prelude, n, 0, &err)) {
    return report_error(error, Status::IoError, "cannot read '", path, "': ", std::strerror(err));
  }
  size_t start = 0, len = 0;
  Status s = parse_prelude(prelude, n, path, &start, &len, error);
  if (s != Status::Ok) return s;
  if (size < start + len) return truncated_header(path, size, start + len, error);
  std::string header(len, '\0');
  if (!read_at(fd, &header[0], len, start, &err)) {
    return report_error(error, Status::IoError, "cannot read '", path, "': ", std::strerror(err));
  }
  Header h;
  h.raw_as = raw_as;
  s = parse_header(header.data(), start, len, size, path, &h, error);
  if (s != Status::Ok) return s;
  Tensor t = empty(h.shape, h.dtype);  // size checked against the file: no huge allocation
  if (h.data_bytes > 0 && !read_at(fd, t.data_ptr(), h.data_bytes, h.data_offset, &err)) {
    return report_error(error, Status::IoError, "cannot read '", path, "': ", std::strerror(err));
  }
  s = check_values(t, path, error);
  if (s != Status::Ok) return s;
  return t;
}

Status serialize_npy(const Tensor& t, std::vector<std::byte>* out, std::string* error) {
  out->clear();
  if (!t.defined()) return report_error(error, Status::InvalidArgument, "write_npy: undefined tensor");
  if (!t.device().is_cpu()) {
    return report_error(error, Status::DeviceMismatch, "write_npy: tensor is on ", t.device().str(), ", expected cpu");
  }
  const char* descr = npy_descr(t.dtype());
  if (descr[0] == '\0') {
    return report_error(error, Status::NotSupported, "write_npy: numpy has no ", dtype_name(t.dtype()), " dtype");
  }
  if (!host_is_little_endian()) {
    return report_error(error, Status::NotSupported, "write_npy: big-endian hosts are not supported");
  }
  std::string dict = str_cat("{'descr': '", descr, "', 'fortran_order': False, 'shape': ", shape_tuple(t.sizes()),
                             ", }");
  // numpy pads with spaces and ends with '\n' so that the data starts at a multiple of 64.
  size_t prelude = 10;
  size_t total = prelude + dict.size() + 1;
  int major = 1;
  if (dict.size() + 1 + 63 > 65535) {
    prelude = 12;
    total = prelude + dict.size() + 1;
    major = 2;
  }
  const size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict.push_back('\n');
  const size_t hlen = dict.size();

  const Tensor c = t.contiguous();
  out->resize(prelude + hlen + c.nbytes());
  unsigned char* p = reinterpret_cast<unsigned char*>(out->data());
  std::memcpy(p, kMagic, 6);
  p[6] = static_cast<unsigned char>(major);
  p[7] = 0;
  for (size_t i = 0; i < prelude - 8; ++i) p[8 + i] = static_cast<unsigned char>((hlen >> (8 * i)) & 0xff);
  std::memcpy(p + prelude, dict.data(), hlen);
  if (c.nbytes() > 0) std::memcpy(p + prelude + hlen, c.data_ptr(), c.nbytes());
  const int bits = t.dtype() == DType::Int2 || t.dtype() == DType::UInt2 ? 2
                   : t.dtype() == DType::Int4 || t.dtype() == DType::UInt4 || t.dtype() == DType::Float4E2M1FN ? 4 : 8;
  for (size_t i = 0; bits < 8 && i < c.nbytes(); ++i) p[prelude + hlen + i] &= (1u << bits) - 1;  // ml_dtypes' bytes
  return Status::Ok;
}

Status write_npy(const std::string& path, const Tensor& t, std::string* error) {
  std::vector<std::byte> bytes;
  EMBER_TRY(serialize_npy(t, &bytes, error));
  return write_file_atomic(path, bytes.data(), bytes.size(), error);
}

}  // namespace ember
