// The lowerings of lower_layout.cc (Trilu, EyeLike, OneHot, SpaceToDepth,
// DepthToSpace, Tile, Reshape with allowzero = 1): each ONNX node lowered,
// serialized, loaded and run by the executor; the forms refused, with their
// messages.
//
// Expected values: onnx.reference of onnx 1.23.2 (tools/.venv-onnx/bin/python,
// ReferenceEvaluator on the inputs written here; `xf`: rng = numpy
// default_rng(1), round(uniform(-2, 2), 1)).
#include "tests/converter/one_node.h"

namespace ember::converter {

namespace {

using testing::constant;
using testing::f32;
using testing::input;
using testing::OneNode;

const std::string kPrefix = "the graph cannot be lowered to ember ops (1 problem): ";
using Ints = std::vector<int64_t>;

Tensor i64(std::vector<int64_t> v, std::vector<int64_t> shape) { return tensor(v, shape); }
Tensor xf() {
  return f32({0.f, 1.8f, -1.4f, 1.8f, -0.8f, -0.3f, 1.3f, -0.4f, 0.2f, -1.9f, 1.f, 0.2f}, {3, 4});
}
Tensor iota(int64_t n, std::vector<int64_t> shape) {
  return arange(static_cast<double>(n), TensorOptions(DType::Float32)).reshape(shape);
}

}  // namespace

TEST_CASE("Trilu: run-time k (negative, out of range), batched, dims known only at run time") {
  std::vector<int64_t> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i) + 1;
  OneNode triu{"Trilu", {input(i64(v, {2, 3, 4})), input(scalar_tensor(-1, DType::Int64))}, {}};
  triu.x_shape = std::vector<Dim>{Dim::named("B"), Dim::named("R"), Dim::fixed(4)};
  triu.check({i64({1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 0, 22, 23, 24}, {2, 3, 4})});
  OneNode{"Trilu", {input(xf()), constant(scalar_tensor(1, DType::Int64))}, {{"upper", int64_t{0}}}}.check(
      {f32({0.f, 1.8f, 0.f, 0.f, -0.8f, -0.3f, 1.3f, 0.f, 0.2f, -1.9f, 1.f, 0.2f}, {3, 4})});
  OneNode{"Trilu", {input(xf()), input(scalar_tensor(10, DType::Int64))}, {}}.check({zeros({3, 4})});
}

TEST_CASE("EyeLike (k, dtype) and OneHot (run-time depth, negative and out-of-range indices, axis)") {
  OneNode{"EyeLike", {input(xf())}, {{"k", int64_t{-1}}, {"dtype", int64_t{6}}}}.check(
      {tensor(std::vector<int32_t>{0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0}, {3, 4})});
  OneNode{"OneHot", {input(i64({1, -1, 5, 0}, {2, 2})), input(scalar_tensor(4.0, DType::Float32)),
                     input(f32({-1.f, 3.f}, {2}))},
          {{"axis", int64_t{0}}}}
      .check({f32({-1.f, -1.f, -1.f, 3.f, 3.f, -1.f, -1.f, -1.f, -1.f, -1.f, -1.f, -1.f, -1.f, 3.f, -1.f, -1.f},
                  {4, 2, 2})});
  OneNode{"OneHot", {input(f32({2.f, 0.f, -2.f, 3.f}, {4})), constant(i64({3}, {1})),
                     constant(tensor(std::vector<int32_t>{0, 1}, {2}))},
          {}}
      .check({tensor(std::vector<int32_t>{0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0}, {4, 3})});
}

TEST_CASE("SpaceToDepth (CRD), DepthToSpace (DCR) with a run-time batch; Tile; Reshape allowzero") {
  OneNode s2d{"SpaceToDepth", {input(iota(64, {2, 2, 4, 4}))}, {{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}}};
  s2d.x_shape = std::vector<Dim>{Dim::named("N"), Dim::fixed(2), Dim::fixed(4), Dim::fixed(4)};
  s2d.check({f32({0.f,  2.f,  8.f,  10.f, 1.f,  3.f,  9.f,  11.f, 4.f,  6.f,  12.f, 14.f, 5.f,  7.f,  13.f, 15.f,
                  16.f, 18.f, 24.f, 26.f, 17.f, 19.f, 25.f, 27.f, 20.f, 22.f, 28.f, 30.f, 21.f, 23.f, 29.f, 31.f,
                  32.f, 34.f, 40.f, 42.f, 33.f, 35.f, 41.f, 43.f, 36.f, 38.f, 44.f, 46.f, 37.f, 39.f, 45.f, 47.f,
                  48.f, 50.f, 56.f, 58.f, 49.f, 51.f, 57.f, 59.f, 52.f, 54.f, 60.f, 62.f, 53.f, 55.f, 61.f, 63.f},
                 {2, 8, 2, 2})});
  OneNode{"DepthToSpace", {input(iota(32, {1, 8, 2, 2}))}, {{"blocksize", int64_t{2}}}}.check(
      {f32({0.f, 8.f,  1.f, 9.f,  16.f, 24.f, 17.f, 25.f, 2.f, 10.f, 3.f, 11.f, 18.f, 26.f, 19.f, 27.f,
            4.f, 12.f, 5.f, 13.f, 20.f, 28.f, 21.f, 29.f, 6.f, 14.f, 7.f, 15.f, 22.f, 30.f, 23.f, 31.f},
           {1, 2, 4, 4})});
  const Tensor t = f32({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  OneNode{"Tile", {input(t), input(i64({2, 1}, {2}))}, {}}.check(
      {f32({1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {4, 3})});
  OneNode{"Tile", {input(t), constant(i64({1, 3}, {2}))}, {}}.check(
      {f32({1.f, 2.f, 3.f, 1.f, 2.f, 3.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 4.f, 5.f, 6.f, 4.f, 5.f, 6.f}, {2, 9})});
  OneNode{"Reshape", {input(t), constant(i64({3, -1}, {2}))}, {{"allowzero", int64_t{1}}}}.check({t.reshape({3, 2})});
  OneNode{"Reshape", {input(zeros({0, 3})), constant(i64({3, 0}, {2}))}, {{"allowzero", int64_t{1}}}}.check(
      {zeros({3, 0})});
}

TEST_CASE("Layout ops: refused forms") {
  OneNode s2d{"SpaceToDepth", {input(iota(64, {2, 2, 4, 4}))}, {{"blocksize", int64_t{2}}}};
  s2d.x_shape = std::vector<Dim>{Dim::fixed(2), Dim::fixed(2), Dim::named("H"), Dim::fixed(4)};
  CHECK(s2d.error({zeros({2, 8, 2, 2})}) == kPrefix + "SpaceToDepth 'n': input 'in0' needs static C, H and W");
  CHECK(OneNode{"DepthToSpace", {input(iota(24, {1, 6, 2, 2}))}, {{"blocksize", int64_t{2}}}}.error({zeros({1})}) ==
        kPrefix + "DepthToSpace 'n': C of input 'in0' are not divisible by the block");
  CHECK(OneNode{"Trilu", {input(f32({1.f, 2.f}, {2}))}, {}}.error({zeros({2})}) ==
        kPrefix + "Trilu 'n': input 'in0' has rank 1, not at least 2");
  CHECK(OneNode{"Tile", {input(f32({1.f, 2.f}, {2})), input(tensor(std::vector<int32_t>{2}, {1}))}, {}}.error(
            {zeros({4})}) == kPrefix + "Tile 'n': repeats 'in1' is not int64");
  CHECK(OneNode{"Reshape", {input(f32({1.f, 2.f}, {2})), input(i64({2, 1}, {2}))}, {{"allowzero", int64_t{1}}}}.error(
            {zeros({2, 1})}) ==
        kPrefix + "Reshape 'n': allowzero = 1 with a shape 'in1' that is not a constant is not supported");
}

}  // namespace ember::converter
