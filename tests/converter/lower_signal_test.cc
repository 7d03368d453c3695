// The lowerings of lower_signal.cc (HannWindow, HammingWindow, BlackmanWindow)
// and lower_linalg.cc (Det of 1x1 to 3x3 matrices): each ONNX node lowered,
// serialized, loaded and run by the executor; the forms refused, with their
// messages.
//
// Expected values: onnx.reference of onnx 1.23.2 (tools/.venv-onnx/bin/python,
// ReferenceEvaluator on the inputs written here); the symmetric Hamming window
// of 5 in float64 as exact fractions (25/46 - 21/46 cos(pi n / 2)).
#include "tests/converter/one_node.h"

namespace ember::converter {

namespace {

using testing::constant;
using testing::f32;
using testing::input;
using testing::OneNode;

const std::string kPrefix = "the graph cannot be lowered to ember ops (1 problem): ";

}  // namespace

TEST_CASE("Windows: periodic and symmetric, run-time and constant sizes, output_datatype") {
  OneNode{"HannWindow", {input(scalar_tensor(5, DType::Int64))}, {}}.check(
      {f32({0.f, 0.345491529f, 0.904508531f, 0.904508471f, 0.345491439f}, {5})});
  const std::vector<double> hamming = {2.0 / 23, 25.0 / 46, 1.0, 25.0 / 46, 2.0 / 23};
  OneNode{"HammingWindow", {constant(scalar_tensor(5, DType::Int64))},
          {{"periodic", int64_t{0}}, {"output_datatype", int64_t{11}}}}
      .check({tensor(hamming, {5})});
  OneNode{"BlackmanWindow", {input(scalar_tensor(6, DType::Int32))}, {}}.check(
      {f32({0.f, 0.13f, 0.63f, 1.f, 0.63f, 0.13f}, {6})});
}

TEST_CASE("Det: batched 3x3, 2x2") {
  const Tensor x = f32({2.f, 1.f, 0.5f, 1.f, 3.f, -1.f, 0.f, 2.f, 4.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 10.f},
                       {2, 3, 3});
  OneNode det3{"Det", {input(x)}, {}};
  det3.x_shape = std::vector<Dim>{Dim::named("B"), Dim::fixed(3), Dim::fixed(3)};
  det3.check({f32({25.f, -3.f}, {2})});
  OneNode{"Det", {input(f32({1.5f, 2.f, -3.f, 4.f}, {2, 2}))}, {}}.check({scalar_tensor(12.0, DType::Float32)});
}

TEST_CASE("Windows and Det: refused forms") {
  CHECK(OneNode{"HannWindow", {input(f32({5.f}, {1}))}, {}}.error({zeros({5})}) ==
        kPrefix + "HannWindow 'n': size 'in0' is not int32 or int64");
  CHECK(OneNode{"HannWindow", {input(scalar_tensor(5, DType::Int64))}, {{"output_datatype", int64_t{7}}}}.error(
            {zeros({5}).to(DType::Int64)}) == kPrefix + "HannWindow 'n': output_datatype 7 is not a supported float type");
  CHECK(OneNode{"Det", {input(zeros({4, 4}))}, {}}.error({zeros({})}) ==
        kPrefix + "Det 'n': matrices of size 4 are not supported (1 to 3)");
  CHECK(OneNode{"Det", {input(zeros({2, 3}))}, {}}.error({zeros({})}) ==
        kPrefix + "Det 'n': input 'in0' is not made of square matrices of a static size");
}

}  // namespace ember::converter
