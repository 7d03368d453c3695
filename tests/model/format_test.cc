// The `.ember` model format: writer round trip, zero-copy loading, and bad
// input (each with its exact message, and a byte-flip fuzz loop that must
// never crash).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

#include "runtime/model/format_fields.h"
#include "runtime/model/loader.h"
#include "runtime/model/writer.h"
#include "tests/harness/testing.h"

using ember::testing::tmp_path;
using namespace ember;
using ember::testing::check_equal;

namespace {

template <typename T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TensorDef weight(std::string name, std::vector<int64_t> shape, DType dtype, std::vector<std::byte> data) {
  TensorDef t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.data = std::move(data);
  t.has_data = true;
  return t;
}

TensorDef activation(std::string name, std::vector<int64_t> shape, DType dtype = DType::Float32) {
  TensorDef t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.dtype = dtype;
  return t;
}

OpDef make_op(OpKind kind, std::vector<int32_t> in, std::vector<int32_t> out, std::string name,
              OpParams params = NoParams{}) {
  OpDef op;
  op.op = kind;
  op.inputs = std::move(in);
  op.outputs = std::move(out);
  op.name = std::move(name);
  op.params = params;
  return op;
}

// Tensors: 0 x [batch, 4] (input), 1 w [3, 4] f32 (trainable), 2 h, 3 g, 4 c, 5 y,
// 6 q int8 per-channel quantized, 7 f16, 8 bf16, 9 i64, 10 bool, 11 sparse f32
// [4, 5] nnz 3, 12 its COO indices, 13 a [3, 4] f32 referenced ember::Tensor.
ModelDef make_def() {
  ModelDef def;
  TensorDef x = activation("x", {-1, 4});
  x.dim_names = {"batch", ""};
  def.add_tensor(x);
  TensorDef w = weight("w", {3, 4}, DType::Float32,
                       bytes_of(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  w.trainable = true;
  def.add_tensor(w);
  def.add_tensor(activation("h", {-1, 3}));
  def.add_tensor(activation("g", {-1, 3}));
  def.add_tensor(activation("c", {-1, 3}));
  def.add_tensor(activation("y", {-1, 6}));
  TensorDef q = weight("q", {2, 3}, DType::Int8, bytes_of(std::vector<int8_t>{-128, -1, 0, 1, 2, 127}));
  q.quant = QuantDef{{0.5f, 0.25f}, {1, -2}, 0};
  def.add_tensor(q);
  def.add_tensor(weight("f16", {5}, DType::Float16,
                        bytes_of(std::vector<Half>{Half(1.5f), Half(-2.f), Half(0.f), Half(65504.f), Half(1e-3f)})));
  def.add_tensor(weight("bf16", {2, 2}, DType::BFloat16,
                        bytes_of(std::vector<BFloat16>{BFloat16(1.f), BFloat16(-3.f), BFloat16(0.5f), BFloat16(7.f)})));
  def.add_tensor(weight("i64", {3}, DType::Int64, bytes_of(std::vector<int64_t>{int64_t{1} << 40, -7, 0})));
  def.add_tensor(weight("mask", {4}, DType::Bool, bytes_of(std::vector<uint8_t>{1, 0, 0, 1})));
  TensorDef sp = weight("sp", {4, 5}, DType::Float32, bytes_of(std::vector<float>{1.f, 2.f, 3.f}));
  sp.sparse = SparseCooDef{12, 3};
  def.add_tensor(sp);
  def.add_tensor(weight("sp.indices", {2, 3}, DType::Int64, bytes_of(std::vector<int64_t>{0, 1, 3, 4, 0, 2})));
  TensorDef a;
  a.name = "a";
  a.shape = {3, 4};
  a.tensor = arange(12, DType::Float32).reshape({3, 4});
  def.add_tensor(a);
  def.inputs = {0};
  def.outputs = {5};
  def.ops.push_back(make_op(OpKind::MatMul, {0, 1}, {2}, "mm"));
  def.ops.push_back(make_op(OpKind::Gelu, {2}, {3}, "gelu", GeluParams{true}));
  Conv2dParams conv;
  conv.stride[0] = 2;
  conv.padding[1] = 3;
  conv.groups = 3;
  def.ops.push_back(make_op(OpKind::Conv2d, {3, 13, -1}, {4}, "conv", conv));
  PadParams pad;
  pad.mode = PadMode::Reflect;
  pad.before[1] = 1;
  pad.after[1] = 2;
  def.ops.push_back(make_op(OpKind::Pad, {4}, {5}, "pad", pad));
  def.metadata.producer = "ember-test";
  def.metadata.producer_version = "0.1";
  def.metadata.source_hash = "sha256:00ff";
  def.metadata.converter_options = {{"quantize", "dynamic-int8"}, {"opset", "17"}};
  return def;
}

std::vector<std::byte> serialize(const ModelDef& def) {
  std::vector<std::byte> out;
  std::string error;
  REQUIRE_MESSAGE(serialize_model(def, &out, &error) == Status::Ok, error);
  return out;
}

std::vector<std::byte> serialize_unverified(const ModelDef& def) {
  std::vector<std::byte> out;
  REQUIRE(detail::serialize_model_unverified(def, &out) == Status::Ok);
  return out;
}

// The error loading `bytes` gives (Full), checked to be a failure.
std::string load_error(const std::vector<std::byte>& bytes, Status expected = Status::InvalidModel) {
  std::string error;
  auto model = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Full, &error);
  CHECK(!model.ok());
  CHECK(model.status() == expected);
  return error;
}

// The loader's message and the writer's (which runs the same checks) for a bad def.
std::string def_error(const ModelDef& def) {
  std::vector<std::byte> out;
  std::string writer_error;
  CHECK(serialize_model(def, &out, &writer_error) == Status::InvalidModel);
  CHECK(out.empty());
  const std::string loader_error = load_error(serialize_unverified(def));
  CHECK(writer_error == loader_error);
  return loader_error;
}

void write_file(const std::string& path, const void* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// A hand-made file: one float32 [4] weight at `ref` (segment, offset, size),
// the given segments, padded to `file_size` (0: just the flatbuffer).
std::vector<std::byte> craft(const std::vector<std::pair<uint64_t, uint64_t>>& segments, uint32_t seg,
                             uint64_t offset, uint64_t size, size_t file_size, uint32_t version = kFormatVersion) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<int64_t> shape{4};
  auto t = fb::CreateTensor(fbb, fbb.CreateString("w"), fbb.CreateVector(shape), 0, 0,
                            fb::CreateDataRef(fbb, seg, offset, size));
  std::vector<flatbuffers::Offset<fb::Segment>> segs;
  for (auto& s : segments) segs.push_back(fb::CreateSegment(fbb, s.first, s.second));
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors{t};
  std::vector<int32_t> outputs{0};
  auto graph = fb::CreateGraph(fbb, fbb.CreateVector(tensors), 0, 0, fbb.CreateVector(outputs));
  auto model = fb::CreateModel(fbb, version, graph, 0, fbb.CreateVector(segs));
  fb::FinishSizePrefixedModelBuffer(fbb, model);
  std::vector<std::byte> out(std::max<size_t>(file_size, fbb.GetSize()));
  std::memcpy(out.data(), fbb.GetBufferPointer(), fbb.GetSize());
  return out;
}

}  // namespace

TEST_CASE("model: round trip through a file keeps everything") {
  const ModelDef def = make_def();
  const std::string path = tmp_path("round_trip.ember");
  std::string error;
  REQUIRE_MESSAGE(write_model(def, path, &error) == Status::Ok, error);
  auto loaded = Model::load(path, Verification::Full, &error);
  REQUIRE_MESSAGE(loaded.ok(), error);
  Model& m = loaded.get();
  CHECK(m.version() == kFormatVersion);
  REQUIRE(m.num_tensors() == static_cast<int>(def.tensors.size()));
  for (int i = 0; i < m.num_tensors(); ++i) {
    const TensorDef& t = def.tensors[static_cast<size_t>(i)];
    CHECK(m.tensor_name(i) == t.name);
    CHECK(m.tensor_shape(i) == t.shape);
    CHECK(m.tensor_dtype(i) == t.dtype);
    CHECK(m.tensor(i).trainable() == t.trainable);
    CHECK(m.weight(i).defined() == (t.has_data || t.tensor.defined()));
    if (m.weight(i).defined()) {
      REQUIRE(m.weight(i).nbytes() == t.byte_size());
      CHECK(std::memcmp(m.weight(i).data_ptr(), t.bytes(), t.byte_size()) == 0);
    }
  }
  CHECK(m.find_tensor("sp.indices") == 12);
  CHECK(m.find_tensor("nope") == -1);
  // Symbolic dims and their names.
  REQUIRE(m.tensor(0).dim_names() != nullptr);
  CHECK(m.tensor(0).dim_names()->Get(0)->str() == "batch");
  CHECK(m.tensor(0).dim_names()->Get(1)->str() == "");
  // Typed views.
  check_equal(m.weight(1), tensor<float>({{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}}));
  check_equal(m.weight(13), arange(12, DType::Float32).reshape({3, 4}));
  check_equal(m.weight(9), tensor<int64_t>({int64_t{1} << 40, -7, 0}));
  CHECK(m.weight(8).dtype() == DType::BFloat16);
  CHECK(m.weight(8).to(DType::Float32).to_vector<float>() == std::vector<float>{1.f, -3.f, 0.5f, 7.f});
  CHECK(m.weight(7).to(DType::Float32).to_vector<float>()[3] == 65504.f);
  CHECK(m.weight(10).to_vector<bool>() == std::vector<bool>{true, false, false, true});
  // Quantization and sparse parameters.
  const fb::QuantParams* q = m.tensor(6).quant();
  REQUIRE(q != nullptr);
  CHECK(std::vector<float>(q->scales()->begin(), q->scales()->end()) == std::vector<float>{0.5f, 0.25f});
  CHECK(std::vector<int64_t>(q->zero_points()->begin(), q->zero_points()->end()) == std::vector<int64_t>{1, -2});
  CHECK(q->axis() == 0);
  CHECK(m.tensor(1).quant() == nullptr);
  const fb::SparseCoo* sp = m.tensor(11).sparse();
  REQUIRE(sp != nullptr);
  CHECK(sp->indices() == 12);
  CHECK(sp->nnz() == 3);
  CHECK(m.weight(11).sizes() == Shape{3});
  // Graph, ops and params.
  CHECK(std::vector<int32_t>(m.inputs().data(), m.inputs().data() + m.inputs().size()) == def.inputs);
  CHECK(std::vector<int32_t>(m.outputs().data(), m.outputs().data() + m.outputs().size()) == def.outputs);
  REQUIRE(m.num_ops() == 4);
  CHECK(m.op_kind(0) == OpKind::MatMul);
  CHECK(m.op(0).name()->str() == "mm");
  CHECK(m.op(0).version() == 1);
  CHECK(m.op(2).inputs()->Get(2) == -1);
  auto gelu = m.op_params(1);
  REQUIRE(gelu.ok());
  CHECK(std::get<GeluParams>(gelu.get()).tanh_approximation);
  auto conv = m.op_params(2);
  REQUIRE(conv.ok());
  const auto& cp = std::get<Conv2dParams>(conv.get());
  CHECK(cp.stride[0] == 2);
  CHECK(cp.stride[1] == 1);
  CHECK(cp.padding[1] == 3);
  CHECK(cp.dilation[0] == 1);
  CHECK(cp.groups == 3);
  auto pad = m.op_params(3);
  REQUIRE(pad.ok());
  const auto& pp = std::get<PadParams>(pad.get());
  CHECK(pp.mode == PadMode::Reflect);
  CHECK(pp.before[1] == 1);
  CHECK(pp.after[1] == 2);
  CHECK(pp.after[0] == 0);
  CHECK(std::holds_alternative<NoParams>(m.op_params(0).get()));
  // Metadata.
  const ModelMetadata md = m.metadata();
  CHECK(md.producer == "ember-test");
  CHECK(md.producer_version == "0.1");
  CHECK(md.source_hash == "sha256:00ff");
  CHECK(md.converter_options == def.metadata.converter_options);
  // Nothing but the file is left behind.
  CHECK(::access((path + ".tmp." + std::to_string(::getpid())).c_str(), F_OK) != 0);
}

TEST_CASE("model: every params struct survives the trip") {
  ModelDef def;
  def.add_tensor(activation("x", {2, 3}));
  def.inputs = {0};
  ClampParams clamp;
  clamp.has_min = true;
  clamp.min = Scalar(-1.5);
  clamp.has_max = true;
  clamp.max = Scalar(int64_t{7});
  ReduceParams reduce;
  reduce.dims = 5;
  reduce.correction = 0;
  reduce.p = 3.0;
  reduce.noop_empty = true;
  SoftmaxParams softmax{0};
  NormParams norm;
  norm.eps = 1e-3;
  norm.normalized_rank = 2;
  Pool2dParams pool;
  pool.kernel[0] = 3;
  pool.kernel[1] = 2;
  pool.ceil_mode = true;
  pool.count_include_pad = false;
  pool.divisor_override = 4;
  const std::vector<std::pair<OpKind, OpParams>> cases = {
      {OpKind::Fill, ScalarParams{Scalar(true)}}, {OpKind::Clamp, clamp},   {OpKind::Sum, reduce},
      {OpKind::Softmax, softmax},                {OpKind::MaxPool2d, pool}};
  int prev = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const int out = def.add_tensor(activation("t" + std::to_string(k), {2, 3}));
    std::vector<int32_t> in = cases[k].first == OpKind::Fill ? std::vector<int32_t>{} : std::vector<int32_t>{prev};
    def.ops.push_back(make_op(cases[k].first, in, {out}, "op" + std::to_string(k), cases[k].second));
    prev = out;
  }
  def.outputs = {prev};
  const auto bytes = serialize(def);
  std::string error;
  auto m = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Full, &error);
  REQUIRE_MESSAGE(m.ok(), error);
  CHECK(std::get<ScalarParams>(m->op_params(0).get()).value.is_bool());
  const auto c = std::get<ClampParams>(m->op_params(1).get());
  CHECK((c.has_min && c.has_max && c.min.to_double() == -1.5 && c.max.is_integral() && c.max.to_int() == 7));
  const auto r = std::get<ReduceParams>(m->op_params(2).get());
  CHECK((r.dims == 5 && r.correction == 0 && r.p == 3.0 && r.noop_empty && r.keepdim));
  CHECK(std::get<SoftmaxParams>(m->op_params(3).get()).dim == 0);
  const auto p = std::get<Pool2dParams>(m->op_params(4).get());
  CHECK((p.kernel[0] == 3 && p.kernel[1] == 2 && p.stride[0] == 1 && p.ceil_mode && !p.count_include_pad &&
         p.divisor_override == 4));
  (void)norm;
}

TEST_CASE("model: weights are zero-copy views on the mapping, 64-byte aligned, and outlive the Model") {
  const std::string path = tmp_path("zero_copy.ember");
  REQUIRE(write_model(make_def(), path) == Status::Ok);
  Tensor w;
  {
    auto m = Model::load(path);
    REQUIRE(m.ok());
    const auto* begin = m->data();
    const auto* end = begin + m->size();
    for (int i = 0; i < m->num_tensors(); ++i) {
      if (!m->weight(i).defined()) continue;
      const auto* p = static_cast<const std::byte*>(m->weight(i).data_ptr());
      CHECK(p >= begin);
      CHECK(p + m->weight(i).nbytes() + kTensorTailPadding <= end);
      CHECK(reinterpret_cast<uintptr_t>(p) % kSegmentAlignment == 0);
    }
    w = m->weight(1);
  }
  // The Model is gone; the mapping lives on in the weight (asan checks the read).
  check_equal(w, tensor<float>({{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}}));
  // Layout: segment offsets are multiples of 64, after the flatbuffer, in order.
  const auto bytes = serialize(make_def());
  const fb::Model* root = fb::GetSizePrefixedModel(bytes.data());
  uint64_t prev_end = flatbuffers::ReadScalar<uint32_t>(bytes.data()) + 4;
  for (const fb::Segment* s : *root->segments()) {
    CHECK(s->offset() % 64 == 0);
    CHECK(s->offset() >= prev_end);
    prev_end = s->offset() + s->size();
  }
  CHECK(bytes.size() == prev_end + kTensorTailPadding);
}

TEST_CASE("model: 64-bit segment offsets") {
  // A crafted header pointing beyond 4 GiB is refused with exact 64-bit numbers.
  auto bytes = craft({{uint64_t{5} << 30, 16}}, 0, 0, 16, 1024);
  CHECK(load_error(bytes) == "segment 0 (offset 5368709120, size 16) ends past the end of the file (1024 bytes, "
                             "of which the last 64 are padding)");
  // offset + size overflows uint64.
  bytes = craft({{0xFFFFFFFFFFFFFFC0ull, 0x80}}, 0, 0, 16, 1024);
  CHECK(load_error(bytes) == "segment 0 (offset 18446744073709551552, size 128) ends past the end of the file "
                             "(1024 bytes, of which the last 64 are padding)");
  // data offset + size overflows inside a segment.
  bytes = craft({{512, 64}}, 0, 0xFFFFFFFFFFFFFFC0ull, 16, 1024);
  CHECK(load_error(bytes) == "tensor 0 'w': data (offset 18446744073709551552, size 16) exceeds segment 0 (64 bytes)");

  // A real file beyond 4 GiB, sparse on disk: the weight sits at 4.5 GiB.
  const std::string path = tmp_path("big.ember");
  const uint64_t offset = (uint64_t{9} << 29);
  bytes = craft({{offset, 16}}, 0, 0, 16, 0);
  {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    const float values[4] = {1.f, 2.f, 3.f, 4.f};
    const bool ok = ::pwrite(fd, values, 16, static_cast<off_t>(offset)) == 16 &&
                    ::ftruncate(fd, static_cast<off_t>(offset + 16 + kTensorTailPadding)) == 0;
    ::close(fd);
    if (!ok) {
      MESSAGE("no room for a sparse 4.5 GiB file here; skipped the real-file part");
      ::unlink(path.c_str());
      return;
    }
  }
  std::string error;
  auto m = Model::load(path, Verification::Full, &error);
  REQUIRE_MESSAGE(m.ok(), error);
  CHECK(m->size() == offset + 16 + kTensorTailPadding);
  check_equal(m->weight(0), tensor<float>({1.f, 2.f, 3.f, 4.f}));
  CHECK(static_cast<const std::byte*>(m->weight(0).data_ptr()) == m->data() + offset);
  ::unlink(path.c_str());
}

TEST_CASE("model: file errors") {
  std::string error;
  auto missing = Model::load("/nonexistent/dir/m.ember", Verification::Full, &error);
  CHECK(missing.status() == Status::IoError);
  CHECK(error == "cannot open '/nonexistent/dir/m.ember': No such file or directory");

  const std::string empty = tmp_path("empty.ember");
  write_file(empty, "", 0);
  CHECK(Model::load(empty, Verification::Full, &error).status() == Status::InvalidModel);
  CHECK(error == empty + ": file is empty");

  const std::string dir = tmp_path("");
  CHECK(Model::load(dir, Verification::Full, &error).status() == Status::IoError);
  CHECK(error == "cannot read '" + dir + "': not a regular file");

  // Writing into a missing directory fails cleanly; a bad def leaves an existing file alone.
  CHECK(write_model(make_def(), "/nonexistent/dir/m.ember", &error) == Status::IoError);
  CHECK(error == "cannot create '/nonexistent/dir/m.ember.tmp." + std::to_string(::getpid()) +
                     "': No such file or directory");
  const std::string path = tmp_path("keep.ember");
  write_file(path, "old", 3);
  ModelDef bad = make_def();
  bad.ops[0].inputs[1] = 99;
  CHECK(write_model(bad, path, &error) == Status::InvalidModel);
  std::ifstream f(path, std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(content == "old");
}

TEST_CASE("model: truncated files, random bytes, wrong identifier, version") {
  const auto good = serialize(make_def());
  const uint32_t fb_size = flatbuffers::ReadScalar<uint32_t>(good.data());
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<std::byte> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    const std::string e = load_error(cut);
    if (n == 0) {
      CHECK(e == "file is empty");
    } else if (n < 12) {
      CHECK(e == "file is too small to be an ember model (" + std::to_string(n) + " bytes)");
    } else if (n < fb_size + 4u) {
      CHECK(e == "flatbuffer of " + std::to_string(fb_size) + " bytes does not fit in the file (" +
                     std::to_string(n) + " bytes): truncated file?");
    } else {
      CHECK(e.find("ends past the end of the file (" + std::to_string(n) + " bytes") != std::string::npos);
    }
  }
  std::mt19937 rng(42);
  std::vector<std::byte> noise(4096);
  for (auto& b : noise) b = static_cast<std::byte>(rng());
  CHECK(load_error(noise).rfind("not an ember model: file identifier is '", 0) == 0);

  auto wrong = good;
  std::memcpy(wrong.data() + 8, "ONNX", 4);
  CHECK(load_error(wrong) == "not an ember model: file identifier is 'ONNX', expected 'EMBR'");
  std::memcpy(wrong.data() + 8, "\x01\x02MB", 4);
  CHECK(load_error(wrong) == "not an ember model: file identifier is '\\x01\\x02MB', expected 'EMBR'");

  // A corrupt size prefix (smaller than the real flatbuffer).
  auto prefix = good;
  const uint32_t small = 16;
  std::memcpy(prefix.data(), &small, 4);
  CHECK(load_error(prefix) == "flatbuffers verification failed: corrupt or truncated file");

  auto version = good;
  const fb::Model* root = fb::GetSizePrefixedModel(version.data());
  auto* field = const_cast<uint8_t*>(reinterpret_cast<const flatbuffers::Table*>(root)->GetAddressOf(fb::Model::VT_VERSION));
  REQUIRE(field != nullptr);
  const uint32_t v7 = 7;
  std::memcpy(field, &v7, 4);
  CHECK(load_error(version, Status::NotSupported) == "unsupported format version 7 (this build reads versions 1 to 1)");
  CHECK(load_error(craft({}, 0, 0, 16, 1024, 0), Status::NotSupported) ==
        "unsupported format version 0 (this build reads versions 1 to 1)");
}

TEST_CASE("model: semantic errors, each with its message (writer and loader agree)") {
  ModelDef d = make_def();
  d.ops[0].inputs[1] = 99;
  CHECK(def_error(d) == "operator 0 'mm' (matmul): input 1: tensor index 99 out of range (14 tensors)");
  d = make_def();
  d.ops[3].outputs[0] = -7;
  CHECK(def_error(d) == "operator 3 'pad' (pad): output 0: tensor index -7 out of range (14 tensors)");
  d = make_def();
  d.inputs = {14};
  CHECK(def_error(d) == "graph input 0: tensor index 14 out of range (14 tensors)");
  d = make_def();
  d.outputs = {4, 99};
  CHECK(def_error(d) == "graph output 1: tensor index 99 out of range (14 tensors)");
  d = make_def();
  d.outputs = {0, 5, 12, 2};
  d.ops.pop_back();
  CHECK(def_error(d) == "graph output 1: tensor 5 'y' is never computed");

  d = make_def();
  d.tensors[1].data.resize(40);
  CHECK(def_error(d) == "tensor 1 'w': data is 40 bytes, shape [3, 4] x float32 needs 48");
  d = make_def();
  d.tensors[11].data.resize(8);
  CHECK(def_error(d) == "tensor 11 'sp': data is 8 bytes, nnz 3 x float32 needs 12");
  d = make_def();
  d.tensors[1].shape = {int64_t{1} << 40, int64_t{1} << 40};
  CHECK(def_error(d) == "tensor 1 'w': shape [1099511627776, 1099511627776] has too many elements");
  // Found by the fuzzer: no elements (a 0 dim), but contiguous strides would overflow int64.
  d = make_def();
  d.tensors[1].shape = {int64_t{1} << 33, 0, (int64_t{1} << 62) - 2};
  d.tensors[1].data.clear();
  CHECK(def_error(d) == "tensor 1 'w': shape [8589934592, 0, 4611686018427387902] has too many elements");
  d = make_def();
  d.tensors[1].shape = {3, -4};
  CHECK(def_error(d) == "tensor 1 'w': negative dimension in shape [3, -4]");
  d = make_def();
  d.tensors[1].shape = {-1, 4};
  CHECK(def_error(d) == "tensor 1 'w': a weight cannot have symbolic dimensions");
  d = make_def();
  d.tensors[2].shape = std::vector<int64_t>(9, 1);
  CHECK(def_error(d) == "tensor 2 'h': rank 9 exceeds the maximum 8");
  d = make_def();
  d.tensors[0].dim_names = {"batch"};
  CHECK(def_error(d) == "tensor 0 'x': 1 dim_names for rank 2");
  d = make_def();
  d.tensors[3].dtype = static_cast<DType>(42);
  CHECK(def_error(d) == "tensor 3 'g': unknown dtype id 42");
  d = make_def();
  d.tensors[4].name = "w";
  CHECK(def_error(d) == "tensor 4: duplicate name 'w'");

  // Quantization parameters.
  d = make_def();
  d.tensors[6].quant->scales = {0.5f, 0.25f, 1.f};
  d.tensors[6].quant->zero_points.clear();
  CHECK(def_error(d) == "tensor 6 'q': 3 scales for 2 channels on axis 0");
  d = make_def();
  d.tensors[6].quant->axis = 2;
  CHECK(def_error(d) == "tensor 6 'q': quantization axis 2 out of range for rank 2");
  d = make_def();
  d.tensors[6].quant->zero_points = {1};
  CHECK(def_error(d) == "tensor 6 'q': 1 zero points for 2 scales");

  // Sparse COO.
  d = make_def();
  d.tensors[12].data = bytes_of(std::vector<int64_t>{0, 1, 4, 4, 0, 2});
  CHECK(def_error(d) == "tensor 11 'sp': COO index 4 of value 2 out of bounds for dimension 0 of size 4");
  d = make_def();
  d.tensors[12].data = bytes_of(std::vector<int64_t>{0, 1, 3, 4, -1, 2});
  CHECK(def_error(d) == "tensor 11 'sp': COO index -1 of value 1 out of bounds for dimension 1 of size 5");
  d = make_def();
  d.tensors[11].sparse->indices = 1;
  CHECK(def_error(d) == "tensor 11 'sp': COO indices tensor 1 'w' must be a dense int16, int32 or int64 weight of shape [2, 3]");
  d = make_def();
  d.tensors[11].sparse->nnz = 21;
  d.tensors[11].data.resize(84);
  CHECK(def_error(d) == "tensor 11 'sp': nnz 21 out of range for shape [4, 5]");

  // Graph order and cycles.
  d = make_def();
  std::swap(d.ops[0], d.ops[1]);
  CHECK(def_error(d) == "operator 0 'gelu' (gelu): input 0 (tensor 2 'h') is not a graph input, a weight or an "
                        "earlier operator's output (cycle or wrong order)");
  d = make_def();
  d.ops[0].inputs[0] = 5;  // mm reads y, which pad computes from mm's output: a cycle
  CHECK(def_error(d) == "operator 0 'mm' (matmul): input 0 (tensor 5 'y') is not a graph input, a weight or an "
                        "earlier operator's output (cycle or wrong order)");
  d = make_def();
  d.ops[1].outputs[0] = 2;
  CHECK(def_error(d) == "operator 1 'gelu' (gelu): output 0 (tensor 2 'h') is already defined");
  d = make_def();
  d.ops[0].outputs[0] = 1;
  CHECK(def_error(d) == "operator 0 'mm' (matmul): output 0 (tensor 1 'w') is already defined");

  // Op ids, arity, attributes.
  d = make_def();
  d.ops[0].op = static_cast<OpKind>(999);
  CHECK(def_error(d) == "operator 0 'mm': unknown op id 999");
  d = make_def();
  d.ops[0].inputs.push_back(1);
  CHECK(def_error(d) == "operator 0 'mm' (matmul): has 3 inputs and 1 outputs, expected 2 and 1");
  // The reductions' run-time axes input is optional (files written before it have one input).
  d = make_def();
  d.ops[0] = make_op(OpKind::Sum, {0, 1, 1}, {2}, "s", ReduceParams{});
  CHECK(def_error(d) == "operator 0 's' (sum): has 3 inputs and 1 outputs, expected 1 to 2 and 1");
  d.ops[0].inputs = {};
  CHECK(def_error(d) == "operator 0 's' (sum): has 0 inputs and 1 outputs, expected 1 to 2 and 1");
  d = make_def();
  d.ops[0].params = GeluParams{};
  CHECK(def_error(d) == "operator 0 'mm' (matmul): attributes are GeluAttrs, expected NONE");
  d = make_def();
  d.ops[2].params = Pool2dParams{};
  CHECK(def_error(d) == "operator 2 'conv' (conv2d): attributes are Pool2dAttrs, expected Conv2dAttrs");
  d = make_def();
  d.ops[1].params = NoParams{};
  CHECK(def_error(d) == "operator 1 'gelu' (gelu): attributes are NONE, expected GeluAttrs");

  // The run-time ops (ops.def: the executor makes them at create) are never stored.
  d = make_def();
  d.ops[0].op = OpKind::QLinear;
  d.ops[0].inputs.push_back(-1);
  CHECK(def_error(d) == "operator 0 'mm' (qlinear): op qlinear cannot appear in a model file");
  d = make_def();
  d.ops[0].op = OpKind::QConv2d;
  d.ops[0].inputs.push_back(-1);
  CHECK(def_error(d) == "operator 0 'mm' (qconv2d): op qconv2d cannot appear in a model file");
  d = make_def();
  d.ops[0].op = OpKind::SparseLinear;
  d.ops[0].inputs.push_back(-1);
  CHECK(def_error(d) == "operator 0 'mm' (sparse_linear): op sparse_linear cannot appear in a model file");
}

TEST_CASE("model: crafted segment errors") {
  // A valid crafted file first, so the failures below are the segment's.
  std::string error;
  auto ok = craft({{512, 16}}, 0, 0, 16, 1024);
  CHECK_MESSAGE(verify_model(ok.data(), ok.size(), Verification::Full, &error) == Status::Ok, error);
  CHECK(load_error(craft({{512, 16}}, 1, 0, 16, 1024)) == "tensor 0 'w': segment 1 out of range (1 segments)");
  CHECK(load_error(craft({{520, 16}}, 0, 0, 16, 1024)) == "segment 0 (offset 520, size 16) is not 64-byte aligned");
  const auto at_zero = craft({{0, 16}}, 0, 0, 16, 1024);
  CHECK(load_error(at_zero) == "segment 0 (offset 0, size 16) overlaps the flatbuffer (" +
                                   std::to_string(flatbuffers::ReadScalar<uint32_t>(at_zero.data()) + 4) +
                                   " bytes)");
  CHECK(load_error(craft({{512, 128}, {576, 16}}, 0, 0, 16, 1024)) == "segments 0 and 1 overlap");
  CHECK(load_error(craft({{576, 16}, {512, 128}}, 0, 0, 16, 1024)) == "segments 0 and 1 overlap");
  CHECK(load_error(craft({{512, 16}}, 0, 64, 16, 1024)) ==
        "tensor 0 'w': data (offset 64, size 16) exceeds segment 0 (16 bytes)");
  CHECK(load_error(craft({{512, 64}}, 0, 8, 16, 1024)) == "tensor 0 'w': data offset 8 is not 64-byte aligned");
  // No tail padding after the last segment.
  CHECK(load_error(craft({{960, 16}}, 0, 0, 16, 1024)) ==
        "segment 0 (offset 960, size 16) ends past the end of the file (1024 bytes, of which the last 64 are padding)");
  // Minimal skips graph-level checks but still refuses what would be unsafe.
  auto overlap = craft({{512, 128}, {576, 16}}, 0, 0, 16, 1024);
  CHECK(verify_model(overlap.data(), overlap.size(), Verification::Minimal) == Status::Ok);
  auto outside = craft({{512, 16}}, 0, 64, 16, 1024);
  CHECK(verify_model(outside.data(), outside.size(), Verification::Minimal) == Status::InvalidModel);
}

TEST_CASE("model: byte-flip fuzz over a valid file never crashes") {
  const auto good = serialize(make_def());
  std::mt19937 rng(1234);
  int accepted = 0;
  for (int iter = 0; iter < 6000; ++iter) {
    auto bytes = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      // Mostly the flatbuffer, where the structure is.
      const size_t limit = (rng() % 4 != 0) ? std::min<size_t>(bytes.size(), 2048) : bytes.size();
      const size_t pos = rng() % limit;
      bytes[pos] = (rng() % 2) ? static_cast<std::byte>(rng()) : (bytes[pos] ^ static_cast<std::byte>(1u << (rng() % 8)));
    }
    if (rng() % 16 == 0) bytes.resize(rng() % bytes.size());
    const Verification v = (iter % 3 == 0) ? Verification::Minimal : Verification::Full;
    std::string error;
    auto m = Model::load_from_bytes(bytes.data(), bytes.size(), v, &error);
    if (!m.ok()) {
      CHECK(!error.empty());
      continue;
    }
    ++accepted;
    // Touch everything a consumer would.
    for (int i = 0; i < m->num_ops(); ++i) (void)m->op_params(i);
    for (int i = 0; i < m->num_tensors(); ++i) {
      const Tensor& w = m->weight(i);
      if (w.defined() && w.nbytes() > 0) {
        volatile std::byte first = *static_cast<const std::byte*>(w.data_ptr());
        volatile std::byte last = static_cast<const std::byte*>(w.data_ptr())[w.nbytes() - 1];
        (void)first;
        (void)last;
      }
    }
    (void)m->metadata();
  }
  MESSAGE(accepted << " of 6000 mutations still verified");
  CHECK(accepted > 0);
}

TEST_CASE("model: graph-op params, fused activations, keepdim and variadic counts survive the trip") {
  ModelDef def;
  def.add_tensor(activation("x", {2, 3, 4}));  // 0
  def.inputs = {0};
  for (int k = 1; k <= 9; ++k) def.add_tensor(activation("t" + std::to_string(k), {2, 3, 4}));  // 1..9
  DimsParams perm;
  perm.rank = 3;
  perm.dims[0] = 2, perm.dims[1] = 0, perm.dims[2] = -2;
  DimsParams none;  // Squeeze with no axes: rank 0
  LinearParams lin;
  lin.activation.kind = ActivationKind::Clamp;
  lin.activation.min = -1.5;  // max stays +inf
  Conv2dParams conv;
  conv.activation.kind = ActivationKind::HardSwish;
  ReduceParams reduce;
  reduce.dims = 0b110;
  reduce.keepdim = false;
  def.ops.push_back(make_op(OpKind::Permute, {0}, {1}, "perm", perm));
  def.ops.push_back(make_op(OpKind::Squeeze, {1}, {2}, "squeeze", none));
  def.ops.push_back(make_op(OpKind::Concat, {0, 1, 2}, {3}, "cat3", AxisParams{-1}));
  def.ops.push_back(make_op(OpKind::Concat, {3}, {4}, "cat1", AxisParams{0}));
  def.ops.push_back(make_op(OpKind::Split, {4, -1}, {5, 6, 7}, "split3", AxisParams{int64_t{1} << 40}));
  def.ops.push_back(make_op(OpKind::Linear, {5, 6, -1}, {8}, "linear", lin));
  def.ops.push_back(make_op(OpKind::Conv2d, {8, 7, -1}, {9}, "conv", conv));
  const int32_t mean = def.add_tensor(activation("mean", {2}));
  def.ops.push_back(make_op(OpKind::Mean, {9}, {mean}, "mean", reduce));
  def.outputs = {mean};
  const auto bytes = serialize(def);
  std::string error;
  auto m = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Full, &error);
  REQUIRE_MESSAGE(m.ok(), error);
  const auto p0 = std::get<DimsParams>(m->op_params(0).get());
  CHECK(p0.rank == 3);
  CHECK(std::vector<int64_t>(p0.dims, p0.dims + 3) == std::vector<int64_t>{2, 0, -2});
  CHECK(std::get<DimsParams>(m->op_params(1).get()).rank == 0);
  CHECK(m->op(2).inputs()->size() == 3);
  CHECK(std::get<AxisParams>(m->op_params(2).get()).axis == -1);
  CHECK(m->op(3).inputs()->size() == 1);
  CHECK(m->op(4).outputs()->size() == 3);
  CHECK(m->op(4).inputs()->Get(1) == -1);
  CHECK(std::get<AxisParams>(m->op_params(4).get()).axis == int64_t{1} << 40);
  const auto l = std::get<LinearParams>(m->op_params(5).get());
  CHECK(l.activation.kind == ActivationKind::Clamp);
  CHECK(l.activation.min == -1.5);
  CHECK(l.activation.max == INFINITY);
  const auto c = std::get<Conv2dParams>(m->op_params(6).get());
  CHECK(c.activation.kind == ActivationKind::HardSwish);
  CHECK(c.stride[0] == 1);
  const auto r = std::get<ReduceParams>(m->op_params(7).get());
  CHECK(r.dims == 0b110u);
  CHECK(!r.keepdim);
  // No activation is written as an absent table and read back as None.
  ModelDef plain = def;
  plain.ops[5].params = LinearParams{};
  const auto plain_bytes = serialize(plain);
  auto pm = Model::load_from_bytes(plain_bytes.data(), plain_bytes.size(), Verification::Full, &error);
  REQUIRE_MESSAGE(pm.ok(), error);
  CHECK(pm->op(5).attrs_as_LinearAttrs()->activation() == nullptr);
  CHECK(std::get<LinearParams>(pm->op_params(5).get()).activation.kind == ActivationKind::None);

  // A variadic op needs at least one input (and Split at least one output).
  ModelDef bad = def;
  bad.ops[3].inputs.clear();
  CHECK(def_error(bad) == "operator 3 'cat1' (concat): has 0 inputs and 1 outputs, expected at least 1 and 1");
  bad = def;
  bad.ops[4].outputs.clear();
  CHECK(def_error(bad) == "operator 4 'split3' (split): has 2 inputs and 0 outputs, expected 2 and at least 1");
  bad = def;
  bad.ops[4].inputs.push_back(-1);
  CHECK(def_error(bad) == "operator 4 'split3' (split): has 3 inputs and 3 outputs, expected 2 and at least 1");
  // Invalid fused activation bounds and too many dims are refused.
  bad = def;
  std::get<LinearParams>(bad.ops[5].params).activation.max = -2.0;
  CHECK(def_error(bad) == "operator 5 'linear' (linear): LinearAttrs: invalid activation");
  bad = def;  // a kind past the last one (HardSwish) this build knows
  std::get<Conv2dParams>(bad.ops[6].params).activation.kind = static_cast<ActivationKind>(4);
  CHECK(def_error(bad) == "operator 6 'conv' (conv2d): Conv2dAttrs: invalid activation");
}

namespace {

enum class Shade : uint8_t { Dark, Light };

// A params struct stored field by field (op_params.h: has_fields).
struct FieldsParams {
  int64_t size = 7;
  bool flag = false;
  Shade shade = Shade::Dark;
  double scale = 1.0;
  float bias = 0.5f;
  int64_t pads[3] = {1, 2, 3};
  uint8_t small = 4;
  int32_t last = -1;
  static constexpr auto fields() {
    return std::make_tuple(&FieldsParams::size, &FieldsParams::flag, &FieldsParams::shade, &FieldsParams::scale,
                           &FieldsParams::bias, &FieldsParams::pads, &FieldsParams::small, &FieldsParams::last);
  }
};
static_assert(has_fields<FieldsParams>::value && !has_fields<AxisParams>::value);

// A FieldAttrs table with these values, as a file would hold it.
std::vector<uint8_t> field_attrs(const std::vector<int64_t>& ints, const std::vector<double>& floats) {
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(fb::CreateFieldAttrs(fbb, fbb.CreateVector(ints), fbb.CreateVector(floats)));
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

Status read_fields(const std::vector<uint8_t>& bytes, FieldsParams* p, std::string* error) {
  return fields_to_params(*flatbuffers::GetRoot<fb::FieldAttrs>(bytes.data()), p, error);
}

}  // namespace

TEST_CASE("model: params stored field by field (FieldAttrs): round trip, older files, newer files, bad values") {
  FieldsParams in;
  in.size = int64_t{1} << 40;
  in.flag = true;
  in.shade = Shade::Light;
  in.scale = -2.25;
  in.bias = 3.5f;
  in.pads[0] = -5, in.pads[1] = 0, in.pads[2] = 9;
  in.small = 255;
  in.last = -123456;
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(params_to_fields(fbb, in));
  const auto* attrs = flatbuffers::GetRoot<fb::FieldAttrs>(fbb.GetBufferPointer());
  // ints in field order (arrays element by element), floats beside them.
  CHECK(std::vector<int64_t>(attrs->ints()->begin(), attrs->ints()->end()) ==
        std::vector<int64_t>{int64_t{1} << 40, 1, 1, -5, 0, 9, 255, -123456});
  CHECK(std::vector<double>(attrs->floats()->begin(), attrs->floats()->end()) == std::vector<double>{-2.25, 3.5});
  FieldsParams out;
  std::string error;
  REQUIRE(fields_to_params(*attrs, &out, &error) == Status::Ok);
  CHECK(out.size == in.size);
  CHECK(out.flag);
  CHECK(out.shade == Shade::Light);
  CHECK(out.scale == -2.25);
  CHECK(out.bias == 3.5f);
  CHECK(std::vector<int64_t>(out.pads, out.pads + 3) == std::vector<int64_t>{-5, 0, 9});
  CHECK(out.small == 255);
  CHECK(out.last == -123456);

  // A file written before the last fields were appended: they keep their defaults.
  FieldsParams old;
  REQUIRE(read_fields(field_attrs({3, 0}, {}), &old, &error) == Status::Ok);
  CHECK(old.size == 3);
  CHECK(!old.flag);
  CHECK(old.shade == Shade::Dark);
  CHECK(old.scale == 1.0);
  CHECK(old.pads[2] == 3);
  CHECK(old.last == -1);

  // More values than the struct has fields: refused.
  CHECK(read_fields(field_attrs({1, 0, 0, 0, 0, 0, 0, 0, 42}, {}), &old, &error) == Status::InvalidModel);
  CHECK(error ==
        "FieldAttrs: 9 integer and 0 floating-point values, the op's parameters have 8 and 0 (a file from a newer ember?)");
  CHECK(read_fields(field_attrs({}, {1.0, 2.0, 3.0}), &old, &error) == Status::InvalidModel);
  CHECK(error ==
        "FieldAttrs: 0 integer and 3 floating-point values, the op's parameters have 0 and 2 (a file from a newer ember?)");

  // Values a field cannot hold: a bool of 2, an enum byte of 256, uint8 -1, int32 2^31.
  for (const std::vector<int64_t>& bad : std::vector<std::vector<int64_t>>{
           {0, 2}, {0, 0, 256}, {0, 0, 0, 0, 0, 0, -1}, {0, 0, 0, 0, 0, 0, 0, int64_t{1} << 31}}) {
    CAPTURE(bad.size());
    CHECK(read_fields(field_attrs(bad, {}), &old, &error) == Status::InvalidModel);
    CHECK(error == "FieldAttrs: a value out of range for its field");
  }
}
