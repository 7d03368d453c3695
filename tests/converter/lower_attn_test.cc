// The attention family's lowerings (lower_attn.cc, lower_attention.cc,
// lower_linear_attn.cc): Attention (GQA, is_causal, past / present, bool and
// float masks, the mask padded to the kv length, softcap, scale,
// qk_matmul_output_mode 0, 2 and 3, nonpad_kv_seqlen, the sliding window),
// RMSNormalization, RotaryEmbedding (interleaved, partial, position_ids, 3-D),
// Swish, SwiGLU, LinearAttention (gated_delta with GQA and a past state;
// linear), CausalConvWithState (past state, bias, SiLU; zeros),
// ai.onnx.preview::FlexAttention, 1-D Conv and float16 MatMul: each ONNX
// node lowered, serialized, loaded and run by the executor; the forms
// refused, with their messages.
//
// Expected values: onnx.reference of onnx 1.23.2 (tools/.venv-onnx/bin/python,
// ReferenceEvaluator on the inputs written here; rng = default_rng(1) and
// round(uniform(-2, 2), 1) for the random ones, drawn in the order of the cases);
// the float16 MatMul's by hand (exact in float16).
#include <cmath>

#include "converter/passes.h"
#include "tests/converter/one_node.h"

namespace ember::converter {

namespace {

using testing::f32;
using testing::input;
using testing::OneNode;

const std::string kPrefix = "the graph cannot be lowered to ember ops (1 problem): ";

Tensor bools(std::vector<float> v, std::vector<int64_t> shape) { return f32(std::move(v), shape).to(DType::Bool); }
Tensor i64(std::vector<int64_t> v, std::vector<int64_t> shape) { return tensor(v, shape); }
Attr str(const char* s) { return std::string(s); }
Attr i(int64_t v) { return v; }

}  // namespace

TEST_CASE("Attention: 4-D GQA, is_causal after a past, present_key / present_value, qk_matmul_output") {
  OneNode{"Attention",
          {input(f32({0.0f, 1.79999995f, -1.39999998f, 1.79999995f, -0.800000012f, -0.300000012f, 1.29999995f, -0.400000006f}, {1, 2, 2, 2})), input(f32({0.200000003f, -1.89999998f, 1.0f, 0.200000003f}, {1, 1, 2, 2})),
           input(f32({-0.699999988f, 1.20000005f, -0.800000012f, -0.200000003f, -1.5f, -0.400000006f}, {1, 1, 2, 3})), {}, input(f32({-1.20000005f, -1.0f}, {1, 1, 1, 2})),
           input(f32({1.0f, -0.899999976f, -0.100000001f}, {1, 1, 1, 3}))},
          {{"is_causal", i(1)}}}
      .check({f32({0.589773715f, -0.39324984f, -0.268916696f, 0.524549603f, -0.991185367f, -0.232523069f, 0.398020476f, -0.15637821f, -0.347873956f, -0.302759677f, -0.304534554f, -0.541921318f}, {1, 2, 2, 3}), f32({-1.20000005f, -1.0f, 0.200000003f, -1.89999998f, 1.0f, 0.200000003f}, {1, 1, 3, 2}), f32({1.0f, -0.899999976f, -0.100000001f, -0.699999988f, 1.20000005f, -0.800000012f, -0.200000003f, -1.5f, -0.400000006f}, {1, 1, 3, 3}),
              f32({-1.27279222f, -2.4183054f, 0.254558444f, -0.0848527253f, -2.6162951f, -0.73539108f, 0.890954614f, 0.289913803f, -0.608111858f, -0.820243835f, 0.721248925f, 0.862670243f}, {1, 2, 2, 3})});
}

TEST_CASE("Attention: 3-D heads, a bool mask with a fully masked row (0), softcap, scale, mode 3") {
  OneNode{"Attention",
          {input(f32({1.89999998f, 1.79999995f, 0.899999976f, 0.200000003f, -0.899999976f, -1.39999998f, 1.89999998f, 0.100000001f}, {1, 2, 4})), input(f32({-1.5f, 0.5f, 1.10000002f, 0.5f, 1.70000005f, -1.79999995f, 0.100000001f, -0.200000003f, -1.79999995f, 0.600000024f, 1.39999998f, 0.400000006f}, {1, 3, 4})),
           input(f32({-1.0f, 1.39999998f, 0.0f, 0.0f, 1.0f, -1.39999998f, 1.29999995f, 0.699999988f, 1.10000002f, -1.20000005f, 1.20000005f, -1.20000005f}, {1, 3, 4})), input(bools({1.f, 0.f, 1.f, 0.f, 0.f, 0.f}, {2, 3}))},
          {{"q_num_heads", i(2)}, {"kv_num_heads", i(2)}, {"softcap", 1.5}, {"scale", 0.4},
           {"qk_matmul_output_mode", i(3)}}}
      .check({f32({-0.0099476641f, 0.174220875f, 0.627033353f, -0.627033353f, 0.0f, 0.0f, 0.0f, 0.0f}, {1, 2, 4}), f32({-1.5f, 0.5f, 1.70000005f, -1.79999995f, -1.79999995f, 0.600000024f, 1.10000002f, 0.5f, 0.100000001f, -0.200000003f, 1.39999998f, 0.400000006f}, {1, 2, 3, 2}), f32({-1.0f, 1.39999998f, 1.0f, -1.39999998f, 1.10000002f, -1.20000005f, 0.0f, 0.0f, 1.29999995f, 0.699999988f, 1.20000005f, -1.20000005f}, {1, 2, 3, 2}),
              f32({0.528546512f, 0.0f, 0.471453488f, 0.0f, 0.0f, 0.0f, 0.477472275f, 0.0f, 0.522527754f, 0.0f, 0.0f, 0.0f}, {1, 2, 2, 3})});
}

TEST_CASE("Attention: a float mask shorter than past + kv (padded with -inf), mode 2") {
  OneNode{"Attention",
          {input(f32({-1.70000005f, 1.39999998f, 1.39999998f, 1.5f}, {1, 1, 2, 2})), input(f32({-0.100000001f, -0.899999976f}, {1, 1, 1, 2})),
           input(f32({-2.0f, 0.600000024f}, {1, 1, 1, 2})), input(f32({-0.100000001f, 1.60000002f, -0.300000012f, 0.400000006f}, {2, 2})),
           input(f32({0.899999976f, 1.29999995f, -0.899999976f, -1.10000002f}, {1, 1, 2, 2})), input(f32({0.600000024f, 1.20000005f, 1.89999998f, -1.39999998f}, {1, 1, 2, 2}))},
          {{"qk_matmul_output_mode", i(2)}}}
      .check({f32({1.66048551f, -0.920970917f, 0.633662701f, 1.13267457f}, {1, 1, 2, 2}), f32({0.899999976f, 1.29999995f, -0.899999976f, -1.10000002f, -0.100000001f, -0.899999976f}, {1, 1, 3, 2}),
              f32({0.600000024f, 1.20000005f, 1.89999998f, -1.39999998f, -2.0f, 0.600000024f}, {1, 1, 3, 2}), f32({0.105060913f, 1.59292889f, -INFINITY, 1.96981287f, -1.65768087f, -INFINITY}, {1, 1, 2, 3})});
}

TEST_CASE("Attention: nonpad_kv_seqlen with is_causal (per-batch offset); the sliding window") {
  OneNode{"Attention",
          {input(f32({-1.89999998f, 0.699999988f, 1.70000005f, 1.29999995f, 1.5f, 0.600000024f, -1.0f, 1.10000002f}, {2, 1, 2, 2})), input(f32({-1.20000005f, 1.29999995f, -1.70000005f, 1.29999995f, -1.29999995f, -0.5f, -0.699999988f, 0.800000012f, -1.29999995f, -0.400000006f, -2.0f, -1.0f, -0.300000012f, -1.60000002f, 0.5f, -0.5f}, {2, 1, 4, 2})),
           input(f32({0.899999976f, 0.600000024f, -0.300000012f, 1.5f, 0.5f, 1.20000005f, -0.600000024f, 0.200000003f, -1.20000005f, 2.0f, -1.0f, -1.0f, -1.70000005f, -1.0f, 1.10000002f, 0.800000012f}, {2, 1, 4, 2})), {}, {}, {}, input(i64({3, 4}, {2}))},
          {{"is_causal", i(1)}}}
      .check({f32({0.105725683f, 1.19570565f, 0.477533072f, 0.946454823f, -1.45577884f, -0.0337874889f, -0.916035295f, 0.396789938f}, {2, 1, 2, 2})});
  OneNode{"Attention",
          {input(f32({-1.5f, -0.5f, -0.300000012f, 0.699999988f, -0.200000003f, 0.300000012f, 1.39999998f, 0.899999976f}, {1, 1, 4, 2})), input(f32({-0.5f, -0.200000003f, -0.5f, -1.60000002f, -1.20000005f, -0.899999976f, -0.699999988f, -0.699999988f}, {1, 1, 4, 2})), input(f32({0.300000012f, 1.89999998f, 1.10000002f, 1.20000005f}, {1, 1, 4, 1}))},
          {{"left_window_size", i(1)}, {"right_window_size", i(0)}}}
      .check({f32({0.300000012f, 0.833398163f, 1.45075357f, 1.16507316f}, {1, 1, 4, 1})});
}

TEST_CASE("FlexAttention (ai.onnx.preview): GQA, scale") {
  OneNode{"ai.onnx.preview::FlexAttention",
          {input(f32({-1.29999995f, -1.89999998f, -1.70000005f, 1.89999998f, 0.600000024f, 1.79999995f, -0.600000024f, 1.0f}, {1, 2, 2, 2})), input(f32({-1.70000005f, -1.29999995f, -0.899999976f, 0.200000003f, 0.200000003f, -0.0f}, {1, 1, 3, 2})), input(f32({-0.300000012f, 0.300000012f, 1.89999998f, -0.200000003f, 1.29999995f, -1.79999995f}, {1, 1, 3, 2}))},
          {{"scale", 0.5}}}
      .check({f32({0.0665020645f, 0.0970613435f, 1.21131706f, -0.356762677f, 1.4157002f, -0.942667007f, 1.13971913f, -0.528993845f}, {1, 2, 2, 2})});
}

namespace {

// A one-input graph: `out` = op(in, c) for each (op) in `ops` applied in turn,
// c a float32 scalar constant (Tanh takes no constant).
Graph mod_graph(const std::vector<std::string>& ops, float c) {
  Graph g;
  Value in;
  in.name = "in";
  in.dtype = DType::Float32;
  int x = g.add_value(in);
  g.inputs = {x};
  const int k = g.add_constant("c", scalar_tensor(static_cast<double>(c), DType::Float32));
  for (size_t i = 0; i < ops.size(); ++i) {
    Node n;
    n.op_type = ops[i];
    n.kind = map_onnx_op(ops[i]);
    n.inputs = ops[i] == "Tanh" ? std::vector<int>{x} : std::vector<int>{x, k};
    Value v;
    v.name = "v" + std::to_string(i);
    v.dtype = DType::Float32;
    x = g.add_value(v);
    n.outputs = {x};
    g.nodes.push_back(n);
  }
  g.outputs = {x};
  return g;
}

}  // namespace

// Expected values: onnx.reference with score_mod = Mul(Tanh(Div(s, 0.5)), 0.5)
// (a soft cap) and prob_mod = Mul(p, 0.5), on the GQA case above.
TEST_CASE("FlexAttention (ai.onnx.preview): score_mod and prob_mod graphs spliced in, GQA") {
  const Tensor q = f32({-1.29999995f, -1.89999998f, -1.70000005f, 1.89999998f, 0.600000024f, 1.79999995f,
                        -0.600000024f, 1.0f}, {1, 2, 2, 2});
  const Tensor k = f32({-1.70000005f, -1.29999995f, -0.899999976f, 0.200000003f, 0.200000003f, -0.0f}, {1, 1, 3, 2});
  const Tensor v = f32({-0.300000012f, 0.300000012f, 1.89999998f, -0.200000003f, 1.29999995f, -1.79999995f},
                       {1, 1, 3, 2});
  const Tensor want = f32({0.419866145f, -0.174594209f, 0.516518533f, -0.201647714f, 0.568189025f, -0.369937152f,
                           0.559848607f, -0.268181324f}, {1, 2, 2, 2});
  Graph g = OneNode{"ai.onnx.preview::FlexAttention", {input(q), input(k), input(v)}, {{"scale", 0.5}}}.graph({want});
  g.nodes[0].graphs = {mod_graph({"Div", "Tanh", "Mul"}, 0.5f), mod_graph({"Mul"}, 0.5f)};
  g.nodes[0].graph_attrs = {"score_mod", "prob_mod"};
  REQUIRE(expand_flex_attention_mods(g) == 1);
  for (const Node& n : g.nodes) CHECK(n.op_type != "ai.onnx.preview::FlexAttention");
  REQUIRE(run_passes(g).ok());
  const std::vector<Tensor> got = testing::lower_and_run(g, {q, k, v});
  REQUIRE(got.size() == 1);
  ember::testing::check_close(got[0], want, 1e-5, 1e-5);
}

TEST_CASE("RMSNormalization") {
  OneNode{"RMSNormalization", {input(f32({1.0f, 0.400000006f, 1.70000005f, 0.800000012f, 0.0f, -1.70000005f, -0.0f, -1.10000002f, -1.5f, 0.0f, 1.10000002f, -0.800000012f}, {2, 2, 3})), input(f32({1.10000002f, 0.100000001f, -1.39999998f, 1.89999998f, -0.400000006f, -0.800000012f}, {2, 3}))}, {{"axis", i(1)}, {"epsilon", 0.1}}}
      .check({f32({0.942088425f, 0.0342577621f, -2.03833675f, 1.30179489f, -0.0f, 1.16476381f, -0.0f, -0.110834397f, 2.11592913f, 0.0f, -0.44333759f, 0.644854724f}, {2, 2, 3})});
}

TEST_CASE("Swish") {
  OneNode{"Swish", {input(f32({1.10000002f, 0.100000001f, 0.400000006f, -1.89999998f, -1.29999995f}, {5}))}, {{"alpha", 0.5}}}.check({f32({0.697549164f, 0.0512497425f, 0.219933614f, -0.529881179f, -0.445886403f}, {5})});
}

TEST_CASE("SwiGLU") {
  OneNode{"SwiGLU", {input(f32({0.699999988f, 0.300000012f, -1.39999998f, 1.79999995f, -1.39999998f, 0.0f}, {2, 3})), input(f32({-1.39999998f, 0.899999976f, -0.899999976f, -1.5f, -1.79999995f, -1.29999995f}, {2, 3}))}, {{"alpha", 1.5}}}.check({f32({-0.725959361f, 0.164872602f, 0.137462005f, -2.52997184f, 0.27492401f, -0.0f}, {2, 3})});
}

TEST_CASE("RotaryEmbedding: interleaved, partial, position_ids; 3-D with num_heads") {
  OneNode{"RotaryEmbedding",
          {input(f32({1.39999998f, -1.5f, 0.899999976f, -1.20000005f, -0.400000006f, -1.10000002f, 1.39999998f, -0.400000006f, 1.89999998f, 0.5f, 0.800000012f, 0.100000001f, -0.800000012f, -0.400000006f, 1.79999995f, -1.20000005f, 2.0f, 1.0f, -0.600000024f, 0.600000024f, -0.5f, -0.5f, 0.0f, -1.89999998f}, {1, 2, 2, 6})), input(f32({-0.0f, 1.89999998f, -0.899999976f, 1.0f, -0.200000003f, -1.20000005f}, {3, 2})),
           input(f32({1.60000002f, -1.89999998f, -0.800000012f, 2.0f, -1.0f, 1.39999998f}, {3, 2})), input(i64({2, 0}, {1, 2}))},
          {{"interleaved", i(1)}, {"rotary_embedding_dim", i(4)}}}
      .check({f32({-1.77999997f, -1.0999999f, 0.600000024f, 2.70000005f, -0.400000006f, -1.10000002f, 0.640000045f, 2.24000001f, 4.55999994f, -2.65999985f, 0.800000012f, 0.100000001f, -0.239999995f, 0.879999995f, -0.480000019f, 3.96000004f, 2.0f, 1.0f, -0.960000038f, -0.960000038f, -1.89999998f, 0.0f, 0.0f, -1.89999998f}, {1, 2, 2, 6})});
  OneNode{"RotaryEmbedding", {input(f32({0.400000006f, 1.20000005f, 0.5f, -0.5f, 1.0f, -1.89999998f, -0.200000003f, -0.5f, -0.100000001f, -1.5f, -1.10000002f, 0.200000003f, -0.400000006f, 1.20000005f, 0.400000006f, 1.39999998f}, {1, 2, 8})), input(f32({0.899999976f, 0.400000006f, -0.800000012f, 1.10000002f}, {1, 2, 2})), input(f32({-1.0f, -1.70000005f, 1.89999998f, 0.200000003f}, {1, 2, 2}))},
          {{"num_heads", i(2)}}}
      .check({f32({0.860000014f, -0.370000005f, 0.0499999821f, -2.24000025f, 0.699999988f, -1.61000001f, -1.17999995f, 3.02999997f, 2.16999984f, -1.69000006f, 0.690000057f, -0.0799999982f, -0.439999968f, 1.04000008f, -1.08000004f, 1.77999997f}, {1, 2, 8})});
}

TEST_CASE("LinearAttention: gated_delta with GQA and a past state; linear with scale") {
  OneNode{"LinearAttention",
          {input(f32({-1.20000005f, 0.100000001f, -0.200000003f, 1.79999995f, 1.79999995f, 1.20000005f, 0.699999988f, 1.39999998f}, {1, 2, 4})), input(f32({1.79999995f, -1.89999998f, -1.5f, -0.600000024f}, {1, 2, 2})),
           input(f32({-1.60000002f, 0.400000006f, -1.0f, -0.899999976f}, {1, 2, 2})), input(f32({-0.800000012f, -1.60000002f, 1.0f, 0.600000024f}, {1, 1, 2, 2})),
           input(f32({-0.400000006f, -1.0f}, {1, 2, 1})), input(f32({0.400000006f, 0.699999988f}, {1, 2, 1}))},
          {{"q_num_heads", i(2)}, {"kv_num_heads", i(1)}}}
      .check({f32({0.0777834505f, -1.1184814f, 0.245972365f, -2.64508724f, 1.71698451f, 1.10501802f, 0.99012512f, 0.148341686f}, {1, 2, 4}), f32({1.02330828f, 1.15242851f, 0.488523275f, -0.426366508f}, {1, 1, 2, 2})});
  OneNode{"LinearAttention",
          {input(f32({-1.39999998f, -0.5f, -1.89999998f, -1.70000005f, -1.10000002f, -0.300000012f}, {1, 3, 2})), input(f32({-0.100000001f, 1.5f, -0.699999988f, -1.89999998f, 1.29999995f, -1.79999995f}, {1, 3, 2})),
           input(f32({-1.60000002f, 1.89999998f, 1.0f, -0.600000024f, -1.5f, -0.5f}, {1, 3, 2}))},
          {{"q_num_heads", i(1)}, {"kv_num_heads", i(1)}, {"update_rule", str("linear")}, {"scale", 0.5}}}
      .check({f32({0.488000035f, -0.57949996f, 4.16800022f, -3.61000013f, 1.60949993f, -0.502500057f}, {1, 3, 2}), f32({-2.48999977f, -0.419999957f, -1.60000038f, 4.88999987f}, {1, 1, 2, 2})});
}

TEST_CASE("CausalConvWithState: past state, bias, silu; zeros before the input") {
  OneNode{"CausalConvWithState",
          {input(f32({-0.600000024f, 1.5f, -0.300000012f, -1.70000005f, 1.70000005f, 0.5f}, {1, 2, 3})), input(f32({-1.5f, -1.5f, -0.100000001f, -1.60000002f, 0.5f, 0.5f}, {2, 1, 3})),
           input(f32({-1.89999998f, 1.20000005f}, {2})), input(f32({1.10000002f, 1.70000005f, 0.699999988f, 0.800000012f}, {1, 2, 2}))},
          {{"activation", str("silu")}}}
      .check({f32({-0.0143504348f, -0.0892699733f, -0.123712376f, -0.151160195f, -0.0384008698f, 4.98706293f}, {1, 2, 3}), f32({1.5f, -0.300000012f, 1.70000005f, 0.5f}, {1, 2, 2})});
  OneNode{"CausalConvWithState", {input(f32({-0.600000024f, 1.5f, -0.300000012f, -1.70000005f, 1.70000005f, 0.5f}, {1, 2, 3})), input(f32({-1.5f, -1.5f, -0.100000001f, -1.60000002f, 0.5f, 0.5f}, {2, 1, 3}))}, {}}
      .check({f32({0.0600000024f, 0.75f, -1.31999993f, -0.850000024f, 0.0f, 3.82000017f}, {1, 2, 3}), f32({1.5f, -0.300000012f, 1.70000005f, 0.5f}, {1, 2, 2})});
}

TEST_CASE("Conv with a 3-D weight (1-D): group, stride, pads, bias") {
  OneNode{"Conv", {input(f32({-0.5f, 0.200000003f, 0.5f, -1.0f, -0.400000006f, 1.79999995f, 0.600000024f, 0.300000012f, -1.70000005f, -1.79999995f}, {1, 2, 5})), input(f32({-1.20000005f, -1.39999998f, 1.89999998f, -2.0f, -0.5f, -1.79999995f, 0.600000024f, -1.79999995f, -1.70000005f, -1.70000005f, -0.899999976f, 0.300000012f}, {4, 1, 3})), input(f32({1.20000005f, -0.899999976f, -0.899999976f, 1.29999995f}, {4}))},
          {{"group", i(2)}, {"strides", std::vector<int64_t>{2}}, {"pads", std::vector<int64_t>{1, 1}}}}
      .check({f32({2.28000021f, -1.63999987f, 2.96000004f, -1.00999999f, 0.25f, 1.30000007f, -5.15999985f, 1.8100003f, 1.31999981f, -0.139999866f, -0.500000119f, 5.81000042f}, {1, 4, 3})});
}

TEST_CASE("MatMul on float16: computed in float32, the product cast back") {
  const Tensor a = f32({1.f, 2.f, 3.f, 4.f}, {2, 2}).to(DType::Float16);
  const Tensor b = f32({0.5f, -1.f, 2.f, 0.25f}, {2, 2}).to(DType::Float16);
  OneNode{"MatMul", {input(a), input(b)}, {}}.check({f32({4.5f, -0.5f, 9.5f, -2.f}, {2, 2}).to(DType::Float16)});
}

TEST_CASE("The attention family's refusals") {
  const Tensor q3 = f32({0.f, 1.f, 2.f, 3.f}, {1, 1, 4}), q4 = f32({0.f, 1.f, 2.f, 3.f}, {1, 2, 1, 2});
  const Tensor y3 = f32({0.f, 0.f, 0.f, 0.f}, {1, 1, 4});
  CHECK(OneNode{"Attention", {input(q3), input(q3), input(q3)}, {}}.error({y3}) ==
        kPrefix + "Attention 'n': 3-D inputs need the q_num_heads and kv_num_heads attributes");
  CHECK(OneNode{"Attention", {input(q3), input(q3), input(q3)}, {{"q_num_heads", i(3)}, {"kv_num_heads", i(1)}}}
            .error({y3}) ==
        kPrefix + "Attention 'n': the hidden size of Q 'in0' is not static or not divisible by 3 heads");
  const Tensor k4 = f32({0.f, 1.f, 2.f, 3.f, 4.f, 5.f}, {1, 3, 1, 2});
  CHECK(OneNode{"Attention", {input(q4), input(k4), input(k4)}, {}}.error({q4}) ==
        kPrefix + "Attention 'n': q heads 2 are not a multiple of kv heads 3");
  const Tensor k0 = zeros({1, 0, 1, 2});  // no heads: a division by zero found by fuzzing
  CHECK(OneNode{"Attention", {input(q4), input(k0), input(k0)}, {}}.error({q4}) ==
        kPrefix + "Attention 'n': Q and K need at least one head");
  CHECK(OneNode{"Attention", {input(q4), input(q4), input(q4)}, {{"qk_matmul_output_mode", i(4)}}}.error({q4}) ==
        kPrefix + "Attention 'n': qk_matmul_output_mode 4 is not 0, 1, 2 or 3");
  CHECK(OneNode{"Attention", {input(q4), input(q4), input(q4), {}, input(q4)}, {}}.error({q4}) ==
        kPrefix + "Attention 'n': past_key and past_value must be given together");
  CHECK(OneNode{"ai.onnx.preview::FlexAttention", {input(q3), input(q3), input(q3)}, {}}.error({y3}) ==
        kPrefix + "ai.onnx.preview::FlexAttention 'n': Q 'in0' is not 4-D");
  CHECK(OneNode{"RotaryEmbedding", {input(q3), input(q3), input(q3)}, {}}.error({y3}) ==
        kPrefix + "RotaryEmbedding 'n': a 3-D input needs the num_heads attribute");
  CHECK(OneNode{"RMSNormalization", {input(q3), input(q3)}, {{"stash_type", i(7)}}}.error({y3}) ==
        kPrefix + "RMSNormalization 'n': stash_type 7 is not a floating-point type");
  CHECK(OneNode{"SwiGLU", {input(q3), input(q4)}, {}}.error({y3}) ==
        kPrefix + "SwiGLU 'n': inputs 'in0' and 'in1' differ in shape");
  CHECK(OneNode{"LinearAttention", {input(q3), input(q3), input(q3)},
                {{"q_num_heads", i(1)}, {"kv_num_heads", i(1)}, {"update_rule", str("fast")}}}
            .error({y3}) ==
        kPrefix + "LinearAttention 'n': update_rule 'fast' is not linear, gated, delta or gated_delta");
  CHECK(OneNode{"LinearAttention", {input(q3), input(q3), input(q3)}, {{"q_num_heads", i(1)}, {"kv_num_heads", i(1)}}}
            .error({y3}) ==
        kPrefix + "LinearAttention 'n': update_rule 'gated_delta' needs the decay input");
  const Tensor w = f32({1.f, 1.f}, {1, 1, 2});
  CHECK(OneNode{"CausalConvWithState", {input(q3), input(w)}, {{"activation", str("relu")}}}.error({y3}) ==
        kPrefix + "CausalConvWithState 'n': activation 'relu' is not none, silu or swish");
  CHECK(OneNode{"Conv", {input(q3), input(w)}, {{"pads", std::vector<int64_t>{0, 1}}}}.error({y3}) ==
        kPrefix + "Conv 'n': pads [0, 1] are not 2 equal values");
  CHECK(OneNode{"CausalConvWithState", {input(q3), input(f32({1.f, 1.f}, {2, 1, 1}))}, {}}.error({y3}) ==
        kPrefix + "CausalConvWithState 'n': weight 'in1' is not [channels, 1, k] with static channels and k");
}

}  // namespace ember::converter
