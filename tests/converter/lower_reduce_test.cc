// The lowerings of lower_reduce.cc and lower_composite.cc: each ONNX node
// lowered, serialized, loaded and run by the executor on hand-computed
// values; the forms they refuse, with their messages.
#include <algorithm>
#include <cmath>
#include <map>

#include "converter/convert.h"
#include "converter/passes.h"
#include "runtime/model/executor.h"
#include "runtime/model/graph_ops.h"
#include "runtime/model/writer.h"
#include "tests/converter/one_node.h"
#include "tests/harness/testing.h"

namespace ember::converter {

using ember::testing::check_close;
using ember::testing::check_equal;
using testing::dims_of;
using testing::executor_of;
using testing::lower_and_run;

namespace {

Tensor i64(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return tensor(v, {n});
}

// One ONNX node reading graph input `x` (shape `x_shape` where given: a
// symbolic one) and constant inputs (undefined: omitted); its outputs are
// declared like `like` (dtype, shape).
struct OneNode {
  std::string op;
  Tensor x;
  std::vector<Tensor> constants;
  std::map<std::string, Attr> attrs;
  std::optional<std::vector<Dim>> x_shape = std::nullopt;
  std::vector<size_t> fed = {};  // constants given as graph inputs instead (fed at run time)

  bool is_fed(size_t k) const { return std::find(fed.begin(), fed.end(), k) != fed.end(); }

  Graph graph(const std::vector<Tensor>& like) const {
    Graph g;
    Value xv;
    xv.name = "x";
    xv.dtype = x.dtype();
    xv.shape = x_shape ? *x_shape : dims_of(x.sizes());
    const int xi = g.add_value(std::move(xv));
    g.inputs.push_back(xi);
    Node n;
    n.op_type = op;
    n.name = "n";
    n.kind = map_onnx_op(op);
    n.attrs = attrs;
    n.inputs = {xi};
    for (size_t k = 0; k < constants.size(); ++k) {
      const std::string name = "c" + std::to_string(k);
      if (is_fed(k)) {
        Value v;
        v.name = name;
        v.dtype = constants[k].dtype();
        v.shape = dims_of(constants[k].sizes());
        n.inputs.push_back(g.add_value(std::move(v)));
        g.inputs.push_back(n.inputs.back());
        continue;
      }
      n.inputs.push_back(constants[k].defined() ? g.add_constant(name, constants[k]) : -1);
    }
    for (size_t k = 0; k < like.size(); ++k) {
      Value v;
      v.name = "y" + std::to_string(k);
      v.dtype = like[k].dtype();
      v.shape = dims_of(like[k].sizes());
      n.outputs.push_back(g.add_value(std::move(v)));
      g.outputs.push_back(n.outputs.back());
    }
    g.nodes.push_back(n);
    return g;
  }

  std::vector<Tensor> run(const std::vector<Tensor>& like) const {
    std::vector<Tensor> inputs{x};
    for (size_t k : fed) inputs.push_back(constants[k]);
    return lower_and_run(graph(like), inputs);
  }

  // The ember ops the node lowers to.
  std::vector<OpKind> kinds(const std::vector<Tensor>& like) const {
    auto def = lower(graph(like));
    REQUIRE_MESSAGE(def.ok(), def.diag().message);
    std::vector<OpKind> k;
    for (const OpDef& o : def->ops) k.push_back(o.op);
    return k;
  }

  void check(const Tensor& expected) const { check_equal(run({expected})[0], expected); }
  void check_near(const Tensor& expected) const { check_close(run({expected})[0], expected); }

  std::string error(const Tensor& like) const {
    auto def = lower(graph({like}));
    REQUIRE(!def.ok());
    CHECK(def.diag().status == Status::NotSupported);
    return def.diag().message;
  }
};

const std::string kPrefix = "the graph cannot be lowered to ember ops (1 problem): ";

Tensor x23() { return tensor({{1.f, -2.f, 3.f}, {-4.f, 5.f, -6.f}}); }

Attr ints(std::vector<int64_t> v) { return v; }

}  // namespace

TEST_CASE("ReduceMax, ReduceMin, ReduceProd: axes as attribute, input or none; keepdims") {
  OneNode{"ReduceMax", x23(), {}, {{"axes", ints({1})}, {"keepdims", int64_t{0}}}}.check(tensor({3.f, 5.f}));
  OneNode{"ReduceMax", x23(), {i64({-1})}, {}}.check(tensor({{3.f}, {5.f}}));
  OneNode{"ReduceMin", x23(), {i64({0})}, {}}.check(tensor({{-4.f, -2.f, -6.f}}));
  OneNode{"ReduceMin", x23(), {}, {{"keepdims", int64_t{0}}}}.check(scalar_tensor(-6.0, DType::Float32));
  OneNode{"ReduceProd", x23(), {}, {}}.check(tensor({{-720.f}}));
  OneNode{"ReduceProd", x23(), {i64({0})}, {{"keepdims", int64_t{0}}}}.check(tensor({-4.f, -10.f, -18.f}));
  const OneNode rmax{"ReduceMax", x23(), {i64({1})}, {{"keepdims", int64_t{0}}}};
  CHECK(rmax.kinds({tensor({0.f, 0.f})}) == std::vector<OpKind>{OpKind::Max});
}

TEST_CASE("ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum") {
  const OneNode l1{"ReduceL1", x23(), {i64({1})}, {{"keepdims", int64_t{0}}}};
  l1.check(tensor({6.f, 15.f}));
  CHECK(l1.kinds({tensor({0.f, 0.f})}) == std::vector<OpKind>{OpKind::Abs, OpKind::Sum});
  OneNode{"ReduceL2", x23(), {i64({1})}, {}}.check_near(
      tensor({{static_cast<float>(std::sqrt(14.0))}, {static_cast<float>(std::sqrt(77.0))}}));
  OneNode{"ReduceSumSquare", x23(), {i64({0})}, {{"keepdims", int64_t{0}}}}.check(tensor({17.f, 29.f, 45.f}));
  const Tensor pos = tensor({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  OneNode{"ReduceLogSum", pos, {i64({1})}, {{"keepdims", int64_t{0}}}}.check_near(
      tensor({static_cast<float>(std::log(6.0)), static_cast<float>(std::log(15.0))}));
  // Integer L1 and SumSquare stay integer.
  const Tensor xi = tensor({{1, -2}, {3, -4}}, DType::Int32);
  OneNode{"ReduceL1", xi, {i64({1})}, {{"keepdims", int64_t{0}}}}.check(tensor({3, 7}, DType::Int32));
  OneNode{"ReduceSumSquare", xi, {}, {{"keepdims", int64_t{0}}}}.check(scalar_tensor(int64_t{30}, DType::Int32));
}

TEST_CASE("ReduceLogSumExp subtracts the max (no overflow at 1000); keepdims 0 adds the reduced max") {
  const Tensor big = tensor({{1000.f, 1000.f, 1000.f}, {-1000.f, -1000.f, -1000.f}});
  const float l3 = static_cast<float>(std::log(3.0));
  const OneNode lse{"ReduceLogSumExp", big, {i64({1})}, {{"keepdims", int64_t{0}}}};
  lse.check_near(tensor({1000.f + l3, -1000.f + l3}));
  CHECK(lse.kinds({tensor({0.f, 0.f})}) == std::vector<OpKind>{OpKind::Max, OpKind::Sub, OpKind::Exp, OpKind::Sum,
                                                              OpKind::Log, OpKind::Max, OpKind::Add});
  OneNode{"ReduceLogSumExp", big, {i64({0, 1})}, {}}.check_near(tensor({{1000.f + l3 - 0.f}}));
}

TEST_CASE("noop_with_empty_axes = 1 without axes: the elementwise part only") {
  const OneNode attrs{"", x23(), {}, {{"noop_with_empty_axes", int64_t{1}}}};
  OneNode ssq = attrs;
  ssq.op = "ReduceSumSquare";
  ssq.check(tensor({{1.f, 4.f, 9.f}, {16.f, 25.f, 36.f}}));
  OneNode mx = attrs;
  mx.op = "ReduceMax";
  mx.constants = {i64({})};
  mx.check(x23());
  OneNode l1 = attrs;
  l1.op = "ReduceL1";
  l1.check(tensor({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}));
}

TEST_CASE("Reductions over axes given at run time (an int64 graph input)") {
  // The ops read the axes input on the host each run; negative axes count from the end.
  const OneNode sum{"ReduceSum", x23(), {i64({1})}, {{"keepdims", int64_t{0}}}, std::nullopt, {0}};
  CHECK(sum.kinds({tensor({0.f, 0.f})}) == std::vector<OpKind>{OpKind::Sum});
  sum.check(tensor({2.f, -5.f}));
  OneNode neg = sum;
  neg.constants = {i64({-2})};
  neg.check(tensor({-3.f, 3.f, -3.f}));
  OneNode{"ReduceMax", x23(), {i64({0})}, {}, std::nullopt, {0}}.check(tensor({{1.f, 5.f, 3.f}}));
  OneNode{"ReduceL2", x23(), {i64({1})}, {}, std::nullopt, {0}}.check_near(
      tensor({{static_cast<float>(std::sqrt(14.0))}, {static_cast<float>(std::sqrt(77.0))}}));
  const Tensor big = tensor({{1000.f, 1000.f, 1000.f}, {-1000.f, -1000.f, -1000.f}});
  const float l3 = static_cast<float>(std::log(3.0));
  OneNode{"ReduceLogSumExp", big, {i64({1})}, {{"keepdims", int64_t{0}}}, std::nullopt, {0}}.check_near(
      tensor({1000.f + l3, -1000.f + l3}));
  // Empty axes: every dim, or none with noop_with_empty_axes.
  OneNode{"ReduceSum", x23(), {i64({})}, {}, std::nullopt, {0}}.check(tensor({{-3.f}}));
  OneNode{"ReduceMean", x23(), {i64({})}, {{"noop_with_empty_axes", int64_t{1}}}, std::nullopt, {0}}.check(x23());
  // Integer sums are int64 inside, narrowed back.
  OneNode{"ReduceSum", tensor({{1, 2}, {3, 4}}, DType::Int32), {i64({0})}, {}, std::nullopt, {0}}.check(
      tensor({{4, 6}}, DType::Int32));
  // An axis out of range is an error of the run, naming it.
  OneNode bad = sum;
  bad.constants = {i64({2})};
  auto def = lower(bad.graph({tensor({0.f, 0.f})}));
  REQUIRE(def.ok());
  ExecutionContext ctx(executor_of(*def));
  std::string error;
  const std::vector<Tensor> inputs{x23(), i64({2})};
  CHECK(!ctx.run(inputs, {}, &error).ok());
  CHECK(error == "node 'n' (sum): axis 2 is out of range for rank 2");
  // keepdims 0 needs the axes' count.
  const OneNode unknown_count{"ReduceSum", x23(), {i64({1})}, {{"keepdims", int64_t{0}}}, std::nullopt, {0}};
  Graph g = unknown_count.graph({tensor({0.f, 0.f})});
  g.values[static_cast<size_t>(g.inputs[1])].shape = std::vector<Dim>{Dim::named("k")};
  g.nodes[0].kind = map_onnx_op("ReduceLogSumExp");
  g.nodes[0].op_type = "ReduceLogSumExp";
  auto refused = lower(g);
  REQUIRE(!refused.ok());
  CHECK(refused.diag().message ==
        kPrefix + "ReduceLogSumExp 'n': axes 'c0' has no static length (needed with keepdims = 0)");
}

TEST_CASE("ReduceMax and ReduceMin of an empty set: -inf and +inf (false and true for bool), as ONNX") {
  const Tensor e = empty({2, 0}, DType::Float32);
  OneNode{"ReduceMax", e, {i64({1})}, {}}.check(tensor({{-INFINITY}, {-INFINITY}}));
  OneNode{"ReduceMin", e, {i64({1})}, {{"keepdims", int64_t{0}}}}.check(tensor({INFINITY, INFINITY}));
  OneNode{"ReduceMax", empty({0, 3}, DType::Bool), {i64({0})}, {}}.check(tensor({{false, false, false}}));
}

TEST_CASE("Squeeze and Unsqueeze with run-time axes; Clip with run-time bounds; Size") {
  const Tensor x = tensor(std::vector<float>{1.f, 2.f, 3.f}, {1, 3, 1});
  OneNode{"Squeeze", x, {i64({-1})}, {}, std::nullopt, {0}}.check(tensor(std::vector<float>{1.f, 2.f, 3.f}, {1, 3}));
  OneNode{"Unsqueeze", x23(), {i64({0, 3})}, {}, std::nullopt, {0}}.check(
      tensor(std::vector<float>{1.f, -2.f, 3.f, -4.f, 5.f, -6.f}, {1, 2, 3, 1}));
  const Tensor lo = scalar_tensor(-1.0, DType::Float32), hi = scalar_tensor(4.0, DType::Float32);
  const OneNode clip{"Clip", tensor({-2.f, 0.f, 5.f, NAN}), {lo, hi}, {}, std::nullopt, {0, 1}};
  CHECK(clip.kinds({tensor({0.f, 0.f, 0.f, 0.f})}) == std::vector<OpKind>{OpKind::Maximum, OpKind::Minimum});
  const Tensor clipped = clip.run({tensor({0.f, 0.f, 0.f, 0.f})})[0];
  check_equal(clipped.narrow(0, 0, 3), tensor({-1.f, 0.f, 4.f}));
  CHECK(std::isnan(clipped[3].item().to_double()));
  // Only max given at run time (min omitted).
  OneNode{"Clip", tensor({-2.f, 5.f}), {Tensor(), hi}, {}, std::nullopt, {1}}.check(tensor({-2.f, 4.f}));
  OneNode{"Size", x23(), {}, {}}.check(scalar_tensor(int64_t{6}, DType::Int64));
  OneNode{"Size", scalar_tensor(2.0, DType::Float32), {}, {}}.check(scalar_tensor(int64_t{1}, DType::Int64));
}

TEST_CASE("Range from run-time inputs; Identity and Dropout: a Copy, the mask all true") {
  const auto s = [](double v, DType dt) { return scalar_tensor(v, dt); };
  // ONNX's examples: range(3, 9, 3) = [3, 6]; range(10, 4, -3) = [10, 7]; float 1 .. 5 by 1.5.
  OneNode{"Range", s(3, DType::Int64), {s(9, DType::Int64), s(3, DType::Int64)}, {}, std::nullopt, {0, 1}}.check(
      i64({3, 6}));
  OneNode{"Range", s(10, DType::Int32), {s(4, DType::Int32), s(-3, DType::Int32)}, {}, std::nullopt, {0, 1}}.check(
      tensor({10, 7}, DType::Int32));
  OneNode{"Range", s(1, DType::Float32), {s(5, DType::Float32), s(1.5, DType::Float32)}, {}, std::nullopt, {0, 1}}
      .check(tensor({1.f, 2.5f, 4.f}));
  // An empty range, and delta 0 (an error of the run).
  OneNode{"Range", s(5, DType::Int64), {s(1, DType::Int64), s(1, DType::Int64)}, {}, std::nullopt, {0, 1}}.check(
      empty({0}, DType::Int64));
  CHECK_THROWS_WITH(unwrap(onnx_range(s(0, DType::Int64), s(1, DType::Int64), s(0, DType::Int64), {})),
                    "range: delta must be nonzero");
  OneNode{"Identity", x23(), {}, {}}.check(x23());
  const OneNode dropout{"Dropout", x23(), {}, {}};
  const std::vector<Tensor> both = dropout.run({x23(), tensor({{true, true, true}, {true, true, true}})});
  check_equal(both[0], x23());
  check_equal(both[1], tensor({{true, true, true}, {true, true, true}}));
}

TEST_CASE("ArgMax, ArgMin: int64 indices, first or last of ties") {
  const Tensor y = tensor({{1.f, 3.f, 3.f}, {2.f, 2.f, 0.f}});
  OneNode{"ArgMax", y, {}, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}}.check(i64({1, 0}));
  OneNode{"ArgMax", y, {}, {{"axis", int64_t{-1}}, {"keepdims", int64_t{0}}, {"select_last_index", int64_t{1}}}}
      .check(i64({2, 1}));
  const Tensor z = tensor({{0.f, 5.f, 1.f}, {0.f, 5.f, 0.f}});
  OneNode{"ArgMin", z, {}, {}}.check(tensor(std::vector<int64_t>{0, 0, 1}, {1, 3}));
  const OneNode last{"ArgMin", z, {}, {{"select_last_index", int64_t{1}}}};
  last.check(tensor(std::vector<int64_t>{1, 1, 1}, {1, 3}));
  CHECK(last.kinds({tensor(std::vector<int64_t>{0, 0, 0}, {1, 3})}) ==
        std::vector<OpKind>{OpKind::Slice, OpKind::ArgMin, OpKind::Sub});
}

TEST_CASE("GreaterOrEqual, LessOrEqual: Ge and Le, bool") {
  const Tensor a = tensor({1.f, 2.f, 3.f});
  OneNode{"GreaterOrEqual", a, {tensor({2.f})}, {}}.check(tensor({false, true, true}));
  OneNode{"LessOrEqual", a, {tensor({2.f})}, {}}.check(tensor({true, true, false}));
}

TEST_CASE("Sum and Mean of N inputs, PRelu, CastLike") {
  OneNode{"Sum", x23(), {x23(), x23()}, {}}.check(tensor({{3.f, -6.f, 9.f}, {-12.f, 15.f, -18.f}}));
  OneNode{"Sum", x23(), {}, {}}.check(x23());
  OneNode{"Mean", x23(), {tensor({1.f, 1.f, 1.f}), tensor({1.f})}, {}}.check_near(
      tensor({{1.f, 0.f, 5.f / 3}, {-2.f / 3, 7.f / 3, -4.f / 3}}));
  const OneNode prelu{"PRelu", x23(), {tensor({0.5f, 1.f, 2.f})}, {}};
  prelu.check(tensor({{1.f, -2.f, 3.f}, {-2.f, 5.f, -12.f}}));
  CHECK(prelu.kinds({x23()}) == std::vector<OpKind>{OpKind::Lt, OpKind::Mul, OpKind::Where});
  OneNode{"CastLike", x23(), {tensor({0}, DType::Int32)}, {}}.check(
      tensor({{1, -2, 3}, {-4, 5, -6}}, DType::Int32));
}

TEST_CASE("LayerNormalization with its Mean and InvStdDev outputs") {
  const Tensor x = tensor({{1.f, 2.f, 3.f}, {4.f, 4.f, 4.f}});
  const OneNode ln{"LayerNormalization", x, {tensor({1.f, 2.f, 3.f}), tensor({0.5f, 0.f, -0.5f})},
                   {{"epsilon", 1e-5}}};
  const double inv0 = 1.0 / std::sqrt(2.0 / 3 + 1e-5), inv1 = 1.0 / std::sqrt(1e-5);
  const auto f = [](double v) { return static_cast<float>(v); };
  const Tensor y = tensor({{f(-inv0 + 0.5), 0.f, f(3 * inv0 - 0.5)}, {0.5f, 0.f, -0.5f}});
  const Tensor mean = tensor({{2.f}, {4.f}}), inv = tensor({{f(inv0)}, {f(inv1)}});
  const std::vector<Tensor> out = ln.run({y, mean, inv});
  REQUIRE(out.size() == 3);
  check_close(out[0], y);
  check_close(out[1], mean);
  check_close(out[2], inv);
}

TEST_CASE("And, Or, Xor, Not on bool: Minimum, Maximum, Ne, Eq with false") {
  const Tensor a = tensor({false, false, true, true});
  const Tensor b = tensor({false, true, false, true});
  OneNode{"And", a, {b}, {}}.check(tensor({false, false, false, true}));
  OneNode{"Or", a, {b}, {}}.check(tensor({false, true, true, true}));
  OneNode{"Xor", a, {b}, {}}.check(tensor({false, true, true, false}));
  OneNode{"Not", a, {}, {}}.check(tensor({true, true, false, false}));
  CHECK(OneNode{"And", tensor({1.f}), {tensor({1.f})}, {}}.error(tensor({true})) ==
        kPrefix + "And 'n': input 'x' of dtype float32 is not bool");
}

TEST_CASE("a runtime axes input of static shape [0] is empty: every dim, or the noop") {
  for (int64_t noop : {0, 1}) {
    CAPTURE(noop);
    Graph g;
    Value xv;
    xv.name = "x";
    xv.dtype = DType::Float32;
    xv.shape = dims_of({2, 3});
    const int x = g.add_value(std::move(xv));
    Value av;
    av.name = "axes";
    av.dtype = DType::Int64;
    av.shape = dims_of({0});
    const int axes = g.add_value(std::move(av));
    g.inputs = {x, axes};
    Value yv;
    yv.name = "y";
    yv.dtype = DType::Float32;
    yv.shape = noop ? dims_of({2, 3}) : dims_of({1, 1});
    const int y = g.add_value(std::move(yv));
    Node n;
    n.op_type = "ReduceMax";
    n.name = "n";
    n.inputs = {x, axes};
    n.outputs = {y};
    n.attrs["noop_with_empty_axes"] = noop;
    g.nodes.push_back(n);
    g.outputs = {y};
    auto def = lower(g);
    REQUIRE_MESSAGE(def.ok(), def.diag().message);
    REQUIRE(def->ops.size() == 1);
    CHECK(def->ops[0].op == (noop ? OpKind::Copy : OpKind::Max));
    if (!noop) CHECK(std::get<ReduceParams>(def->ops[0].params).dims == 0b11u);
  }
  // Any other runtime axes input is read by the ops at run time (the test above runs them).
  Graph g;
  Value xv;
  xv.name = "x";
  xv.dtype = DType::Float32;
  xv.shape = dims_of({2, 3});
  const int x = g.add_value(std::move(xv));
  Value av;
  av.name = "axes";
  av.dtype = DType::Int64;
  av.shape = dims_of({1});
  const int axes = g.add_value(std::move(av));
  g.inputs = {x, axes};
  Value yv;
  yv.name = "y";
  yv.dtype = DType::Float32;
  yv.shape = dims_of({2, 1});
  const int y = g.add_value(std::move(yv));
  Node n;
  n.op_type = "ReduceSumSquare";
  n.name = "n";
  n.inputs = {x, axes};
  n.outputs = {y};
  g.nodes.push_back(n);
  g.outputs = {y};
  auto def = lower(g);
  REQUIRE_MESSAGE(def.ok(), def.diag().message);
  REQUIRE(def->ops.size() == 2);
  CHECK(def->ops[1].op == OpKind::Sum);
  CHECK(def->ops[1].inputs.size() == 2);
  CHECK(def->ops[1].inputs[1] == def->ops[0].inputs[0] + 1);  // the axes input's tensor
  CHECK(std::get<ReduceParams>(def->ops[1].params).dims == 0u);
}

TEST_CASE("constant folding: compares, Sum and the logical ops fold as lowered; the reductions are left to run time") {
  auto fold1 = [](const std::string& op, const std::vector<Tensor>& in) {
    Node n;
    n.op_type = op;
    n.name = "n";
    n.outputs = {0};
    return evaluate_node(n, in);
  };
  const Tensor a = tensor({1.f, 2.f, 3.f}), two = tensor({2.f});
  check_equal(fold1("GreaterOrEqual", {a, two})->at(0), tensor({false, true, true}));
  check_equal(fold1("LessOrEqual", {a, two})->at(0), tensor({true, true, false}));
  check_equal(fold1("Sum", {a, two, a})->at(0), tensor({4.f, 6.f, 8.f}));
  const Tensor p = tensor({false, false, true, true}), q = tensor({false, true, false, true});
  check_equal(fold1("And", {p, q})->at(0), tensor({false, false, false, true}));
  check_equal(fold1("Or", {p, q})->at(0), tensor({false, true, true, true}));
  check_equal(fold1("Xor", {p, q})->at(0), tensor({false, true, true, false}));
  check_equal(fold1("Not", {p})->at(0), tensor({true, true, false, false}));
  for (const char* op : {"ReduceMax", "ReduceL2", "ArgMax", "Mean", "PRelu", "And"}) {
    CAPTURE(op);
    auto r = fold1(op, {a, a});
    REQUIRE(!r.ok());
    CHECK(r.diag().status == Status::NotSupported);  // fold_constants leaves the node to run time
  }
}

TEST_CASE("refused forms name the node and the problem") {
  CHECK(OneNode{"ReduceL2", tensor({1, 2}, DType::Int64), {}, {}}.error(i64({0})) ==
        kPrefix + "ReduceL2 'n': input 'x' of dtype int64 is not supported (only floating-point types)");
  CHECK(OneNode{"ReduceMax", x23(), {i64({1, -1})}, {}}.error(tensor({{0.f}, {0.f}})) ==
        kPrefix + "ReduceMax 'n': axes [1, -1] name a dimension twice");
  CHECK(OneNode{"ReduceMin", x23(), {i64({2})}, {}}.error(tensor({{0.f}, {0.f}})) ==
        kPrefix + "ReduceMin 'n': axis 2 is out of range for rank 2");
  CHECK(OneNode{"ArgMax", x23(), {}, {{"select_last_index", int64_t{1}}}, std::vector<Dim>{Dim::named("n"), Dim::named("m")}}
            .error(i64({0})) ==
        kPrefix + "ArgMax 'n': select_last_index = 1 needs a static size of axis 0 of input 'x'");
  CHECK(OneNode{"Mean", tensor({1, 2}, DType::Int64), {tensor({1, 2}, DType::Int64)}, {}}.error(i64({0, 0})) ==
        kPrefix + "Mean 'n': output of dtype int64 is not supported (only floating-point types)");
  CHECK(OneNode{"PRelu", tensor({1.f, 2.f}), {tensor({{1.f, 2.f}})}, {}}.error(tensor({{0.f, 0.f}})) ==
        kPrefix + "PRelu 'n': slope 'c0' has a higher rank than input 'x'");
}

}  // namespace ember::converter
