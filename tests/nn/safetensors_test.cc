// safetensors: byte-exact files as the Python library writes them, round
// trips for every dtype, validation errors, atomic writes, nn::save/nn::load.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "runtime/nn/module.h"
#include "runtime/nn/safetensors.h"
#include "tests/harness/testing.h"

using ember::testing::tmp_path;
using namespace ember;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;
using ember::testing::golden_text;
namespace nn = ember::nn;
using ember::nn::find_tensor;

namespace {

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string temp_of(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

nn::NamedTensors golden_tensors() {
  nn::NamedTensors out;
  const int n = std::stoi(golden_text("nnm.st.count"));
  for (int i = 0; i < n; ++i) {
    out.emplace_back(golden_text("nnm.st.name" + std::to_string(i)), golden("nnm.st.t" + std::to_string(i)));
  }
  return out;
}

// A file: 8-byte length, header text, data.
std::string file_of(const std::string& header, const std::string& data = "") {
  std::string out;
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + header + data;
}

void check_parse_error(const std::string& bytes, const std::string& message) {
  check_error([&] { nn::deserialize_safetensors(bytes); }, message);
}

}  // namespace

TEST_CASE("files are byte for byte what the Python library writes") {
  const nn::NamedTensors tensors = golden_tensors();
  CHECK(tensors.size() == 13);
  const nn::Metadata meta{{"format", "pt"}, {"note", "ember \"golden\""}};
  const std::string expected = from_hex(golden_text("nnm.st.bytes"));
  CHECK(nn::serialize_safetensors(tensors, meta) == expected);
  nn::NamedTensors two{{"x", find_tensor(tensors, "w.f32")}, {"n", find_tensor(tensors, "i64")}};
  CHECK(nn::serialize_safetensors(two) == from_hex(golden_text("nnm.st.bytes_nometa")));
  // Non-contiguous tensors are written in logical order.
  nn::NamedTensors transposed{{"x", find_tensor(tensors, "w.f32").t().contiguous().t()},
                              {"n", find_tensor(tensors, "i64")}};
  CHECK(!transposed[0].second.is_contiguous());
  CHECK(nn::serialize_safetensors(transposed) == from_hex(golden_text("nnm.st.bytes_nometa")));
}

TEST_CASE("Python's file parses to the same tensors and metadata") {
  nn::Metadata meta;
  const nn::NamedTensors loaded = nn::deserialize_safetensors(from_hex(golden_text("nnm.st.bytes")), &meta);
  CHECK(meta == nn::Metadata{{"format", "pt"}, {"note", "ember \"golden\""}});
  const nn::NamedTensors tensors = golden_tensors();
  REQUIRE(loaded.size() == tensors.size());
  // Header order: by dtype (widest first), then name.
  CHECK(loaded[0].first == "i64");
  CHECK(loaded[1].first == "a.f64");
  CHECK(loaded.back().first == "mask");
  for (const auto& [name, t] : tensors) {
    CAPTURE(name);
    const Tensor got = find_tensor(loaded, name);
    REQUIRE(got.defined());
    check_equal(got, t);
  }
}

TEST_CASE("round trip through a file for every dtype") {
  manual_seed(0);
  nn::NamedTensors tensors{
      {"f32", randn({3, 5})},
      {"f64", randn({2, 2}, DType::Float64)},
      {"f16", randn({7}).to(DType::Float16)},
      {"bf16", randn({2, 3}).to(DType::BFloat16)},
      {"i64", randint(-1000000, 1000000, {4})},
      {"i32", randint(-1000, 1000, {2, 2}, DType::Int32)},
      {"i16", randint(-1000, 1000, {3}, DType::Int16)},
      {"i8", randint(-128, 128, {5}, DType::Int8)},
      {"u8", randint(0, 256, {5}, DType::UInt8)},
      {"b", tensor({true, false, false, true})},
      {"zero_dim", scalar_tensor(7, DType::Int64)},
      {"empty", empty({0, 4}, DType::Float16)},
      {"strided", arange(0, 24, 1, DType::Float32).reshape({4, 6}).slice(1, 0, 6, 2)},
  };
  const std::string path = tmp_path("roundtrip.safetensors");
  nn::save_safetensors(path, tensors, {{"k", "v\n\u00e9"}});
  CHECK(!exists(temp_of(path)));
  nn::Metadata meta;
  const nn::NamedTensors loaded = nn::load_safetensors(path, &meta);
  CHECK(meta.at("k") == "v\n\u00e9");
  REQUIRE(loaded.size() == tensors.size());
  for (const auto& [name, t] : tensors) {
    CAPTURE(name);
    check_equal(find_tensor(loaded, name), t);
  }
  nn::save_safetensors(path, {});  // an empty file is valid: "{}" padded
  CHECK(nn::load_safetensors(path).empty());
  CHECK(read_file(path).size() == 16);
}

TEST_CASE("writing refuses bad input") {
  check_error([] { nn::serialize_safetensors({{"a", zeros({1})}, {"a", zeros({2})}}); },
              "safetensors: duplicate tensor name \"a\"");
  check_error([] { nn::serialize_safetensors({{"__metadata__", zeros({1})}}); },
              "safetensors: the tensor name \"__metadata__\" is reserved");
  check_error([] { nn::serialize_safetensors({{"u", Tensor()}}); }, "safetensors: tensor \"u\" is undefined");
}

TEST_CASE("loading validates and names the problem") {
  const std::string p = "invalid safetensors file: ";
  const std::string ok_header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string data8(8, '\0');
  CHECK(nn::deserialize_safetensors(file_of(ok_header, data8)).size() == 1);

  check_parse_error("abc", p + "file too small (3 bytes) for the 8-byte header length");
  check_parse_error(file_of(ok_header, data8).substr(0, 20), p + "header length 54 exceeds the file size (20 bytes)");
  std::string huge = file_of(ok_header, data8);
  huge[5] = 1;  // 2^40 + 56
  check_parse_error(huge, p + "header length 1099511627830 exceeds the limit of 100000000 bytes");
  check_parse_error(file_of(ok_header, data8.substr(0, 5)),
                    p + "tensor \"a\": data_offsets [0, 8] are out of range (the data has 5 bytes)");
  check_parse_error(file_of(R"([1,2])"), p + "header does not start with '{'");
  check_parse_error(file_of(R"({"a":{"dtype":"F32",}})"), p + "header is not valid JSON: expected a string key at offset 20");
  check_parse_error(file_of(R"({"a":1} x)"), p + "header is not valid JSON: unexpected character after the JSON value at offset 8");
  check_parse_error(file_of(R"({"a":{"dtype":"F32")"), p + "header is not valid JSON: expected '}' at offset 19");
  check_parse_error(file_of(R"({"a":"\q"})"), p + "header is not valid JSON: invalid escape at offset 8");
  check_parse_error(file_of(R"({"a":tru})"), p + "header is not valid JSON: invalid literal at offset 5");
  check_parse_error(file_of(R"({"a":01})"), p + "header is not valid JSON: expected '}' at offset 6");
  check_parse_error(file_of("{\"a\":\"\x01\"}"), p + "header is not valid JSON: control character in string at offset 7");
  check_parse_error(file_of("{\"\xff\":1}"), p + "header is not valid UTF-8");
  check_parse_error(file_of(std::string(100, '[').insert(0, "{\"a\":")), p + "header is not valid JSON: nesting too deep at offset 69");
  check_parse_error(file_of(R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"a":{}})", "1234"),
                    p + "header is not valid JSON: duplicate key \"a\" at offset 56");
  check_parse_error(file_of(R"({"a":{"dtype":"F99","shape":[2],"data_offsets":[0,8]}})", data8),
                    p + "tensor \"a\": unknown dtype \"F99\"");
  check_parse_error(file_of(R"({"a":{"dtype":"U16","shape":[4],"data_offsets":[0,8]}})", data8),
                    "safetensors: tensor \"a\" has dtype U16, which ember does not support");
  check_parse_error(file_of(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data8),
                    p + "tensor \"a\": shape [3] and dtype F32 need 12 bytes but data_offsets [0, 8] hold 8");
  check_parse_error(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data8),
                    p + "tensor \"a\": data_offsets [8, 0] are reversed");
  check_parse_error(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", data8),
                    p + "tensor \"a\": data_offsets [0, 16] are out of range (the data has 8 bytes)");
  check_parse_error(file_of(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data8),
                    p + "tensor \"a\": shape entry must be a non-negative integer");
  check_parse_error(file_of(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", data8),
                    p + "tensor \"a\": shape entry must be a non-negative integer");
  check_parse_error(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,99999999999999999999]}})", data8),
                    p + "tensor \"a\": data offset is too large");
  check_parse_error(
      file_of(R"({"a":{"dtype":"I8","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})", data8),
      p + "tensor \"a\": shape [4294967296, 4294967296, 4294967296] is too large");
  check_parse_error(file_of(R"({"a":{"dtype":"F32","shape":[2]}})", data8), p + "tensor \"a\": missing \"data_offsets\"");
  check_parse_error(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", data8),
                    p + "tensor \"a\": unknown field \"x\"");
  check_parse_error(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                            R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                            data8),
                    p + "tensor \"b\": data overlaps the previous tensor");
  check_parse_error(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data8),
                    p + "tensor \"a\": gap in the data before offset 4");
  check_parse_error(file_of(ok_header, data8 + "xx"), p + "the tensors cover 8 bytes of data but the file holds 10");
  check_parse_error(file_of(R"({"__metadata__":{"k":1}})"), p + "metadata value \"k\" is not a string");
  check_parse_error(file_of(R"({"__metadata__":[]})"), p + "\"__metadata__\" must be an object of strings");

  // Through a file: the path prefixes the message; a missing file is an I/O error.
  const std::string path = tmp_path("bad.safetensors");
  write_file(path, file_of(ok_header, data8).substr(0, 30));
  check_error([&] { nn::load_safetensors(path); },
              path + ": " + p + "header length 54 exceeds the file size (30 bytes)");
  check_error([] { nn::load_safetensors("/nonexistent/x.safetensors"); },
              "cannot open '/nonexistent/x.safetensors': No such file or directory");
}

TEST_CASE("garbage never crashes: truncations and byte flips of a valid file") {
  const std::string valid = from_hex(golden_text("nnm.st.bytes"));
  std::mt19937 rng(7);
  int errors = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = valid;
    if (i % 3 == 0) {
      bytes.resize(rng() % valid.size());
    } else {
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) {
        // Mostly inside the length and header, where the structure is.
        const size_t at = rng() % (i % 3 == 1 ? std::min<size_t>(valid.size(), 600) : valid.size());
        bytes[at] = static_cast<char>(rng());
      }
    }
    try {
      (void)nn::deserialize_safetensors(bytes);
    } catch (const Error&) {
      ++errors;
    }
  }
  CHECK(errors > 1000);
}

TEST_CASE("atomic writes: temp file removed, original kept on failure") {
  const nn::NamedTensors small{{"a", ones({2})}};
  check_error([&] { nn::save_safetensors("/nonexistent_dir/x.safetensors", small); },
              "cannot create '/nonexistent_dir/x.safetensors.tmp." + std::to_string(::getpid()) +
                  "': No such file or directory");
  CHECK(!exists(temp_of("/nonexistent_dir/x.safetensors")));

  const std::string path = tmp_path("atomic.safetensors");
  nn::save_safetensors(path, small);
  const std::string original = read_file(path);
  // The write fails half way (file size limit): the temp file goes, the original stays.
  struct rlimit old_limit;
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  struct rlimit limit = old_limit;
  limit.rlim_cur = 4096;
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &limit) == 0);
  std::string message;
  try {
    nn::save_safetensors(path, {{"big", zeros({100000})}});
  } catch (const Error& e) {
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::signal(SIGXFSZ, old_handler);
  CHECK(message == "cannot write '" + temp_of(path) + "': File too large");
  CHECK(!exists(temp_of(path)));
  CHECK(read_file(path) == original);
  // The rename fails (the target is a directory): the temp file goes too.
  const std::string dir = tmp_path("a_directory.safetensors");
  ::mkdir(dir.c_str(), 0755);
  check_error([&] { nn::save_safetensors(dir, small); },
              "cannot rename '" + temp_of(dir) + "' to '" + dir + "': Is a directory");
  CHECK(!exists(temp_of(dir)));
  // Refused before writing: the original stays.
  check_error([&] { nn::save_safetensors(path, {{"a", ones({1})}, {"a", ones({1})}}); },
              "safetensors: duplicate tensor name \"a\"");
  CHECK(read_file(path) == original);
}

TEST_CASE("nn::save and nn::load through state_dict") {
  manual_seed(1);
  auto net = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(2, 3, 3), std::make_shared<nn::BatchNorm2d>(3), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(12, 2)});
  (*net)(randn({2, 2, 4, 4}));
  const std::string path = tmp_path("net.safetensors");
  nn::save(*net, path, {{"format", "pt"}});
  manual_seed(2);
  auto copy = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(2, 3, 3), std::make_shared<nn::BatchNorm2d>(3), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(12, 2)});
  nn::load(*copy, path);
  const auto a = net->state_dict(), b = copy->state_dict();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) check_equal(b[i].second, a[i].second);
  CHECK(find_tensor(b, "1.num_batches_tracked").item<int64_t>() == 1);
  nn::Linear other(12, 2);
  check_error([&] { nn::load(other, path); },
              "Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: \"weight\", \"bias\". \n\t"
              "Unexpected key(s) in state_dict: \"1.num_batches_tracked\", \"0.bias\", \"0.weight\", \"1.bias\", "
              "\"1.running_mean\", \"1.running_var\", \"1.weight\", \"3.bias\", \"3.weight\". ");
  nn::load(other, path, /*strict=*/false);  // nothing matches, nothing fails
}
