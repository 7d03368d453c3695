// The lowerings of lower_crop_pad.cc (Pad with run-time pads, axes and value,
// negative pads, wrap mode; CenterCropPad) and integer Div (lower_layout.cc):
// each ONNX node lowered, serialized, loaded and run by the executor; the
// forms refused, with their messages.
//
// Expected values: onnx.reference of onnx 1.23.2 (tools/.venv-onnx/bin/python,
// ReferenceEvaluator on the inputs written here); the negative pads by hand
// (the reference's np.pad refuses them): a row of the value before, the first
// column cropped, two columns of the value after.
#include "tests/converter/one_node.h"

namespace ember::converter {

namespace {

using testing::constant;
using testing::f32;
using testing::input;
using testing::OneNode;

const std::string kPrefix = "the graph cannot be lowered to ember ops (1 problem): ";

Tensor i64(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return tensor(v, {n});
}
Tensor x34() { return (arange(12.0, TensorOptions(DType::Float32)) + 1).reshape({3, 4}); }
Attr mode(const char* m) { return std::string(m); }

}  // namespace

TEST_CASE("Pad with run-time pads: constant (a run-time value, negative pads), reflect, edge; wrap; run-time axes") {
  OneNode{"Pad", {input(x34()), input(i64({1, -1, 0, 2})), input(scalar_tensor(9.5, DType::Float32))}, {}}.check(
      {f32({9.5f, 9.5f, 9.5f, 9.5f, 9.5f, 2.f, 3.f, 4.f, 9.5f, 9.5f, 6.f, 7.f, 8.f, 9.5f, 9.5f, 10.f, 11.f, 12.f, 9.5f,
            9.5f},
           {4, 5})});
  OneNode reflect{"Pad", {input(x34()), input(i64({2, 3, 1, 0}))}, {{"mode", mode("reflect")}}};
  reflect.x_shape = std::vector<Dim>{Dim::named("R"), Dim::named("C")};
  reflect.check({f32({12.f, 11.f, 10.f, 9.f, 10.f, 11.f, 12.f, 8.f, 7.f, 6.f, 5.f, 6.f, 7.f, 8.f,
                      4.f,  3.f,  2.f,  1.f, 2.f,  3.f,  4.f,  8.f, 7.f, 6.f, 5.f, 6.f, 7.f, 8.f,
                      12.f, 11.f, 10.f, 9.f, 10.f, 11.f, 12.f, 8.f, 7.f, 6.f, 5.f, 6.f, 7.f, 8.f},
                     {6, 7})});
  OneNode{"Pad", {input(x34()), input(i64({0, 1, 2, 2}))}, {{"mode", mode("edge")}}}.check(
      {f32({1.f, 1.f, 2.f,  3.f,  4.f,  4.f,  4.f,  5.f, 5.f, 6.f,  7.f,  8.f,  8.f,  8.f, 9.f, 9.f, 10.f, 11.f,
            12.f, 12.f, 12.f, 9.f, 9.f, 10.f, 11.f, 12.f, 12.f, 12.f, 9.f, 9.f, 10.f, 11.f, 12.f, 12.f, 12.f},
           {5, 7})});
  OneNode{"Pad", {input(x34()), constant(i64({4, 0, 0, 5}))}, {{"mode", mode("wrap")}}}.check(
      {f32({9.f, 10.f, 11.f, 12.f, 9.f, 10.f, 11.f, 12.f, 9.f, 1.f, 2.f, 3.f, 4.f, 1.f, 2.f, 3.f,
            4.f, 1.f,  5.f,  6.f,  7.f, 8.f,  5.f,  6.f,  7.f, 8.f, 5.f, 9.f, 10.f, 11.f, 12.f, 9.f,
            10.f, 11.f, 12.f, 9.f, 1.f, 2.f,  3.f,  4.f,  1.f, 2.f, 3.f, 4.f, 1.f, 5.f, 6.f,  7.f,
            8.f, 5.f,  6.f,  7.f,  8.f, 5.f,  9.f,  10.f, 11.f, 12.f, 9.f, 10.f, 11.f, 12.f, 9.f},
           {7, 9})});
  OneNode{"Pad", {input(x34()), input(i64({1, 2})), input(scalar_tensor(-1.0, DType::Float32)), input(i64({-1}))}, {}}
      .check({f32({-1.f, 1.f, 2.f, 3.f, 4.f, -1.f, -1.f, -1.f, 5.f, 6.f, 7.f, 8.f, -1.f, -1.f, -1.f, 9.f, 10.f, 11.f,
                   12.f, -1.f, -1.f},
                  {3, 7})});
}

TEST_CASE("CenterCropPad: crop and pad at once (a run-time shape), axes; integer Div truncates") {
  const Tensor x = (arange(24.0, TensorOptions(DType::Float32)) + 1).reshape({2, 3, 4});
  OneNode{"CenterCropPad", {input(x), input(i64({4, 2, 3}))}, {}}.check(
      {f32({0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 1.f, 2.f, 3.f, 5.f, 6.f, 7.f, 13.f, 14.f, 15.f, 17.f, 18.f, 19.f, 0.f, 0.f,
            0.f, 0.f, 0.f, 0.f},
           {4, 2, 3})});
  OneNode{"CenterCropPad", {input(x), constant(i64({5, 1}))}, {{"axes", std::vector<int64_t>{-1, 1}}}}.check(
      {f32({5.f, 6.f, 7.f, 8.f, 0.f, 17.f, 18.f, 19.f, 20.f, 0.f}, {2, 1, 5})});
  OneNode{"Div", {input(tensor(std::vector<int32_t>{-7, 7, 7, -8, 9}, {5})),
                  input(tensor(std::vector<int32_t>{2, -2, 2, 3, 3}, {5}))},
          {}}
      .check({tensor(std::vector<int32_t>{-3, -3, 3, -2, 3}, {5})});
}

TEST_CASE("Pad and CenterCropPad: refused forms") {
  CHECK(OneNode{"Pad", {input(x34()), input(i64({0, 0, 0, 0}))}, {{"mode", mode("mirror")}}}.error({x34()}) ==
        kPrefix + "Pad 'n': mode 'mirror' is not supported");
  CHECK(OneNode{"Pad", {input(x34()), input(tensor(std::vector<int32_t>{0, 0, 0, 0}, {4}))}, {}}.error({x34()}) ==
        kPrefix + "Pad 'n': pads 'in1' is not int64");
  CHECK(OneNode{"CenterCropPad", {input(x34()), input(f32({1.f, 1.f}, {2}))}, {}}.error({x34()}) ==
        kPrefix + "CenterCropPad 'n': shape 'in1' is not int32 or int64");
  CHECK(OneNode{"CenterCropPad", {input(x34()), input(i64({1, 1, 1}))}, {}}.error({x34()}) ==
        kPrefix + "CenterCropPad 'n': shape 'in1' must have one value per axis (2)");
}

}  // namespace ember::converter
