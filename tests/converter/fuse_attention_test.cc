// fuse_attention (converter/fuse_attention.cc): MatMul(q, kt) [Mul|Div by a
// constant] [Add mask] Softmax(last axis) MatMul(p, v) made one
// ember::ScaledDotProductAttention whose key is kt's Transpose: the fused
// graph's output as the unfused graph's within 1e-6, the scale and the mask
// taken over; chains the op would not compute alike left as they are.
#include <cmath>

#include "converter/passes.h"
#include "tests/converter/one_node.h"
#include "tests/harness/testing.h"

namespace ember::converter {
namespace {

constexpr int64_t kB = 2, kH = 3, kL = 5, kS = 7, kE = 8, kEv = 4;

struct Chain {
  std::string scale_op = "Div";  // "Div", "Mul" or "" (none)
  bool mask = true;
  bool mask_first = false;         // Add(mask, scores)
  int64_t axis = -1;               // the Softmax's
  bool probs_output = false;       // the Softmax's output is a graph output too
  bool merge_heads = false;        // a Transpose [B, H, L, Ev] -> [B, L, H, Ev] after it
  std::vector<int64_t> mask_shape = {kB, 1, 1, kS};
};

Graph chain_graph(const Chain& c) {
  testing::GraphBuilder gb;
  const int q = gb.value("q", {kB, kH, kL, kE}), kt = gb.value("kt", {kB, kH, kE, kS});
  const int v = gb.value("v", {kB, kH, kS, kEv});
  gb.g.inputs = {q, kt, v};
  int x = gb.value("scores", {kB, kH, kL, kS});
  gb.node("MatMul", {q, kt}, x);
  if (!c.scale_op.empty()) {
    const int f = gb.g.add_constant("factor", scalar_tensor(c.scale_op == "Div" ? 2.0 : 0.5, DType::Float32));
    const int y = gb.value("scaled", {kB, kH, kL, kS});
    gb.node(c.scale_op, {x, f}, y);
    x = y;
  }
  if (c.mask) {
    const int m = gb.value("mask", c.mask_shape);
    gb.g.inputs.push_back(m);
    const int y = gb.value("masked", {kB, kH, kL, kS});
    gb.node("Add", c.mask_first ? std::vector<int>{m, x} : std::vector<int>{x, m}, y);
    x = y;
  }
  const int p = gb.value("probs", {kB, kH, kL, kS}), out = gb.value("out", {kB, kH, kL, kEv});
  gb.node("Softmax", {x}, p).attrs["axis"] = c.axis;
  gb.node("MatMul", {p, v}, out);
  gb.g.outputs = {out};
  if (c.merge_heads) {
    const int t = gb.value("heads_last", {kB, kL, kH, kEv});
    gb.node("Transpose", {out}, t).attrs["perm"] = std::vector<int64_t>{0, 2, 1, 3};
    gb.g.outputs = {t};
  }
  if (c.probs_output) gb.g.outputs.push_back(p);
  return gb.g;
}

std::vector<Tensor> feeds_of(const Graph& g) {
  manual_seed(41);
  std::vector<Tensor> feeds;
  for (int id : g.inputs) feeds.push_back(randn(*g.value(id).static_shape()) * 2.0);
  return feeds;
}

size_t count_ops(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op ? 1 : 0;
  return n;
}

// Fuses `c`'s chain: one fusion, a Transpose and the op left, the output's
// name kept, the values as the unfused graph's.
void check_fused(const Chain& c, double scale) {
  const Graph unfused = chain_graph(c);
  Graph fused = unfused;
  REQUIRE(fuse_attention(fused) == 1);
  CHECK(fused.validate().ok());
  REQUIRE(fused.nodes.size() == 2);
  CHECK(fused.nodes[0].op_type == "Transpose");
  CHECK(fused.nodes[0].get_ints("perm") == std::vector<int64_t>{0, 1, 3, 2});
  const Node& op = fused.nodes[1];
  CHECK(op.op_type == "ember::ScaledDotProductAttention");
  CHECK(op.get_float("scale", 0.0) == scale);
  CHECK(op.inputs.size() == 4);
  CHECK((op.inputs[3] >= 0) == c.mask);
  CHECK(fused.value(op.outputs[0]).name == (c.merge_heads ? "heads_last" : "out"));
  CHECK(op.get_int("transpose_output", 0) == (c.merge_heads ? 1 : 0));
  const std::vector<Tensor> feeds = feeds_of(unfused);
  const Tensor want = testing::lower_and_run(unfused, feeds)[0];
  const Tensor got = testing::lower_and_run(fused, feeds)[0];
  ember::testing::check_close(got, want, 1e-6, 1e-6);
}

}  // namespace

TEST_CASE("fuse_attention: MatMul, Div, Add of a padding mask, Softmax, MatMul") {
  check_fused(Chain{}, 0.5);
}

TEST_CASE("fuse_attention: a Mul scale, the mask first, no scale, no mask") {
  Chain mul;
  mul.scale_op = "Mul";
  mul.mask_first = true;
  check_fused(mul, 0.5);
  Chain bare;
  bare.scale_op = "";
  bare.mask = false;
  check_fused(bare, 1.0);
  Chain heads;  // the heads' Transpose taken in as the output's layout
  heads.merge_heads = true;
  check_fused(heads, 0.5);
  Chain full_mask;  // a mask of the scores' own shape; a Softmax axis given as 3
  full_mask.mask_shape = {kB, kH, kL, kS};
  full_mask.axis = 3;
  check_fused(full_mask, 0.5);
}

TEST_CASE("fuse_attention: chains it must not fuse stay as they are") {
  auto unchanged = [](const Chain& c) {
    Graph g = chain_graph(c);
    const size_t nodes = g.nodes.size();
    CHECK(fuse_attention(g) == 0);
    CHECK(g.nodes.size() == nodes);
  };
  Chain axis;  // a Softmax over another axis
  axis.axis = 2;
  unchanged(axis);
  Chain read;  // the probabilities read elsewhere (a graph output)
  read.probs_output = true;
  unchanged(read);
  Chain wide;  // a mask of more dims than the scores
  wide.mask_shape = {1, kB, 1, 1, kS};
  unchanged(wide);
}

}  // namespace ember::converter
