// The lowerings of lower_index.cc (GatherElements, ScatterElements, CumSum,
// CumProd, TopK, NonZero, Unique, Compress, ReverseSequence, GatherND,
// ScatterND, TensorScatter): each ONNX node lowered, serialized, loaded and
// run by the executor; the forms refused, with their messages.
//
// Expected values: onnx.reference of onnx 1.23.2 (tools/.venv-onnx/bin/python,
// ReferenceEvaluator on the inputs written here).
#include "tests/converter/one_node.h"

namespace ember::converter {

namespace {

using testing::constant;
using testing::f32;
using testing::input;
using testing::OneNode;

const std::string kPrefix = "the graph cannot be lowered to ember ops (1 problem): ";

Tensor i64(std::vector<int64_t> v, std::vector<int64_t> shape) { return tensor(v, shape); }
Tensor i32(std::vector<int32_t> v, std::vector<int64_t> shape) { return tensor(v, shape); }
Tensor bools(std::vector<bool> v) {
  std::vector<uint8_t> b(v.begin(), v.end());
  return tensor(b, {static_cast<int64_t>(b.size())}).to(DType::Bool);
}
Attr str(const char* s) { return std::string(s); }

}  // namespace

TEST_CASE("GatherElements: int32 indices, negative ones wrap") {
  const Tensor x = f32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  OneNode{"GatherElements", {input(x), input(i32({-1, 0, 2, -2, 0, 1}, {3, 2}))}, {{"axis", int64_t{1}}}}.check(
      {f32({3, 1, 6, 5, 7, 8}, {3, 2})});
}

TEST_CASE("ScatterElements: every reduction, duplicate and negative indices") {
  const Tensor d = f32({1, 1, 1, 1, 1, 1, 1, 1, 1}, {3, 3});
  const Tensor i = i64({1, 0, -1, 1, 2, -1}, {2, 3}), u = f32({1.5f, 2, 3, 4, 5, 6}, {2, 3});
  const std::vector<std::pair<const char*, std::vector<float>>> cases = {
      {"none", {1, 2, 1, 4, 1, 1, 1, 5, 6}},   {"add", {1, 3, 1, 6.5f, 1, 1, 1, 6, 10}},
      {"mul", {1, 2, 1, 6, 1, 1, 1, 5, 18}},   {"max", {1, 2, 1, 4, 1, 1, 1, 5, 6}},
      {"min", {1, 1, 1, 1, 1, 1, 1, 1, 1}},
  };
  for (const auto& [r, want] : cases) {
    INFO(r);
    OneNode{"ScatterElements", {input(d), input(i), input(u)}, {{"reduction", str(r)}}}.check({f32(want, {3, 3})});
  }
  CHECK(OneNode{"ScatterElements", {input(d), input(i), input(u)}, {{"reduction", str("avg")}}}.error({d}) ==
        kPrefix + "ScatterElements 'n': reduction 'avg' is unknown");
}

TEST_CASE("CumSum and CumProd: constant and run-time axes, exclusive, reverse") {
  const Tensor c = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  OneNode{"CumSum", {input(c), constant(scalar_tensor(1, DType::Int64))}, {{"exclusive", int64_t{1}}, {"reverse", int64_t{1}}}}
      .check({f32({5, 3, 0, 11, 6, 0}, {2, 3})});
  OneNode{"CumSum", {input(c), input(scalar_tensor(0, DType::Int32))}}.check({f32({1, 2, 3, 5, 7, 9}, {2, 3})});
  OneNode{"CumProd", {input(i32({1, -2, 3, 4, 5, -6}, {2, 3})), input(scalar_tensor(-1, DType::Int64))},
          {{"exclusive", int64_t{1}}}}
      .check({i32({1, 1, -2, 1, 4, 20}, {2, 3})});
  CHECK(OneNode{"CumSum", {input(c), constant(scalar_tensor(2, DType::Int64))}}.error({c}) ==
        kPrefix + "CumSum 'n': axis 2 is out of range for rank 2");
}

TEST_CASE("TopK: run-time k, smallest, ties (the lower index first)") {
  const Tensor t = f32({3, 1, 3, 2, 0, 5, 5, -1}, {2, 4});
  OneNode{"TopK", {input(t), input(i64({3}, {1}))}, {{"axis", int64_t{1}}, {"largest", int64_t{0}}}}.check(
      {f32({1, 2, 3, -1, 0, 5}, {2, 3}), i64({1, 3, 0, 3, 0, 1}, {2, 3})});
  OneNode{"TopK", {input(t), constant(i64({1}, {1}))}, {{"axis", int64_t{0}}}}.check(
      {f32({3, 5, 5, 2}, {1, 4}), i64({0, 1, 1, 0}, {1, 4})});
}

TEST_CASE("NonZero and Compress (NonZero, Gather)") {
  OneNode{"NonZero", {input(f32({1, 0, 2, 0, 0, 3}, {2, 3}))}}.check({i64({0, 0, 1, 0, 2, 2}, {2, 3})});
  const Tensor c = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  OneNode{"Compress", {input(c), input(bools({false, true, true}))}, {{"axis", int64_t{1}}}}.check(
      {f32({2, 3, 5, 6}, {2, 2})});
  OneNode{"Compress", {input(c), input(bools({true, false, false, true, true}))}}.check({f32({1, 4, 5}, {3})});
  CHECK(OneNode{"Compress", {input(c), input(f32({1, 0}, {2}))}}.error({c}) ==
        kPrefix + "Compress 'n': condition 'in1' is not bool");
}

TEST_CASE("Unique: sorted, first-occurrence order, along an axis; all four outputs") {
  const Tensor u = f32({2, 1, 1, 3, 4, 3}, {6});
  OneNode{"Unique", {input(u)}}.check(
      {f32({1, 2, 3, 4}, {4}), i64({1, 0, 3, 4}, {4}), i64({1, 0, 0, 2, 3, 2}, {6}), i64({2, 1, 2, 1}, {4})});
  OneNode{"Unique", {input(u)}, {{"sorted", int64_t{0}}}}.check(
      {f32({2, 1, 3, 4}, {4}), i64({0, 1, 3, 4}, {4}), i64({0, 1, 1, 2, 3, 2}, {6}), i64({1, 2, 2, 1}, {4})});
  OneNode{"Unique", {input(f32({1, 0, 0, 1, 0, 0, 2, 3, 4}, {3, 3}))}, {{"axis", int64_t{0}}}}.check(
      {f32({1, 0, 0, 2, 3, 4}, {2, 3}), i64({0, 2}, {2}), i64({0, 0, 1}, {3}), i64({2, 1}, {2})});
}

TEST_CASE("ReverseSequence: the first lens[b] steps of each batch entry reversed") {
  std::vector<float> v(12);
  for (int k = 0; k < 12; ++k) v[static_cast<size_t>(k)] = static_cast<float>(k);
  OneNode{"ReverseSequence", {input(f32(v, {4, 3})), input(i64({4, 2, 1}, {3}))},
          {{"time_axis", int64_t{0}}, {"batch_axis", int64_t{1}}}}
      .check({f32({9, 4, 2, 6, 1, 5, 3, 7, 8, 0, 10, 11}, {4, 3})});
}

TEST_CASE("GatherND (batch_dims 0 and 1), ScatterND (add), TensorScatter (circular)") {
  std::vector<float> v(12);
  for (int k = 0; k < 12; ++k) v[static_cast<size_t>(k)] = static_cast<float>(k);
  const Tensor gd = f32(v, {2, 3, 2});
  OneNode{"GatherND", {input(gd), input(i64({2, -1, 0, 1}, {2, 2, 1}))}, {{"batch_dims", int64_t{1}}}}.check(
      {f32({4, 5, 4, 5, 6, 7, 8, 9}, {2, 2, 2})});
  OneNode{"GatherND", {input(gd), input(i64({1, 2, 0, -3}, {2, 2}))}}.check({f32({10, 11, 0, 1}, {2, 2})});
  OneNode{"ScatterND",
          {input(f32({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2})), input(i64({0, 1, 0, 1, 1, 0}, {3, 2})),
           input(f32({1, 1, 2, 2, 3, 3}, {3, 2}))},
          {{"reduction", str("add")}}}
      .check({f32({0, 1, 5, 6, 7, 8, 6, 7}, {2, 2, 2})});
  OneNode{"TensorScatter",
          {input(zeros({2, 4, 2})), input(f32({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2})), input(i64({3, 1}, {2}))},
          {{"mode", str("circular")}, {"axis", int64_t{1}}}}
      .check({f32({3, 4, 0, 0, 0, 0, 1, 2, 0, 0, 5, 6, 7, 8, 0, 0}, {2, 4, 2})});
  OneNode dynamic{"GatherND", {input(gd), input(i64({1, 2, 0, 1}, {2, 2}))}};
  dynamic.x_shape = std::vector<Dim>{Dim::named("n"), Dim::fixed(3), Dim::fixed(2)};
  CHECK(dynamic.error({zeros({2, 2})}) == kPrefix + "GatherND 'n': data 'in0' needs a static shape");
}

}  // namespace ember::converter
