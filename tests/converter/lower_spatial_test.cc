// The spatial ops of lower_spatial.cc (Resize, Upsample, ConvTranspose, GridSample): each
// ONNX node lowered, serialized, loaded and run by the executor (constant and
// run-time scales / sizes / roi, axes, keep_aspect_ratio_policy, antialias,
// tf_crop_and_resize; ConvTranspose's auto_pad, output_shape, groups, 1-D);
// GridSample; the forms refused, with their messages.
//
// Expected values: onnx.reference of onnx 1.23.2 (tools/.venv-onnx/bin/python,
// ReferenceEvaluator; inputs rng = numpy default_rng(1), round(uniform(-2, 2),
// 1), drawn x1, x2, w1, b1, x3, w3 in that order); the grouped ConvTransposes
// (the reference's group path mis-slices the weight) by torch 1.13's
// F.conv_transpose2d with the pads applied as a crop / zero extension.
#include "tests/converter/one_node.h"

namespace ember::converter {

namespace {

using testing::constant;
using testing::f32;
using testing::input;
using testing::OneNode;

const std::string kPrefix = "the graph cannot be lowered to ember ops (1 problem): ";
using Ints = std::vector<int64_t>;

Tensor x1() {
  return f32({0.f, 1.79999995f, -1.39999998f, 1.79999995f, -0.800000012f, -0.300000012f, 1.29999995f, -0.400000006f,
              0.200000003f, -1.89999998f, 1.f, 0.200000003f},
             {1, 1, 3, 4});
}
Tensor x2() {
  return f32({-0.699999988f, 1.20000005f, -0.800000012f, -0.200000003f, -1.5f, -0.400000006f, -1.20000005f, -1.f, 1.f,
              -0.899999976f, -0.100000001f, 1.89999998f, 1.79999995f, 0.899999976f, 0.200000003f, -0.899999976f,
              -1.39999998f, 1.89999998f},
             {1, 2, 3, 3});
}
Tensor w1() {
  return f32({0.100000001f,  -1.5f,        0.5f,          1.10000002f,  0.5f,         1.70000005f,
              -1.79999995f,  0.100000001f, -0.200000003f, -1.79999995f, 0.600000024f, 1.39999998f,
              0.400000006f,  -1.f,         1.39999998f,   0.f,          0.f,          1.f,
              -1.39999998f,  1.29999995f,  0.699999988f,  1.10000002f,  -1.20000005f, 1.20000005f,
              -1.20000005f,  -1.70000005f, 1.39999998f,   1.39999998f,  1.5f,         -0.100000001f,
              -0.899999976f, -2.f,         0.600000024f,  0.899999976f, 1.29999995f,  -0.899999976f},
             {2, 2, 3, 3});
}
Tensor b1() { return f32({-1.10000002f, 0.600000024f, 1.20000005f, 1.89999998f}, {4}); }
Tensor x3() {
  return f32({-1.39999998f, -0.100000001f, 1.60000002f, -0.300000012f, 0.400000006f, -1.89999998f, 0.699999988f,
              1.70000005f, 1.29999995f, 1.5f},
             {1, 2, 5});
}
Tensor w3() {
  return f32(
      {0.600000024f, -1.f, 1.10000002f, -1.20000005f, 1.29999995f, -1.70000005f, 1.29999995f, -1.29999995f, -0.5f,
       -0.699999988f, 0.800000012f, -1.29999995f, -0.400000006f, -2.f, -1.f, -0.300000012f, -1.60000002f, 0.5f},
      {2, 3, 3});
}
Tensor ints(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return tensor(v, {n});
}

}  // namespace

TEST_CASE(
    "Resize: constant scales (nearest), run-time sizes (linear), axes "
    "with keep_aspect_ratio_policy (cubic)") {
  OneNode{"Resize",
          {input(x1()), {}, constant(f32({1.f, 1.f, 2.f, 1.5f}, {4}))},
          {{"mode", std::string("nearest")},
           {"coordinate_transformation_mode", std::string("asymmetric")},
           {"nearest_mode", std::string("round_prefer_ceil")}}}
      .check({f32({0.f,           1.79999995f,   1.79999995f,   -1.39999998f, 1.79999995f,   1.79999995f,
                   -0.800000012f, -0.300000012f, -0.300000012f, 1.29999995f,  -0.400000006f, -0.400000006f,
                   -0.800000012f, -0.300000012f, -0.300000012f, 1.29999995f,  -0.400000006f, -0.400000006f,
                   0.200000003f,  -1.89999998f,  -1.89999998f,  1.f,          0.200000003f,  0.200000003f,
                   0.200000003f,  -1.89999998f,  -1.89999998f,  1.f,          0.200000003f,  0.200000003f,
                   0.200000003f,  -1.89999998f,  -1.89999998f,  1.f,          0.200000003f,  0.200000003f},
                  {1, 1, 6, 6})});
  OneNode linear{
      "Resize",
      {input(x1()), {}, {}, input(ints({1, 1, 5, 3}))},
      {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}}};
  linear.x_shape = std::vector<Dim>{Dim::named("N"), Dim::fixed(1), Dim::named("H"), Dim::named("W")};
  linear.check({f32(
      {0.299999982f, 0.199999988f, 1.26666665f, -0.106666677f, 0.319999993f, 0.713333309f, -0.716666698f, 0.49999997f,
       -0.116666682f, -0.376666665f, -0.0700000077f, 0.153333336f, -0.149999991f, -0.449999988f, 0.333333343f},
      {1, 1, 5, 3})});
  OneNode{"Resize",
          {input(x1()), {}, {}, constant(ints({6, 5}))},
          {{"mode", std::string("cubic")},
           {"axes", Ints{3, 2}},
           {"keep_aspect_ratio_policy", std::string("not_larger")},
           {"exclude_outside", int64_t{1}}}}
      .check({f32({-0.114705116f, 1.28015447f,   1.58726859f,   -1.43191874f,   0.0171042234f, 2.39763069f,
                   -0.596216261f, 0.297387719f,  0.925492585f,  -0.0315047987f, 0.243510187f,  0.832335889f,
                   -0.707888246f, -0.910082936f, -0.381897777f, 1.33614635f,    0.600243807f,  -0.69307965f,
                   0.235309124f,  -0.997799277f, -1.45666456f,  0.735874176f,   0.78188014f,   -0.0154361455f,
                   0.649746716f,  -1.06482136f,  -1.96246278f,  0.502437651f,   0.870535731f,  0.248521939f},
                  {1, 1, 5, 6})});
}

TEST_CASE(
    "Resize: antialias, tf_crop_and_resize with a run-time roi, Upsample "
    "(opset 9)") {
  OneNode{"Resize",
          {input(x1()), {}, constant(f32({0.6f, 0.5f}, {2}))},
          {{"mode", std::string("linear")}, {"axes", Ints{2, 3}}, {"antialias", int64_t{1}}}}
      .check({f32({0.181249991f, 0.46874997f}, {1, 1, 1, 2})});
  OneNode{
      "Resize",
      {input(x1()), input(f32({0.f, 0.f, 0.2f, -0.1f, 1.f, 1.f, 0.9f, 0.8f}, {8})), {}, constant(ints({1, 1, 3, 3}))},
      {{"mode", std::string("linear")},
       {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
       {"extrapolation_value", 5.0}}}
      .check({f32({5.f, 0.895999908f, 0.176000103f, 5.f, -0.37349993f, 0.625999808f, 5.f, -1.44799984f, 0.667999923f},
                  {1, 1, 3, 3})});
  const Tensor expected =
      f32({0.f,          0.f,           1.79999995f,   1.79999995f,   -1.39999998f,  -1.39999998f,  1.79999995f,
           1.79999995f,  0.f,           0.f,           1.79999995f,   1.79999995f,   -1.39999998f,  -1.39999998f,
           1.79999995f,  1.79999995f,   -0.800000012f, -0.800000012f, -0.300000012f, -0.300000012f, 1.29999995f,
           1.29999995f,  -0.400000006f, -0.400000006f, -0.800000012f, -0.800000012f, -0.300000012f, -0.300000012f,
           1.29999995f,  1.29999995f,   -0.400000006f, -0.400000006f, 0.200000003f,  0.200000003f,  -1.89999998f,
           -1.89999998f, 1.f,           1.f,           0.200000003f,  0.200000003f,  0.200000003f,  0.200000003f,
           -1.89999998f, -1.89999998f,  1.f,           1.f,           0.200000003f,  0.200000003f},
          {1, 1, 6, 8});
  Graph g =
      OneNode{"Upsample", {input(x1()), input(f32({1.f, 1.f, 2.f, 2.f}, {4}))}, {{"mode", std::string("nearest")}}}
          .graph({expected});
  g.opset = 9;
  ember::testing::check_close(testing::lower_and_run(g, {x1(), f32({1.f, 1.f, 2.f, 2.f}, {4})})[0], expected, 1e-6,
                              1e-6);
}

TEST_CASE(
    "ConvTranspose: SAME_UPPER with groups and bias, output_shape with "
    "dilations, 1-D pads and output_padding") {
  OneNode{"ConvTranspose",
          {input(x2()), constant(w1()), constant(b1())},
          {{"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}, {"group", int64_t{2}}}}
      .check({f32({-1.17000008f,  -0.0500000715f, -1.33000004f,   -2.9000001f,   -0.579999983f, 0.100000024f,
                   -1.87f,        -1.45000005f,   -0.970000029f,  -0.5f,         0.060000062f,  -1.5f,
                   0.139999986f,  -0.870000005f,  -3.36999989f,   1.26999986f,   -0.690000117f, -0.579999983f,
                   -1.32000005f,  -1.20000005f,   -3.09000015f,   -1.85000002f,  -4.09000015f,  -1.30000007f,
                   -0.860000014f, 0.680000067f,   0.9399997f,     0.25f,         -0.480000019f, -2.63999987f,
                   -2.42000008f,  -1.70000005f,   -4.24000025f,   -1.60000002f,  -1.70000005f,  -0.600000024f,
                   1.86000001f,   0.180000007f,   -2.53999996f,   1.32000005f,   3.71999979f,   0.120000005f,
                   0.320000023f,  1.29999995f,    0.100000083f,   -0.600000024f, 1.96000004f,   1.4000001f,
                   0.960000038f,  0.480000019f,   2.31999969f,    -0.300000012f, 0.420000196f,  0.360000014f,
                   0.520000041f,  0.800000012f,   -0.279999971f,  2.0999999f,    -1.65999997f,  1.f,
                   2.76000023f,   -0.120000005f,  0.519999921f,   0.f,           -4.0999999f,   1.20000005f,
                   0.120000005f,  1.80000007f,    -1.48000014f,   1.60000002f,   -0.399999976f, -0.399999976f,
                   2.46000004f,   0.0300000906f,  0.710000038f,   1.07000005f,   -1.52999973f,  3.66999984f,
                   0.210000038f,  2.28000021f,    0.00999999046f, 1.32000005f,   3.17000008f,   -1.07999992f,
                   -0.23999989f,  5.06999969f,    0.060000062f,   2.53999996f,   -0.869999886f, -1.76999998f,
                   3.18000007f,   -0.960000038f,  4.35000038f,    0.120000005f,  2.5f,          0.960000038f,
                   0.299999952f,  -3.02999997f,   3.97000003f,    -2.14999986f,  -1.41999984f,  3.32999992f,
                   0.210000038f,  2.28000021f,    -1.41999984f,   2.88000011f,   1.6099999f,    -1.07999992f,
                   0.639999986f,  0.550000072f,   1.85000002f,    1.75f,         4.56999969f,   4.75f,
                   2.71000004f,   3.69999981f,    1.44999993f,    2.0999999f,    0.129999995f,  -1.89999998f,
                   3.61000013f,   3.42999983f,    3.69999981f,    3.11999989f,   3.88999987f,   4.6699996f,
                   0.280000091f,  -1.69999993f,   2.17000008f,    0.100000024f,  2.25999999f,   1.5f,
                   2.25999975f,   2.88999987f,    -0.779999852f,  0.970000029f,  4.07000017f,   5.00999975f,
                   2.71000004f,   3.69999981f,    2.61999989f,    4.69999981f,   -0.649999976f, -1.89999998f},
                  {1, 4, 6, 6})});
  OneNode{"ConvTranspose",
          {input(x2()), constant(w1())},
          {{"strides", Ints{2, 2}}, {"output_shape", Ints{8, 7}}, {"dilations", Ints{1, 2}}, {"group", int64_t{2}}}}
      .check({f32({-0.0700000003f,
                   0.f,
                   1.16999996f,
                   0.f,
                   -2.23000002f,
                   0.f,
                   1.80000007f,
                   -0.769999981f,
                   0.f,
                   0.970000029f,
                   0.f,
                   -1.47000003f,
                   0.f,
                   1.64000022f,
                   1.24000001f,
                   0.f,
                   -2.07999992f,
                   0.f,
                   3.81000018f,
                   0.f,
                   -0.469999999f,
                   -0.220000014f,
                   0.f,
                   -1.75000012f,
                   0.f,
                   -1.53000009f,
                   0.f,
                   -2.75000024f,
                   0.23999998f,
                   0.f,
                   4.37999964f,
                   0.f,
                   1.61000001f,
                   0.f,
                   -1.74000001f,
                   -1.32000005f,
                   0.f,
                   -1.70000005f,
                   0.f,
                   -1.44000018f,
                   0.f,
                   -1.20000005f,
                   2.16000009f,
                   0.f,
                   1.67999995f,
                   0.f,
                   -1.65999997f,
                   0.f,
                   0.300000012f,
                   0.f,
                   0.f,
                   0.f,
                   0.f,
                   0.f,
                   0.f,
                   0.f,
                   1.25999999f,
                   0.f,
                   -2.58000016f,
                   0.f,
                   1.17999983f,
                   0.f,
                   1.20000005f,
                   -0.280000001f,
                   0.f,
                   1.18000007f,
                   0.f,
                   -2.5f,
                   0.f,
                   2.48000002f,
                   0.359999985f,
                   0.f,
                   2.57999992f,
                   0.f,
                   -1.16000009f,
                   0.f,
                   -1.13999987f,
                   -0.0800000057f,
                   0.f,
                   -0.400000036f,
                   0.f,
                   1.06000006f,
                   0.f,
                   -1.69999993f,
                   2.16000009f,
                   0.f,
                   1.07999992f,
                   0.f,
                   -4.27999973f,
                   0.f,
                   -2.29999995f,
                   -0.480000019f,
                   0.f,
                   0.800000072f,
                   0.f,
                   -0.280000091f,
                   0.f,
                   -2.4000001f,
                   0.f,
                   0.f,
                   0.f,
                   0.f,
                   -1.20000005f,
                   0.f,
                   -1.f,
                   0.f,
                   0.f,
                   0.f,
                   0.f,
                   0.f,
                   0.f,
                   0.f,
                   1.25999999f,
                   0.f,
                   -1.02999997f,
                   0.f,
                   -3.42000008f,
                   0.f,
                   2.39999986f,
                   -0.99000001f,
                   0.f,
                   0.970000029f,
                   0.f,
                   1.13f,
                   0.f,
                   -2.4000001f,
                   -1.43999994f,
                   0.f,
                   2.73000002f,
                   0.f,
                   -1.21999991f,
                   0.f,
                   -2.48000026f,
                   1.98000002f,
                   0.f,
                   -1.17000008f,
                   0.f,
                   1.30000007f,
                   0.f,
                   0.840000033f,
                   -0.900000095f,
                   0.f,
                   -3.3499999f,
                   0.f,
                   -4.35999918f,
                   0.f,
                   2.40999985f,
                   -0.99000001f,
                   0.f,
                   -0.459999919f,
                   0.f,
                   2.69000006f,
                   0.f,
                   -3.96000004f,
                   1.08000004f,
                   0.f,
                   3.21000004f,
                   0.f,
                   -1.15999985f,
                   0.f,
                   -5.19000006f,
                   0.f,
                   0.f,
                   0.f,
                   0.f,
                   0.f,
                   0.f,
                   0.f,
                   -1.25999999f,
                   0.f,
                   -1.48999989f,
                   0.f,
                   2.59999967f,
                   0.f,
                   2.8599999f,
                   0.809999943f,
                   0.f,
                   1.88999999f,
                   0.f,
                   -2.04999995f,
                   0.f,
                   -3.8599999f,
                   1.71000004f,
                   0.f,
                   2.69999981f,
                   0.f,
                   3.83999968f,
                   0.f,
                   2.76999974f,
                   -1.61999989f,
                   0.f,
                   -4.40999985f,
                   0.f,
                   -0.899999857f,
                   0.f,
                   0.140000015f,
                   0.359999895f,
                   0.f,
                   -0.160000086f,
                   0.f,
                   0.379999995f,
                   0.f,
                   2.44000006f,
                   0.809999943f,
                   0.f,
                   3.05999994f,
                   0.f,
                   0.550000012f,
                   0.f,
                   -4.63999987f,
                   -0.809999943f,
                   0.f,
                   -2.42999983f,
                   0.f,
                   0.699999928f,
                   0.f,
                   3.72999978f,
                   0.f,
                   0.f,
                   0.f,
                   0.f,
                   0.f,
                   0.f,
                   0.f},
                  {1, 4, 8, 7})});
  OneNode convt1d{"ConvTranspose",
                  {input(x3()), input(w3())},
                  {{"strides", Ints{2}}, {"pads", Ints{1, 2}}, {"output_padding", Ints{1}}}};
  convt1d.x_shape = std::vector<Dim>{Dim::named("N"), Dim::fixed(2), Dim::named("L")};
  convt1d.check(
      {f32({-0.120000027f, 0.379999876f, 0.660000026f,  -1.25f,       -0.239999965f, -1.53999972f,  1.34000003f,
            -2.82999992f,  0.800000012f, 1.98000002f,   4.12000036f,  -1.52999997f,  -3.13000011f,  -1.32000017f,
            -4.57999992f,  -2.99000001f, -1.86999989f,  -2.48000002f, 4.86000013f,   -0.590000033f, -0.99000001f,
            1.96999991f,   -4.80000019f, -0.730000019f, -1.68999994f, 0.869999886f,  -2.92000008f},
           {1, 3, 9})});
}

TEST_CASE("GridSample (opset 20): cubic with border padding, nearest with reflection and align_corners") {
  const Tensor grid =
      f32({-1.2f, -0.9f, 0.3f, 0.1f, 1.1f, 0.5f, -0.6f, 1.3f, 0.0f, 0.0f, 0.9f, -0.4f}, {1, 2, 3, 2});
  OneNode{"GridSample", {input(x1()), input(grid)}, {{"mode", std::string("cubic")}, {"padding_mode", std::string("border")}}}
      .check({f32({0.08872471f, 1.4495039f, -0.0132812504f, -0.522924721f, 0.706249952f, 1.03924751f}, {1, 1, 2, 3})});
  OneNode{"GridSample", {input(x1()), input(grid)},
          {{"mode", std::string("nearest")}, {"padding_mode", std::string("reflection")}, {"align_corners", int64_t{1}}}}
      .check({f32({0.f, 1.29999995f, 0.200000003f, -1.89999998f, 1.29999995f, -0.400000006f}, {1, 1, 2, 3})});
  CHECK(OneNode{"GridSample", {input(x1()), input(grid)}, {{"mode", std::string("area")}}}.error({grid}) ==
        kPrefix + "GridSample 'n': mode 'area' is unknown");
}

TEST_CASE("Resize and ConvTranspose forms refused, with their messages") {
  const Tensor like = f32({0.f}, {1, 1, 1, 1});
  CHECK(OneNode{"Resize", {input(x1()), {}, constant(f32({1.f, 1.f, 2.f, 2.f}, {4})), constant(ints({1, 1, 6, 8}))}, {}}
            .error({like}) == kPrefix + "Resize 'n': needs exactly one of scales and sizes");
  CHECK(OneNode{"Resize", {input(x1()), {}, constant(f32({1.f, 1.f, 2.f, 2.f}, {4}))}, {{"mode", std::string("area")}}}
            .error({like}) == kPrefix + "Resize 'n': mode 'area' is unknown (nearest, linear or cubic)");
  CHECK(OneNode{"Resize", {input(x1()), {}, constant(f32({2.f, 2.f}, {2}))}, {}}.error({like}) ==
        kPrefix + "Resize 'n': scales has 2 values for 4 axes (input rank 4)");
  CHECK(OneNode{"Resize", {input(x1()), {}, constant(f32({1.f, 1.f, 0.f, 2.f}, {4}))}, {}}.error({like}) ==
        kPrefix + "Resize 'n': scale 0 is not positive and finite");
  CHECK(OneNode{"Resize",
                {input(x1()), {}, constant(f32({1.f, 1.f, 2.f, 2.f}, {4}))},
                {{"coordinate_transformation_mode", std::string("tf_crop_and_resize")}}}
            .error({like}) == kPrefix + "Resize 'n': tf_crop_and_resize needs a roi of 8 values");
  CHECK(OneNode{"ConvTranspose", {input(x2()), constant(w1().reshape({2, 2, 3, 3, 1, 1}))}, {}}.error({like}) ==
        kPrefix + "ConvTranspose 'n': weight 'in1' has rank 6, not 3 to 5");
  OneNode same{"ConvTranspose", {input(x2()), constant(w1())}, {{"auto_pad", std::string("SAME_LOWER")}}};
  same.x_shape = std::vector<Dim>{Dim::fixed(1), Dim::fixed(2), Dim::named("H"), Dim::fixed(3)};
  CHECK(same.error({like}) == kPrefix +
                                  "ConvTranspose 'n': auto_pad SAME_LOWER / "
                                  "output_shape needs static spatial "
                                  "input dims");
}

}  // namespace ember::converter
