// fuse_matmul_bias, fuse_gelus and fuse_hardswishes (converter/fuse.cc, fuse_norm.cc): MatMul +
// Add of a constant bias (+ Relu) becomes one Gemm -> Linear whose bias and
// activation the GEMM applies as it stores C, and torch's 5-node erf GELU one
// Gelu, Mul(x, HardSigmoid(x)) one HardSwish; the first two run to the unfused graph's values exactly (the CPU kernels
// compute the same operations in the same order; a product of few rows within
// 1e-4). fuse_residual_adds: a 3x3 Conv and the Add of a residual (then its
// Relu) become one Conv2d with the residual as its 4th input, exactly the
// unfused values. Other patterns stay.
#include "converter/convert.h"
#include "converter/onnx_import.h"
#include "converter/passes.h"
#include "tests/converter/one_node.h"
#include "tests/harness/testing.h"

namespace ember::converter {

using ember::testing::check_equal;
using testing::dims_of;

namespace {

using Builder = testing::GraphBuilder;

// x [B, M, K] -> Add(bias, MatMul(x, W)) (-> Relu); bias of `bias_n` values.
Graph linear_graph(int64_t b, int64_t m, int64_t k, int64_t n, bool relu, int64_t bias_n) {
  Builder gb;
  const int x = gb.value("x", {b, m, k});
  gb.g.inputs.push_back(x);
  manual_seed(5);
  const int w = gb.g.add_constant("w", randn({k, n}));
  const int bias = gb.g.add_constant("bias", randn({bias_n}));
  const int mm = gb.value("mm", {b, m, n}), y = gb.value("y", {b, m, n});
  gb.node("MatMul", {x, w}, mm);
  gb.node("Add", {bias, mm}, y);
  if (relu) {
    const int r = gb.value("r", {b, m, n});
    gb.node("Relu", {y}, r);
    gb.g.outputs.push_back(r);
  } else {
    gb.g.outputs.push_back(y);
  }
  return gb.g;
}

// x [2, 70, 16] -> Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), half).
Graph gelu_graph(float half) {
  Builder gb;
  const int x = gb.value("x", {2, 70, 16});
  gb.g.inputs.push_back(x);
  const int sqrt2 = gb.g.add_constant("sqrt2", scalar_tensor(1.4142135381698608, DType::Float32));
  const int one = gb.g.add_constant("one", scalar_tensor(1.0, DType::Float32));
  const int h = gb.g.add_constant("half", scalar_tensor(half, DType::Float32));
  const int d = gb.value("d", {2, 70, 16}), e = gb.value("e", {2, 70, 16}), a = gb.value("a", {2, 70, 16});
  const int m = gb.value("m", {2, 70, 16}), y = gb.value("y", {2, 70, 16});
  gb.node("Div", {x, sqrt2}, d);
  gb.node("Erf", {d}, e);
  gb.node("Add", {e, one}, a);
  gb.node("Mul", {x, a}, m);
  gb.node("Mul", {m, h}, y);
  gb.g.outputs.push_back(y);
  return gb.g;
}

// y = Mul(x, HardSigmoid(x; alpha, beta 0.5)) (operands swapped: Mul(hs, x));
// `extra_reader`: the HardSigmoid's output is also a graph output.
Graph hardswish_graph(float alpha, bool swapped, bool extra_reader) {
  Builder gb;
  const int x = gb.value("x", {2, 70, 16});
  gb.g.inputs.push_back(x);
  const int hs = gb.value("hs", {2, 70, 16}), y = gb.value("y", {2, 70, 16});
  gb.node("HardSigmoid", {x}, hs);
  gb.g.nodes.back().attrs = {{"alpha", static_cast<double>(alpha)}, {"beta", 0.5}};
  gb.node("Mul", swapped ? std::vector<int>{hs, x} : std::vector<int>{x, hs}, y);
  gb.g.outputs.push_back(y);
  if (extra_reader) gb.g.outputs.push_back(hs);
  return gb.g;
}

// x [1, 6, 9, 9] -> Conv 3x3 (pad 1; `groups`) or, with gemm, x [5, 40] -> Gemm
// (transB; alpha 0.5 when `groups` > 1: not a Linear, composed ops) with a
// bias, then HardSwish or its opset < 14 form x * HardSigmoid(x).
Graph producer_hardswish_graph(bool gemm, int64_t groups, bool decomposed) {
  Builder gb;
  manual_seed(12);
  const std::vector<int64_t> shape = gemm ? std::vector<int64_t>{5, 8} : std::vector<int64_t>{1, 6, 9, 9};
  const int x = gb.value("x", gemm ? std::vector<int64_t>{5, 40} : std::vector<int64_t>{1, 6, 9, 9});
  gb.g.inputs.push_back(x);
  const int w = gb.g.add_constant("w", gemm ? randn({8, 40}) * 0.5 : randn({6, 6 / groups, 3, 3}) * 0.6);
  const int b = gb.g.add_constant("b", randn({gemm ? 8 : 6}));
  const int p = gb.value("p", shape), y = gb.value("y", shape);
  gb.node(gemm ? "Gemm" : "Conv", {x, w, b}, p);
  if (gemm) {
    gb.g.nodes.back().attrs = {{"transB", int64_t{1}}, {"alpha", groups > 1 ? 0.5 : 1.0}};
  } else {
    gb.g.nodes.back().attrs = {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", groups}};
  }
  if (decomposed) {
    const int hs = gb.value("hs", shape);
    gb.node("HardSigmoid", {p}, hs);
    gb.g.nodes.back().attrs = {{"alpha", 1.0 / 6.0}, {"beta", 0.5}};
    gb.node("Mul", {p, hs}, y);
  } else {
    gb.node("HardSwish", {p}, y);
  }
  gb.g.outputs.push_back(y);
  return gb.g;
}

// A ResNet block: x [1, 8, 10, 10] -> Conv 3x3 -> Relu -> Conv 3x3 = y; d, a
// 1x1 Conv of x made after y (the downsample); Add(y, d) (or Add(d, y)) ->
// Relu. `d_hw`: d's height and width (1: a broadcast); `read_twice`: y and d
// are graph outputs too.
Graph residual_graph(bool swapped, int64_t d_hw, bool read_twice) {
  Builder gb;
  manual_seed(17);
  const int x = gb.value("x", {1, 8, 10, 10});
  gb.g.inputs.push_back(x);
  const int w1 = gb.g.add_constant("w1", randn({8, 8, 3, 3}) * 0.3), b1 = gb.g.add_constant("b1", randn({8}));
  const int w2 = gb.g.add_constant("w2", randn({8, 8, 3, 3}) * 0.3), b2 = gb.g.add_constant("b2", randn({8}));
  const int w3 = gb.g.add_constant("w3", randn({8, 8, 1, 1}));
  const int a = gb.value("a", {1, 8, 10, 10}), ar = gb.value("ar", {1, 8, 10, 10}), y = gb.value("y", {1, 8, 10, 10});
  const int d = gb.value("d", {1, 8, d_hw, d_hw}), s = gb.value("s", {1, 8, 10, 10}), out = gb.value("out", {1, 8, 10, 10});
  const std::map<std::string, Attr> pad1 = {{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  gb.node("Conv", {x, w1, b1}, a);
  gb.g.nodes.back().attrs = pad1;
  gb.node("Relu", {a}, ar);
  gb.node("Conv", {ar, w2, b2}, y);
  gb.g.nodes.back().attrs = pad1;
  gb.node("Conv", {x, w3}, d);
  if (d_hw == 1) gb.g.nodes.back().attrs = {{"strides", std::vector<int64_t>{10, 10}}};
  gb.node("Add", swapped ? std::vector<int>{d, y} : std::vector<int>{y, d}, s);
  gb.node("Relu", {s}, out);
  gb.g.outputs.push_back(out);
  if (read_twice) {
    gb.g.outputs.push_back(y);
    gb.g.outputs.push_back(d);
  }
  return gb.g;
}

}  // namespace

TEST_CASE("fuse_residual_adds: Conv + Add of a residual + Relu -> one Conv2d of 4 inputs, the unfused values") {
  manual_seed(18);
  const Tensor x = randn({1, 8, 10, 10});
  for (const bool swapped : {false, true}) {
    CAPTURE(swapped);
    const Graph unfused = residual_graph(swapped, 10, false);
    Graph fused = unfused;
    REQUIRE(fuse_residual_adds(fused) == 1);
    REQUIRE(fuse_activations(fused) == 2);
    REQUIRE(fused.nodes.size() == 3);
    CHECK(fused.validate().ok());
    // The second 3x3 Conv in the Add's place, after the downsample it reads
    // as its residual (the 1x1 downsample, first operand when swapped, is
    // not the Winograd shape: it keeps its output).
    const Node& conv = fused.nodes[2];
    CHECK(conv.op_type == "Conv");
    REQUIRE(conv.inputs.size() == 4);
    CHECK(conv.inputs[3] == fused.find_value("d"));
    CHECK(conv.inputs[1] == fused.find_value("w2"));
    CHECK(conv.outputs == std::vector<int>{fused.find_value("out")});
    CHECK(conv.get_string("activation", "") == "Relu");
    auto def = lower(fused);
    REQUIRE_MESSAGE(def.ok(), def.diag().message);
    REQUIRE(def->ops.size() == 3);
    CHECK(def->ops[2].op == OpKind::Conv2d);
    CHECK(def->ops[2].inputs.size() == 4);
    check_equal(testing::lower_and_run(fused, {x})[0], testing::lower_and_run(unfused, {x})[0]);
    // int8 weights (the run-time QConv2d adds the residual, then the ReLU).
    ConvertOptions int8;
    int8.quantize = "dynamic-int8";
    int8.quantize_ops = {"Conv"};
    auto run_int8 = [&](const Graph& g) {
      auto q = lower(g);
      REQUIRE(q.ok());
      QuantizeReport report;
      REQUIRE(quantize_weights(*q, int8, &report).ok());
      CHECK(report.quantized == 3);
      ExecutionContext ctx(testing::executor_of(*q));
      Result<std::vector<Tensor>> out = ctx.run({x});
      REQUIRE(out.ok());
      return out.get()[0].clone();
    };
    const Tensor q = run_int8(fused);
    check_equal(q, run_int8(unfused));
    ember::testing::check_close(q, testing::lower_and_run(unfused, {x})[0], 0.1, 0.1);
  }
  // A broadcast residual, and Conv outputs read elsewhere too, stay an Add.
  Graph broadcast = residual_graph(false, 1, false);
  CHECK(fuse_residual_adds(broadcast) == 0);
  Graph read_twice = residual_graph(false, 10, true);
  CHECK(fuse_residual_adds(read_twice) == 0);
  CHECK(read_twice.nodes.size() == 6);
}

TEST_CASE("fuse_activations: a Conv's or Gemm's HardSwish becomes its activation, the op's values bit for bit") {
  // The GEMM path (groups 1), the depthwise one (groups 6), a Linear and a
  // Gemm that lowers to MatMul and Mul ops (then a Hardswish op follows them);
  // the HardSwish alone or as x * HardSigmoid(x) (fuse_hardswishes first, as run_passes).
  manual_seed(13);
  for (const bool gemm : {false, true}) {
    for (const int64_t groups : {int64_t{1}, int64_t{6}}) {
      for (const bool decomposed : {false, true}) {
        CAPTURE(gemm);
        CAPTURE(groups);
        CAPTURE(decomposed);
        const Tensor x = randn(gemm ? Shape{5, 40} : Shape{1, 6, 9, 9}) * 2.0;
        const Graph unfused = producer_hardswish_graph(gemm, groups, decomposed);
        Graph fused = unfused;
        CHECK(fuse_hardswishes(fused) == (decomposed ? 1 : 0));
        REQUIRE(fuse_activations(fused) == 1);
        REQUIRE(fused.nodes.size() == 1);
        CHECK(fused.nodes[0].get_string("activation", "") == "HardSwish");
        auto def = lower(fused);
        REQUIRE_MESSAGE(def.ok(), def.diag().message);
        const OpParams& params = def->ops[0].params;
        if (gemm && groups > 1) {
          CHECK(def->ops.back().op == OpKind::Hardswish);
        } else {
          const Activation act =
              gemm ? std::get<LinearParams>(params).activation : std::get<Conv2dParams>(params).activation;
          CHECK(act.kind == ActivationKind::HardSwish);
        }
        const Tensor got = testing::lower_and_run(fused, {x})[0];
        CHECK(got.min().item<float>() < 0.0f);  // the kink is crossed
        Graph alone = unfused;  // the HardSwish op after the producer (x * HardSigmoid(x) rounds otherwise)
        fuse_hardswishes(alone);
        check_equal(got, testing::lower_and_run(alone, {x})[0]);
      }
    }
  }
}

TEST_CASE("fuse_matmul_bias: MatMul + Add (+ Relu) -> one Linear, exactly the unfused graph's values") {
  // Rows: few (the unpacked few-row product, bias and Relu as a pass) and
  // many (blocked, in the micro-kernel's store); K over one K block of 256.
  for (const int64_t m : {3, 70}) {
    for (const bool relu : {false, true}) {
      CAPTURE(m);
      CAPTURE(relu);
      const Graph unfused = linear_graph(2, m, 300, 40, relu, 40);
      Graph fused = unfused;
      REQUIRE(fuse_matmul_bias(fused) == 1);
      CHECK(fuse_activations(fused) == (relu ? 1 : 0));
      REQUIRE(fused.nodes.size() == 1);
      CHECK(fused.nodes[0].op_type == "Gemm");
      CHECK(fused.nodes[0].has("activation") == relu);
      CHECK(fused.nodes[0].outputs == std::vector<int>{unfused.outputs[0]});
      manual_seed(7);
      const Tensor x = randn({2, m, 300});
      const Tensor want = testing::lower_and_run(unfused, {x})[0];
      const Tensor got = testing::lower_and_run(fused, {x})[0];
      if (m * 2 > 64) {
        check_equal(got, want);
      } else {
        // Few rows skip packing (gemv.h): the Linear reads W^T by dot products
        // where the MatMul read W row by row; the sums (300 terms of about
        // 1, cancelling) round differently.
        ember::testing::check_close(got, want, 1e-4, 1e-4);
      }
      // And the definition.
      Tensor ref = matmul(x, unfused.value(unfused.find_value("w")).constant) +
                   unfused.value(unfused.find_value("bias")).constant;
      if (relu) ref = ember::relu(ref);
      ember::testing::check_close(want, ref, 1e-4, 1e-4);
    }
  }
}

TEST_CASE("fuse_matmul_bias: a bias that is not one per column stays an Add") {
  Graph g = linear_graph(1, 4, 8, 6, false, 1);  // a broadcast scalar-like [1]
  CHECK(fuse_matmul_bias(g) == 0);
  CHECK(g.nodes.size() == 2);
}

TEST_CASE("fuse_gelus: torch's erf GELU -> one Gelu, the unfused graph's values") {
  const Graph unfused = gelu_graph(0.5f);
  Graph fused = unfused;
  REQUIRE(fuse_gelus(fused) == 1);
  REQUIRE(fused.nodes.size() == 1);
  CHECK(fused.nodes[0].op_type == "Gelu");
  CHECK(fused.nodes[0].inputs == std::vector<int>{unfused.inputs[0]});
  manual_seed(9);
  const Tensor x = randn({2, 70, 16}) * 3.0;
  const Tensor want = testing::lower_and_run(unfused, {x})[0];
  // Bitwise where the kernel divides as the unfused ops; the AVX-512 kernel's
  // within 4 ulp of x / 2 (elementwise_test's gelu sweep).
  ember::testing::check_close(testing::lower_and_run(fused, {x})[0], want, 1e-6, 2e-6);
  ember::testing::check_close(want, gelu(x), 1e-5, 1e-5);
}

TEST_CASE("fuse_gelus: another constant than 0.5 stays five nodes") {
  Graph g = gelu_graph(0.25f);
  CHECK(fuse_gelus(g) == 0);
  CHECK(g.nodes.size() == 5);
}

TEST_CASE("fuse_hardswishes: Mul(x, HardSigmoid(x)) with alpha 1/6 -> one HardSwish; other forms stay") {
  manual_seed(10);
  const Tensor x = randn({2, 70, 16}) * 4.0;
  for (const bool swapped : {false, true}) {
    CAPTURE(swapped);
    const Graph unfused = hardswish_graph(1.0f / 6.0f, swapped, false);
    Graph fused = unfused;
    REQUIRE(fuse_hardswishes(fused) == 1);
    REQUIRE(fused.nodes.size() == 1);
    CHECK(fused.nodes[0].op_type == "HardSwish");
    CHECK(fused.nodes[0].inputs == std::vector<int>{unfused.inputs[0]});
    const Tensor got = testing::lower_and_run(fused, {x})[0];
    check_equal(got, hardswish(x));
    // x * clamp(x / 6 + 0.5, 0, 1) and x * relu6(x + 3) / 6 round differently.
    ember::testing::check_close(got, testing::lower_and_run(unfused, {x})[0], 1e-6, 1e-6);
  }
  Graph other_alpha = hardswish_graph(0.2f, false, false);
  CHECK(fuse_hardswishes(other_alpha) == 0);
  Graph read_twice = hardswish_graph(1.0f / 6.0f, false, true);
  CHECK(fuse_hardswishes(read_twice) == 0);
  CHECK(read_twice.nodes.size() == 2);
}

}  // namespace ember::converter

namespace ember::converter {
namespace {

size_t count_ops(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op ? 1 : 0;
  return n;
}

// x [2, 9, 16] read by three Gemms (fuse_matmul_bias's form) of 8, 8 and 12
// columns, each output a graph output; a fourth of another depth reads y.
Graph siblings_graph() {
  Builder gb;
  manual_seed(12);
  const int x = gb.value("x", {2, 9, 16});
  gb.g.inputs.push_back(x);
  int n = 0;
  for (int64_t cols : {8, 8, 12}) {
    const std::string p = "p" + std::to_string(n++);
    const int w = gb.g.add_constant(p + "_w", randn({16, cols})), b = gb.g.add_constant(p + "_b", randn({cols}));
    const int y = gb.value(p, {2, 9, cols});
    gb.node("Gemm", {x, w, b}, y);
    gb.g.outputs.push_back(y);
  }
  const int w = gb.g.add_constant("w4", randn({12, 5})), b = gb.g.add_constant("b4", randn({5}));
  const int y4 = gb.value("p3", {2, 9, 5});
  gb.node("Gemm", {gb.g.outputs[2], w, b}, y4);
  gb.g.outputs.push_back(y4);
  return gb.g;
}

}  // namespace

TEST_CASE("merge_sibling_gemms: three Gemms of one input -> one Gemm of 28 columns and a Split, the same values") {
  const Graph unfused = siblings_graph();
  Graph merged = unfused;
  REQUIRE(merge_sibling_gemms(merged) == 3);
  CHECK(merged.validate().ok());
  REQUIRE(merged.nodes.size() == 3);
  CHECK(merged.nodes[0].op_type == "Gemm");
  CHECK(merged.value(merged.nodes[0].inputs[1]).constant.sizes() == Shape{16, 28});
  CHECK(merged.nodes[1].op_type == "Split");
  CHECK(merged.nodes[1].outputs == std::vector<int>{unfused.outputs[0], unfused.outputs[1], unfused.outputs[2]});
  CHECK(merged.nodes[2].op_type == "Gemm");  // the fourth reads a Split output
  CHECK(merged.outputs == unfused.outputs);
  manual_seed(13);
  const Tensor x = randn({2, 9, 16});
  const std::vector<Tensor> want = testing::lower_and_run(unfused, {x});
  const std::vector<Tensor> got = testing::lower_and_run(merged, {x});
  REQUIRE(got.size() == 4);
  for (size_t k = 0; k < 4; ++k) {
    CAPTURE(k);
    // One wider product: per output column the same sum, within the blocked GEMM's rounding.
    ember::testing::check_close(got[k], want[k], 1e-5, 1e-5);
  }
  // run_passes merges them unless told not to (--keep-projections, per-tensor int8 weights).
  Graph kept = unfused;
  auto report = run_passes(kept, true, /*merge_gemms=*/false);
  REQUIRE(report.ok());
  CHECK(report->gemms_merged == 0);
  CHECK(count_ops(kept, "Gemm") == 4);
  Graph passed = unfused;
  report = run_passes(passed, true);
  REQUIRE(report.ok());
  CHECK(report->gemms_merged == 3);
  CHECK(count_ops(passed, "Split") == 1);
  // Gemms of other inputs or another form stay.
  Graph alone = linear_graph(2, 9, 16, 8, false, 8);
  REQUIRE(fuse_matmul_bias(alone) == 1);
  CHECK(merge_sibling_gemms(alone) == 0);
}

}  // namespace ember::converter
