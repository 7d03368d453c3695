// safetensors reading and writing, with a small strict JSON parser for the header.
#include "runtime/nn/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/file.h"
#include "runtime/nn/module.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian");

namespace ember::nn {
namespace {

// The Python library refuses headers above 100 MB.
constexpr uint64_t kMaxHeaderSize = 100'000'000;
constexpr int kMaxJsonDepth = 64;

[[noreturn]] void invalid(const std::string& message) {
  raise_error(Status::InvalidModel, "invalid safetensors file: " + message);
}

// --- dtypes --------------------------------------------------------------------------

struct DTypeName {
  DType dtype;
  const char* name;
  int rank;  // the Python library's Dtype order; wider types sort first in files
};
constexpr DTypeName kDTypes[] = {
    {DType::Bool, "BOOL", 0},  {DType::UInt8, "U8", 1},    {DType::Int8, "I8", 2},
    {DType::Int16, "I16", 5},  {DType::Float16, "F16", 7}, {DType::BFloat16, "BF16", 8},
    {DType::Int32, "I32", 9},  {DType::Float32, "F32", 11}, {DType::Float64, "F64", 12},
    {DType::Int64, "I64", 13},
};
// Valid safetensors dtypes that ember has no tensor type for.
constexpr const char* kUnsupported[] = {"U16", "U32", "U64", "F8_E5M2", "F8_E4M3"};

const DTypeName& dtype_entry(DType t) {
  for (const DTypeName& d : kDTypes) {
    if (d.dtype == t) return d;
  }
  raise_error(Status::NotSupported, "safetensors: unsupported dtype");
}

// --- JSON ------------------------------------------------------------------------------

struct Json {
  enum class Kind { Null, Bool, Number, String, Array, Object } kind = Kind::Null;
  bool boolean = false;
  std::string text;  // string value, or the number's literal
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;  // in document order
};

class JsonParser {
 public:
  explicit JsonParser(std::string_view s) : s_(s) {}

  Json parse_document() {
    skip_ws();
    Json v = parse_value(0);
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected character after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    invalid(str_cat("header is not valid JSON: ", what, " at offset ", pos_));
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void expect(char c) {
    if (pos_ >= s_.size() || s_[pos_] != c) fail(str_cat("expected '", c, "'"));
    ++pos_;
  }
  void literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) fail("invalid literal");
    pos_ += word.size();
  }

  Json parse_value(int depth) {
    if (depth > kMaxJsonDepth) fail("nesting too deep");
    Json v;
    switch (peek()) {
      case '{': {
        v.kind = Json::Kind::Object;
        ++pos_;
        skip_ws();
        if (peek() == '}') {
          ++pos_;
          return v;
        }
        std::set<std::string> keys;
        while (true) {
          skip_ws();
          if (peek() != '"') fail("expected a string key");
          std::string key = parse_string();
          if (!keys.insert(key).second) fail(str_cat("duplicate key \"", key, "\""));
          skip_ws();
          expect(':');
          skip_ws();
          Json member = parse_value(depth + 1);
          v.members.emplace_back(std::move(key), std::move(member));
          skip_ws();
          if (peek() == ',') {
            ++pos_;
            continue;
          }
          expect('}');
          return v;
        }
      }
      case '[': {
        v.kind = Json::Kind::Array;
        ++pos_;
        skip_ws();
        if (peek() == ']') {
          ++pos_;
          return v;
        }
        while (true) {
          skip_ws();
          v.items.push_back(parse_value(depth + 1));
          skip_ws();
          if (peek() == ',') {
            ++pos_;
            continue;
          }
          expect(']');
          return v;
        }
      }
      case '"':
        v.kind = Json::Kind::String;
        v.text = parse_string();
        return v;
      case 't':
        literal("true");
        v.kind = Json::Kind::Bool;
        v.boolean = true;
        return v;
      case 'f':
        literal("false");
        v.kind = Json::Kind::Bool;
        return v;
      case 'n':
        literal("null");
        return v;
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
          v.kind = Json::Kind::Number;
          v.text = parse_number();
          return v;
        }
        fail(pos_ < s_.size() ? "unexpected character" : "unexpected end of input");
    }
  }

  std::string parse_number() {
    const size_t start = pos_;
    auto digits = [&] {
      const size_t d = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      if (pos_ == d) fail("invalid number");
    };
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else {
      digits();
    }
    if (peek() == '.') {
      ++pos_;
      digits();
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      digits();
    }
    return std::string(s_.substr(start, pos_ - start));
  }

  unsigned hex4() {
    if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
      else fail("invalid \\u escape");
    }
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated string");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (s_.substr(pos_, 2) != "\\u") fail("unpaired surrogate");
            pos_ += 2;
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("unpaired surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("unpaired surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default:
          fail("invalid escape");
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n;
    unsigned cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr unsigned kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return false;
    i += n + 1;
  }
  return true;
}

void write_json_string(std::string& out, const std::string& s) {
  // As serde_json: escapes '"', '\\' and control characters only.
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// A non-negative integer that fits in uint64 (JSON numbers with fraction or exponent are refused).
uint64_t as_uint(const Json& v, const std::string& what) {
  if (v.kind != Json::Kind::Number || v.text.empty() || v.text[0] == '-' ||
      v.text.find_first_of(".eE") != std::string::npos) {
    invalid(str_cat(what, " must be a non-negative integer"));
  }
  uint64_t r = 0;
  for (const char c : v.text) {
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (r > (std::numeric_limits<uint64_t>::max() - d) / 10) invalid(str_cat(what, " is too large"));
    r = r * 10 + d;
  }
  return r;
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

}  // namespace

// --- writing ------------------------------------------------------------------------------

std::string serialize_safetensors(const NamedTensors& tensors, const Metadata& metadata) {
  std::set<std::string> names;
  std::vector<size_t> order;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    EMBER_ENFORCE(name != "__metadata__", Status::InvalidArgument,
                "safetensors: the tensor name \"__metadata__\" is reserved");
    EMBER_ENFORCE(names.insert(name).second, Status::InvalidArgument, "safetensors: duplicate tensor name \"", name,
                "\"");
    EMBER_ENFORCE(t.defined(), Status::InvalidArgument, "safetensors: tensor \"", name, "\" is undefined");
    (void)dtype_entry(t.dtype());
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int ra = dtype_entry(tensors[a].second.dtype()).rank, rb = dtype_entry(tensors[b].second.dtype()).rank;
    if (ra != rb) return ra > rb;
    return tensors[a].first < tensors[b].first;
  });

  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) header += ',';
      first = false;
      write_json_string(header, k);
      header += ':';
      write_json_string(header, v);
    }
    header += "}";
  }
  uint64_t offset = 0;
  std::vector<Tensor> data;
  for (size_t i : order) {
    const auto& [name, t] = tensors[i];
    const Tensor c = t.detach().to(Device(DeviceType::CPU)).contiguous();
    const uint64_t bytes = c.nbytes();
    if (header.size() > 1) header += ',';
    write_json_string(header, name);
    header += str_cat(":{\"dtype\":\"", dtype_entry(t.dtype()).name, "\",\"shape\":[");
    for (int64_t d = 0; d < c.dim(); ++d) header += str_cat(d ? "," : "", c.size(d));
    header += str_cat("],\"data_offsets\":[", offset, ",", offset + bytes, "]}");
    offset += bytes;
    data.push_back(c);
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + header.size() + offset);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xFF);
  out += header;
  for (const Tensor& c : data) {
    if (c.nbytes() == 0) continue;
    if (c.dtype() == DType::Bool) {  // one byte per element, 0 or 1
      const bool* p = static_cast<const bool*>(c.data_ptr());
      for (int64_t i = 0; i < c.numel(); ++i) out += static_cast<char>(p[i] ? 1 : 0);
    } else {
      out.append(static_cast<const char*>(c.data_ptr()), c.nbytes());
    }
  }
  return out;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors, const Metadata& metadata) {
  const std::string bytes = serialize_safetensors(tensors, metadata);
  std::string why;
  const Status status = write_file_atomic(path, bytes.data(), bytes.size(), &why);
  EMBER_ENFORCE(status == Status::Ok, status, why);
}

// --- reading ------------------------------------------------------------------------------

NamedTensors deserialize_safetensors(std::string_view bytes, Metadata* metadata) {
  if (bytes.size() < 8) invalid(str_cat("file too small (", bytes.size(), " bytes) for the 8-byte header length"));
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  if (n > kMaxHeaderSize) invalid(str_cat("header length ", n, " exceeds the limit of ", kMaxHeaderSize, " bytes"));
  if (n > bytes.size() - 8) {
    invalid(str_cat("header length ", n, " exceeds the file size (", bytes.size(), " bytes)"));
  }
  const std::string_view text = bytes.substr(8, n);
  if (!valid_utf8(text)) invalid("header is not valid UTF-8");
  if (text.empty() || text[0] != '{') invalid("header does not start with '{'");
  const Json root = JsonParser(text).parse_document();
  if (root.kind != Json::Kind::Object) invalid("header is not a JSON object");
  const std::string_view data = bytes.substr(8 + n);

  std::vector<Entry> entries;
  for (const auto& [name, v] : root.members) {
    if (name == "__metadata__") {
      if (v.kind != Json::Kind::Object) invalid("\"__metadata__\" must be an object of strings");
      for (const auto& [k, s] : v.members) {
        if (s.kind != Json::Kind::String) invalid(str_cat("metadata value \"", k, "\" is not a string"));
        if (metadata) (*metadata)[k] = s.text;
      }
      continue;
    }
    if (v.kind != Json::Kind::Object) invalid(str_cat("tensor \"", name, "\": entry is not an object"));
    const Json *dtype = nullptr, *shape = nullptr, *offsets = nullptr;
    for (const auto& [field, value] : v.members) {
      if (field == "dtype") dtype = &value;
      else if (field == "shape") shape = &value;
      else if (field == "data_offsets") offsets = &value;
      else invalid(str_cat("tensor \"", name, "\": unknown field \"", field, "\""));
    }
    if (!dtype || !shape || !offsets) {
      invalid(str_cat("tensor \"", name, "\": missing \"", !dtype ? "dtype" : !shape ? "shape" : "data_offsets",
                      "\""));
    }
    if (dtype->kind != Json::Kind::String) invalid(str_cat("tensor \"", name, "\": dtype is not a string"));
    Entry e{name, DType::Float32, {}, 0, 0};
    bool known = false;
    for (const DTypeName& d : kDTypes) {
      if (dtype->text == d.name) {
        e.dtype = d.dtype;
        known = true;
      }
    }
    if (!known) {
      for (const char* u : kUnsupported) {
        if (dtype->text == u) {
          raise_error(Status::NotSupported,
                      str_cat("safetensors: tensor \"", name, "\" has dtype ", u, ", which ember does not support"));
        }
      }
      invalid(str_cat("tensor \"", name, "\": unknown dtype \"", dtype->text, "\""));
    }
    if (shape->kind != Json::Kind::Array) invalid(str_cat("tensor \"", name, "\": shape is not an array"));
    if (shape->items.size() > static_cast<size_t>(kMaxRank)) {
      invalid(str_cat("tensor \"", name, "\": rank ", shape->items.size(), " exceeds ", kMaxRank));
    }
    uint64_t numel = 1;
    bool overflow = false;
    for (const Json& d : shape->items) {
      const uint64_t s = as_uint(d, str_cat("tensor \"", name, "\": shape entry"));
      if (s > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
      if (s != 0 && numel > std::numeric_limits<uint64_t>::max() / s) overflow = true;
      numel = overflow ? 0 : numel * s;
      e.shape.push_back(static_cast<int64_t>(s));
    }
    const uint64_t item = element_size(e.dtype);
    if (overflow || numel > std::numeric_limits<uint64_t>::max() / item) {
      invalid(str_cat("tensor \"", name, "\": shape ", shape_str(e.shape), " is too large"));
    }
    if (offsets->kind != Json::Kind::Array || offsets->items.size() != 2) {
      invalid(str_cat("tensor \"", name, "\": data_offsets must be [begin, end]"));
    }
    e.begin = as_uint(offsets->items[0], str_cat("tensor \"", name, "\": data offset"));
    e.end = as_uint(offsets->items[1], str_cat("tensor \"", name, "\": data offset"));
    if (e.begin > e.end) invalid(str_cat("tensor \"", name, "\": data_offsets [", e.begin, ", ", e.end, "] are reversed"));
    if (e.end > data.size()) {
      invalid(str_cat("tensor \"", name, "\": data_offsets [", e.begin, ", ", e.end,
                      "] are out of range (the data has ", data.size(), " bytes)"));
    }
    if (e.end - e.begin != numel * item) {
      invalid(str_cat("tensor \"", name, "\": shape ", shape_str(e.shape), " and dtype ", dtype->text, " need ",
                      numel * item, " bytes but data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin));
    }
    entries.push_back(std::move(e));
  }
  // The tensors must tile the data exactly, in some order.
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::stable_sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t covered = 0;
  for (const Entry* e : by_offset) {
    if (e->begin < covered) invalid(str_cat("tensor \"", e->name, "\": data overlaps the previous tensor"));
    if (e->begin > covered) invalid(str_cat("tensor \"", e->name, "\": gap in the data before offset ", e->begin));
    covered = e->end;
  }
  if (covered != data.size()) {
    invalid(str_cat("the tensors cover ", covered, " bytes of data but the file holds ", data.size()));
  }

  NamedTensors out;
  for (const Entry& e : entries) {
    Tensor t = empty(e.shape, e.dtype);
    const char* src = data.data() + e.begin;
    if (e.dtype == DType::Bool) {
      bool* p = static_cast<bool*>(t.data_ptr());
      for (uint64_t i = 0; i < e.end - e.begin; ++i) p[i] = src[i] != 0;
    } else if (e.end > e.begin) {
      std::memcpy(t.data_ptr(), src, e.end - e.begin);
    }
    out.emplace_back(e.name, std::move(t));
  }
  return out;
}

NamedTensors load_safetensors(const std::string& path, Metadata* metadata) {
  std::ifstream in(path, std::ios::binary);
  EMBER_ENFORCE(in.is_open(), Status::IoError, "cannot open '", path, "': ", std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  EMBER_ENFORCE(!in.bad(), Status::IoError, "cannot read '", path, "'");
  const std::string bytes = buf.str();
  try {
    return deserialize_safetensors(bytes, metadata);
  } catch (const Error& e) {
    raise_error(e.status(), str_cat(path, ": ", e.what()));
  }
}

void save(const Module& module, const std::string& path, const Metadata& metadata) {
  save_safetensors(path, module.state_dict(), metadata);
}

void load(Module& module, const std::string& path, bool strict) {
  module.load_state_dict(load_safetensors(path), strict);
}

}  // namespace ember::nn
