// The lowerings of lower_math.cc (Shrink, Hardmax, LpNormalization,
// MeanVarianceNormalization, Einsum) and Gemm's MatMul form (lower_nn.cc):
// each ONNX node lowered, serialized, loaded and run by the executor; the
// forms refused, with their messages.
//
// Expected values: onnx.reference of onnx 1.23.2 (tools/.venv-onnx/bin/python,
// ReferenceEvaluator on the inputs written here; rng = default_rng(1) and
// round(uniform(-2, 2), 1) for the random ones), Einsum from numpy.einsum, and
// LpNormalization with p = 1 on negative values by hand (the reference sums x,
// not |x|; the spec's and ONNX Runtime's norm is sum |x|).
#include "tests/converter/one_node.h"

namespace ember::converter {

namespace {

using testing::constant;
using testing::f32;
using testing::input;
using testing::OneNode;

const std::string kPrefix = "the graph cannot be lowered to ember ops (1 problem): ";

Tensor gemm_a() { return f32({0.f, 1.8f, -1.4f, 1.8f, -0.8f, -0.3f}, {3, 2}); }
Tensor gemm_b() {
  return f32({1.3f, -0.4f, 0.2f, -1.9f, 1.f, 0.2f, -0.7f, 1.2f, -0.8f, -0.2f, -1.5f, -0.4f}, {4, 3});
}
Tensor e1() {
  return f32({-0.2f, -1.8f, 0.6f, 1.4f, 0.4f, -1.f, 1.4f, 0.f, 0.f, 1.f, -1.4f, 1.3f,
              0.7f, 1.1f, -1.2f, 1.2f, -1.2f, -1.7f, 1.4f, 1.4f, 1.5f, -0.1f, -0.9f, -2.f},
             {2, 3, 4});
}
Tensor e2() {
  return f32({0.6f, 0.9f, 1.3f, -0.9f, -1.1f, 0.6f, 1.2f, 1.9f, -1.4f, -0.1f, 1.6f, -0.3f, 0.4f, -1.9f, 0.7f, 1.7f},
             {2, 4, 2});
}
Attr eq(const char* e) { return std::string(e); }

}  // namespace

TEST_CASE("Gemm: transA, alpha, beta, matrix and scalar C, non-constant B, fused Relu") {
  const Tensor a = gemm_a(), b = gemm_b();
  OneNode{"Gemm",
          {input(a), input(b), input(f32({-1.2f, -1.f, 1.f, -0.9f}, {1, 4}))},
          {{"alpha", 0.25}, {"beta", 0.5}, {"transA", int64_t{1}}, {"transB", int64_t{1}}}}
      .check({f32({-0.5f, -0.89f, 0.24f, 0.155f, -0.21f, -0.92f, 0.785f, -1.185f}, {2, 4})});
  OneNode{"Gemm",
          {input(a.t().contiguous()), input(b.t().contiguous()),
           input(f32({-0.1f, 1.9f, 1.8f, 0.9f, 0.2f, -0.9f, -1.4f, 1.9f}, {2, 4}))}}
      .check({f32({0.3f, 0.34f, 0.76f, 3.32f, 1.76f, -2.58f, -0.26f, -1.04f}, {2, 4})});
  OneNode{"Gemm",
          {input(a.t().contiguous()), constant(b.t().contiguous()), input(scalar_tensor(-1.5, DType::Float32))},
          {{"alpha", 2.0}, {"activation", std::string("Relu")}}}
      .check({f32({0.f, 0.f, 0.f, 3.34f, 1.62f, 0.f, 0.78f, 0.f}, {2, 4})});
}

TEST_CASE("Shrink, Hardmax (the first maximum), LpNormalization (0 where the norm is 0)") {
  OneNode{"Shrink", {input(f32({-2.f, -1.f, -0.5f, 0.f, 0.5f, 1.f, 2.f}, {7}))}, {{"lambd", 0.75}, {"bias", 0.25}}}
      .check({f32({-1.75f, -0.75f, 0.f, 0.f, 0.f, 0.75f, 1.75f}, {7})});
  const Tensor h = f32({1.f, 3.f, 3.f, 0.f, -1.f, 2.f, 5.f, 5.f, 1.f, 2.f, 9.f, 9.f}, {2, 2, 3});
  OneNode{"Hardmax", {input(h)}, {{"axis", int64_t{1}}}}.check(
      {f32({1.f, 1.f, 1.f, 0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 0.f, 1.f, 1.f}, {2, 2, 3})});
  OneNode{"Hardmax", {input(h)}}.check({f32({0.f, 1.f, 0.f, 0.f, 0.f, 1.f, 1.f, 0.f, 0.f, 0.f, 1.f, 0.f}, {2, 2, 3})});
  const Tensor l = f32({3.f, -4.f, 0.f, 0.f, 0.f, 0.f, 1.f, 2.f, -2.f}, {3, 3});
  OneNode{"LpNormalization", {input(l)}, {{"axis", int64_t{1}}, {"p", int64_t{1}}}}.check(
      {f32({3.f / 7, -4.f / 7, 0.f, 0.f, 0.f, 0.f, 0.2f, 0.4f, -0.4f}, {3, 3})});
  OneNode{"LpNormalization", {input(abs(l))}, {{"axis", int64_t{0}}}}.check(
      {f32({0.948683262f, 0.89442718f, 0.f, 0.f, 0.f, 0.f, 0.316227764f, 0.44721359f, 1.f}, {3, 3})});
}

TEST_CASE("MeanVarianceNormalization: default axes [0, 2, 3] and axes [1]") {
  const Tensor x = f32({0.1f, -1.5f, 0.5f, 1.1f, 0.5f, 1.7f, -1.8f, 0.1f}, {2, 2, 2, 1});
  OneNode{"MeanVarianceNormalization", {input(x)}}.check(
      {f32({-0.087370418f, -1.48529685f, 0.483942866f, 1.03702044f, 0.262111187f, 1.31055605f, -1.63618779f,
            0.115224481f},
           {2, 2, 2, 1})});
  OneNode{"MeanVarianceNormalization", {input(x)}, {{"axes", std::vector<int64_t>{1}}}}.check(
      {f32({-1.00000024f, -0.999999881f, 1.00000012f, 0.999999881f, 1.f, 1.f, -1.f, -1.f}, {2, 2, 2, 1})});
}

TEST_CASE("Einsum: batched matmul with a permuted output, implicit output, diagonal, ellipsis, sum") {
  OneNode{"Einsum", {input(e1()), input(e2())}, {{"equation", eq("bij, bjk -> bki")}}}.check(
      {f32({-1.44f, -2.6f, 4.4f, 4.46f, 2.1f, 0.73f, 1.14f, 0.5f, -4.02f, 3.92f, 0.35f, -1.81f}, {2, 2, 3})});
  OneNode{"Einsum", {input(e1()), input(e2().select(0, 0).t().contiguous())}, {{"equation", eq("bij,kj")}}}.check(
      {f32({-1.44f, 4.46f, -2.6f, 2.1f, 4.4f, 0.73f, 4.61f, 1.2f, -2.79f, 3.95f, -0.64f, -2.9f}, {2, 3, 2})});
  const Tensor d = f32({1.3f, 1.5f, 0.6f, -1.f, 1.1f, -1.2f, 1.3f, -1.7f, 1.3f,
                        -1.3f, -0.5f, -0.7f, 0.8f, -1.3f, -0.4f, -2.f, -1.f, -0.3f},
                       {2, 3, 3});
  OneNode{"Einsum", {input(d)}, {{"equation", eq("...ii ->...i")}}}.check(
      {f32({1.3f, 1.1f, 1.3f, -1.3f, -1.3f, -0.3f}, {2, 3})});
  OneNode{"Einsum", {input(e1()), input(e2().select(0, 1).contiguous())}, {{"equation", eq("...ij,jk->...ik")}}}.check(
      {f32({-1.38f, 1.8f, -1.6f, -2.4f, 1.95f, 4.57f, 1.14f, 3.92f, 0.5f, 0.35f, -4.02f, -1.81f}, {2, 3, 2})});
  OneNode{"Einsum", {input(e1())}, {{"equation", eq("ijk->k")}}}.check({f32({1.2f, -2.5f, -0.1f, 3.3f}, {4})});
  // i,i: the inner product, a scalar.
  OneNode{"Einsum", {input(f32({1.f, 2.f, 3.f}, {3})), input(f32({4.f, -5.f, 6.f}, {3}))}, {{"equation", eq("i,i")}}}
      .check({scalar_tensor(12.0, DType::Float32)});
}

TEST_CASE("Einsum, LpNormalization, Hardmax: refused forms name the node and the problem") {
  const Tensor x = zeros({2, 3});
  CHECK(OneNode{"Einsum", {input(x), input(x), input(x)}, {{"equation", eq("ij,jk,kl->il")}}}.error({zeros({2, 3})}) ==
        kPrefix + "Einsum 'n': equation 'ij,jk,kl->il': more than 2 operands are not supported");
  CHECK(OneNode{"Einsum", {input(x), input(zeros({2, 2}))}, {{"equation", eq("ij,jk->ik")}}}.error({zeros({2, 2})}) ==
        kPrefix + "Einsum 'n': equation 'ij,jk->ik': a label has sizes that differ between the operands "
                  "(broadcasting is not supported)");
  CHECK(OneNode{"Einsum", {input(x)}, {{"equation", eq("ijk->k")}}}.error({zeros({3})}) ==
        kPrefix + "Einsum 'n': operand 'ijk' does not match its rank 2");
  CHECK(OneNode{"LpNormalization", {input(x)}, {{"p", int64_t{3}}}}.error({x}) ==
        kPrefix + "LpNormalization 'n': p = 3 is not supported (1 or 2)");
}

}  // namespace ember::converter
