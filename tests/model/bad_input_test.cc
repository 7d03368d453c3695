// The inference path's bad-input table: corrupt files, missing or undefined
// inputs, wrong dtypes and shapes, and op arguments that fail at run time.
// Each entry must come back as a Status with its exact message, and the
// context must run again afterwards. CI runs this suite twice: in the default
// build and in --config=noexcept (the loader, executor, ops and kernels built
// with -fno-exceptions), where a raise would abort instead.
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "runtime/ember.h"
#include "tests/model/graph_builder.h"

using namespace ember;
using ember::testing::check_equal;
using ember::testing::Graph;
using ember::testing::run_ok;

namespace {

// One run of the table: a model, bad inputs and what they must give, then
// good inputs that must still run.
struct BadRun {
  const char* what;
  std::function<void(Graph&)> build;
  std::vector<Tensor> bad;
  Status status;
  std::string message;
  std::vector<Tensor> good;
  RunOptions options = {};
};

// x [batch, 3] + y [batch, 3] -> "the_add".
void add_model(Graph& g) {
  const int a = g.input("a", {-1, 3}, DType::Float32, {"batch", ""});
  const int b = g.input("b", {-1, 3});
  const int y = g.act("y", {-1, 3});
  g.op(OpKind::Add, {a, b}, {y}, "the_add");
  g.output(y);
}

std::vector<BadRun> table() {
  std::vector<BadRun> t;
  t.push_back({"too few inputs", add_model, {randn({2, 3})}, Status::InvalidArgument,
               "expected 2 inputs (a, b), got 1", {ones({2, 3}), ones({2, 3})}});
  t.push_back({"an undefined input", add_model, {Tensor(), randn({2, 3})}, Status::InvalidArgument,
               "input 'a' is undefined", {ones({2, 3}), ones({2, 3})}});
  t.push_back({"a wrong dtype", add_model, {randn({2, 3}).to(DType::Float64), randn({2, 3})}, Status::DTypeMismatch,
               "input 'a': expected dtype float32, got float64", {ones({2, 3}), ones({2, 3})}});
  t.push_back({"a wrong rank", add_model, {randn({2, 3, 1}), randn({2, 3})}, Status::ShapeMismatch,
               "input 'a': expected rank 2 [batch, 3], got rank 3 [2, 3, 1]", {ones({2, 3}), ones({2, 3})}});
  t.push_back({"a wrong static dim", add_model, {randn({2, 4}), randn({2, 3})}, Status::ShapeMismatch,
               "input 'a': dim 1 is 4, expected 3 (declared [batch, 3], got [2, 4])", {ones({2, 3}), ones({2, 3})}});
  t.push_back({"shapes that do not broadcast", add_model, {randn({2, 3}), randn({4, 3})}, Status::ShapeMismatch,
               "node 'the_add' (add): The size of tensor a (2) must match the size of tensor b (4) at non-singleton "
               "dimension 0",
               {ones({2, 3}), ones({1, 3})}});
  t.push_back({"matmul's inner dims",
               [](Graph& g) {
                 const int a = g.input("a", {-1, -1});
                 const int b = g.input("b", {-1, -1});
                 const int y = g.act("y", {-1, -1});
                 g.op(OpKind::MatMul, {a, b}, {y}, "mm");
                 g.output(y);
               },
               {randn({2, 5}), randn({4, 3})}, Status::ShapeMismatch,
               "node 'mm' (matmul): mat1 and mat2 shapes cannot be multiplied (2x5 and 4x3)",
               {ones({2, 4}), ones({4, 3})}});
  t.push_back({"a run-time shape the data does not fill",
               [](Graph& g) {
                 const int x = g.input("x", {-1});
                 const int s = g.input("s", {1}, DType::Int64);
                 const int y = g.act("y", {-1});
                 g.op(OpKind::Reshape, {x, s}, {y}, "r");
                 g.output(y);
               },
               {randn({6}), tensor({int64_t{4}})}, Status::ShapeMismatch,
               "node 'r' (reshape): cannot reshape [6] (6 elements) into [4]", {ones({4}), tensor({int64_t{4}})}});
  t.push_back({"a gather index out of range",
               [](Graph& g) {
                 const int x = g.input("x", {3, 2});
                 const int i = g.input("i", {-1}, DType::Int64);
                 const int y = g.act("y", {-1, 2});
                 g.op(OpKind::Gather, {x, i}, {y}, "rows", AxisParams{0});
                 g.output(y);
               },
               {randn({3, 2}), tensor({int64_t{0}, int64_t{7}})}, Status::OutOfRange,
               "node 'rows' (gather): index 7 is out of range for axis 0 of size 3",
               {ones({3, 2}), tensor({int64_t{2}})}});
  t.push_back({"a convolution's channels",
               [](Graph& g) {
                 const int x = g.input("x", {1, -1, 5, 5});
                 const int y = g.act("y", {1, 4, 3, 3});
                 g.op(OpKind::Conv2d, {x, g.weight("w", ones({4, 3, 3, 3})), -1}, {y}, "conv", Conv2dParams{});
                 g.output(y);
               },
               {randn({1, 2, 5, 5})}, Status::ShapeMismatch,
               "node 'conv' (conv2d): Given groups=1, weight of size [4, 3, 3, 3], expected input[1, 2, 5, 5] to have 3 "
               "channels, but got 2 channels instead",
               {ones({1, 3, 5, 5})}});
  t.push_back({"a convolution's residual of another shape",
               [](Graph& g) {
                 const int x = g.input("x", {1, 3, 5, 5});
                 const int r = g.input("r", {1, 4, -1, -1});
                 const int y = g.act("y", {1, 4, 3, 3});
                 g.op(OpKind::Conv2d, {x, g.weight("w", ones({4, 3, 3, 3})), -1, r}, {y}, "conv", Conv2dParams{});
                 g.output(y);
               },
               {randn({1, 3, 5, 5}), randn({1, 4, 2, 2})}, Status::ShapeMismatch,
               "node 'conv' (conv2d): The size of tensor a (3) must match the size of tensor b (2) at non-singleton "
               "dimension 2",
               {ones({1, 3, 5, 5}), ones({1, 4, 3, 3})}});
  t.push_back({"a concat of mismatched sizes",
               [](Graph& g) {
                 const int a = g.input("a", {-1, -1});
                 const int b = g.input("b", {-1, -1});
                 const int y = g.act("y", {-1, -1});
                 g.op(OpKind::Concat, {a, b}, {y}, "cat", AxisParams{0});
                 g.output(y);
               },
               {randn({1, 2}), randn({1, 3})}, Status::ShapeMismatch,
               "node 'cat' (concat): Sizes of tensors must match except in dimension 0. Expected size 2 but got size 3 "
               "for tensor number 1 in the list.",
               {ones({1, 2}), ones({2, 2})}});
  t.push_back({"an expand that does not broadcast",
               [](Graph& g) {
                 const int x = g.input("x", {-1});
                 const int s = g.input("s", {1}, DType::Int64);
                 const int y = g.act("y", {-1});
                 g.op(OpKind::Expand, {x, s}, {y}, "e");
                 g.output(y);
               },
               {randn({2}), tensor({int64_t{3}})}, Status::ShapeMismatch,
               "node 'e' (expand): The size of tensor a (2) must match the size of tensor b (3) at non-singleton "
               "dimension 0",
               {ones({1}), tensor({int64_t{3}})}});
  t.push_back({"a range with delta 0",
               [](Graph& g) {
                 const int s = g.input("s", {}, DType::Int64);
                 const int l = g.input("l", {}, DType::Int64);
                 const int d = g.input("d", {}, DType::Int64);
                 const int y = g.act("y", {-1}, DType::Int64);
                 g.op(OpKind::Range, {s, l, d}, {y}, "range");
                 g.output(y);
               },
               {scalar_tensor(0, DType::Int64), scalar_tensor(5, DType::Int64), scalar_tensor(0, DType::Int64)},
               Status::InvalidArgument, "node 'range' (range): range: delta must be nonzero",
               {scalar_tensor(0, DType::Int64), scalar_tensor(5, DType::Int64), scalar_tensor(2, DType::Int64)}});
  t.push_back({"an output that contradicts the file",
               [](Graph& g) {
                 const int x = g.input("x", {2, 6});
                 const int y = g.act("y", {4, 3});
                 g.op(OpKind::Reshape, {x, g.ints("shape", {3, -1})}, {y}, "r");
                 g.output(y);
               },
               {randn({2, 6})}, Status::ShapeMismatch,
               "node 'r' (reshape): output 'y' is float32 [3, 4], but the model declares float32 [4, 3]", {}});
  t.push_back({"a missing op input",
               [](Graph& g) {
                 const int c = g.input("c", {2}, DType::Bool);
                 const int x = g.input("x", {2});
                 const int y = g.act("y", {2});
                 g.op(OpKind::Where, {c, x, -1}, {y}, "w");
                 g.output(y);
               },
               {tensor({true, false}), randn({2})}, Status::InvalidArgument,
               "node 'w' (where): the y input is missing", {}});
  BadRun capped{"a tensor over RunOptions::max_tensor_bytes",
                [](Graph& g) {
                  const int s = g.input("s", {2}, DType::Int64);
                  const int y = g.act("y", {-1, -1});
                  g.op(OpKind::ConstantOfShape, {s}, {y}, "op", ScalarParams{1.0});
                  g.output(y);
                },
                {tensor({int64_t{1} << 20, int64_t{1} << 16})}, Status::OutOfMemory,
                "node 'op' (constant_of_shape): a tensor of 274877906944 bytes is over RunOptions::max_tensor_bytes "
                "(1048576)",
                {tensor({int64_t{2}, int64_t{3}})}};
  capped.options.max_tensor_bytes = size_t{1} << 20;
  t.push_back(capped);
  return t;
}

}  // namespace

TEST_CASE("bad inputs come back as a Status with its message, and the context runs again") {
  for (const BadRun& c : table()) {
    const std::string what = c.what;
    CAPTURE(what);
    Graph g;
    c.build(g);
    ExecutionContext ctx(g.build());
    std::string error;
    Result<std::vector<Tensor>> r = ctx.run(c.bad, c.options, &error);
    REQUIRE(!r.ok());
    CHECK(r.status() == c.status);
    CHECK(error == c.message);
    if (!c.good.empty()) run_ok(ctx, c.good, c.options);
  }
}

TEST_CASE("corrupt model files are refused with a Status") {
  Graph g;
  add_model(g);
  std::vector<std::byte> bytes;
  std::string error;
  REQUIRE(serialize_model(g.def, &bytes, &error) == Status::Ok);
  // Cut short, a byte flipped in each of the first 16 positions, random bytes, no file.
  for (size_t keep : {size_t{0}, size_t{4}, bytes.size() / 2}) {
    CAPTURE(keep);
    Result<Model> m = Model::load_from_bytes(bytes.data(), keep, Verification::Full, &error);
    CHECK(!m.ok());
    CHECK(m.status() == Status::InvalidModel);
    CHECK(!error.empty());
  }
  for (size_t i = 0; i < 16 && i < bytes.size(); ++i) {
    std::vector<std::byte> bad = bytes;
    bad[i] ^= std::byte{0xff};
    error.clear();
    Result<Model> m = Model::load_from_bytes(bad.data(), bad.size(), Verification::Full, &error);
    if (!m.ok()) CHECK(!error.empty());  // a flip may leave a valid file (a padding byte)
  }
  std::vector<std::byte> noise(bytes.size());
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = std::byte(static_cast<unsigned char>(i * 131 + 7));
  Result<Model> m = Model::load_from_bytes(noise.data(), noise.size(), Verification::Full, &error);
  CHECK(!m.ok());
  CHECK(m.status() == Status::InvalidModel);
  Result<Model> missing = Model::load("/nonexistent/model.ember", Verification::Full, &error);
  CHECK(!missing.ok());
  CHECK(missing.status() == Status::IoError);
}

TEST_CASE("create refuses what the executor cannot run, with a Status") {
  Graph g;
  const int x = g.input("x", {2, 2});
  const int y = g.act("y", {2, 2});
  g.op(OpKind::EmbeddingBackward, {x, x}, {y}, "bw");
  g.output(y);
  std::string error;
  Result<std::shared_ptr<const Executor>> ex = g.create({}, &error);
  CHECK(!ex.ok());
  CHECK(ex.status() == Status::NotSupported);
  CHECK(!error.empty());
}
