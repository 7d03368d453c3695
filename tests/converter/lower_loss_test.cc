// The lowerings of lower_loss.cc (NegativeLogLikelihoodLoss,
// SoftmaxCrossEntropyLoss): each ONNX node lowered, serialized, loaded and run
// by the executor; the forms refused, with their messages.
//
// Expected values: PyTorch 1.13 (/usr/bin/python3): torch.nn.functional.nll_loss
// and cross_entropy with weight, ignore_index and reduction on the x, target
// and weight below (x: rng = numpy default_rng(1), round(uniform(-2, 2), 1)),
// log_softmax(x, 1) for SoftmaxCrossEntropyLoss's second output.
#include "tests/converter/one_node.h"

namespace ember::converter {

namespace {

using testing::f32;
using testing::input;
using testing::OneNode;

const std::string kPrefix = "the graph cannot be lowered to ember ops (1 problem): ";

Tensor x() {
  return f32({0.f, 1.8f, -1.4f, 1.8f, -0.8f, -0.3f, 1.3f, -0.4f, 0.2f, -1.9f, 1.f, 0.2f,
              -0.7f, 1.2f, -0.8f, -0.2f, -1.5f, -0.4f, -1.2f, -1.f, 1.f, -0.9f, -0.1f, 1.9f},
             {3, 4, 2});
}
Tensor target() { return tensor(std::vector<int64_t>{0, 3, 2, 1, 1, 1}, {3, 2}); }
Tensor weight() { return f32({0.5f, 1.f, 2.f, 0.25f}, {4}); }
Tensor scalar(float v) { return scalar_tensor(v, DType::Float32); }

}  // namespace

TEST_CASE("NegativeLogLikelihoodLoss: reductions, weight, ignore_index") {
  const std::map<std::string, Attr> ii1 = {{"ignore_index", int64_t{1}}};
  OneNode{"NegativeLogLikelihoodLoss", {input(x()), input(target()), input(weight())},
          {{"ignore_index", int64_t{1}}, {"reduction", std::string("none")}}}
      .check({f32({0.f, 0.1f, 1.4f, 0.f, 0.f, 0.f}, {3, 2})});
  OneNode{"NegativeLogLikelihoodLoss", {input(x()), input(target()), input(weight())}, ii1}.check({scalar(0.545454562f)});
  OneNode{"NegativeLogLikelihoodLoss", {input(x()), input(target())}, ii1}.check({scalar(0.366666675f)});
  OneNode{"NegativeLogLikelihoodLoss", {input(x()), input(target())}, {{"reduction", std::string("sum")}}}.check(
      {scalar(3.10000014f)});
  // int32 targets; the batch and class dims known only at run time.
  OneNode nll{"NegativeLogLikelihoodLoss", {input(x()), input(target().to(DType::Int32))}, ii1};
  nll.x_shape = std::vector<Dim>{Dim::named("N"), Dim::named("C"), Dim::fixed(2)};
  nll.check({scalar(0.366666675f)});
}

TEST_CASE("SoftmaxCrossEntropyLoss: mean, a negative ignore_index with weights, log_prob") {
  OneNode{"SoftmaxCrossEntropyLoss", {input(x()), input(target())}, {}}.check({scalar(2.36572623f)});
  const Tensor log_prob =
      f32({-1.67993784f, -0.803462267f, -3.0799377f, -0.803462267f, -2.47993779f, -2.90346217f, -0.379937857f,
           -3.00346231f, -1.38629186f, -3.60653162f, -0.58629185f, -1.50653172f, -2.28629184f, -0.506531715f,
           -2.38629174f, -1.90653181f, -2.92249203f, -2.49564242f, -2.62249231f, -3.09564257f, -0.422492146f,
           -2.99564242f, -1.52249217f, -0.195642531f},
          {3, 4, 2});
  OneNode sce{"SoftmaxCrossEntropyLoss",
              {input(x()), input(tensor(std::vector<int64_t>{0, -1, 2, 1, -1, 1}, {3, 2})), input(weight())},
              {{"ignore_index", int64_t{-1}}}};
  sce.x_shape = std::vector<Dim>{Dim::named("N"), Dim::fixed(4), Dim::named("D")};
  sce.check({scalar(2.22549486f), log_prob});
}

TEST_CASE("NegativeLogLikelihoodLoss: refused forms") {
  CHECK(OneNode{"NegativeLogLikelihoodLoss", {input(x()), input(target())}, {{"reduction", std::string("max")}}}
            .error({scalar(0.f)}) == kPrefix + "NegativeLogLikelihoodLoss 'n': reduction 'max' is unknown");
  CHECK(OneNode{"NegativeLogLikelihoodLoss", {input(x()), input(target().reshape({6}))}, {}}.error({scalar(0.f)}) ==
        kPrefix + "NegativeLogLikelihoodLoss 'n': target 'in1' has rank 1, not 2");
  CHECK(OneNode{"SoftmaxCrossEntropyLoss", {input(x()), input(x())}, {}}.error({scalar(0.f)}) ==
        kPrefix + "SoftmaxCrossEntropyLoss 'n': target 'in1' is not int32 or int64");
  CHECK(OneNode{"NegativeLogLikelihoodLoss", {input(target()), input(target())}, {}}.error({scalar(0.f)}) ==
        kPrefix + "NegativeLogLikelihoodLoss 'n': input 'in0' is not floating point");
}

}  // namespace ember::converter
