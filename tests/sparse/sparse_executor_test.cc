// The executor on sparse COO weights: a Linear with a sparse weight runs the
// packed SpMM kernel (fp32, fp16 and per-channel int8 values), any other op
// reading a sparse weight gets it densified once at create; results match the
// dense model.
#include <cstring>
#include <random>

#include "quant/coo.h"
#include "runtime/model/executor.h"
#include "runtime/model/writer.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;

namespace {

TensorDef act(std::string name, std::vector<int64_t> shape) {
  TensorDef t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  return t;
}

TensorDef from_tensor(std::string name, const Tensor& x) {
  TensorDef t;
  t.name = std::move(name);
  t.shape = x.sizes();
  t.dtype = x.dtype();
  t.tensor = x.contiguous();
  t.has_data = true;
  return t;
}

OpDef op(OpKind kind, std::vector<int32_t> in, std::vector<int32_t> out, std::string name, OpParams p = NoParams{}) {
  OpDef o;
  o.op = kind;
  o.inputs = std::move(in);
  o.outputs = std::move(out);
  o.name = std::move(name);
  o.params = p;
  return o;
}

// Adds `w` as a COO weight (values, then its indices); returns the values' index.
int32_t add_sparse(ModelDef& d, const std::string& name, const Tensor& w, DType index_dtype) {
  sparse::CooParts coo = sparse::dense_to_coo(w, index_dtype);
  TensorDef v = from_tensor(name, coo.values);
  v.shape = w.sizes();
  v.sparse = SparseCooDef{static_cast<int32_t>(d.tensors.size() + 1), coo.values.numel()};
  const int32_t vi = d.add_tensor(v);
  d.add_tensor(from_tensor(name + ".indices", coo.indices));
  return vi;
}

// x [batch, 16] -> fc1 (sparse, relu) [batch, 32] -> fc2 (sparse) [batch, 8] -> + add.weight (a sparse [8] weight
// read by Add: densified).
ModelDef mlp(const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& addw, bool sparse_weights) {
  ModelDef d;
  TensorDef x = act("x", {-1, 16});
  x.dim_names = {"batch", ""};
  d.add_tensor(x);
  const int32_t iw1 = sparse_weights ? add_sparse(d, "fc1.weight", w1, DType::Int16) : d.add_tensor(from_tensor("fc1.weight", w1));
  const int32_t ib1 = d.add_tensor(from_tensor("fc1.bias", b1));
  const int32_t iw2 = sparse_weights ? add_sparse(d, "fc2.weight", w2, DType::Int32) : d.add_tensor(from_tensor("fc2.weight", w2));
  const int32_t ia = sparse_weights ? add_sparse(d, "add.weight", addw, DType::Int64) : d.add_tensor(from_tensor("add.weight", addw));
  const int32_t h = d.add_tensor(act("h", {-1, 32}));
  const int32_t z = d.add_tensor(act("z", {-1, 8}));
  const int32_t y = d.add_tensor(act("y", {-1, 8}));
  d.inputs = {0};
  d.outputs = {y};
  LinearParams relu;
  relu.activation.kind = ActivationKind::Relu;
  d.ops.push_back(op(OpKind::Linear, {0, iw1, ib1}, {h}, "fc1", relu));
  d.ops.push_back(op(OpKind::Linear, {h, iw2, -1}, {z}, "fc2", LinearParams{}));
  d.ops.push_back(op(OpKind::Add, {z, ia}, {y}, "add"));
  return d;
}

std::shared_ptr<const Executor> executor_of(const ModelDef& d, std::string* error) {
  std::vector<std::byte> bytes;
  REQUIRE_MESSAGE(serialize_model(d, &bytes, error) == Status::Ok, *error);
  auto m = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Full, error);
  REQUIRE_MESSAGE(m.ok(), *error);
  auto ex = Executor::create(std::make_shared<const Model>(std::move(m.get())), error);
  if (!ex.ok()) return nullptr;
  return ex.get();
}

Tensor sparse_random(int64_t n, int64_t k, double zero_fraction, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n * k));
  for (float& x : v) x = (static_cast<double>(rng() % 1000) < zero_fraction * 1000) ? 0.f : u(rng);
  return tensor(v, {n, k});
}

}  // namespace

TEST_CASE("sparse executor: a sparse MLP matches the dense one, in two contexts") {
  std::mt19937 rng(3);
  const Tensor w1 = sparse_random(32, 16, 0.9, rng), w2 = sparse_random(8, 32, 0.8, rng);
  const Tensor b1 = randn({32}), addw = sparse_random(1, 8, 0.5, rng).reshape({8});
  std::string error;
  auto sparse_ex = executor_of(mlp(w1, b1, w2, addw, true), &error);
  REQUIRE_MESSAGE(sparse_ex != nullptr, error);
  auto dense_ex = executor_of(mlp(w1, b1, w2, addw, false), &error);
  REQUIRE_MESSAGE(dense_ex != nullptr, error);
  ExecutionContext a(sparse_ex), b(sparse_ex), ref(dense_ex);
  for (int64_t batch : {1, 5}) {
    const Tensor x = randn({batch, 16});
    auto ya = a.run({x}, {}, &error);
    REQUIRE_MESSAGE(ya.ok(), error);
    auto yb = b.run({x}, {}, &error);
    REQUIRE_MESSAGE(yb.ok(), error);
    auto yr = ref.run({x}, {}, &error);
    REQUIRE_MESSAGE(yr.ok(), error);
    check_close((*ya)[0], (*yr)[0], 1e-5, 1e-5);
    check_equal((*ya)[0], (*yb)[0]);
    // The planned second run serves everything from the arena.
    auto again = a.run({x}, {}, &error);
    REQUIRE_MESSAGE(again.ok(), error);
    check_equal((*again)[0], (*yb)[0]);
    CHECK(a.memory_plan().heap_fallbacks == 0);
  }
}

TEST_CASE("sparse executor: float16 and per-channel int8 sparse Linear weights") {
  ModelDef d;
  d.add_tensor(act("x", {2, 3}));
  // w = [[1, 0, -2], [0, 0, 0.5]] as int8 [[2, 0, -4], [0, 0, 2]] with scales [0.5, 0.25].
  TensorDef w;
  w.name = "w";
  w.shape = {2, 3};
  w.dtype = DType::Int8;
  w.tensor = tensor<int64_t>({2, -4, 2}).to(DType::Int8);
  w.has_data = true;
  w.quant = QuantDef{{0.5f, 0.25f}, {}, 0};
  w.sparse = SparseCooDef{2, 3};
  d.add_tensor(w);
  d.add_tensor(from_tensor("w.indices", tensor<int64_t>({{0, 0, 1}, {0, 2, 2}}).to(DType::Int16)));
  TensorDef h;  // the same matrix, fp16 values
  h.name = "h";
  h.shape = {2, 3};
  h.dtype = DType::Float16;
  h.tensor = tensor<float>({1.f, -2.f, 0.5f}).to(DType::Float16);
  h.has_data = true;
  h.sparse = SparseCooDef{4, 3};
  d.add_tensor(h);
  d.add_tensor(from_tensor("h.indices", tensor<int64_t>({{0, 0, 1}, {0, 2, 2}}).to(DType::Int16)));
  d.add_tensor(act("y", {2, 2}));
  d.add_tensor(act("z", {2, 2}));
  d.inputs = {0};
  d.outputs = {5, 6};
  d.ops.push_back(op(OpKind::Linear, {0, 1, -1}, {5}, "q", LinearParams{}));
  d.ops.push_back(op(OpKind::Linear, {0, 3, -1}, {6}, "h", LinearParams{}));
  std::string error;
  auto ex = executor_of(d, &error);
  REQUIRE_MESSAGE(ex != nullptr, error);
  ExecutionContext ctx(ex);
  const Tensor x = tensor<float>({{1, 2, 3}, {-1, 0, 4}});
  auto y = ctx.run({x}, {}, &error);
  REQUIRE_MESSAGE(y.ok(), error);
  const Tensor expected = tensor<float>({{-5, 1.5f}, {-9, 2}});
  check_equal((*y)[0], expected);
  check_equal((*y)[1], expected);

  // int8 sparse values read by another op: refused at create.
  d.ops.push_back(op(OpKind::Relu, {1}, {7}, "r"));
  TensorDef r = act("r", {2, 3});
  r.dtype = DType::Int8;
  d.add_tensor(r);
  d.outputs.push_back(7);
  CHECK(executor_of(d, &error) == nullptr);
  CHECK(error == "sparse weight 'w': int8 sparse values are only supported as a Linear weight");
}

TEST_CASE("sparse executor: bad COO data in a Minimal-verified file fails at create, not at run") {
  ModelDef d;
  d.add_tensor(act("x", {1, 3}));
  TensorDef w = from_tensor("w", tensor<float>({1.f, 2.f}));
  w.shape = {2, 3};
  w.sparse = SparseCooDef{2, 2};
  d.add_tensor(w);
  // (1, 0) before (0, 2): unsorted.
  d.add_tensor(from_tensor("w.indices", tensor<int64_t>({{1, 0}, {0, 2}}).to(DType::Int16)));
  d.add_tensor(act("y", {1, 2}));
  d.inputs = {0};
  d.outputs = {3};
  d.ops.push_back(op(OpKind::Linear, {0, 1, -1}, {3}, "fc", LinearParams{}));
  std::vector<std::byte> bytes;
  std::string error;
  REQUIRE(detail::serialize_model_unverified(d, &bytes, &error) == Status::Ok);
  auto full = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Full, &error);
  CHECK(error == "tensor 1 'w': COO coordinates are not sorted in row-major order (value 1 comes before value 0)");
  auto m = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Minimal, &error);
  REQUIRE_MESSAGE(m.ok(), error);
  auto ex = Executor::create(std::make_shared<const Model>(std::move(m.get())), &error);
  CHECK(ex.status() == Status::InvalidArgument);
  CHECK(error == "sparse weight 'w': pack_csr: COO value 1 at (0, 2) is not sorted in row-major order or repeats a "
                 "coordinate (coalesce first)");
}
