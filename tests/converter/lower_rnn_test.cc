// The lowerings of lower_rnn.cc: LSTM, GRU and RNN nodes lowered, serialized,
// loaded and run by the executor, against PyTorch 1.13 (torch.nn.LSTM / GRU /
// RNN with the same weights) and onnx.reference (onnx 1.23.2), most of them
// also with a dynamic sequence length. A node with ONNX's default activations
// is one Recurrence op (kernels/ref/recurrence.cc, kernels/cpu/recurrence.cc);
// the same node with tanh given as ScaledTanh(1, 1) is unrolled (static) or a
// Scan per direction (dynamic: run_passes, recurrence_scan.cc), and must give
// the same values; the forms they refuse, with their messages.
//
// The PyTorch values: /usr/bin/python3, torch.manual_seed(0), x = randn(3, 2, 3),
// then in this order nn.LSTM(3, 2, bidirectional=True), h0 = randn(2, 2, 2),
// c0 = randn(2, 2, 2); nn.GRU(3, 2, bidirectional=True, batch_first=True) run
// on pack_padded_sequence(x.permute(1, 0, 2), [3, 2], enforce_sorted=False);
// nn.RNN(3, 2, nonlinearity="relu", bias=False), h0 = randn(1, 2, 2). Their
// weights in ONNX's gate order: LSTM rows i, f, g, o -> i, o, f, c; GRU rows
// r, z, n -> z, r, h (PyTorch's GRU is ONNX's linear_before_reset = 1).
// The onnx.reference values: tools/.venv-onnx/bin/python,
// rng = numpy.random.default_rng(0), every tensor round(uniform(-1, 1), 2) in
// the order listed, each node run by ReferenceEvaluator. The LSTM with clip,
// input_forget and other activations (which onnx.reference ignores): the
// spec's equations in numpy, checked first against onnx.reference on the
// peephole case (equal within 3e-8).
#include "tests/converter/one_node.h"

namespace ember::converter {

namespace {

using testing::input;
using testing::constant;
using testing::In;
using testing::OneNode;
using testing::f32;

const std::string kPrefix = "the graph cannot be lowered to ember ops (1 problem): ";

const In kNone{};

// x = torch.randn(3, 2, 3) after torch.manual_seed(0): [T, B, I].
Tensor torch_x() {
  return f32({-1.12584f, -1.15236f, 0.5666506f, 0.7935084f, 0.5988395f, -1.555095f, -0.3413604f, 1.853006f, 0.4680964f,
              -0.1577124f, -0.1733968f, 0.1834779f, 1.389366f, 1.586334f, 0.9462984f, -0.8436767f, 0.9318266f, 1.259009f},
             {3, 2, 3});
}

// The onnx.reference cases' x: [T, B, I].
Tensor ref_x() {
  return f32({0.27f, -0.46f, -0.92f, -0.97f, 0.63f, 0.83f, 0.21f, 0.46f, 0.09f, 0.87f, 0.63f, -0.99f, 0.71f, -0.93f,
              0.46f, -0.65f, 0.73f, 0.08f},
             {3, 2, 3});
}

// The onnx.reference LSTM's W and R (hidden 2).
Tensor ref_lstm_w() {
  return f32({0.9f, -0.08f, 0.52f, -0.01f, 0.06f, 0.57f, -0.17f, 0.47f, 0.42f, 0.86f, -0.77f, 0.46f,
              0.85f, 0.94f, -0.97f, 0.73f, 0.96f, 0.91f, -0.7f, 0.95f, 0.78f, 0.64f, -0.04f, -0.54f},
             {1, 8, 3});
}
Tensor ref_lstm_r() {
  return f32({0.6f, 0.85f, -0.47f, 0.08f, -0.11f, 0.86f, -0.92f, 0.46f, 0.23f, -0.94f, 0.44f, -0.97f, 0.52f, 0.03f,
              0.86f, -0.87f},
             {1, 8, 2});
}

Attr strings(std::vector<std::string> v) { return v; }
Attr floats(std::vector<double> v) { return v; }

// How many ops of `kind` the node lowers to (Scan bodies not counted).
size_t lowered_count(const OneNode& node, const std::vector<Tensor>& like, OpKind kind) {
  auto def = lower(node.graph(like));
  REQUIRE_MESSAGE(def.ok(), def.diag().message);
  size_t n = 0;
  for (const OpDef& op : def->ops) n += op.op == kind ? 1 : 0;
  return n;
}

bool bidirectional(const OneNode& node) {
  return node.attrs.count("direction") != 0 && std::get<std::string>(node.attrs.at("direction")) == "bidirectional";
}

// `node` (ONNX's default activations) with its tanh given as ScaledTanh(1, 1):
// the same function, which lower_rnn.cc unrolls (or recurrence_scan.cc makes a
// Scan) instead of fusing.
OneNode unfused(OneNode node) {
  const bool lstm = node.op == "LSTM", gru = node.op == "GRU";
  std::vector<std::string> names;
  std::vector<double> alphas, betas;
  for (int d = 0; d < (bidirectional(node) ? 2 : 1); ++d) {
    if (lstm || gru) names.push_back("Sigmoid");
    for (int k = 0; k < (lstm ? 2 : 1); ++k) {
      names.push_back("ScaledTanh");
      alphas.push_back(1.0);
      betas.push_back(1.0);
    }
  }
  node.attrs["activations"] = strings(names);
  node.attrs["activation_alpha"] = floats(alphas);
  node.attrs["activation_beta"] = floats(betas);
  return node;
}

// `node` as given, then with X's sequence length dynamic: both are one
// Recurrence op and give the same values. A node with ONNX's default
// activations is also checked unfused (static: unrolled; dynamic: a Scan per
// direction, recurrence_scan.cc, where that takes it).
void check_static_and_dynamic(OneNode node, const std::vector<Tensor>& expected) {
  const bool fused = node.attrs.count("activation_alpha") == 0;
  CHECK(lowered_count(node, expected, OpKind::Recurrence) == (fused ? 1 : 0));
  node.check(expected);
  OneNode dynamic = node;
  std::vector<Dim> dims = testing::dims_of(node.inputs[0].t.sizes());
  dims[node.attrs.count("layout") != 0 ? 1 : 0] = Dim::named("seq");
  dynamic.x_shape = dims;
  dynamic.optimize = true;
  dynamic.check(expected);
  if (!fused || node.attrs.count("activations") != 0) return;
  const OneNode other = unfused(node);
  CHECK(lowered_count(other, expected, OpKind::Recurrence) == 0);
  other.check(expected);
  const bool lens = node.inputs.size() > 4 && node.inputs[4].t.defined();
  if (bidirectional(node) || lens) return;  // recurrence_scan.cc leaves these to lower_rnn.cc's refusal
  OneNode other_dynamic = unfused(dynamic);
  CHECK(lowered_count(other_dynamic, expected, OpKind::Scan) == 1);
  other_dynamic.check(expected);
}

}  // namespace

TEST_CASE("LSTM bidirectional with initial_h / initial_c matches torch.nn.LSTM") {
  const Tensor w = f32({-0.4940134f, -0.6622486f, -0.4127668f, 0.6078276f, 0.315524f,   0.3427152f,  0.2806381f,
                        0.09552507f, 0.4741054f,  -0.4163461f, 0.1317651f, -0.5482238f, 0.03718785f, -0.362522f,
                        0.1196316f,  -0.6602219f, -0.5109315f, -0.3645347f, 0.4461405f, 0.4145917f, -0.3135983f,
                        -0.0255141f, 0.4522377f,  0.7029582f,  0.2592192f, 0.3575896f,  0.5061976f,  0.2643951f,
                        -0.6998485f, -0.458698f,  -0.03896131f, 0.1061686f, -0.2895816f, 0.4195813f,  -0.4303021f,
                        0.6416075f,  0.353069f,   0.1479984f,  -0.5516027f, -0.4071659f, 0.6652102f, 0.4764612f,
                        -0.3083163f, -0.177968f,  -0.6735886f, -0.01270963f, -0.5324931f, -0.5454316f},
                       {2, 8, 3});
  const Tensor r = f32({-0.4900859f, -0.3652797f, 0.3199468f,  0.2843703f,  -0.5449131f, -0.2591332f, 0.2779f,
                        0.5858729f,  -0.4188565f, 0.213622f,   0.3881818f,  -0.08924916f, 0.02699843f, 0.16384f,
                        0.4386725f,  0.6789597f,  0.4845802f,  -0.5962911f, -0.1759878f, 0.03190651f, -0.1770099f,
                        -0.3444411f, -0.2473695f, -0.57956f,   0.1031676f,  0.1677075f,  0.2774887f,  0.04235581f,
                        -0.3450177f, 0.3345951f,  -0.6782914f, -0.4191069f},
                       {2, 8, 2});
  const Tensor b = f32({0.6153295f,   0.6239204f,  -0.6589911f, 0.6282591f,  0.1407245f,  -0.6148878f, 0.06504852f,
                        -0.4423698f,  0.5376555f,  -0.7053587f, 0.2719223f,  -0.4188218f, 0.1323506f,  -0.1191192f,
                        -0.1163623f,  -0.323683f,  -0.1504123f, 0.1511486f,  0.01965206f, -0.06100132f, -0.4606559f,
                        -0.03628827f, 0.506183f,   -0.07269076f, 0.1431052f, 0.4496064f,  -0.6352092f, -0.3352232f,
                        0.6698042f,   0.4490523f,  0.6713367f,  -0.05113913f},
                       {2, 16});
  const Tensor h0 = f32({-0.02543665f, -0.1520621f, -0.02677465f, 0.6460674f, 0.6104733f, 0.997108f, 0.4083228f,
                         0.5956558f},
                        {2, 2, 2});
  const Tensor c0 = f32({-0.8192822f, 0.5156056f, 0.4134675f, 0.9219105f, -1.367589f, -0.1525318f, -0.9588874f,
                         0.7916716f},
                        {2, 2, 2});
  const Tensor y = f32({-0.3284729f, 0.05501447f, 0.1745923f,  -0.1696817f, 0.09871359f, -0.09181347f,
                        0.2700528f,  0.05508612f, -0.192176f,  0.1063765f,  0.08802309f, -0.188566f,
                        -0.03360131f, -0.160788f, 0.1115871f,  0.06397063f, 0.01277783f, 0.1386171f,
                        -0.07921834f, 0.06403795f, -0.1658598f, -0.1513436f, -0.01793512f, 0.1273476f},
                       {3, 2, 2, 2});
  const Tensor yh = f32({0.01277783f, 0.1386171f, -0.07921834f, 0.06403795f, 0.09871359f, -0.09181347f, 0.2700528f,
                         0.05508612f},
                        {2, 2, 2});
  const Tensor yc = f32({0.01925255f, 0.4349751f, -0.1548269f, 0.135116f, 0.3290898f, -0.1773668f, 0.6800387f,
                         0.2820427f},
                        {2, 2, 2});
  const std::map<std::string, Attr> attrs = {{"hidden_size", int64_t{2}}, {"direction", std::string("bidirectional")}};
  // Constant weights (as exporters write them) and graph-input weights (as the ONNX test models).
  check_static_and_dynamic(
      {"LSTM", {input(torch_x()), constant(w), constant(r), constant(b), kNone, input(h0), input(c0)}, attrs},
      {y, yh, yc});
  OneNode{"LSTM", {input(torch_x()), input(w), input(r), input(b), kNone, input(h0), input(c0)}, attrs}
      .check({y, yh, yc});
  // The default activations named: one set serving both directions, and one per direction.
  for (const std::vector<std::string>& names :
       {std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"},
        std::vector<std::string>{"Sigmoid", "Tanh", "Tanh", "Sigmoid", "Tanh", "Tanh"}}) {
    std::map<std::string, Attr> named = attrs;
    named["activations"] = strings(names);
    check_static_and_dynamic(
        {"LSTM", {input(torch_x()), constant(w), constant(r), constant(b), kNone, input(h0), input(c0)}, named},
        {y, yh, yc});
  }
  // Y and Y_c used; layout 1 (batch first: x [B, T, I], Y [B, T, D, H], states [B, D, H]).
  check_static_and_dynamic(
      {"LSTM",
       {input(torch_x().permute({1, 0, 2}).contiguous()), constant(w), constant(r), constant(b), kNone,
        input(h0.permute({1, 0, 2}).contiguous()), input(c0.permute({1, 0, 2}).contiguous())},
       {{"hidden_size", int64_t{2}}, {"direction", std::string("bidirectional")}, {"layout", int64_t{1}}}},
      {y.permute({2, 0, 1, 3}).contiguous(), Tensor(), yc.permute({1, 0, 2}).contiguous()});
}

TEST_CASE("GRU bidirectional, layout 1, sequence_lens matches torch.nn.GRU on a packed sequence") {
  const Tensor xb = f32({-1.12584f, -1.15236f, 0.5666506f, -0.3413604f, 1.853006f, 0.4680964f, 1.389366f, 1.586334f,
                         0.9462984f, 0.7935084f, 0.5988395f, -1.555095f, -0.1577124f, -0.1733968f, 0.1834779f,
                         -0.8436767f, 0.9318266f, 1.259009f},
                        {2, 3, 3});
  const Tensor w = f32({0.3397686f,   0.2497211f,  -0.1700413f, -0.1487084f, -0.5827135f, 0.3831417f,  0.5654402f,
                        -0.5714096f,  0.07587604f, -0.148046f,  0.5049539f,  0.197385f,   0.5614273f,  0.48382f,
                        -0.4987778f,  0.03153688f, -0.4984637f, -0.3892511f, -0.5036585f, -0.2007223f, -0.2372459f,
                        -0.1047136f,  0.007734537f, 0.583227f,  -0.05077465f, 0.6994974f, 0.2554332f,  0.02002034f,
                        -0.6127858f,  0.3502851f,  0.08827438f, 0.6333504f,  0.432546f,   -0.4470428f, 0.3171403f,
                        -0.499851f},
                       {2, 6, 3});
  const Tensor r = f32({0.02974666f, 0.4558173f, -0.5345162f, -0.4854375f, -0.412035f, 0.2416502f, -0.4213742f,
                        -0.01542709f, -0.4105897f, 0.4949276f, -0.2541801f, 0.5964366f, -0.2276289f, 0.00113198f,
                        0.3640352f, -0.6838374f, -0.2996896f, 0.2079761f, 0.2334811f, 0.5304914f, 0.5112245f,
                        -0.5847225f, 0.0097457f, -0.12022f},
                       {2, 6, 2});
  const Tensor b = f32({-0.00526372f, -0.139782f, 0.2556951f, 0.08953811f, 0.0887181f, -0.1614641f, -0.5531026f,
                        -0.3706169f, -0.004968439f, 0.0902219f, 0.5709836f, -0.5738502f, 0.5847198f, -0.2067011f,
                        -0.372414f, 0.09345903f, -0.4198051f, -0.2615155f, -0.3395977f, -0.4718808f, -0.7008477f,
                        0.3191837f, -0.4073652f, 0.4065553f},
                       {2, 12});
  const Tensor y = f32({-0.6186663f, -0.04104429f, 0.1930402f, -0.02951788f, 0.1345398f, -0.6907179f, 0.6411665f,
                        0.0154399f, 0.5202849f, -0.8916189f, 0.520493f, -0.3301133f, 0.4489752f, -0.1028466f,
                        -0.4158721f, 0.3839244f, 0.1456918f, -0.3363726f, -0.2151231f, -0.04889907f, 0.f, 0.f, 0.f,
                        0.f},
                       {2, 3, 2, 2});
  const Tensor yh = f32({0.5202849f, -0.8916189f, 0.1930402f, -0.02951788f, 0.1456918f, -0.3363726f, -0.4158721f,
                         0.3839244f},
                        {2, 2, 2});
  const Tensor lens = tensor({3, 2}, DType::Int32);
  const std::map<std::string, Attr> attrs = {{"hidden_size", int64_t{2}},
                                             {"direction", std::string("bidirectional")},
                                             {"layout", int64_t{1}},
                                             {"linear_before_reset", int64_t{1}}};
  check_static_and_dynamic({"GRU", {input(xb), constant(w), constant(r), constant(b), input(lens)}, attrs}, {y, yh});
  OneNode{"GRU", {input(xb), constant(w), constant(r), constant(b), constant(lens)}, attrs}.check({y, yh});
}

TEST_CASE("RNN with Relu and an initial state matches torch.nn.RNN(nonlinearity='relu', bias=False)") {
  const Tensor w = f32({0.3744651f, 0.5427199f, 0.256484f, -0.2361452f, -0.1975997f, 0.2089005f}, {1, 2, 3});
  const Tensor r = f32({0.5812663f, 0.1922568f, -0.3345643f, -0.3323949f}, {1, 2, 2});
  const Tensor h0 = f32({0.3338045f, 1.644317f, -1.25348f, -0.05916037f}, {1, 2, 2});
  const Tensor y = f32({0.f, 0.f, 0.f, 0.f, 0.997895f, 0.f, 0.f, 0.1098348f, 2.203958f, 0.f, 0.5338255f, 0.2416007f},
                       {3, 1, 2, 2});
  const Tensor yh = f32({2.203958f, 0.f, 0.5338255f, 0.2416007f}, {1, 2, 2});
  check_static_and_dynamic({"RNN",
                            {input(torch_x()), constant(w), constant(r), kNone, kNone, input(h0)},
                            {{"hidden_size", int64_t{2}}, {"activations", strings({"Relu"})}}},
                           {y, yh});
}

TEST_CASE("GRU (linear_before_reset 0) and reverse RNN match onnx.reference") {
  const Tensor w = f32({-0.4f, -0.15f, -0.94f, -0.75f, 0.34f, 0.29f, 0.23f, -0.23f, 0.99f, 0.96f, 0.37f, 0.3f, 0.38f,
                        -0.22f, -0.73f, 0.44f, 0.05f, -0.38f},
                       {1, 6, 3});
  const Tensor r = f32({-0.03f, 0.78f, 0.87f, -0.28f, 0.14f, -0.36f, 0.19f, -0.32f, -0.22f, 0.78f, -0.55f, 0.25f},
                       {1, 6, 2});
  const Tensor b = f32({-0.83f, 0.67f, 0.57f, -0.52f, 0.75f, -0.88f, -0.33f, -0.7f, -0.1f, 0.59f, -0.54f, -0.9f},
                       {1, 12});
  const Tensor h0 = f32({-0.19f, -0.6f, -0.82f, 0.16f}, {1, 2, 2});
  const Tensor y = f32({0.4232617f, -0.7819307f, -0.6620121f, -0.2967742f, -0.2575046f, -0.8471076f, 0.3515458f,
                        -0.622094f, -0.0726691f, -0.9080888f, -0.3535379f, -0.7040032f},
                       {3, 1, 2, 2});
  const Tensor yh = f32({-0.0726691f, -0.9080888f, -0.3535379f, -0.7040032f}, {1, 2, 2});
  // Dynamic: a Scan whose body captures the graph-input weights.
  check_static_and_dynamic(
      {"GRU", {input(ref_x()), input(w), input(r), input(b), kNone, input(h0)}, {{"hidden_size", int64_t{2}}}},
      {y, yh});
  // No initial_h (zeros): the first step reads only the biases; every sequence full length (no mask).
  OneNode{"RNN",
          {input(ref_x()), constant(f32({-0.4f, 0.34f, -0.6f, 0.88f, -0.27f, -0.79f}, {1, 2, 3})),
           constant(f32({0.26f, 0.85f, -0.12f, 0.91f}, {1, 2, 2})), constant(f32({-0.f, -0.15f, 0.24f, 0.99f}, {1, 4})),
           constant(tensor({3, 3}, DType::Int32))},
          {{"hidden_size", int64_t{2}}, {"direction", std::string("reverse")}}}
      .check({f32({0.9055774f, 0.9909307f, 0.8747795f, -0.03743966f, 0.6940076f, 0.9345157f, 0.6982686f, 0.9733351f,
                   -0.5623066f, 0.8746421f, 0.6044947f, 0.007699933f},
                  {3, 1, 2, 2}),
              f32({0.9055774f, 0.9909307f, 0.8747795f, -0.03743966f}, {1, 2, 2})});
  // The same over a dynamic length and batch (every sequence is full length, so without sequence_lens): a
  // reverse Scan, its zero initial state made at run time from X's batch.
  for (bool dynamic_batch : {false, true}) {
    OneNode rnn{"RNN",
                {input(ref_x()), constant(f32({-0.4f, 0.34f, -0.6f, 0.88f, -0.27f, -0.79f}, {1, 2, 3})),
                 constant(f32({0.26f, 0.85f, -0.12f, 0.91f}, {1, 2, 2})),
                 constant(f32({-0.f, -0.15f, 0.24f, 0.99f}, {1, 4}))},
                {{"hidden_size", int64_t{2}}, {"direction", std::string("reverse")}}};
    rnn.x_shape = std::vector<Dim>{Dim::named("seq"), dynamic_batch ? Dim::named("batch") : Dim::fixed(2),
                                   Dim::fixed(3)};
    rnn.optimize = true;
    rnn.check({f32({0.9055774f, 0.9909307f, 0.8747795f, -0.03743966f, 0.6940076f, 0.9345157f, 0.6982686f, 0.9733351f,
                    -0.5623066f, 0.8746421f, 0.6044947f, 0.007699933f},
                   {3, 1, 2, 2}),
               f32({0.9055774f, 0.9909307f, 0.8747795f, -0.03743966f}, {1, 2, 2})});
  }
}

TEST_CASE("LSTM peepholes (onnx.reference); clip, input_forget, HardSigmoid/LeakyRelu/Affine (the spec by hand)") {
  check_static_and_dynamic(
      {"LSTM",
       {input(ref_x()), constant(ref_lstm_w()), constant(ref_lstm_r()), kNone, kNone,
        input(f32({-0.48f, -0.52f, 0.78f, -0.55f}, {1, 2, 2})), input(f32({-0.75f, -0.42f, 0.17f, 0.11f}, {1, 2, 2})),
        constant(f32({0.68f, -0.87f, -0.31f, -0.14f, 0.93f, 0.12f}, {1, 6}))},
       {{"hidden_size", int64_t{2}}}},
      {f32({-0.1651061f, 0.105858f, 0.2331477f, 0.0149985f, -0.09475426f, 0.01667956f, 0.02650774f, 0.1294277f,
            -0.2446926f, 0.08076666f, 0.2148139f, -0.0108906f},
           {3, 1, 2, 2}),
       f32({-0.2446926f, 0.08076666f, 0.2148139f, -0.0108906f}, {1, 2, 2}),
       f32({-0.5913214f, 0.09706099f, 0.3623759f, -0.04182851f}, {1, 2, 2})});
  // f = HardSigmoid(0.3, 0.4), g = LeakyRelu(0.2), h = Affine(0.5, 0.1): alphas and betas read in that order.
  const Tensor b = f32({0.62f, 0.12f, -0.42f, -0.17f, 0.64f, 0.25f, 0.92f, -0.26f, 0.11f, 0.19f, 0.7f, -0.71f, -0.19f,
                        0.82f, -0.91f, 0.65f},
                       {1, 16});
  check_static_and_dynamic(
      {"LSTM",
       {input(ref_x()), constant(ref_lstm_w()), constant(ref_lstm_r()), constant(b)},
       {{"hidden_size", int64_t{2}},
        {"clip", 0.5},
        {"input_forget", int64_t{1}},
        {"activations", strings({"HardSigmoid", "LeakyRelu", "Affine"})},
        {"activation_alpha", floats({0.3, 0.2, 0.5})},
        {"activation_beta", floats({0.4, 0.1})}}},
      {f32({0.02098513f, 0.04541187f, 0.1198257f, 0.018125f, 0.106043f, 0.06293507f, 0.05077335f, 0.04004608f,
            0.04426047f, 0.1676051f, 0.1255649f, 0.03113418f},
           {3, 1, 2, 2}),
       f32({0.04426047f, 0.1676051f, 0.1255649f, 0.03113418f}, {1, 2, 2}),
       f32({0.02852497f, 0.409473f, 0.2565997f, 0.04907347f}, {1, 2, 2})});
}

TEST_CASE("LSTM, GRU, RNN: refused forms name the node and the problem") {
  const Tensor yh = zeros({1, 2, 2});
  const Tensor w = zeros({1, 2, 3}), r = zeros({1, 2, 2});
  // A dynamic length with sequence_lens and an activation other than ONNX's defaults: not fused, not made a
  // Scan (the body has no step index to mask with).
  OneNode dynamic{"RNN", {input(ref_x()), constant(w), constant(r), kNone, input(tensor({3, 3}, DType::Int32))},
                  {{"hidden_size", int64_t{2}}, {"activations", strings({"Sigmoid"})}}};
  dynamic.x_shape = std::vector<Dim>{Dim::named("seq"), Dim::fixed(2), Dim::fixed(3)};
  dynamic.optimize = true;
  CHECK(dynamic.error({Tensor(), yh}) ==
        kPrefix + "RNN 'n': X 'in0' has a dynamic sequence length (dim 0 'seq'): a recurrence with activation "
                  "functions other than ONNX's defaults runs as a Scan over its steps only without sequence_lens and, "
                  "bidirectional, with constant W, R, B, P and no activation_alpha/beta (--input-shape can fix the "
                  "length)");
  CHECK(OneNode{"RNN", {input(ref_x()), constant(w), constant(r)},
                {{"hidden_size", int64_t{2}}, {"activations", strings({"Gelu"})}}}
            .error({Tensor(), yh}) == kPrefix + "RNN 'n': activation 'Gelu' is not supported");
  CHECK(OneNode{"GRU", {input(ref_x()), constant(zeros({1, 6, 3})), constant(r)}, {{"hidden_size", int64_t{2}}}}
            .error({Tensor(), yh}) ==
        kPrefix + "GRU 'n': R 'in2' has shape [1, 2, 2], expected [1, 6, 2] (-1: any)");
  CHECK(OneNode{"LSTM", {input(ref_x()), constant(zeros({1, 8, 3})), constant(zeros({1, 8, 2}))},
                {{"hidden_size", int64_t{2}}, {"activations", strings({"Sigmoid", "Tanh"})}}}
            .error({Tensor(), yh}) == kPrefix + "LSTM 'n': has 2 activations, expected 3 (3 per direction)");
  CHECK(OneNode{"RNN", {input(ref_x()), constant(w), constant(r)},
                {{"hidden_size", int64_t{2}}, {"direction", std::string("sideways")}}}
            .error({Tensor(), yh}) == kPrefix + "RNN 'n': direction 'sideways' is unknown");
  // initial_h / initial_c / sequence_lens of the wrong shape (a rank-0 initial_h crashed the lowering: fuzzing).
  const In gru_w = constant(zeros({1, 6, 3})), gru_r = constant(zeros({1, 6, 2}));
  CHECK(OneNode{"GRU", {input(ref_x()), gru_w, gru_r, kNone, kNone, constant(scalar_tensor(0.0))},
                {{"hidden_size", int64_t{2}}, {"linear_before_reset", int64_t{1}}}}
            .error({Tensor(), yh}) == kPrefix + "GRU 'n': initial_h 'in5' has shape [], expected [1, 2, 2] (-1: any)");
  CHECK(OneNode{"LSTM", {input(ref_x()), constant(zeros({1, 8, 3})), constant(zeros({1, 8, 2})), kNone, kNone, kNone,
                         constant(zeros({1, 3, 2}))},
                {{"hidden_size", int64_t{2}}}}
            .error({Tensor(), yh}) ==
        kPrefix + "LSTM 'n': initial_c 'in6' has shape [1, 3, 2], expected [1, 2, 2] (-1: any)");
  CHECK(OneNode{"GRU", {input(ref_x()), gru_w, gru_r, kNone, constant(tensor({3, 3, 3}))}, {{"hidden_size", int64_t{2}}}}
            .error({Tensor(), yh}) == kPrefix + "GRU 'n': sequence_lens 'in4' has shape [3], expected [2] (-1: any)");
}

}  // namespace ember::converter
