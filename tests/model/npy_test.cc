// .npy I/O: files written by numpy (Debian's /usr/bin/python3, run at test
// time) read with exact values, ember's files read back by numpy, round trips
// of strided tensors, and every malformed-file error (with a truncation loop
// that must never crash).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "runtime/model/npy.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_equal;

namespace {

std::string tmp_dir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}
std::string tmp_path(const std::string& name) { return tmp_dir() + "/" + name; }

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Runs a Python snippet with numpy (the directory is `d`); true when it exits 0.
bool python(const std::string& code) {
  const std::string script = tmp_path("snippet.py");
  write_file(script, "import sys, numpy as np\nd = sys.argv[1]\n" + code);
  const std::string cmd = "/usr/bin/python3 " + script + " " + tmp_dir();
  return std::system(cmd.c_str()) == 0;
}

// numpy's files, generated once per test binary.
const std::string& numpy_dir() {
  static const std::string dir = [] {
    const bool ok = python(R"PY(
import os
out = os.path.join(d, "np")
os.makedirs(out, exist_ok=True)
def save(name, a, version=None):
    path = os.path.join(out, name + ".npy")
    if version is None:
        np.save(path, a)
    else:
        with open(path, "wb") as f:
            np.lib.format.write_array(f, a, version=version)
save("f32", np.array([[1.5, -2.25, 3.0], [np.inf, -0.0, 1e-30]], dtype=np.float32))
save("f32_nan", np.array([np.nan, 1.0], dtype=np.float32))
save("f16", np.array([0.5, -3.25, 65504.0, 6e-8], dtype=np.float16))
save("f64", np.array([[1e-300], [-7.5]], dtype=np.float64))
save("i64", np.array([-(2 ** 40), 7, 2 ** 62], dtype=np.int64))
save("i32", np.array([-5, 1 << 20], dtype=np.int32))
save("i16", np.array([-32768, 32767], dtype=np.int16))
save("i8", np.array([-128, 0, 127], dtype=np.int8))
save("u8", np.arange(250, 256, dtype=np.uint8).reshape(2, 3))
save("bool", np.array([True, False, True]))
save("scalar", np.array(2.5, dtype=np.float32))
save("empty", np.zeros((0, 3), dtype=np.float32))
save("strided", np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2].T)
save("v2", np.arange(6, dtype=np.int32).reshape(2, 3), version=(2, 0))
save("v3", np.arange(4, dtype=np.float64), version=(3, 0))
save("fortran", np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
save("big_endian", np.arange(3, dtype=">f4"))
save("complex", np.arange(3, dtype=np.complex64))
save("structured", np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))
save("u16", np.array([0, 65535, 7], dtype=np.uint16))
save("u32", np.array([4294967295, 1], dtype=np.uint32))
save("u64", np.array([18446744073709551615, 2], dtype=np.uint64))
# What numpy saves of ml_dtypes' arrays: raw bytes. bfloat16 1.5, -3.0; int4
# -2, 7, -8 and int2 -2 as their low bits.
save("v2_bf16", np.array([0x3fc0, 0xc040], dtype=np.uint16).view("V2"))
save("v1_int4", np.array([0x0e, 0x07, 0x08], dtype=np.uint8).view("V1"))
save("v1_int2", np.array([0x02, 0x01], dtype=np.uint8).view("V1"))
)PY");
    REQUIRE_MESSAGE(ok, "/usr/bin/python3 with numpy failed to write the test files");
    return tmp_path("np");
  }();
  return dir;
}

Tensor read_ok(const std::string& name) {
  std::string error;
  Result<Tensor> r = read_npy(numpy_dir() + "/" + name + ".npy", &error);
  REQUIRE_MESSAGE(r.ok(), error);
  return r.get();
}

std::string read_error(const std::string& path, Status expected) {
  std::string error;
  Result<Tensor> r = read_npy(path, &error);
  REQUIRE(!r.ok());
  CHECK(r.status() == expected);
  return error;
}

// A valid v1.0 file with the given header dict and data (padded as numpy does).
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  const size_t prelude = major == 1 ? 10 : 12;
  while ((prelude + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const size_t n = header.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (major != 1) out += std::string(2, '\0');
  return out + header + data;
}

}  // namespace

TEST_CASE("read_npy: every dtype numpy writes, exact values") {
  check_equal(read_ok("f32"), tensor<float>({{1.5f, -2.25f, 3.0f},
                                             {std::numeric_limits<float>::infinity(), -0.0f, 1e-30f}}));
  check_equal(read_ok("f32_nan"), tensor<float>({std::numeric_limits<float>::quiet_NaN(), 1.0f}));
  check_equal(read_ok("f16"), tensor<float>({0.5f, -3.25f, 65504.0f, 5.96046448e-08f}).to(DType::Float16));
  check_equal(read_ok("f64"), tensor<double>({{1e-300}, {-7.5}}, DType::Float64));
  check_equal(read_ok("i64"), tensor<int64_t>({-(int64_t{1} << 40), 7, int64_t{1} << 62}, DType::Int64));
  check_equal(read_ok("i32"), tensor<int32_t>({-5, 1 << 20}, DType::Int32));
  check_equal(read_ok("i16"), tensor<int16_t>({-32768, 32767}, DType::Int16));
  check_equal(read_ok("i8"), tensor<int8_t>({-128, 0, 127}, DType::Int8));
  check_equal(read_ok("u8"), tensor<uint8_t>({{250, 251, 252}, {253, 254, 255}}, DType::UInt8));
  check_equal(read_ok("bool"), tensor<bool>({true, false, true}, DType::Bool));
  check_equal(read_ok("u16"), tensor<int64_t>({0, 65535, 7}).to(DType::UInt16));
  check_equal(read_ok("u32"), tensor<int64_t>({4294967295LL, 1}).to(DType::UInt32));
  const Tensor u64 = read_ok("u64");
  CHECK(u64.dtype() == DType::UInt64);
  CHECK(static_cast<const uint64_t*>(u64.data_ptr())[0] == ~uint64_t{0});
  std::string error;
  auto raw = [&](const char* name, DType dtype) {
    Result<Tensor> r = read_npy(numpy_dir() + "/" + name + ".npy", &error, dtype);
    REQUIRE_MESSAGE(r.ok(), error);
    return r.get();
  };
  check_equal(raw("v2_bf16", DType::BFloat16), tensor<float>({1.5f, -3.0f}).to(DType::BFloat16));
  check_equal(raw("v1_int4", DType::Int4).to(DType::Int32), tensor<int32_t>({-2, 7, -8}, DType::Int32));
  check_equal(raw("v1_int2", DType::Int2).to(DType::Int32), tensor<int32_t>({-2, 1}, DType::Int32));
  check_equal(raw("v1_int4", DType::UInt4).to(DType::Int32), tensor<int32_t>({14, 7, 8}, DType::Int32));
  Tensor s = read_ok("scalar");
  CHECK(s.dim() == 0);
  CHECK(s.item<float>() == 2.5f);
  Tensor e = read_ok("empty");
  CHECK(e.sizes() == Shape{0, 3});
  CHECK(e.dtype() == DType::Float32);
  // numpy writes a non-contiguous array in C order: [[0, 6, 12, 18], [2, 8, ...], [4, ...]].
  check_equal(read_ok("strided"), arange(24.0).to(DType::Float32).reshape({4, 6}).slice(1, 0, 6, 2).t());
}

TEST_CASE("read_npy: versions 2.0 and 3.0") {
  check_equal(read_ok("v2"), arange(6).to(DType::Int32).reshape({2, 3}));
  check_equal(read_ok("v3"), arange(4.0).to(DType::Float64));
}

TEST_CASE("read_npy: valid files ember cannot represent") {
  const std::string dir = numpy_dir();
  CHECK(read_error(dir + "/fortran.npy", Status::NotSupported) ==
        "'" + dir + "/fortran.npy': fortran_order True is not supported (write a C-order array, "
        "e.g. numpy.ascontiguousarray)");
  CHECK(read_error(dir + "/big_endian.npy", Status::NotSupported) ==
        "'" + dir + "/big_endian.npy': big-endian descr '>f4' is not supported (ember reads little-endian data)");
  CHECK(read_error(dir + "/complex.npy", Status::NotSupported) ==
        "'" + dir + "/complex.npy': unsupported descr '<c8' (ember reads <f4 <f2 <f8 <i8 <i4 <i2 |i1 |u1 <u2 <u4 <u8 |b1, and |V1 |V2 as the model's dtype)");
  CHECK(read_error(dir + "/structured.npy", Status::NotSupported) ==
        "'" + dir + "/structured.npy': structured or non-string descr is not supported (ember reads <f4 <f2 <f8 "
        "<i8 <i4 <i2 |i1 |u1 <u2 <u4 <u8 |b1, and |V1 |V2 as the model's dtype)");
  // Raw bytes (ml_dtypes' arrays) need the dtype they hold, of their size.
  CHECK(read_error(dir + "/v2_bf16.npy", Status::NotSupported) ==
        "'" + dir + "/v2_bf16.npy': unsupported descr '|V2' " "(ember reads <f4 <f2 <f8 <i8 <i4 <i2 |i1 |u1 <u2 <u4 <u8 |b1, and |V1 |V2 as the model's dtype)");
  std::string error;
  Result<Tensor> r = read_npy(dir + "/v2_bf16.npy", &error, DType::Float32);
  CHECK(r.status() == Status::DTypeMismatch);
  CHECK(error == "'" + dir + "/v2_bf16.npy': raw descr '|V2' does not hold float32 (<f4)");
}

TEST_CASE("write_npy: numpy reads ember's files (strided tensors written in C order)") {
  const std::string dir = tmp_dir();
  auto w = [&](const std::string& name, const Tensor& t) {
    std::string error;
    REQUIRE_MESSAGE(write_npy(dir + "/" + name + ".npy", t, &error) == Status::Ok, error);
  };
  // A transposed, sliced view: C order out.
  w("e_f32", arange(12.0).to(DType::Float32).reshape({3, 4}).t().slice(0, 1, 4, 2));
  w("e_f16", tensor<float>({0.5f, -3.25f}).to(DType::Float16));
  w("e_f64", tensor<double>({1e-300, -7.5}, DType::Float64));
  w("e_i64", tensor<int64_t>({-(int64_t{1} << 40), 7}, DType::Int64));
  w("e_i32", tensor<int32_t>({{-5}, {1 << 20}}, DType::Int32));
  w("e_i8", tensor<int8_t>({-128, 127}, DType::Int8));
  w("e_u8", tensor<uint8_t>({0, 255}, DType::UInt8));
  w("e_bool", tensor<bool>({false, true}, DType::Bool));
  w("e_scalar", scalar_tensor(3.5, DType::Float32));
  w("e_empty", zeros({2, 0}, DType::Int64));
  w("e_expand", tensor<float>({1.0f, 2.0f}).expand({3, 2}));  // stride 0
  w("e_u16", tensor<int64_t>({0, 65535}).to(DType::UInt16));
  w("e_u64", tensor<int64_t>({0, 5}).to(DType::UInt64));
  w("e_bf16", tensor<float>({1.5f, -3.0f}).to(DType::BFloat16));
  w("e_int4", tensor<int32_t>({-2, 7, -8}, DType::Int32).to(DType::Int4));
  CHECK(python(R"PY(
import os
def load(n):
    a = np.load(os.path.join(d, n + ".npy"))
    assert a.flags.c_contiguous
    return a
def same(n, want):
    a = load(n)
    assert a.dtype == want.dtype, (n, a.dtype, want.dtype)
    assert a.shape == want.shape, (n, a.shape, want.shape)
    assert np.array_equal(a, want), (n, a, want)
same("e_f32", np.arange(12, dtype=np.float32).reshape(3, 4).T[1:4:2])
same("e_f16", np.array([0.5, -3.25], dtype=np.float16))
same("e_f64", np.array([1e-300, -7.5]))
same("e_i64", np.array([-(2 ** 40), 7], dtype=np.int64))
same("e_i32", np.array([[-5], [1 << 20]], dtype=np.int32))
same("e_i8", np.array([-128, 127], dtype=np.int8))
same("e_u8", np.array([0, 255], dtype=np.uint8))
same("e_bool", np.array([False, True]))
same("e_scalar", np.array(3.5, dtype=np.float32))
same("e_empty", np.zeros((2, 0), dtype=np.int64))
same("e_expand", np.array([[1, 2]] * 3, dtype=np.float32))
same("e_u16", np.array([0, 65535], dtype=np.uint16))
same("e_u64", np.array([0, 5], dtype=np.uint64))
# raw bytes as numpy saves ml_dtypes' arrays (bfloat16 bits; int4 in the low 4 bits)
same("e_bf16", np.array([0x3fc0, 0xc040], dtype=np.uint16).view("V2"))
same("e_int4", np.array([0x0e, 0x07, 0x08], dtype=np.uint8).view("V1"))
# numpy's own header layout: 64-byte aligned data, version 1.0.
raw = open(os.path.join(d, "e_f32.npy"), "rb").read()
assert raw[6:8] == b"\x01\x00" and (10 + int.from_bytes(raw[8:10], "little")) % 64 == 0
)PY"));
}

TEST_CASE("write_npy then read_npy: round trip of every dtype") {
  const std::string path = tmp_path("round.npy");
  const Tensor ts[] = {
      randn({3, 5}).t(),
      randn({4}).to(DType::Float16),
      randn({2, 2}).to(DType::Float64),
      arange(-3, 3).reshape({2, 3}),
      arange(-3, 3).to(DType::Int32),
      arange(-3, 3).to(DType::Int16),
      arange(-3, 3).to(DType::Int8),
      arange(0, 6).to(DType::UInt8),
      tensor<bool>({true, false}, DType::Bool),
      zeros({0}, DType::Float32),
      arange(0, 6).to(DType::UInt16),
      arange(0, 6).to(DType::UInt32),
      arange(0, 6).to(DType::UInt64),
      randn({3}).to(DType::BFloat16),
      randn({3}).to(DType::Float8E4M3FN),
      randn({3}).to(DType::Float8E5M2FNUZ),
      randn({3}).to(DType::Float4E2M1FN),
      arange(-3, 3).to(DType::Int4),
      arange(-2, 2).to(DType::Int2),
      arange(0, 4).to(DType::UInt2),
  };
  for (const Tensor& t : ts) {
    std::string error;
    REQUIRE_MESSAGE(write_npy(path, t, &error) == Status::Ok, error);
    Result<Tensor> r = read_npy(path, &error, t.dtype());  // raw_as: the '|V1' / '|V2' ones
    REQUIRE_MESSAGE(r.ok(), error);
    CHECK(r.get().dtype() == t.dtype());
    check_equal(r.get().to(DType::Float64), t.to(DType::Float64));
  }
}

TEST_CASE("write_npy: refusals, and the atomic write leaves nothing behind") {
  std::string error;
  CHECK(write_npy(tmp_path("undef.npy"), Tensor(), &error) == Status::InvalidArgument);
  CHECK(error == "write_npy: undefined tensor");
  std::FILE* f = std::fopen(tmp_path("undef.npy").c_str(), "rb");
  CHECK(f == nullptr);
  // A directory that does not exist: IoError naming the temporary, no file left.
  CHECK(write_npy(tmp_path("no/such/dir/x.npy"), ones({2}), &error) == Status::IoError);
  CHECK(error.find("cannot create '" + tmp_path("no/such/dir/x.npy") + ".tmp.") == 0);
  CHECK(error.find("No such file or directory") != std::string::npos);
  // Overwriting an existing file replaces it whole.
  const std::string path = tmp_path("over.npy");
  REQUIRE(write_npy(path, ones({1000}), &error) == Status::Ok);
  REQUIRE(write_npy(path, full({2}, 7.0), &error) == Status::Ok);
  Result<Tensor> r = read_npy(path, &error);
  REQUIRE(r.ok());
  check_equal(r.get(), full({2}, 7.0));
}

TEST_CASE("read_npy: malformed files are errors that name the problem") {
  const std::string p = tmp_path("bad.npy");
  const std::string q = "'" + p + "'";
  auto err = [&](const std::string& bytes, Status st = Status::InvalidArgument) {
    write_file(p, bytes);
    return read_error(p, st);
  };
  const std::string f32x2(8, '\0');
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  REQUIRE(err(npy_bytes(good, f32x2 + "x")) ==
          q + ": data is 9 bytes, shape (2,) x float32 needs 8");  // also proves `good` parses

  CHECK(read_error(tmp_path("missing.npy"), Status::IoError) ==
        "cannot open '" + tmp_path("missing.npy") + "': No such file or directory");
  CHECK(read_error(tmp_dir(), Status::IoError) == "'" + tmp_dir() + "' is not a regular file");
  CHECK(err("PK\x03\x04 a zip file") == q + " is not a .npy file (bad magic)");
  CHECK(err("") == q + ": truncated header (0 bytes; the magic string and version need 8)");
  CHECK(err(std::string("\x93NUMPY\x01", 7)) == q + ": truncated header (7 bytes; the magic string and version need 8)");
  CHECK(err(std::string("\x93NUMPY\x01\x00\x10", 9)) ==
        q + ": truncated header (9 bytes; version 1.0 needs 10 before the header)");
  CHECK(err(std::string("\x93NUMPY\x04\x00\x10\x00", 10), Status::NotSupported) ==
        q + ": unsupported .npy version 4.0 (ember reads 1.0, 2.0 and 3.0)");
  CHECK(err(std::string("\x93NUMPY\x01\x00\x40\x00{'descr'", 17)) ==
        q + ": truncated header (file has 17 bytes, the header ends at 74)");
  CHECK(err(std::string("\x93NUMPY\x02\x00\x00\x00\x00\x01", 12)) ==
        q + ": header length 16777216 exceeds the limit of 1048576 bytes");
  CHECK(err(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", f32x2.substr(3))) ==
        q + ": truncated data: data is 5 bytes, shape (2,) x float32 needs 8");
  CHECK(err(npy_bytes("['descr', '<f4']", "")) == q + ": malformed header: the header is not a dict");
  CHECK(err(npy_bytes("{'descr': '<f4', 'fortran_order': False}", "")) ==
        q + ": malformed header: the header has no 'shape'");
  CHECK(err(npy_bytes("{'fortran_order': False, 'shape': ()}", "")) ==
        q + ": malformed header: the header has no 'descr'");
  CHECK(err(npy_bytes("{'descr': '<f4', 'shape': ()}", "")) ==
        q + ": malformed header: the header has no 'fortran_order'");
  CHECK(err(npy_bytes("{'descr': '<f4', 'fortran_order': Maybe, 'shape': ()}", "")) ==
        q + ": malformed header: fortran_order is neither True nor False");
  CHECK(err(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", f32x2)) ==
        q + ": malformed header: unexpected key 'extra'");
  CHECK(err(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "")) ==
        q + ": malformed header: negative dimension in shape");
  CHECK(err(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}", "")) ==
        q + ": malformed header: expected ',' or ')' in shape");
  CHECK(err(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': 2}", "")) ==
        q + ": malformed header: shape is not a tuple");
  CHECK(err(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,) 'x'}", "")) ==
        q + ": malformed header: expected ',' or '}' after 'shape'");
  CHECK(err(npy_bytes(good + " junk", f32x2)) == q + ": malformed header: unexpected text after the dict");
  CHECK(err(npy_bytes("{'descr': '<x9', 'fortran_order': False, 'shape': ()}", ""), Status::NotSupported) ==
        q + ": unsupported descr '<x9' (ember reads <f4 <f2 <f8 <i8 <i4 <i2 |i1 |u1 <u2 <u4 <u8 |b1, and |V1 |V2 as the model's dtype)");
  CHECK(err(npy_bytes("{'descr': '>i8', 'fortran_order': False, 'shape': ()}", ""), Status::NotSupported) ==
        q + ": big-endian descr '>i8' is not supported (ember reads little-endian data)");
  CHECK(err(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "")) ==
        q + ": shape overflows: a dimension exceeds 2^63 - 1");
  CHECK(err(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", "")) ==
        q + ": shape (4294967296, 4294967296) overflows (float32 bytes exceed 2^63 - 1)");
  // A zero dim does not excuse an overflowing stride (the loader's fuzz finding).
  CHECK(err(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296)}", "")) ==
        q + ": shape (0, 4294967296, 4294967296) overflows (float64 bytes exceed 2^63 - 1)");
  // A huge but representable shape with little data is a size mismatch, never an allocation.
  CHECK(err(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 1000)}", f32x2)) ==
        q + ": truncated data: data is 8 bytes, shape (1000000000, 1000) x float32 needs 4000000000000");
  CHECK(err(npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,)}", std::string("\x01\x00\x02", 3))) ==
        q + ": bool element 2 is 2 (not 0 or 1)");
  // Python 2 longs, double quotes, no trailing comma, version 2.0: accepted.
  write_file(p, npy_bytes("{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (1L, 2L)}",
                          std::string("\x01\x00\x00\x00\xff\xff\xff\xff", 8), 2));
  std::string error;
  Result<Tensor> r = read_npy(p, &error);
  REQUIRE_MESSAGE(r.ok(), error);
  check_equal(r.get(), tensor<int32_t>({{1, -1}}, DType::Int32));
}

TEST_CASE("read_npy and parse_npy: every truncation and byte flip of a valid file fails cleanly") {
  const std::string valid = read_file(numpy_dir() + "/f32.npy");
  REQUIRE(valid.size() == 128 + 24);
  const std::string p = tmp_path("trunc.npy");
  for (size_t n = 0; n < valid.size(); ++n) {
    const std::string cut = valid.substr(0, n);
    std::string error;
    Result<Tensor> m = parse_npy(cut.data(), cut.size(), "cut", &error);
    CHECK_MESSAGE(!m.ok(), "truncated to ", n, " bytes");
    CHECK(!error.empty());
    if (n % 7 == 0) {  // the file path too (slower: one file per length)
      write_file(p, cut);
      Result<Tensor> f = read_npy(p, &error);
      CHECK_MESSAGE(!f.ok(), "truncated to ", n, " bytes");
    }
  }
  // Every single-byte change: an error or a tensor, never a crash.
  int accepted = 0;
  for (size_t i = 0; i < valid.size(); ++i) {
    for (int v : {0, 0x20, 0x7f, 0xff}) {
      std::string flipped = valid;
      flipped[i] = static_cast<char>(v);
      std::string error;
      Result<Tensor> m = parse_npy(flipped.data(), flipped.size(), "flip", &error);
      if (m.ok()) ++accepted; else CHECK(!error.empty());
    }
  }
  CHECK(accepted > 0);  // data bytes (and header padding) may change freely
}
