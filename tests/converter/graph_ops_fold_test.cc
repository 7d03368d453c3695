// ONNX graph ops mean the same folded at conversion and at run time: each
// node is evaluated as constant folding does (evaluate_node) and lowered and
// run by the executor on the same data, and both must equal ONNX's values
// (one implementation: runtime/model/graph_ops.h).
#include <limits>
#include <map>

#include "converter/convert.h"
#include "converter/onnx_import.h"
#include "converter/passes.h"
#include "runtime/model/executor.h"
#include "runtime/model/writer.h"
#include "tests/converter/one_node.h"
#include "tests/harness/testing.h"

namespace ember::converter {

using ember::testing::check_equal;
using testing::dims_of;

namespace {

const int64_t kMin = std::numeric_limits<int64_t>::min();
const int64_t kMax = std::numeric_limits<int64_t>::max();

Tensor i64(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return tensor(v, {n});
}

Tensor arange_f(int64_t n, Shape shape) { return arange(n, DType::Float32).reshape(shape); }

// One ONNX node reading graph input `x` and constant inputs (undefined: an
// omitted optional input).
struct OneNode {
  std::string op;
  Tensor x;
  std::vector<Tensor> constants;
  std::map<std::string, Attr> attrs;
  int outputs = 1;

  Node node() const {
    Node n;
    n.op_type = op;
    n.name = "n";
    n.kind = map_onnx_op(op);
    n.attrs = attrs;
    for (int k = 0; k < outputs; ++k) n.outputs.push_back(k);
    return n;
  }

  // Constant folding's result.
  std::vector<Tensor> folded() const {
    std::vector<Tensor> in{x};
    in.insert(in.end(), constants.begin(), constants.end());
    auto r = evaluate_node(node(), in);
    REQUIRE_MESSAGE(r.ok(), r.diag().message);
    return *r;
  }

  // The executor's result: the node lowered with outputs declared as
  // `shapes` (the executor checks each output against its declaration).
  std::vector<Tensor> run(const std::vector<Tensor>& like) const {
    Graph g;
    Value xv;
    xv.name = "x";
    xv.dtype = x.dtype();
    xv.shape = dims_of(x.sizes());
    const int xi = g.add_value(std::move(xv));
    g.inputs.push_back(xi);
    Node n = node();
    n.inputs = {xi};
    for (size_t k = 0; k < constants.size(); ++k) {
      n.inputs.push_back(constants[k].defined() ? g.add_constant("c" + std::to_string(k), constants[k]) : -1);
    }
    n.outputs.clear();
    for (int k = 0; k < outputs; ++k) {
      Value v;
      v.name = "y" + std::to_string(k);
      v.dtype = like[static_cast<size_t>(k)].dtype();
      v.shape = dims_of(like[static_cast<size_t>(k)].sizes());
      n.outputs.push_back(g.add_value(std::move(v)));
      g.outputs.push_back(n.outputs.back());
    }
    g.nodes.push_back(n);
    return testing::lower_and_run(g, {x});
  }

  // Folded == run == expected (output 0, or every output).
  void check(const std::vector<Tensor>& expected) const {
    const std::vector<Tensor> f = folded();
    REQUIRE(f.size() == expected.size());
    const std::vector<Tensor> r = run(f);
    REQUIRE(r.size() == expected.size());
    for (size_t k = 0; k < expected.size(); ++k) {
      check_equal(f[k], expected[k]);
      check_equal(r[k], expected[k]);
    }
  }
};

}  // namespace

TEST_CASE("fold = run: Slice with negative steps (ONNX clamping, INT64_MIN ends)") {
  const Tensor x = arange_f(10, {10});
  for (int64_t end : {int64_t{-11}, kMin}) {
    OneNode{"Slice", x, {i64({-1}), i64({end}), i64({0}), i64({-2})}, {}}.check({tensor({9.f, 7.f, 5.f, 3.f, 1.f})});
  }
  OneNode{"Slice", x, {i64({kMax}), i64({-5}), i64({0}), i64({-2})}, {}}.check({tensor({9.f, 7.f})});
  OneNode{"Slice", x, {i64({-100}), i64({kMin}), i64({0}), i64({-1})}, {}}.check({tensor({0.f})});
  // steps -1 along axis -1 of a 2-D tensor, and positive steps with clamped ends.
  const Tensor x2 = arange_f(12, {3, 4});
  OneNode{"Slice", x2, {i64({-1}), i64({kMin}), i64({-1}), i64({-1})}, {}}.check(
      {tensor({{3.f, 2.f, 1.f, 0.f}, {7.f, 6.f, 5.f, 4.f}, {11.f, 10.f, 9.f, 8.f}})});
  OneNode{"Slice", x2, {i64({1, 0}), i64({1000, -1}), i64({0, -1}), i64({1, 2})}, {}}.check(
      {tensor({{4.f, 6.f}, {8.f, 10.f}})});
}

TEST_CASE("fold = run: Reshape with 0 (copy the dim) and -1 (inferred)") {
  const Tensor x = arange_f(24, {2, 3, 4});
  OneNode{"Reshape", x, {i64({0, -1})}, {}}.check({x.reshape({2, 12})});
  OneNode{"Reshape", x, {i64({-1, 0, 2})}, {}}.check({x.reshape({4, 3, 2})});
}

TEST_CASE("fold = run: Gather with negative indices, along axis 1") {
  const Tensor x = arange_f(12, {3, 4});
  const Tensor idx = tensor({{int64_t{-1}, int64_t{0}}});  // [1, 2]
  OneNode{"Gather", x, {idx}, {{"axis", int64_t{1}}}}.check(
      {tensor({{{3.f, 0.f}}, {{7.f, 4.f}}, {{11.f, 8.f}}})});
  OneNode{"Gather", x, {i64({-3, 2})}, {}}.check({tensor({{0.f, 1.f, 2.f, 3.f}, {8.f, 9.f, 10.f, 11.f}})});
}

TEST_CASE("fold = run: Squeeze and Unsqueeze with negative axes") {
  const Tensor x = arange_f(6, {1, 3, 1, 2});
  OneNode{"Squeeze", x, {i64({-2, 0})}, {}}.check({x.reshape({3, 2})});
  OneNode{"Squeeze", x, {Tensor()}, {}}.check({x.reshape({3, 2})});  // no axes: every size-1 dim
  const Tensor y = arange_f(6, {3, 2});
  OneNode{"Unsqueeze", y, {i64({-1, 0})}, {}}.check({y.reshape({1, 3, 2, 1})});
}

TEST_CASE("fold = run: Split by sizes and into equal parts") {
  const Tensor x = arange_f(12, {2, 6});
  OneNode split{"Split", x, {i64({1, 2, 3})}, {{"axis", int64_t{-1}}}, 3};
  split.check({tensor({{0.f}, {6.f}}), tensor({{1.f, 2.f}, {7.f, 8.f}}), tensor({{3.f, 4.f, 5.f}, {9.f, 10.f, 11.f}})});
  OneNode equal{"Split", x, {}, {{"axis", int64_t{1}}}, 2};
  equal.check({tensor({{0.f, 1.f, 2.f}, {6.f, 7.f, 8.f}}), tensor({{3.f, 4.f, 5.f}, {9.f, 10.f, 11.f}})});
}

TEST_CASE("fold = run: Flatten (negative axis) and Expand (broadcast both ways)") {
  const Tensor x = arange_f(24, {2, 3, 4});
  OneNode{"Flatten", x, {}, {{"axis", int64_t{-1}}}}.check({x.reshape({6, 4})});
  OneNode{"Flatten", x, {}, {{"axis", int64_t{0}}}}.check({x.reshape({1, 24})});
  const Tensor c = arange_f(3, {3, 1});
  OneNode{"Expand", c, {i64({2, 1, 4})}, {}}.check({c.expand({2, 3, 4}).contiguous()});
}

}  // namespace ember::converter
