// fuse_layer_norms (converter/fuse_norm.cc): the 9-node LayerNorm torch
// exports below opset 17 becomes one LayerNormalization, which lowers and runs
// to the unfused graph's values; variants that are not that pattern stay.
#include "converter/convert.h"
#include "converter/onnx_import.h"
#include "converter/passes.h"
#include "tests/converter/one_node.h"
#include "tests/harness/testing.h"

namespace ember::converter {

using ember::testing::check_close;
using testing::dims_of;

namespace {

constexpr int64_t kD = 8;

struct Pattern {
  bool eps_first = false;     // Add(eps, var) instead of Add(var, eps)
  bool bias = true;           // the final Add of beta
  int64_t mean_axis = -1;     // the first ReduceMean's axis
  bool sub_is_output = false; // x - mean also a graph output (another reader)
  bool one_input_add = false; // the eps Add has one input (malformed: crashed the pass, fuzzing)
};

// x [2, 3, kD] -> (x - mean) / sqrt(mean((x - mean)^2) + eps) * gamma (+ beta).
Graph layer_norm_graph(const Pattern& p) {
  testing::GraphBuilder gb;
  Graph& g = gb.g;
  auto value = [&](const std::string& name, std::vector<int64_t> shape) { return gb.value(name, shape); };
  auto node = [&](const std::string& op, std::vector<int> in, int out, std::map<std::string, Attr> attrs = {}) {
    gb.node(op, std::move(in), out, std::move(attrs));
  };
  const int x = value("x", {2, 3, kD});
  g.inputs.push_back(x);
  const int mean = value("mean", {2, 3, 1}), d = value("d", {2, 3, kD}), sq = value("sq", {2, 3, kD});
  const int var = value("var", {2, 3, 1}), ve = value("ve", {2, 3, 1}), s = value("s", {2, 3, 1});
  const int n = value("n", {2, 3, kD}), y1 = value("y1", {2, 3, kD});
  const int two = g.add_constant("two", scalar_tensor(2.0, DType::Float32));
  const int eps = g.add_constant("eps", scalar_tensor(1e-5, DType::Float32));
  const int gamma = g.add_constant("gamma", linspace(0.5, 2.0, kD));
  const int beta = g.add_constant("beta", linspace(-1.0, 1.0, kD));
  node("ReduceMean", {x}, mean, {{"axes", std::vector<int64_t>{p.mean_axis}}});
  node("Sub", {x, mean}, d);
  node("Pow", {d, two}, sq);
  node("ReduceMean", {sq}, var, {{"axes", std::vector<int64_t>{-1}}});
  node("Add", p.one_input_add ? std::vector<int>{var} : p.eps_first ? std::vector<int>{eps, var} : std::vector<int>{var, eps},
       ve);
  node("Sqrt", {ve}, s);
  node("Div", {d, s}, n);
  node("Mul", {n, gamma}, y1);
  if (p.bias) {
    const int y = value("y", {2, 3, kD});
    node("Add", {y1, beta}, y);
    g.outputs.push_back(y);
  } else {
    g.outputs.push_back(y1);
  }
  if (p.sub_is_output) g.outputs.push_back(d);
  return g;
}

}  // namespace

TEST_CASE("fuse_layer_norms: 9 nodes -> one LayerNormalization with the unfused graph's values") {
  for (const Pattern p : {Pattern{}, Pattern{true, false}}) {
    CAPTURE(p.eps_first);
    const Graph unfused = layer_norm_graph(p);
    Graph fused = unfused;
    REQUIRE(fuse_layer_norms(fused) == 1);
    REQUIRE(fused.nodes.size() == 1);
    const Node& ln = fused.nodes[0];
    CHECK(ln.op_type == "LayerNormalization");
    CHECK(ln.inputs == (p.bias ? std::vector<int>{0, fused.find_value("gamma"), fused.find_value("beta")}
                               : std::vector<int>{0, fused.find_value("gamma")}));
    CHECK(ln.outputs == std::vector<int>{unfused.outputs[0]});
    CHECK(ln.get_int("axis", 0) == -1);
    CHECK(ln.get_float("epsilon", 0.0) == static_cast<double>(1e-5f));
    manual_seed(3);
    const Tensor x = randn({2, 3, kD}) * 3.0 + 1.0;
    const Tensor want = testing::lower_and_run(unfused, {x})[0];
    check_close(testing::lower_and_run(fused, {x})[0], want, 1e-5, 1e-5);
    // And LayerNorm's definition, in double.
    const Tensor xd = x.to(DType::Float64);
    const Tensor c = xd - mean(xd, {-1}, true);
    Tensor ref = c / sqrt(mean(c * c, {-1}, true) + static_cast<double>(1e-5f)) *
                 linspace(0.5, 2.0, kD).to(DType::Float64);
    if (p.bias) ref = ref + linspace(-1.0, 1.0, kD).to(DType::Float64);
    check_close(want.to(DType::Float64), ref, 1e-5, 1e-5);
  }
}

TEST_CASE("fuse_layer_norms: another reader of an intermediate, a mean over another axis, a malformed Add: no fusion") {
  Pattern other_reader;
  other_reader.sub_is_output = true;
  Pattern other_axis;
  other_axis.mean_axis = 1;
  Pattern one_input_add;
  one_input_add.one_input_add = true;
  for (const Pattern& p : {other_reader, other_axis, one_input_add}) {
    Graph g = layer_norm_graph(p);
    CHECK(fuse_layer_norms(g) == 0);
    CHECK(g.nodes.size() == 9);
  }
}

}  // namespace ember::converter
