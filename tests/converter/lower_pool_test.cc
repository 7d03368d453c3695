// The pools of lower_pool.cc (1-D and 3-D MaxPool / AveragePool, asymmetric
// and large pads, auto_pad SAME_*, AveragePool's dilations, integer MaxPool,
// LpPool, GlobalMaxPool): each ONNX node lowered, serialized, loaded and run by
// the executor; the forms refused, with their messages.
//
// Expected values: onnx.reference of onnx 1.23.2 (tools/.venv-onnx/bin/python,
// ReferenceEvaluator; inputs rng = numpy default_rng(1), round(uniform(-2, 2), 1),
// drawn x1, x2, x3 in that order); GlobalMaxPool of 3-D and 5-D inputs by
// numpy's max over the spatial axes (the reference handles 4-D only) and the
// uint8 MaxPool by hand (the reference pads uint8 with NaN cast to garbage).
#include "tests/converter/one_node.h"

namespace ember::converter {

namespace {

using testing::f32;
using testing::input;
using testing::OneNode;

const std::string kPrefix = "the graph cannot be lowered to ember ops (1 problem): ";
using Ints = std::vector<int64_t>;

Tensor x1() {
  return f32({0.f, 1.8f, -1.4f, 1.8f, -0.8f, -0.3f, 1.3f, -0.4f, 0.2f, -1.9f, 1.f, 0.2f, -0.7f, 1.2f}, {1, 2, 7});
}
Tensor x2() {
  return f32({-0.8f, -0.2f, -1.5f, -0.4f, -1.2f, -1.f, 1.f, -0.9f, -0.1f, 1.9f,
              1.8f, 0.9f, 0.2f, -0.9f, -1.4f, 1.9f, 0.1f, -1.5f, 0.5f, 1.1f},
             {1, 1, 4, 5});
}
Tensor x3() {
  return f32({0.5f,  1.7f,  -1.8f, 0.1f,  -0.2f, -1.8f, 0.6f,  1.4f,  0.4f,  -1.f,  1.4f,  0.f,   0.f,   1.f,
              -1.4f, 1.3f,  0.7f,  1.1f,  -1.2f, 1.2f,  -1.2f, -1.7f, 1.4f,  1.4f,  1.5f,  -0.1f, -0.9f, -2.f,
              0.6f,  0.9f,  1.3f,  -0.9f, -1.1f, 0.6f,  1.2f,  1.9f,  -1.4f, -0.1f, 1.6f,  -0.3f, 0.4f,  -1.9f,
              0.7f,  1.7f,  1.3f,  1.5f,  0.6f,  -1.f,  1.1f,  -1.2f, 1.3f,  -1.7f, 1.3f,  -1.3f, -0.5f, -0.7f,
              0.8f,  -1.3f, -0.4f, -2.f,  -1.f,  -0.3f, -1.6f, 0.5f,  -0.5f, 0.9f,  0.6f,  -0.3f, 1.5f,  0.5f,
              1.2f,  -0.6f, 0.2f,  -1.2f, 2.f,   -1.f,  -1.f,  -1.7f, -1.f,  1.1f,  0.8f,  -1.5f, -0.5f, -0.3f,
              0.7f,  -0.2f, 0.3f,  1.4f,  0.9f,  -0.5f, -0.2f, -0.5f, -1.6f, -1.2f, -0.9f, -0.7f},
             {1, 2, 3, 4, 4});
}

}  // namespace

TEST_CASE("MaxPool: 1-D with asymmetric pads (the batch dynamic), 3-D, uint8") {
  OneNode m1{"MaxPool", {input(x1())}, {{"kernel_shape", Ints{3}}, {"strides", Ints{2}}, {"pads", Ints{2, 1}}}};
  m1.x_shape = std::vector<Dim>{Dim::named("N"), Dim::fixed(2), Dim::fixed(7)};
  m1.check({f32({0.f, 1.8f, 1.8f, 1.3f, -0.4f, 0.2f, 1.f, 1.2f}, {1, 2, 4})});
  OneNode{"MaxPool", {input(x3())}, {{"kernel_shape", Ints{2, 3, 2}}, {"strides", Ints{1, 2, 2}}}}.check(
      {f32({1.7f, 1.4f, 1.5f, 1.9f, 1.5f, 2.f, 1.5f, 2.f}, {1, 2, 2, 1, 2})});
  const Tensor u8 = tensor(std::vector<int64_t>{3, 200, 7, 255, 0, 9, 1, 2, 3}, {1, 1, 3, 3}).to(DType::UInt8);
  OneNode{"MaxPool", {input(u8)}, {{"kernel_shape", Ints{2, 2}}, {"pads", Ints{1, 1, 0, 0}}}}.check(
      {tensor(std::vector<int64_t>{3, 200, 200, 255, 255, 200, 255, 255, 9}, {1, 1, 3, 3}).to(DType::UInt8)});
}

TEST_CASE("AveragePool: SAME_UPPER without the pads counted, pads counted with ceil_mode, 3-D with dilations") {
  OneNode{"AveragePool", {input(x2())}, {{"kernel_shape", Ints{2, 3}}, {"strides", Ints{2, 2}},
                                         {"auto_pad", std::string("SAME_UPPER")}}}
      .check({f32({-0.25f, -0.349999994f, 0.0499999821f, 1.17499995f, -0.116666652f, -0.174999982f}, {1, 1, 2, 3})});
  OneNode{"AveragePool", {input(x2())}, {{"kernel_shape", Ints{3, 2}}, {"strides", Ints{2, 2}},
                                         {"pads", Ints{2, 0, 1, 1}}, {"count_include_pad", int64_t{1}},
                                         {"ceil_mode", int64_t{1}}}}
      .check({f32({-0.166666672f, -0.316666663f, -0.200000003f, 0.283333331f, -0.599999964f, -0.116666675f,
                   0.783333302f, -0.283333331f, -0.0499999933f},
                  {1, 1, 3, 3})});
  OneNode{"AveragePool", {input(x3())}, {{"kernel_shape", Ints{2, 2, 2}}, {"dilations", Ints{1, 2, 2}},
                                         {"pads", Ints{0, 1, 0, 1, 0, 1}}}}
      .check({f32({0.149999991f, -0.174999982f, 1.f,          0.0749999955f, 0.125000045f,  -0.625f,       0.137499988f,
                   0.199999988f, 0.474999994f,  0.099999994f, -0.175000012f, 1.5f,          0.162499994f,  0.31250006f,
                   -0.0499999672f, 0.524999976f, -0.0250000097f, 1.2249999f,  0.100000024f,  -0.200000003f, 1.60000002f,
                   0.300000012f, 0.575000048f,  0.950000048f, 0.524999976f,  0.025000006f,  1.10000002f,  0.875f,
                   -0.524999976f, 0.350000024f, 0.637500048f, -0.975000024f, 0.875f,        -0.137499988f, -0.3125f,
                   -0.474999964f, 0.925000012f, 0.274999976f, 0.75f,         0.412500024f,  -0.550000012f, 0.474999964f,
                   -0.099999994f, -0.175000027f, -0.0999999791f, 0.5f,       0.599999964f,  0.300000012f,  0.25f,
                   -0.699999988f, -0.349999994f, -0.375f,      -0.175000027f, -0.299999982f},
                  {1, 2, 3, 3, 3})});
}

TEST_CASE("LpPool (p 2 with pads, p 1 in 1-D) and GlobalMaxPool (1-D, 3-D)") {
  OneNode{"LpPool", {input(x2())}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}},
                                    {"pads", Ints{1, 1, 1, 1}}, {"p", int64_t{2}}}}
      .check({f32({0.8f, 1.51327455f, 1.26491106f, 2.0591259f, 1.63095057f, 2.52784491f, 1.9f, 1.50332963f,
                   1.20830464f},
                  {1, 1, 3, 3})});
  OneNode{"LpPool", {input(x1())}, {{"kernel_shape", Ints{3}}, {"p", int64_t{1}}}}.check(
      {f32({3.2f, 5.f, 4.f, 2.9f, 2.4f, 2.5f, 3.1f, 3.1f, 1.9f, 2.1f}, {1, 2, 5})});
  OneNode{"GlobalMaxPool", {input(x1())}, {}}.check({f32({1.8f, 1.2f}, {1, 2, 1})});
  OneNode{"GlobalMaxPool", {input(x3())}, {}}.check({f32({1.9f, 2.f}, {1, 2, 1, 1, 1})});
}

TEST_CASE("Pools: refused forms") {
  OneNode ceil{"MaxPool", {input(x1())}, {{"kernel_shape", Ints{3}}, {"pads", Ints{2, 1}}, {"ceil_mode", int64_t{1}}}};
  ceil.x_shape = std::vector<Dim>{Dim::fixed(1), Dim::fixed(2), Dim::named("L")};
  CHECK(ceil.error({x1()}) == kPrefix + "MaxPool 'n': ceil_mode = 1 needs static spatial dims");
  OneNode d3{"AveragePool", {input(x3())}, {{"kernel_shape", Ints{2, 2, 2}}}};
  d3.x_shape = std::vector<Dim>{Dim::fixed(1), Dim::fixed(2), Dim::named("D"), Dim::fixed(4), Dim::fixed(4)};
  CHECK(d3.error({x3()}) == kPrefix + "AveragePool 'n': 3-D pooling needs static spatial dims");
  CHECK(OneNode{"LpPool", {input(x1())}, {{"kernel_shape", Ints{3, 3}}}}.error({x1()}) ==
        kPrefix + "LpPool 'n': kernel_shape [3, 3] must have 1 values");
  CHECK(OneNode{"MaxPool", {input(x1().reshape({2, 7}))}, {{"kernel_shape", Ints{3}}}}.error({x1()}) ==
        kPrefix + "MaxPool 'n': input has rank 2, not 3 to 5 (1-D to 3-D)");
}

}  // namespace ember::converter
