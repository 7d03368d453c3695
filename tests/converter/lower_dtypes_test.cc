// The lowerings of lower_dtypes.cc (Cast/CastLike saturation, integer Div,
// Pow's output dtype, Mod, BitShift, the bitwise ops, IsNaN, IsInf, BitCast)
// and QuantizeLinear / DequantizeLinear with the float8, float4 and 4- and
// 2-bit types (lower_quant.cc): each ONNX node lowered, serialized, loaded
// and run by the executor; the forms refused, with their messages.
//
// Expected values: onnx 1.23.2's node test cases (onnx.backend.test.case.node:
// cast, mod, bitshift, div, pow, isinf, quantizelinear; made by onnx.reference
// and numpy / ml_dtypes), and onnx.reference on the inputs written here.
#include <cmath>

#include "tests/converter/one_node.h"

namespace ember::converter {

namespace {

using testing::input;
using testing::OneNode;

const std::string kPrefix = "the graph cannot be lowered to ember ops (1 problem): ";

Tensor i8(std::initializer_list<int64_t> v) { return tensor(v).to(DType::Int8); }
Tensor i64(std::initializer_list<int64_t> v) { return tensor(v); }
Tensor f32(std::initializer_list<float> v) { return tensor(v); }

// Runs `node` with one output declared like `like` and returns it as float32.
Tensor run_as_f32(const OneNode& node, const Tensor& like) { return node.run({like})[0].to(DType::Float32); }

}  // namespace

TEST_CASE("Cast to float8 saturates by default (clamped to +-max), not with saturate 0") {
  const Tensor x = f32({0.47892547f, 0.25f, 1e6f, 1e-7f, NAN, INFINITY, -INFINITY, -1e6f, 0.0f});
  const Tensor like = zeros({9}).to(DType::Float8E4M3FN);
  ember::testing::check_equal(
      run_as_f32(OneNode{"Cast", {input(x)}, {{"to", int64_t{17}}}}, like),
      f32({0.46875f, 0.25f, 448.f, 0.f, NAN, 448.f, -448.f, -448.f, 0.f}));
  ember::testing::check_equal(
      run_as_f32(OneNode{"Cast", {input(x)}, {{"to", int64_t{17}}, {"saturate", int64_t{0}}}}, like),
      f32({0.46875f, 0.25f, NAN, 0.f, NAN, NAN, NAN, NAN, 0.f}));
  ember::testing::check_equal(
      run_as_f32(OneNode{"Cast", {input(x)}, {{"to", int64_t{18}}}}, zeros({9}).to(DType::Float8E4M3FNUZ)),
      f32({0.46875f, 0.25f, 240.f, 0.f, NAN, 240.f, -240.f, -240.f, 0.f}));
  ember::testing::check_equal(
      run_as_f32(OneNode{"Cast", {input(x)}, {{"to", int64_t{19}}, {"saturate", int64_t{0}}}},
                 zeros({9}).to(DType::Float8E5M2)),
      f32({0.5f, 0.25f, INFINITY, 0.f, NAN, INFINITY, -INFINITY, -INFINITY, 0.f}));
  // CastLike takes the target's dtype (and saturate).
  ember::testing::check_equal(
      run_as_f32(OneNode{"CastLike", {input(x), input(zeros({1}).to(DType::Float8E5M2))}}, zeros({9}).to(DType::Float8E5M2)),
      f32({0.5f, 0.25f, 57344.f, 0.f, NAN, 57344.f, -57344.f, -57344.f, 0.f}));
  // int4: truncated, out of range 0 (ml_dtypes).
  OneNode{"Cast", {input(f32({-9.f, -8.f, 7.f, 8.f, 2.5f}))}, {{"to", int64_t{22}}}}.check(
      {tensor({0, -8, 7, 0, 2}).to(DType::Int4)});
}

TEST_CASE("Div of integers truncates; Pow keeps x's dtype") {
  OneNode{"Div", {input(tensor({-3, 3, -3, 3}, DType::Int32)), input(tensor({2, 2, -2, -2}, DType::Int32))}}.check(
      {tensor({-1, 1, 1, -1}, DType::Int32)});
  OneNode{"Div", {input(f32({-3.f, 3.f})), input(f32({2.f, -2.f}))}}.check({f32({-1.5f, -1.5f})});
  OneNode{"Pow", {input(tensor({1, 2, 3}, DType::Int32)), input(f32({4.f, 5.f, 6.f}))}}.check(
      {tensor({1, 32, 729}, DType::Int32)});
}

TEST_CASE("Mod: fmod 0 has the divisor's sign, fmod 1 the dividend's") {
  OneNode{"Mod", {input(i8({-4, 7, 5, 4, -7, 8})), input(i8({2, -3, 8, -2, 3, 5}))}}.check({i8({0, -2, 5, 0, 2, 3})});
  OneNode{"Mod", {input(i64({-4, 7, 5, 4, -7, 8})), input(i64({2, -3, 8, -2, 3, 5}))}, {{"fmod", int64_t{1}}}}.check(
      {i64({0, 1, 5, 0, -1, 3})});
  OneNode{"Mod",
          {input(f32({-0.f, -3.f, 3.f, -1.f, 1.f, INFINITY, 1.f, -4.3f})),
           input(f32({2.f, INFINITY, INFINITY, -INFINITY, -INFINITY, 2.f, 0.f, 2.1f}))}}
      .check({f32({0.f, INFINITY, 3.f, -1.f, -INFINITY, NAN, NAN, 1.9999995f})});
}

TEST_CASE("BitShift past the width or by a negative amount; the bitwise ops") {
  OneNode{"BitShift", {input(i8({64, 1, -64, -8})), input(i8({1, 7, 1, 8}))}, {{"direction", std::string("LEFT")}}}
      .check({i8({-128, -128, -128, 0})});
  OneNode{"BitShift", {input(i8({-8, 4, -1, -128})), input(i8({-1, -8, 127, 1}))}, {{"direction", std::string("RIGHT")}}}
      .check({i8({-1, 0, -1, -64})});
  const Tensor a = tensor({0, 255, 170, 15}).to(DType::UInt8), b = tensor({1, 15, 85, 240}).to(DType::UInt8);
  OneNode{"BitwiseAnd", {input(a), input(b)}}.check({tensor({0, 15, 0, 0}).to(DType::UInt8)});
  OneNode{"BitwiseOr", {input(a), input(b)}}.check({tensor({1, 255, 255, 255}).to(DType::UInt8)});
  OneNode{"BitwiseXor", {input(a), input(b)}}.check({tensor({1, 240, 255, 255}).to(DType::UInt8)});
  OneNode{"BitwiseNot", {input(a)}}.check({tensor({255, 0, 85, 240}).to(DType::UInt8)});
  OneNode{"BitwiseNot", {input(tensor({0, -1, 5}, DType::Int32))}}.check({tensor({-1, 0, -6}, DType::Int32)});
}

TEST_CASE("IsNaN, IsInf with detect_positive / detect_negative, BitCast") {
  const Tensor x = f32({-1.7f, NAN, INFINITY, -3.6f, -INFINITY, INFINITY});
  OneNode{"IsNaN", {input(x)}}.check({tensor({false, true, false, false, false, false})});
  OneNode{"IsInf", {input(x)}}.check({tensor({false, false, true, false, true, true})});
  OneNode{"IsInf", {input(x)}, {{"detect_positive", int64_t{0}}}}.check(
      {tensor({false, false, false, false, true, false})});
  OneNode{"IsInf", {input(x)}, {{"detect_negative", int64_t{0}}}}.check(
      {tensor({false, false, true, false, false, true})});
  OneNode{"IsInf", {input(x)}, {{"detect_negative", int64_t{0}}, {"detect_positive", int64_t{0}}}}.check(
      {tensor({false, false, false, false, false, false})});
  OneNode{"BitCast", {input(f32({1.f, -2.f, 0.f}))}, {{"to", int64_t{6}}}}.check(
      {tensor({1065353216, -1073741824, 0}, DType::Int32)});
  OneNode{"BitCast", {input(tensor({true, false}))}, {{"to", int64_t{2}}}}.check({tensor({1, 0}).to(DType::UInt8)});
}

TEST_CASE("QuantizeLinear and DequantizeLinear with float8, float4, int4 and int2") {
  const Tensor x = f32({0.f, 1.f, 2.f, 100000.f, 200.f});
  const Tensor two = scalar_tensor(2.0, DType::Float32);
  ember::testing::check_equal(
      run_as_f32(OneNode{"QuantizeLinear", {input(x), input(two), input(zeros({1}).to(DType::Float8E4M3FN))}},
                 zeros({5}).to(DType::Float8E4M3FN)),
      f32({0.f, 0.5f, 1.f, 448.f, 96.f}));
  // int4: round half to even, + zero point, saturated to [-8, 7].
  OneNode{"QuantizeLinear", {input(f32({-20.f, 3.f, 5.f, 100.f})), input(two), input(tensor({1}).to(DType::Int4))}}
      .check({tensor({-8, 3, 3, 7}).to(DType::Int4)});
  OneNode{"DequantizeLinear", {input(tensor({-2, -1, 0, 1}).to(DType::Int2)), input(two)}}.check(
      {f32({-4.f, -2.f, 0.f, 2.f})});
  OneNode{"DequantizeLinear", {input(f32({0.5f, 6.f, -3.f}).to(DType::Float4E2M1FN)), input(two)}}.check(
      {f32({1.f, 12.f, -6.f})});
}

TEST_CASE("dtype-family lowerings refuse what they do not support, naming the node") {
  const Tensor x = f32({1.f});
  CHECK(OneNode{"BitShift", {input(i8({1})), input(i8({1}))}, {{"direction", std::string("UP")}}}.error({i8({1})}) ==
        kPrefix + "BitShift 'n': direction 'UP' must be LEFT or RIGHT");
  CHECK(OneNode{"Mod", {input(x), input(x)}, {{"fmod", int64_t{2}}}}.error({x}) ==
        kPrefix + "Mod 'n': fmod 2 must be 0 or 1");
  CHECK(OneNode{"Cast", {input(x)}, {{"to", int64_t{24}}, {"round_mode", std::string("nearest")}}}.error(
            {zeros({1}).to(DType::Float8E8M0FNU)}) ==
        kPrefix + "Cast 'n': cast to FLOAT8E8M0 with saturate 1 and round_mode 'nearest' is not supported (only "
                  "saturate 1, round_mode 'up')");
  CHECK(OneNode{"BitCast", {input(x)}, {{"to", int64_t{5}}}}.error({tensor({1}, DType::Int16)}) ==
        kPrefix + "BitCast 'n': bit cast from float32 to int16 changes the element size (only equal sizes are "
                  "supported)");
  CHECK(OneNode{"BitwiseNot", {input(x)}}.error({x}) == kPrefix + "BitwiseNot 'n': input 'in0' is not an integer tensor");
  CHECK(OneNode{"Cast", {input(x)}, {{"to", int64_t{8}}}}.error({x}) ==
        kPrefix + "Cast 'n': cast to ONNX dtype STRING (8) is not supported");
}

}  // namespace ember::converter
