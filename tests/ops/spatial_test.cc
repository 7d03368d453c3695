// Spatial ops against PyTorch (tests/golden/golden_spatial.py):
// interpolate (nearest, nearest-exact, linear, bilinear, bicubic, trilinear,
// area; size or scale_factor; align_corners) over the Resize op, and
// conv_transpose1d/2d/3d over the ConvTranspose op; their argument errors;
// grid_sample; ONNX DeformConv against onnx.reference.
#include "runtime/ops/dispatch.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_error;
using ember::testing::golden;
using ember::testing::golden_text;
using ember::testing::has_golden;

TEST_CASE("interpolate matches torch.nn.functional.interpolate") {
  int cases = 0;
  for (int i = 0; has_golden("spatial.interp." + std::to_string(i) + ".x"); ++i, ++cases) {
    const std::string name = "spatial.interp." + std::to_string(i);
    const std::string mode = golden_text(name + ".mode");
    CAPTURE(name);
    CAPTURE(mode);
    const Tensor x = golden(name + ".x");
    const std::vector<int64_t> size = golden(name + ".size").to_vector<int64_t>();
    const std::vector<double> scale = golden(name + ".scale").to_vector<double>();
    const int64_t align = golden(name + ".align").to_vector<int64_t>()[0];
    const std::optional<bool> corners = align < 0 ? std::nullopt : std::optional<bool>(align == 1);
    const Tensor y = interpolate(x, size, scale, mode, corners);
    check_close(y, golden(name + ".out"), 1e-5, 1e-5);
    // A non-contiguous input gives the same values.
    const Tensor xt = x.transpose(-1, -2).contiguous().transpose(-1, -2);
    check_close(interpolate(xt, size, scale, mode, corners), golden(name + ".out"), 1e-5, 1e-5);
  }
  CHECK(cases >= 17);
}

TEST_CASE(
    "conv_transpose1d/2d/3d match PyTorch: stride, padding, "
    "output_padding, dilation, groups, unbatched") {
  int cases = 0;
  for (int i = 0; has_golden("spatial.convt." + std::to_string(i) + ".x"); ++i, ++cases) {
    const std::string name = "spatial.convt." + std::to_string(i);
    CAPTURE(name);
    const std::vector<int64_t> a = golden(name + ".args").to_vector<int64_t>();
    const size_t dims = static_cast<size_t>(a[0]);
    auto part = [&](size_t k) {
      return std::vector<int64_t>(a.begin() + 2 + k * dims, a.begin() + 2 + (k + 1) * dims);
    };
    const Tensor b = golden(name + ".b");
    const Tensor bias = b.numel() == 0 ? Tensor() : b;
    const Tensor x = golden(name + ".x"), w = golden(name + ".w");
    auto run = [&](const Tensor &in) {
      if (dims == 1) return conv_transpose1d(in, w, bias, part(0), part(1), part(2), a[1], part(3));
      if (dims == 2) return conv_transpose2d(in, w, bias, part(0), part(1), part(2), a[1], part(3));
      return conv_transpose3d(in, w, bias, part(0), part(1), part(2), a[1], part(3));
    };
    check_close(run(x), golden(name + ".out"), 1e-5, 1e-5);
    check_close(run(x.transpose(-1, -2).contiguous().transpose(-1, -2)), golden(name + ".out"), 1e-5, 1e-5);
  }
  CHECK(cases >= 7);
}

TEST_CASE(
    "interpolate and conv_transpose2d refuse bad arguments with "
    "PyTorch's messages") {
  const Tensor x = zeros({1, 2, 4, 4});
  check_error([&] { interpolate(x); }, "either size or scale_factor should be defined");
  check_error([&] { interpolate(x, {8, 8}, {2.0}); }, "only one of size or scale_factor should be defined");
  check_error(
      [&] {
        interpolate(x, {8, 8}, {}, "nearest", true);
      },
      "align_corners option can only be set with the interpolating modes: "
      "linear | bilinear | bicubic | "
      "trilinear");
  check_error([&] { interpolate(x, {8}, {}, "linear"); }, "Got 4D input, but linear mode needs 3D input");
  check_error(
      [&] {
        interpolate(x, {8, 8, 8});
      },
      "Input and output must have the same number of spatial dimensions, but "
      "got input with spatial "
      "dimensions of [4, 4] and output size of [8, 8, 8]. Please provide input "
      "tensor in (N, C, d1, d2, "
      "...,dK) format and output size in (o1, o2, ...,oK) format.");
  check_error(
      [&] {
        interpolate(x, {8, 8}, {}, "bilinear", false, true);
      },
      "interpolate: antialias=True is not supported");
  const Tensor w = zeros({2, 3, 3, 3});
  check_error(
      [&] {
        conv_transpose2d(zeros({1, 3, 4, 4}), w);
      },
      "Given transposed=1, weight of size [2, 3, 3, 3], expected input[1, 3, "
      "4, 4] to have 2 channels "
      "(divisible by groups=1), but got 3 channels instead");
  check_error([&] { conv_transpose2d(x, w, Tensor(), {1}, {0}, {1}); },
              "output padding must be smaller than either stride or dilation, "
              "but got output_padding=[1, 1], "
              "stride=[1, 1], dilation=[1, 1]");
  check_error(
      [&] {
        conv_transpose2d(zeros({1, 2, 1, 1}), w, Tensor(), {1}, {2});
      },
      "Given input size per channel: [1, 1]. Calculated output size per "
      "channel: [-1, -1]. Output size is "
      "too small");
  check_error([&] { conv_transpose2d(x, w, zeros({4})); },
              "Given transposed=1, weight of size [2, 3, 3, 3], expected bias "
              "to be 1-dimensional with 3 elements, "
              "but got bias of size [4] instead");
}

TEST_CASE("resize refuses run-time scales and sizes that do not fit its input") {
  ResizeParams p;
  p.rank = 4;
  for (int d = 0; d < 4; ++d) p.scales[d] = 1.0;
  const Tensor x = zeros({1, 1, 2, 2});
  check_error(
      [&] {
        resize(x, Tensor(), tensor(std::vector<float>{1.f, 2.f}, {2}), Tensor(), p);
      },
      "Resize: scales has 2 values, expected 4 (input [1, 1, 2, 2])");
  check_error(
      [&] {
        resize(x, Tensor(), tensor(std::vector<float>{1.f, 1.f, 0.f, 2.f}, {4}), Tensor(), p);
      },
      "Resize: scale 0 is not positive and finite");
  check_error(
      [&] {
        resize(zeros({2, 2}), Tensor(), Tensor(), Tensor(), p);
      },
      "resize: the parameters describe a rank-4 input, but got input of size "
      "[2, 2]");
  p.num_axes = 1;
  p.axes[0] = 7;
  check_error([&] { resize(x, Tensor(), Tensor(), tensor(std::vector<int64_t>{3}, {1}), p); },
              "Resize: axis 7 is out of range for input [1, 1, 2, 2]");
  p.axes[0] = 3;
  CHECK(resize(x, Tensor(), Tensor(), tensor(std::vector<int64_t>{3}, {1}), p).sizes() == Shape{1, 1, 2, 3});
}

TEST_CASE("grid_sample matches torch.nn.functional.grid_sample (2-D and 3-D; bilinear, nearest, bicubic)") {
  int cases = 0;
  for (int i = 0; has_golden("spatial.grid." + std::to_string(i) + ".x"); ++i, ++cases) {
    const std::string name = "spatial.grid." + std::to_string(i);
    const std::string mode = golden_text(name + ".mode"), padding = golden_text(name + ".padding");
    CAPTURE(name);
    CAPTURE(mode);
    CAPTURE(padding);
    const bool align = golden(name + ".align").to_vector<int64_t>()[0] == 1;
    const Tensor y = grid_sample(golden(name + ".x"), golden(name + ".grid"), mode, padding, align);
    check_close(y, golden(name + ".out"), 1e-5, 1e-5);
  }
  CHECK(cases >= 11);
  check_error([] { grid_sample(zeros({1, 1, 2, 2}), zeros({1, 3, 3, 3})); },
              "grid_sampler(): expected grid to have size 2 in last dimension, but got grid with sizes [1, 3, 3, 3]");
  check_error([] { grid_sample(zeros({1, 1, 2, 2}), zeros({1, 3, 3, 2}), "area"); },
              "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'area'");
}

namespace {

// ((i * a) % m - c) / d for i in [0, count): the same inputs as the
// onnx.reference script in the test below.
Tensor pattern(const Shape& shape, int64_t a, int64_t m, int64_t c, double d) {
  int64_t count = 1;
  for (int64_t s : shape) count *= s;
  std::vector<float> v;
  for (int64_t i = 0; i < count; ++i) v.push_back(static_cast<float>(static_cast<double>((i * a) % m - c) / d));
  return tensor(v, shape);
}

}  // namespace

// Expected values from onnx.reference (op_deform_conv.py), with
//   seq(n, a, m, c, d) = [((i*a) % m - c) / d for i in range(n)] (float32):
// case 1: x seq(36,37,23,11,8) [1,4,3,3], w seq(16,17,13,6,4) [2,2,2,2],
//   offset seq(64,53,29,14,10) [1,16,2,2], bias [0.5, -0.25],
//   mask seq(32,11,7,0,6) [1,8,2,2]; group 2, offset_group 2, pads 1, strides 2.
// case 2: x seq(40,...) [1,2,4,5], w seq(24,...) [3,2,2,2], offset
//   seq(96,...) [1,8,3,4], no bias or mask; dilations 2, pads [0,1,1,0].
TEST_CASE("deform_conv matches onnx.reference's DeformConv (torchvision's deform_conv2d)") {
  DeformConvParams p;
  p.groups = 2, p.offset_groups = 2, p.stride_h = 2, p.stride_w = 2;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  const Tensor y = deform_conv(pattern({1, 4, 3, 3}, 37, 23, 11, 8), pattern({2, 2, 2, 2}, 17, 13, 6, 4),
                               pattern({1, 16, 2, 2}, 53, 29, 14, 10), tensor<float>({0.5f, -0.25f}),
                               pattern({1, 8, 2, 2}, 11, 7, 0, 6), p);
  check_close(y,
              tensor(std::vector<float>{0.6475000381469727f, 1.8937500715255737f, 0.468437522649765f,
                                        1.8492708206176758f, -0.25f, 0.08687503635883331f, -0.39135417342185974f,
                                        -0.41624993085861206f},
                     {1, 2, 2, 2}),
              1e-5, 1e-6);

  DeformConvParams q;
  q.dilation_h = q.dilation_w = 2, q.pad_left = 1, q.pad_bottom = 1;
  const Tensor y2 = deform_conv(pattern({1, 2, 4, 5}, 37, 23, 11, 8), pattern({3, 2, 2, 2}, 17, 13, 6, 4),
                                pattern({1, 8, 3, 4}, 53, 29, 14, 10), Tensor(), Tensor(), q);
  check_close(
      y2,
      tensor(std::vector<float>{-0.5703125f, -2.718750238418579f, -1.628125548362732f, 3.508749485015869f,
                                0.23468755185604095f, 0.02999989688396454f, 3.0849997997283936f, 1.081874966621399f,
                                -0.3349999189376831f, 3.2665624618530273f, 1.4843751192092896f, -0.2906251847743988f,
                                0.6703124642372131f, 3.356250286102295f, 3.418750524520874f, -0.7625000476837158f,
                                0.4975000321865082f, 1.0593751668930054f, -1.178749918937683f, -1.233437418937683f,
                                -0.9737499952316284f, -1.5878124237060547f, -0.8062499761581421f, 0.34687507152557373f,
                                -0.6484375596046448f, -1.9437501430511475f, -1.2031254768371582f, 1.6774996519088745f,
                                0.8415625691413879f, 0.05343741178512573f, 2.4875001907348633f, 3.1625001430511475f,
                                -0.9137498736381531f, 0.614374577999115f, -0.8625000715255737f, -0.5187499523162842f},
             {1, 3, 3, 4}),
      1e-5, 1e-6);

  check_error([&] { deform_conv(zeros({1, 2, 4, 5}), zeros({3, 2, 2, 2}), zeros({1, 8, 3, 3}), Tensor(), Tensor(), q); },
              "DeformConv: offset must be [1, 8, 3, 4], got [1, 8, 3, 3]");
  check_error([&] { deform_conv(zeros({1, 3, 4, 5}), zeros({2, 2, 2, 2}), zeros({1, 8, 3, 4}), Tensor(), Tensor(), p); },
              "DeformConv: input [1, 3, 4, 5] and weight [2, 2, 2, 2] do not fit groups=2");
}
