// Sparse COO in the `.ember` format: int16/int32/int64 indices round trip,
// and every loader check on COO data with its exact message (writer and
// loader agree).
#include <cstring>

#include "quant/coo.h"
#include "runtime/model/loader.h"
#include "runtime/model/writer.h"
#include "tests/harness/testing.h"

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

// 0 x [2, 5], 1 w [3, 5] sparse f32 nnz 4, 2 its indices (int16 [2, 4]), 3 y.
// w = [[0, 1.5, 0, 0, -2], [0, 0, 0, 0, 0], [3, 0, 0, 0.5, 0]].
ModelDef make_def(DType index_dtype = DType::Int16) {
  ModelDef d;
  TensorDef x;
  x.name = "x";
  x.shape = {2, 5};
  d.add_tensor(x);
  TensorDef w = weight("w", {3, 5}, DType::Float32, bytes_of(std::vector<float>{1.5f, -2.f, 3.f, 0.5f}));
  w.sparse = SparseCooDef{2, 4};
  d.add_tensor(w);
  const std::vector<int64_t> coords{0, 0, 2, 2, 1, 4, 0, 3};
  std::vector<std::byte> idx;
  if (index_dtype == DType::Int16) idx = bytes_of(std::vector<int16_t>(coords.begin(), coords.end()));
  if (index_dtype == DType::Int32) idx = bytes_of(std::vector<int32_t>(coords.begin(), coords.end()));
  if (index_dtype == DType::Int64) idx = bytes_of(coords);
  d.add_tensor(weight("w.indices", {2, 4}, index_dtype, idx));
  TensorDef y;
  y.name = "y";
  y.shape = {2, 3};
  d.add_tensor(y);
  d.inputs = {0};
  d.outputs = {3};
  OpDef op;
  op.op = OpKind::Linear;
  op.inputs = {0, 1, -1};
  op.outputs = {3};
  op.name = "fc";
  op.params = LinearParams{};
  d.ops.push_back(op);
  return d;
}

std::vector<std::byte> serialize_unverified(const ModelDef& def) {
  std::vector<std::byte> out;
  REQUIRE(detail::serialize_model_unverified(def, &out) == Status::Ok);
  return out;
}

std::string def_error(const ModelDef& def) {
  std::vector<std::byte> out;
  std::string writer_error, loader_error;
  CHECK(serialize_model(def, &out, &writer_error) == Status::InvalidModel);
  const auto bytes = serialize_unverified(def);
  auto m = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Full, &loader_error);
  CHECK(m.status() == Status::InvalidModel);
  CHECK(writer_error == loader_error);
  return loader_error;
}

void set_coords16(ModelDef& d, std::vector<int16_t> c) { d.tensors[2].data = bytes_of(c); }

}  // namespace

TEST_CASE("sparse format: int16, int32 and int64 indices load and densify") {
  const Tensor dense = tensor<float>({{0, 1.5f, 0, 0, -2}, {0, 0, 0, 0, 0}, {3, 0, 0, 0.5f, 0}});
  for (DType t : {DType::Int16, DType::Int32, DType::Int64}) {
    CAPTURE(dtype_name(t));
    std::vector<std::byte> bytes;
    std::string error;
    REQUIRE_MESSAGE(serialize_model(make_def(t), &bytes, &error) == Status::Ok, error);
    auto m = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Full, &error);
    REQUIRE_MESSAGE(m.ok(), error);
    CHECK(m->tensor_dtype(2) == t);
    CHECK(m->weight(1).sizes() == Shape{4});
    check_equal(sparse::coo_to_dense(m->weight(2), m->weight(1), m->tensor_shape(1)), dense);
  }
  // The converter's choice: int16 up to dims of 32768, then int32.
  CHECK(sparse::coo_index_dtype({3072, 768}) == DType::Int16);
  CHECK(sparse::coo_index_dtype({32768, 1}) == DType::Int16);
  CHECK(sparse::coo_index_dtype({32769, 1}) == DType::Int32);
  CHECK(sparse::coo_index_dtype({int64_t{1} << 31}) == DType::Int32);
  CHECK(sparse::coo_index_dtype({(int64_t{1} << 31) + 1}) == DType::Int64);
}

TEST_CASE("sparse format: each bad COO tensor is refused with its message") {
  ModelDef d = make_def();
  set_coords16(d, {0, 0, 2, 3, 1, 4, 0, 3});
  CHECK(def_error(d) == "tensor 1 'w': COO index 3 of value 3 out of bounds for dimension 0 of size 3");
  d = make_def();
  set_coords16(d, {0, 0, 2, 2, 1, 5, 0, 3});
  CHECK(def_error(d) == "tensor 1 'w': COO index 5 of value 1 out of bounds for dimension 1 of size 5");
  d = make_def();
  set_coords16(d, {0, 0, 2, 2, -1, 4, 0, 3});
  CHECK(def_error(d) == "tensor 1 'w': COO index -1 of value 0 out of bounds for dimension 1 of size 5");
  // Unsorted: (0, 4) before (0, 1).
  d = make_def();
  set_coords16(d, {0, 0, 2, 2, 4, 1, 0, 3});
  CHECK(def_error(d) ==
        "tensor 1 'w': COO coordinates are not sorted in row-major order (value 1 comes before value 0)");
  // Unsorted by row.
  d = make_def();
  set_coords16(d, {0, 2, 0, 2, 1, 0, 4, 3});
  CHECK(def_error(d) ==
        "tensor 1 'w': COO coordinates are not sorted in row-major order (value 2 comes before value 1)");
  // A duplicate coordinate.
  d = make_def();
  set_coords16(d, {0, 0, 2, 2, 1, 1, 0, 3});
  CHECK(def_error(d) == "tensor 1 'w': COO values 0 and 1 have the same coordinates");
  // nnz inconsistent with the data, the indices' shape, the dense shape.
  d = make_def();
  d.tensors[1].sparse->nnz = 3;
  CHECK(def_error(d) == "tensor 1 'w': data is 16 bytes, nnz 3 x float32 needs 12");
  d = make_def();
  d.tensors[1].sparse->nnz = 3;
  d.tensors[1].data.resize(12);
  CHECK(def_error(d) ==
        "tensor 1 'w': COO indices tensor 2 'w.indices' must be a dense int16, int32 or int64 weight of shape [2, 3]");
  d = make_def();
  d.tensors[1].sparse->nnz = 16;
  d.tensors[1].data.resize(64);
  CHECK(def_error(d) == "tensor 1 'w': nnz 16 out of range for shape [3, 5]");
  // Index dtype and tensor.
  d = make_def();
  d.tensors[2].dtype = DType::Float16;
  CHECK(def_error(d) ==
        "tensor 1 'w': COO indices tensor 2 'w.indices' must be a dense int16, int32 or int64 weight of shape [2, 4]");
  d = make_def();
  d.tensors[2].dtype = DType::UInt8;
  d.tensors[2].data.resize(8);
  CHECK(def_error(d) ==
        "tensor 1 'w': COO indices tensor 2 'w.indices' must be a dense int16, int32 or int64 weight of shape [2, 4]");
  d = make_def();
  d.tensors[1].sparse->indices = 7;
  CHECK(def_error(d) == "tensor 1 'w': COO indices tensor 7 out of range");
  d = make_def();
  d.tensors[1].sparse->indices = 1;
  CHECK(def_error(d) == "tensor 1 'w': COO indices tensor 1 out of range");
  d = make_def();
  d.tensors[1].shape = {3, 40000};
  CHECK(def_error(d) == "tensor 1 'w': int16 COO indices cannot address dimension 1 of size 40000");
  // Value dtypes: float32, float16, int8 with quant params.
  d = make_def();
  d.tensors[1].dtype = DType::Float64;
  d.tensors[1].data.resize(32);
  CHECK(def_error(d) == "tensor 1 'w': sparse values must be float32, float16 or int8 (quantized), got float64");
  d = make_def();
  d.tensors[1].dtype = DType::Int8;
  d.tensors[1].data.resize(4);
  CHECK(def_error(d) == "tensor 1 'w': sparse int8 values need quantization parameters");
  d = make_def();
  d.tensors[1].dtype = DType::Int32;
  CHECK(def_error(d) == "tensor 1 'w': sparse values must be float32, float16 or int8 (quantized), got int32");
  // Sparse activations.
  d = make_def();
  d.tensors[3].sparse = SparseCooDef{2, 4};
  CHECK(def_error(d) == "tensor 3 'y': sparse tensor without data");
}

TEST_CASE("sparse format: float16 and quantized int8 values are accepted") {
  ModelDef d = make_def();
  d.tensors[1].dtype = DType::Float16;
  d.tensors[1].data = bytes_of(std::vector<Half>{Half(1.5f), Half(-2.f), Half(3.f), Half(0.5f)});
  std::vector<std::byte> bytes;
  std::string error;
  CHECK_MESSAGE(serialize_model(d, &bytes, &error) == Status::Ok, error);
  d = make_def();
  d.tensors[1].dtype = DType::Int8;
  d.tensors[1].data = bytes_of(std::vector<int8_t>{3, -4, 6, 1});
  d.tensors[1].quant = QuantDef{{0.5f, 1.f, 0.5f}, {}, 0};
  REQUIRE_MESSAGE(serialize_model(d, &bytes, &error) == Status::Ok, error);
  auto m = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Full, &error);
  REQUIRE_MESSAGE(m.ok(), error);
  // Symmetric per-channel int8 values stay int8 at pack, with a scale per row.
  const sparse::CsrMatrix w = sparse::pack_csr(m->weight(2), m->weight(1), 3, 5, {0.5f, 1.f, 0.5f});
  CHECK(w.int8);
  CHECK(w.qvalues == std::vector<int8_t>{3, -4, 6, 1});
  CHECK(w.values.empty());
  CHECK(w.row_scale == std::vector<float>{0.5f, 1.f, 0.5f});
  CHECK(w.row_ptr == std::vector<int64_t>{0, 2, 2, 4});
  CHECK(w.col16 == std::vector<uint16_t>{1, 4, 0, 3});
  // A per-tensor scale is repeated per row; nonzero zero points dequantize at pack.
  const sparse::CsrMatrix wt = sparse::pack_csr(m->weight(2), m->weight(1), 3, 5, {0.25f}, {0});
  CHECK(wt.int8);
  CHECK(wt.row_scale == std::vector<float>{0.25f, 0.25f, 0.25f});
  const sparse::CsrMatrix wz = sparse::pack_csr(m->weight(2), m->weight(1), 3, 5, {0.5f, 1.f, 0.5f}, {1, 0, -2});
  CHECK(!wz.int8);
  CHECK(wz.qvalues.empty());
  CHECK(wz.values == std::vector<float>{1.f, -2.5f, 4.f, 1.5f});
  // A per-channel quant axis that does not match is the quant check's error.
  d.tensors[1].quant = QuantDef{{0.5f, 1.f}, {}, 0};
  CHECK(def_error(d) == "tensor 1 'w': 2 scales for 3 channels on axis 0");
}
