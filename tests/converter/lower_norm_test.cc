// The lowerings of lower_norm.cc (InstanceNormalization, GroupNormalization,
// BatchNormalization in training mode, LRN): each ONNX node lowered,
// serialized, loaded and run by the executor; the forms refused, with their
// messages.
//
// Expected values: onnx.reference of onnx 1.23.2 (tools/.venv-onnx/bin/python,
// ReferenceEvaluator; x: rng = numpy default_rng(1), round(uniform(-2, 2), 1));
// LRN by numpy with the spec's formula (the reference's loop runs over the
// batch instead of the channels).
#include "tests/converter/one_node.h"

namespace ember::converter {

namespace {

using testing::constant;
using testing::f32;
using testing::input;
using testing::OneNode;

const std::string kPrefix = "the graph cannot be lowered to ember ops (1 problem): ";
const std::vector<int64_t> kShape = {2, 4, 1, 3};

Tensor x() {
  return f32({0.f, 1.8f, -1.4f, 1.8f, -0.8f, -0.3f, 1.3f, -0.4f, 0.2f, -1.9f, 1.f, 0.2f,
              -0.7f, 1.2f, -0.8f, -0.2f, -1.5f, -0.4f, -1.2f, -1.f, 1.f, -0.9f, -0.1f, 1.9f},
             kShape);
}
Tensor scale() { return f32({1.5f, -0.5f, 2.f, 1.f}, {4}); }
Tensor bias() { return f32({0.1f, 0.2f, -0.3f, 0.f}, {4}); }

}  // namespace

TEST_CASE("InstanceNormalization and GroupNormalization (opset 21 per channel, 18 per group; a run-time batch)") {
  OneNode{"InstanceNormalization", {input(x()), input(scale()), constant(bias())}, {{"epsilon", 0.01}}}.check(
      {f32({-0.0522528812f, 2.00316095f, -1.65090811f, -0.492676139f, 0.656871498f, 0.435804635f, 2.32532048f,
            -2.45651317f, -0.768807292f, -1.35831451f, 1.00515282f, 0.353161782f, -0.87238121f, 2.20682597f,
            -1.03444481f, -0.230863795f, 0.889381945f, -0.0585182756f, -1.90267348f, -1.5020051f, 2.50467825f,
            -1.01539457f, -0.338464856f, 1.35385942f},
           kShape)});
  OneNode g21{"GroupNormalization", {input(x()), input(scale()), input(bias())},
              {{"num_groups", int64_t{2}}, {"epsilon", 0.01}}};
  g21.x_shape = std::vector<Dim>{Dim::named("N"), Dim::fixed(4), Dim::fixed(1), Dim::fixed(3)};
  g21.check({f32({-0.124183945f, 2.07689476f, -1.83613396f, -0.458964944f, 0.600813746f, 0.397010148f, 2.05664015f,
                  -1.19170165f, -0.0452281237f, -1.87894297f, 0.891701698f, 0.127385944f, -0.44304958f, 2.9962647f,
                  -0.624066174f, 0.0793223009f, 0.863727331f, 0.200000003f, -2.30252528f, -1.95426011f, 1.52839255f,
                  -0.740063727f, -0.0435331836f, 1.69779313f},
                 kShape)});
  OneNode g18{"GroupNormalization", {input(x()), input(f32({1.5f, -0.5f}, {2})), input(f32({0.1f, 0.2f}, {2}))},
              {{"num_groups", int64_t{2}}}};
  auto g = g18.graph({x()});
  g.opset = 18;
  const std::vector<Tensor> got = testing::lower_and_run(g, {x(), f32({1.5f, -0.5f}, {2}), f32({0.1f, 0.2f}, {2})});
  ember::testing::check_close(
      got[0],
      f32({-0.124931864f, 2.08348989f, -1.84259331f, 2.08348989f, -1.1064527f, -0.493002206f, -0.391864717f,
           0.423948824f, 0.136014625f, 1.1437844f, -0.24789764f, 0.136014625f, -0.447043568f, 3.01756573f,
           -0.629391432f, 0.464695722f, -1.90582645f, 0.100000001f, 0.702537835f, 0.615139902f, -0.258838832f,
           0.571440995f, 0.221849486f, -0.652129292f},
          kShape),
      1e-5, 1e-5);
}

TEST_CASE("BatchNormalization in training mode: batch statistics and the running ones") {
  OneNode{"BatchNormalization",
          {input(x()), input(scale()), input(bias()), input(f32({0.5f, 0.f, -1.f, 2.f}, {4})),
           input(f32({1.f, 2.f, 0.5f, 1.f}, {4}))},
          {{"training_mode", int64_t{1}}, {"momentum", 0.8}}}
      .check({f32({0.0780289844f, 2.45089793f, -1.76753581f, -0.80884546f, 0.481153667f, 0.2330769f, 2.49436617f,
                   -1.11354971f, 0.159832388f, -1.57216275f, 0.786081433f, 0.135531276f, -0.844753325f, 1.65994179f,
                   -0.976579428f, 0.183461547f, 0.828461051f, 0.282692254f, -2.81139255f, -2.38693166f, 1.85767508f,
                   -0.758975089f, -0.108425014f, 1.5179503f},
                  kShape),
              f32({0.403333336f, -0.0466666706f, -0.803333342f, 1.60666668f}, {4}),
              f32({1.05894446f, 1.80311108f, 0.577611089f, 1.10244441f}, {4})});
}

TEST_CASE("LRN: odd and even sizes") {
  OneNode{"LRN", {input(x())}, {{"size", int64_t{3}}, {"alpha", 0.5}}}.check(
      {f32({0.f, 1.23827827f, -1.12303817f, 1.14794433f, -0.543754876f, -0.239758119f, 0.66931951f, -0.328550756f,
            0.195852697f, -1.18183875f, 0.875847876f, 0.198023051f, -0.656941354f, 0.837629318f, -0.728319168f,
            -0.161640316f, -0.972683191f, -0.328550756f, -0.941626787f, -0.722196221f, 0.644839525f, -0.708786547f,
            -0.088986665f, 1.23902619f},
           kShape)});
  OneNode{"LRN", {input(x())}, {{"size", int64_t{4}}, {"alpha", 0.3}, {"beta", 0.5}, {"bias", 2.0}}}.check(
      {f32({0.f, 1.18611157f, -0.953296781f, 1.10771847f, -0.518781006f, -0.204135969f, 0.800018847f, -0.273754388f,
            0.140972719f, -1.22708404f, 0.692211449f, 0.141209707f, -0.477646023f, 0.782502472f, -0.547508776f,
            -0.13458024f, -0.977972031f, -0.257890135f, -0.814284861f, -0.667483032f, 0.651255131f, -0.61113584f,
            -0.0694084689f, 1.24054563f},
           kShape)});
}

TEST_CASE("Normalizations: refused forms") {
  CHECK(OneNode{"GroupNormalization", {input(x()), input(scale()), input(bias())}, {{"num_groups", int64_t{3}}}}.error(
            {x()}) == kPrefix + "GroupNormalization 'n': the channels (4) are not divisible by num_groups 3");
  OneNode lrn{"LRN", {input(x())}, {{"size", int64_t{3}}}};
  lrn.x_shape = std::vector<Dim>{Dim::fixed(2), Dim::named("C"), Dim::fixed(1), Dim::fixed(3)};
  CHECK(lrn.error({x()}) == kPrefix + "LRN 'n': input 'in0' needs a static channel count");
  CHECK(OneNode{"InstanceNormalization", {input(x().reshape({8, 3})), input(scale()), input(bias())}, {}}.error(
            {x()}) == kPrefix + "InstanceNormalization 'n': input 'in0' has rank 2, not at least 3");
}

}  // namespace ember::converter
