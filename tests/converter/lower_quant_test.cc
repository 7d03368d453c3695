// The lowerings of lower_quant.cc: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul and
// QLinearConv nodes lowered, serialized, loaded and run by the executor; the
// forms they refuse, with their messages.
//
// Expected values: onnx.reference of onnx 1.23.2 (tools/.venv-onnx/bin/python,
// each node run by ReferenceEvaluator on the inputs written here), except
// MatMulInteger with per-row / per-column zero points, which the reference
// broadcasts numpy's way (a's [M] zero points along K): that case is the
// spec's (A - a_zp[:, None]) @ (B - b_zp) in numpy int32.
#include "tests/converter/one_node.h"

namespace ember::converter {

namespace {

using testing::constant;
using testing::f32;
using testing::In;
using testing::input;
using testing::OneNode;

const In kNone{};
const std::string kPrefix = "the graph cannot be lowered to ember ops (1 problem): ";

Tensor u8(std::vector<int64_t> v, std::vector<int64_t> shape) { return tensor(v, shape).to(DType::UInt8); }
Tensor i8(std::vector<int64_t> v, std::vector<int64_t> shape) { return tensor(v, shape).to(DType::Int8); }
Tensor i32(std::vector<int64_t> v, std::vector<int64_t> shape) { return tensor(v, shape).to(DType::Int32); }
Tensor scalar(double v, DType dt = DType::Float32) { return scalar_tensor(v, DType::Float64).to(dt); }

}  // namespace

TEST_CASE("DequantizeLinear: per tensor, per axis, blocked (the last block cut), float16 scale") {
  OneNode{"DequantizeLinear", {input(u8({0, 3, 128, 255}, {4})), input(scalar(0.5)), input(scalar(128, DType::UInt8))}}
      .check({f32({-64.f, -62.5f, 0.f, 63.5f}, {4})});
  const Tensor x = i8({-128, 0, 5, 127, -3, 9, 1, 2, 3, 4, 100, -100}, {2, 3, 2});
  const Tensor y = f32({-64.5f, -0.5f, 14.f, 258.f, -0.75f, 2.25f, 0.f, 0.5f, 10.f, 12.f, 25.f, -25.f}, {2, 3, 2});
  for (bool c : {false, true}) {  // scale and zero point as graph inputs (ops) and as constants (folded)
    OneNode{"DequantizeLinear", {input(x), In{f32({0.5f, 2.f, 0.25f}, {3}), c}, In{i8({1, -2, 0}, {3}), c}}}.check({y});
    OneNode{"DequantizeLinear",
            {input(u8({0, 10, 20, 30, 40, 50, 60, 70}, {2, 4})), In{f32({0.5f, 2.f, 1.f, 0.1f}, {2, 2}), c},
             In{u8({10, 20, 0, 60}, {2, 2}), c}},
            {{"axis", int64_t{1}}, {"block_size", int64_t{3}}}}
        .check({f32({-5.f, 0.f, 5.f, 20.f, 40.f, 50.f, 60.f, 1.f}, {2, 4})});
  }
  // The output takes the scale's dtype (float16), computed in float32.
  OneNode{"DequantizeLinear", {input(i8({1, -3, 7}, {3})), input(scalar(0.1, DType::Float16))}}.check(
      {tensor(std::vector<double>{0.0999755859375, -0.2998046875, 0.69970703125}, {3}).to(DType::Float16)});
}

TEST_CASE("QuantizeLinear: ties to even, saturation, no zero point, int16, per axis, blocked") {
  const Tensor x = f32({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 100.f, -100.f, 3.2f}, {8});
  OneNode{"QuantizeLinear", {input(x), input(scalar(1.0)), input(scalar(3, DType::UInt8))}}.check(
      {u8({3, 5, 5, 3, 1, 103, 0, 6}, {8})});
  OneNode{"QuantizeLinear", {input(x), input(scalar(0.5))}}.check({u8({1, 3, 5, 0, 0, 200, 0, 6}, {8})});
  OneNode{"QuantizeLinear", {input(x), input(scalar(0.5))}, {{"output_dtype", int64_t{3}}}}.check(  // INT8
      {i8({1, 3, 5, -1, -3, 127, -128, 6}, {8})});
  OneNode{"QuantizeLinear", {input(f32({-40000.f, 1000.5f, 3.f, -7.5f}, {4})), input(scalar(0.5)),
                             input(scalar(-10, DType::Int16))}}
      .check({tensor(std::vector<int64_t>{-32768, 1991, -4, -25}, {4}).to(DType::Int16)});
  const Tensor xa = f32({-1.f, 0.3f, 2.6f, -7.1f, 0.24f, 0.26f, 5.f, -5.f, 1.f, 0.5f, -0.25f, 0.75f}, {2, 3, 2});
  OneNode{"QuantizeLinear", {input(xa), constant(f32({0.5f, 2.f, 0.25f}, {3})), constant(i8({1, -2, 0}, {3}))}}.check(
      {i8({-1, 2, -1, -6, 1, 1, 11, -9, -2, -2, -1, 3}, {2, 3, 2})});
  OneNode{"QuantizeLinear",
          {input(f32({0.f, 1.f, 2.f, 3.f, 4.f, -1.f, -2.f, 6.5f, 7.5f, 8.5f}, {2, 5})),
           input(f32({0.5f, 1.f, 2.f, 0.5f}, {2, 2})), input(i8({0, 5, -3, 2}, {2, 2}))},
          {{"axis", int64_t{1}}, {"block_size", int64_t{3}}}}
      .check({i8({0, 2, 4, 8, 9, -3, -4, 0, 17, 19}, {2, 5})});
}

TEST_CASE("DynamicQuantizeLinear: uint8 data, scale and zero point") {
  OneNode{"DynamicQuantizeLinear", {input(f32({1.f, 2.5f, -0.75f, 3.1f, 0.f, -1.2f}, {6}))}}.check(
      {u8({130, 219, 27, 255, 71, 0}, {6}), scalar(0.016862746328115463), scalar(71, DType::UInt8)});
  // All zeros: scale 1 / 255 (the empty range), zero point 0.
  OneNode{"DynamicQuantizeLinear", {input(zeros({3}))}}.check(
      {u8({0, 0, 0}, {3}), scalar(1.0 / 255.0), scalar(0, DType::UInt8)});
}

TEST_CASE("MatMulInteger and ConvInteger: exact int32 with per-row / per-column / per-channel zero points") {
  OneNode{"MatMulInteger",
          {input(u8({11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0}, {4, 3})), input(u8({1, 4, 2, 5, 3, 6}, {3, 2})),
           input(u8({12, 0, 5, 7}, {4})), input(u8({1, 3}, {2}))}}
      .check({i32({-23, -38, 10, 28, -8, -8, -17, -26}, {4, 2})});
  OneNode{"MatMulInteger", {input(i8({-128, 127, 5, 3, -7, 100}, {2, 3})), input(i8({127, -128, -1, 2, 50, 60}, {3, 2}))}}
      .check({i32({-16133, 16938, 5388, 5602}, {2, 2})});
  std::vector<int64_t> xv;
  for (int64_t k = 0; k < 16; ++k) xv.push_back(3 * k);
  OneNode{"ConvInteger",
          {input(u8(xv, {1, 1, 4, 4})), input(u8({1, 2, 3, 4, 5, 6, 7, 8}, {2, 1, 2, 2})), input(scalar(4, DType::UInt8)),
           input(u8({2, 5}, {2}))},
          {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}}}
      .check({i32({-8, 3, 5, 40, 64, 12, 0, -35, -41, -12, 4, 10, 68, 138, 58, 32, 38, 0}, {1, 2, 3, 3})});
}

TEST_CASE("QLinearMatMul and QLinearConv: int32 product requantized as onnx.reference") {
  OneNode{"QLinearMatMul",
          {input(u8({208, 236, 0, 238, 3, 214, 255, 29}, {2, 4})), input(f32({0.0066f}, {1})), input(u8({113}, {1})),
           input(u8({152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247}, {4, 3})), input(f32({0.00705f}, {1})),
           input(u8({114}, {1})), input(f32({0.0107f}, {1})), input(u8({118}, {1}))}}
      .check({u8({168, 115, 255, 1, 66, 151}, {2, 3})});
  OneNode{"QLinearMatMul",
          {input(i8({-50, 20, 7, 127, -128, 0, 33, -9}, {2, 2, 2})), input(scalar(0.02)), input(scalar(-3, DType::Int8)),
           input(i8({10, -20, 30, 40, 50, -60, 1, 2, 3, -4, -5, -6}, {2, 2, 3})), input(scalar(0.03)),
           input(scalar(2, DType::Int8)), input(scalar(0.05)), input(scalar(-1, DType::Int8))}}
      .check({i8({5, 25, -34, 59, 71, -94, 0, -1, -3, -1, 0, 0}, {2, 2, 3})});
  std::vector<int64_t> xv;
  for (int64_t k = 0; k < 18; ++k) xv.push_back(k * 14 % 251);
  OneNode{"QLinearConv",
          {input(u8(xv, {1, 2, 3, 3})), input(scalar(0.05)), input(scalar(10, DType::UInt8)),
           constant(u8({1, 200, 30, 4, 50, 6, 7, 80, 9, 10, 110, 12, 13, 140, 15, 16}, {2, 2, 2, 2})),
           constant(f32({0.01f, 0.02f}, {2})), constant(u8({100, 20}, {2})), input(scalar(0.3)),
           input(scalar(128, DType::UInt8)), constant(i32({500, -800}, {2}))},
          {{"pads", std::vector<int64_t>{0, 1, 0, 1}}}}
      .check({u8({99, 60, 50, 78, 91, 30, 20, 56, 169, 178, 186, 136, 183, 201, 209, 146}, {1, 2, 2, 4})});
}

TEST_CASE("quantization ops: refused forms name the node and the problem") {
  const Tensor x = f32({1.f, 2.f}, {2});
  const std::string kOutputs = " is not supported (int8, uint8, int16, uint16, int4, uint4, int2, uint2, float8 but e8m0, "
                               "float4)";
  CHECK(OneNode{"QuantizeLinear", {input(x), input(scalar(0.5))}, {{"output_dtype", int64_t{24}}}}.error(
            {u8({0, 0}, {2})}) ==
        kPrefix + "QuantizeLinear 'n': output dtype float8_e8m0fnu" + kOutputs);
  CHECK(OneNode{"QuantizeLinear", {input(x), input(scalar(0.5)), input(scalar(0, DType::Int32))}}.error(
            {i32({0, 0}, {2})}) ==
        kPrefix + "QuantizeLinear 'n': output dtype int32" + kOutputs);
  CHECK(OneNode{"DequantizeLinear", {input(u8({1, 2, 3, 4}, {2, 2})), input(f32({1.f, 2.f, 3.f}, {3}))}}.error(
            {zeros({2, 2})}) ==
        kPrefix + "DequantizeLinear 'n': quantization parameter 'in1' has 3 values, axis 1 has 2");
  CHECK(OneNode{"DequantizeLinear", {input(u8({1, 2, 3, 4}, {2, 2})), input(f32({1.f, 2.f}, {1, 2}))},
                {{"axis", int64_t{1}}, {"block_size", int64_t{3}}}}
            .error({zeros({2, 2})}) ==
        kPrefix + "DequantizeLinear 'n': quantization parameter 'in1' has shape [1, 2] for x of shape [2, 2] and "
                  "block_size 3");
  CHECK(OneNode{"DequantizeLinear", {input(tensor(std::vector<int64_t>{1}, {1})), input(scalar(1.0))}}.error({zeros({1})}) ==
        kPrefix + "DequantizeLinear 'n': x 'in0' of dtype int64 is not supported (8-, 16- and 32-bit integers, "
                  "float8, float4, int4, uint4, int2, uint2)");
  CHECK(OneNode{"MatMulInteger", {input(x), input(x)}}.error({i32({0}, {1})}) ==
        kPrefix + "MatMulInteger 'n': input 'in0' of dtype float32 is not int8 or uint8");
}

}  // namespace ember::converter
