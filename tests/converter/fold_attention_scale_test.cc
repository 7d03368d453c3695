// fold_attention_scales (converter/fuse.cc): attention's Div(MatMul(Q, Kt),
// sqrt(d)) (or a Mul by a constant) folded into the weight and bias of the
// Gemm that computes Q (or Kt) through Reshape/Transpose: no Div left, the
// unfused graph's values within 1e-6, the new weight W / c in float32. Other
// patterns stay exactly as they were.
#include <cmath>

#include "converter/convert.h"
#include "converter/passes.h"
#include "tests/converter/one_node.h"
#include "tests/harness/testing.h"

namespace ember::converter {

using testing::dims_of;

namespace {

constexpr int64_t kB = 2, kS = 5, kHeads = 2, kHead = 8, kD = kHeads * kHead;

// How the attention graph below is built.
struct Attn {
  std::string op = "Div";
  Tensor factor = scalar_tensor(std::sqrt(8.0), DType::Float32);
  bool factor_first = false;     // Mul(c, M)
  bool q_from_gemm = true;       // else Q [B, h, S, d] is a graph input
  bool k_from_gemm = true;       // else Kt [B, h, d, S] is a graph input
  bool shared_weight = false;    // the K Gemm reads the Q Gemm's weight and bias
  bool relu_on_q = false;        // Gemm -> Relu -> Reshape on Q's way
  bool q_gemm_output = false;    // the Q Gemm's output is a graph output too
  bool q_gemm_shape = false;     // ... read by a Shape node (a graph output)
  bool scores_read_twice = false;  // the MatMul's output is read by a Relu too (a graph output)
};

using Builder = testing::GraphBuilder;

// x [B, S, D] -> Gemm(x, Wq, bq) (fuse_matmul_bias's form: W [K, N], bias
// [N]) -> Reshape [B, S, h, d] -> Transpose -> Q [B, h, S, d]; the same for
// K with perm [0, 2, 3, 1] -> Kt [B, h, d, S]; MatMul(Q, Kt) -> Div by c (or
// Mul) -> Softmax = y.
Graph attention_graph(const Attn& a) {
  Builder gb;
  manual_seed(31);
  const int x = gb.value("x", {kB, kS, kD});
  gb.g.inputs.push_back(x);
  const int wq = gb.g.add_constant("wq", randn({kD, kD}) * 0.3), bq = gb.g.add_constant("bq", randn({kD}) * 0.5);
  const int wk = gb.g.add_constant("wk", randn({kD, kD}) * 0.3), bk = gb.g.add_constant("bk", randn({kD}) * 0.5);
  const int shape = gb.g.add_constant("heads", tensor(std::vector<int64_t>{kB, kS, kHeads, kHead}, {4}));
  auto heads = [&](const std::string& p, int w, int b, std::vector<int64_t> perm, std::vector<int64_t> dims) {
    const int lin = gb.value(p + "_lin", {kB, kS, kD});
    gb.node("Gemm", {x, w, b}, lin);
    int src = lin;
    if (p == "q" && a.relu_on_q) {
      src = gb.value("q_relu", {kB, kS, kD});
      gb.node("Relu", {lin}, src);
    }
    if (p == "q" && a.q_gemm_output) gb.g.outputs.push_back(lin);
    if (p == "q" && a.q_gemm_shape) {
      const int s = gb.value("q_shape", {3}, DType::Int64);
      gb.node("Shape", {lin}, s);
      gb.g.outputs.push_back(s);
    }
    const int r = gb.value(p + "_4d", {kB, kS, kHeads, kHead}), t = gb.value(p + "_heads", dims);
    gb.node("Reshape", {src, shape}, r);
    gb.node("Transpose", {r}, t).attrs["perm"] = perm;
    return t;
  };
  int q, kt;
  if (a.q_from_gemm) {
    q = heads("q", wq, bq, {0, 2, 1, 3}, {kB, kHeads, kS, kHead});
  } else {
    q = gb.value("q", {kB, kHeads, kS, kHead});
    gb.g.inputs.push_back(q);
  }
  if (a.k_from_gemm) {
    kt = heads("k", a.shared_weight ? wq : wk, a.shared_weight ? bq : bk, {0, 2, 3, 1}, {kB, kHeads, kHead, kS});
  } else {
    kt = gb.value("kt", {kB, kHeads, kHead, kS});
    gb.g.inputs.push_back(kt);
  }
  const int m = gb.value("scores", {kB, kHeads, kS, kS}), d = gb.value("scaled", {kB, kHeads, kS, kS});
  const int y = gb.value("probs", {kB, kHeads, kS, kS});
  const int c = gb.g.add_constant("scale", a.factor);
  gb.node("MatMul", {q, kt}, m);
  gb.node(a.op, a.factor_first ? std::vector<int>{c, m} : std::vector<int>{m, c}, d);
  gb.node("Softmax", {d}, y).attrs["axis"] = int64_t{-1};
  gb.g.outputs.push_back(y);
  if (a.scores_read_twice) {
    const int r = gb.value("scores_relu", {kB, kHeads, kS, kS});
    gb.node("Relu", {m}, r);
    gb.g.outputs.push_back(r);
  }
  return gb.g;
}

// The graph's feeds, in input order.
std::vector<Tensor> feeds_of(const Graph& g) {
  manual_seed(32);
  std::vector<Tensor> feeds;
  for (int id : g.inputs) feeds.push_back(randn(*g.value(id).static_shape()));
  return feeds;
}

const Tensor& constant_read(const Graph& g, const std::string& node_op, int nth, size_t input) {
  for (const Node& n : g.nodes) {
    if (n.op_type == node_op && nth-- == 0) return g.value(n.inputs.at(input)).constant;
  }
  FAIL("no such node");
  static const Tensor none;
  return none;
}

// t / f (or t * f), float32, element by element.
std::vector<float> scaled(const Tensor& t, float f, bool divide) {
  std::vector<float> v = t.to_vector<float>();
  for (float& x : v) x = divide ? x / f : x * f;
  return v;
}

// `after` is `before`: the same nodes and the same values, constants bit for bit.
void check_unchanged(const Graph& after, const Graph& before) {
  REQUIRE(after.nodes.size() == before.nodes.size());
  for (size_t i = 0; i < before.nodes.size(); ++i) {
    CHECK(after.nodes[i].op_type == before.nodes[i].op_type);
    CHECK(after.nodes[i].inputs == before.nodes[i].inputs);
    CHECK(after.nodes[i].outputs == before.nodes[i].outputs);
  }
  CHECK(after.outputs == before.outputs);
  REQUIRE(after.values.size() == before.values.size());
  for (size_t i = 0; i < before.values.size(); ++i) {
    CHECK(after.values[i].name == before.values[i].name);
    REQUIRE(after.values[i].is_constant() == before.values[i].is_constant());
    if (before.values[i].is_constant()) {
      ember::testing::check_equal(after.values[i].constant, before.values[i].constant);
    }
  }
}

size_t count_ops(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op ? 1 : 0;
  return n;
}

// Folds `a`'s graph: one fold, no `a.op` left, the MatMul writes the graph's
// value, and every output as the unfused graph's within 1e-6.
Graph check_folded(const Attn& a) {
  const Graph unfused = attention_graph(a);
  Graph fused = unfused;
  REQUIRE(fold_attention_scales(fused) == 1);
  CHECK(fused.validate().ok());
  CHECK(count_ops(fused, a.op) == 0);
  CHECK(fused.nodes.size() == unfused.nodes.size() - 1);
  CHECK(fused.outputs == unfused.outputs);
  for (const Node& n : fused.nodes) {
    if (n.op_type == "MatMul") CHECK(n.outputs == std::vector<int>{fused.find_value("scaled")});
  }
  const std::vector<Tensor> feeds = feeds_of(unfused);
  const std::vector<Tensor> want = testing::lower_and_run(unfused, feeds);
  const std::vector<Tensor> got = testing::lower_and_run(fused, feeds);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    if (want[k].dtype() == DType::Float32) {
      ember::testing::check_close(got[k], want[k], 1e-6, 1e-7);
    } else {
      ember::testing::check_equal(got[k], want[k]);
    }
  }
  CHECK(want[0].max().item<float>() > 0.3f);  // not uniform (0.2): the scores differ, the scale matters
  return fused;
}

}  // namespace

TEST_CASE("fold_attention_scales: Gemm -> Reshape -> Transpose -> MatMul -> Div(sqrt 8) -> Softmax, into Q's Gemm") {
  const Attn a;
  const Graph unfused = attention_graph(a);
  const Graph fused = check_folded(a);
  const float c = unfused.value(unfused.find_value("scale")).constant.item<float>();
  // Q's weight and bias divided in float32 (in place: the Gemm read them
  // alone; the names stay); K's untouched.
  CHECK(constant_read(fused, "Gemm", 0, 1).to_vector<float>() ==
        scaled(constant_read(unfused, "Gemm", 0, 1), c, true));
  CHECK(constant_read(fused, "Gemm", 0, 2).to_vector<float>() ==
        scaled(constant_read(unfused, "Gemm", 0, 2), c, true));
  CHECK(fused.nodes[0].inputs == unfused.nodes[0].inputs);
  ember::testing::check_equal(constant_read(fused, "Gemm", 1, 1), constant_read(unfused, "Gemm", 1, 1));
  ember::testing::check_equal(constant_read(fused, "Gemm", 1, 2), constant_read(unfused, "Gemm", 1, 2));
  // The fold is not a no-op: the scores without the Div differ.
  Graph no_div = unfused;
  no_div.value(no_div.find_value("scale")).constant = scalar_tensor(1.0, DType::Float32);
  const std::vector<Tensor> feeds = feeds_of(unfused);
  const Tensor with = testing::lower_and_run(unfused, feeds)[0], without = testing::lower_and_run(no_div, feeds)[0];
  CHECK((with - without).abs().max().item<float>() > 1e-2f);
}

TEST_CASE("fold_attention_scales: Mul by 0.125 (either operand order) folded as the Div") {
  for (const bool first : {false, true}) {
    CAPTURE(first);
    Attn a;
    a.op = "Mul";
    a.factor = scalar_tensor(0.125, DType::Float32);
    a.factor_first = first;
    const Graph unfused = attention_graph(a);
    const Graph fused = check_folded(a);
    CHECK(constant_read(fused, "Gemm", 0, 1).to_vector<float>() ==
          scaled(constant_read(unfused, "Gemm", 0, 1), 0.125f, false));
    CHECK(constant_read(fused, "Gemm", 0, 2).to_vector<float>() ==
          scaled(constant_read(unfused, "Gemm", 0, 2), 0.125f, false));
  }
}

TEST_CASE("fold_attention_scales: through the MatMul's input 1 when input 0 is no Gemm's") {
  for (const bool relu_on_q : {false, true}) {
    CAPTURE(relu_on_q);
    Attn a;
    a.q_from_gemm = relu_on_q;  // Q a graph input, or a Gemm's through a Relu
    a.relu_on_q = relu_on_q;
    const Graph unfused = attention_graph(a);
    const Graph fused = check_folded(a);
    const int k_gemm = relu_on_q ? 1 : 0;
    const float c = unfused.value(unfused.find_value("scale")).constant.item<float>();
    CHECK(constant_read(fused, "Gemm", k_gemm, 1).to_vector<float>() ==
          scaled(constant_read(unfused, "Gemm", k_gemm, 1), c, true));
    CHECK(constant_read(fused, "Gemm", k_gemm, 2).to_vector<float>() ==
          scaled(constant_read(unfused, "Gemm", k_gemm, 2), c, true));
    if (relu_on_q) {
      ember::testing::check_equal(constant_read(fused, "Gemm", 0, 1), constant_read(unfused, "Gemm", 0, 1));
    }
  }
}

TEST_CASE("fold_attention_scales: a Gemm output also read by a Shape node (torch's .view) still folds") {
  Attn a;
  a.k_from_gemm = false;
  a.q_gemm_shape = true;
  check_folded(a);
}

TEST_CASE("fold_attention_scales: a weight and bias shared by two Gemms keep their values for the other") {
  Attn a;
  a.shared_weight = true;
  const Graph unfused = attention_graph(a);
  const Graph fused = check_folded(a);  // the other Gemm's values, too, as before
  const float c = unfused.value(unfused.find_value("scale")).constant.item<float>();
  // Q's Gemm reads new constants; K's the old ones, unchanged.
  CHECK(fused.nodes[0].inputs[1] != unfused.nodes[0].inputs[1]);
  CHECK(fused.nodes[0].inputs[2] != unfused.nodes[0].inputs[2]);
  CHECK(constant_read(fused, "Gemm", 0, 1).to_vector<float>() ==
        scaled(constant_read(unfused, "Gemm", 0, 1), c, true));
  CHECK(constant_read(fused, "Gemm", 0, 2).to_vector<float>() ==
        scaled(constant_read(unfused, "Gemm", 0, 2), c, true));
  const int wq = unfused.find_value("wq"), bq = unfused.find_value("bq");
  for (const Node& n : fused.nodes) {
    if (n.op_type == "Gemm" && n.outputs[0] == fused.find_value("k_lin")) CHECK(n.inputs[1] == wq);
  }
  ember::testing::check_equal(fused.value(wq).constant, unfused.value(wq).constant);
  ember::testing::check_equal(fused.value(bq).constant, unfused.value(bq).constant);
}

TEST_CASE("fold_attention_scales: other patterns stay exactly as they were") {
  auto left_alone = [](const Attn& a) {
    const Graph before = attention_graph(a);
    Graph after = before;
    CHECK(fold_attention_scales(after) == 0);
    check_unchanged(after, before);
  };
  SUBCASE("the MatMul's output read twice") {
    Attn a;
    a.scores_read_twice = true;
    left_alone(a);
  }
  SUBCASE("a divisor of more than one element") {
    Attn a;
    a.factor = full({kS}, 2.0);
    left_alone(a);
  }
  SUBCASE("a divisor of higher rank than the scores") {
    Attn a;
    a.factor = full({1, 1, 1, 1, 1}, 2.0);
    left_alone(a);
  }
  SUBCASE("a divisor of 0, inf, nan; a float64 one") {
    for (const double v : {0.0, double(INFINITY), double(NAN)}) {
      Attn a;
      a.factor = scalar_tensor(v, DType::Float32);
      left_alone(a);
    }
    Attn a;
    a.factor = scalar_tensor(2.0, DType::Float64);
    left_alone(a);
  }
  SUBCASE("c / M is not a scale") {
    Attn a;
    a.factor_first = true;
    left_alone(a);
  }
  SUBCASE("the Gemm's output is a graph output too") {
    Attn a;
    a.k_from_gemm = false;
    a.q_gemm_output = true;
    left_alone(a);
  }
  SUBCASE("a Relu between the Gemm and the MatMul") {
    Attn a;
    a.k_from_gemm = false;
    a.relu_on_q = true;
    left_alone(a);
  }
  SUBCASE("no Gemm behind either input") {
    Attn a;
    a.q_from_gemm = false;
    a.k_from_gemm = false;
    left_alone(a);
  }
}

TEST_CASE("run_passes: attention scales folded with MatMul biases, and not when MatMuls must stay") {
  // MatMul + Add(bias) as torch exports a Linear: fuse_matmul_bias makes the
  // Gemm, then the Div folds into it.
  Builder gb;
  manual_seed(33);
  const int x = gb.value("x", {kS, kD}), kt = gb.value("kt", {kD, kS});
  gb.g.inputs = {x, kt};
  const int w = gb.g.add_constant("w", randn({kD, kD}) * 0.3), b = gb.g.add_constant("b", randn({kD}));
  const int c = gb.g.add_constant("c", scalar_tensor(4.0, DType::Float32));
  const int mm = gb.value("mm", {kS, kD}), q = gb.value("q", {kS, kD}), s = gb.value("s", {kS, kS});
  const int y = gb.value("y", {kS, kS});
  gb.node("MatMul", {x, w}, mm);
  gb.node("Add", {mm, b}, q);
  gb.node("MatMul", {q, kt}, s);
  gb.node("Div", {s, c}, y);
  gb.g.outputs = {y};
  Graph fused = gb.g;
  auto r = run_passes(fused);
  REQUIRE(r.ok());
  CHECK(r->matmul_biases_fused == 1);
  CHECK(r->attention_scales_folded == 1);
  CHECK(r->summary().find("folded 1 attention scales into Gemms") != std::string::npos);
  CHECK(fused.op_histogram() == std::map<std::string, int>{{"Gemm", 1}, {"MatMul", 1}});
  const std::vector<Tensor> feeds = feeds_of(gb.g);
  ember::testing::check_close(testing::lower_and_run(fused, feeds)[0], testing::lower_and_run(gb.g, feeds)[0], 1e-6,
                              1e-6);
  Graph kept = gb.g;
  auto r2 = run_passes(kept, /*fuse_matmul_biases=*/false);
  REQUIRE(r2.ok());
  CHECK(r2->attention_scales_folded == 0);
  CHECK(kept.op_histogram() == std::map<std::string, int>{{"Add", 1}, {"Div", 1}, {"MatMul", 2}});
  ember::testing::check_equal(kept.value(kept.find_value("w")).constant, gb.g.value(gb.g.find_value("w")).constant);
}

}  // namespace ember::converter
