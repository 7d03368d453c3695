// The eager quantization API against PyTorch 1.13 (tests/golden/golden_quant.py,
// engine qnnpack): quantize_per_tensor / per_channel, dequantize, int_repr,
// quantize_dynamic on an MLP; and every error message.
#include "quant/quantized.h"

#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::golden;

namespace {

float max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto va = a.contiguous().to_vector<float>(), vb = b.contiguous().to_vector<float>();
  REQUIRE(va.size() == vb.size());
  float m = 0.0f;
  for (size_t i = 0; i < va.size(); ++i) m = std::max(m, std::abs(va[i] - vb[i]));
  return m;
}

std::shared_ptr<nn::Sequential> golden_mlp() {
  auto l0 = std::make_shared<nn::Linear>(37, 64);
  auto l2 = std::make_shared<nn::Linear>(64, 10);
  {
    NoGradGuard ng;
    l0->weight.copy_(golden("quant.mlp.w0"));
    l0->bias.copy_(golden("quant.mlp.b0"));
    l2->weight.copy_(golden("quant.mlp.w2"));
    l2->bias.copy_(golden("quant.mlp.b2"));
  }
  return std::make_shared<nn::Sequential>(
      std::initializer_list<std::shared_ptr<nn::Module>>{l0, std::make_shared<nn::ReLU>(), l2});
}

}  // namespace

TEST_CASE("quantize_per_tensor: int_repr and dequantize equal torch's") {
  const Tensor x = golden("quant.per_tensor.x");
  const QTensor q8 = quantize_per_tensor(x, 0.0371, -5, DType::Int8);
  check_equal(q8.int_repr(), golden("quant.per_tensor.qint8.int_repr"));
  check_close(dequantize(q8), golden("quant.per_tensor.qint8.dequant"), 1e-6, 1e-7);
  CHECK(q8.q_zero_point() == -5);
  CHECK(static_cast<float>(q8.q_scale()) == 0.0371f);
  const QTensor qu = quantize_per_tensor(x, 0.05, 128, DType::UInt8);
  check_equal(int_repr(qu), golden("quant.per_tensor.quint8.int_repr"));
  check_close(dequantize(qu), golden("quant.per_tensor.quint8.dequant"), 1e-6, 1e-7);
}

TEST_CASE("quantize_per_channel: every axis equals torch's") {
  const Tensor x = golden("quant.per_channel.x");
  for (int axis = 0; axis < 3; ++axis) {
    const std::string p = "quant.per_channel.axis" + std::to_string(axis);
    const QTensor q = quantize_per_channel(x, golden(p + ".scales"), golden(p + ".zero_points"), axis, DType::Int8);
    check_equal(q.int_repr(), golden(p + ".int_repr"));
    check_close(dequantize(q), golden(p + ".dequant"), 1e-6, 1e-7);
    CHECK(q.q_per_channel_axis() == axis);
    check_equal(q.q_per_channel_zero_points(), golden(p + ".zero_points"));
  }
}

TEST_CASE("quantize_dynamic: an MLP matches torch.ao.quantization.quantize_dynamic (qnnpack)") {
  auto mlp = golden_mlp();
  const Tensor x = golden("quant.mlp.x");
  const Tensor fp32 = golden("quant.mlp.fp32");
  auto qm = quantize_dynamic(mlp, {"Linear"});
  auto* seq = dynamic_cast<nn::Sequential*>(qm.get());
  REQUIRE(seq != nullptr);
  auto* q0 = dynamic_cast<DynamicQuantizedLinear*>((*seq)[0].get());
  REQUIRE(q0 != nullptr);
  check_equal(q0->weight().int_repr(), golden("quant.mlp.w0_int_repr"));
  CHECK(static_cast<float>(q0->weight().q_scale()) == golden("quant.mlp.w0_scale").item<float>());
  CHECK(dynamic_cast<nn::ReLU*>((*seq)[1].get()) != nullptr);
  const Tensor y = (*qm)(x);
  const Tensor want = golden("quant.mlp.int8_per_tensor");
  // One quantization step of the output: its uint8 range (max - min) / 255.
  const auto wv = want.to_vector<float>();
  const float step = (*std::max_element(wv.begin(), wv.end()) - *std::min_element(wv.begin(), wv.end())) / 255.0f;
  const float diff = max_abs_diff(y, want);
  MESSAGE("per tensor: max |ember - torch| = " << diff << ", output step = " << step);
  CHECK(diff <= step);
  CHECK(diff <= 1e-5f);  // same formulas: only float rounding can differ

  QuantizeDynamicOptions pc;
  pc.per_channel = true;
  auto qc = quantize_dynamic(mlp, {"Linear"}, DType::Int8, pc);
  auto* c0 = dynamic_cast<DynamicQuantizedLinear*>((*static_cast<nn::Sequential*>(qc.get()))[0].get());
  check_equal(c0->weight().int_repr(), golden("quant.mlp.w0_pc_int_repr"));
  check_close(c0->weight().q_per_channel_scales(), golden("quant.mlp.w0_pc_scales").to(DType::Float32), 0, 0);
  const Tensor yc = (*qc)(x);
  CHECK(max_abs_diff(yc, golden("quant.mlp.int8_per_channel")) <= 1e-5f);
  // Per channel is at least as accurate against fp32 as per tensor.
  const float e_t = max_abs_diff(y, fp32), e_c = max_abs_diff(yc, fp32);
  MESSAGE("max error vs fp32: per tensor " << e_t << ", per channel " << e_c);
  CHECK(e_c <= e_t);
  // The original module is untouched.
  check_close((*mlp)(x), fp32, 1e-5, 1e-5);
}

TEST_CASE("linear_dynamic: batched input shape, empty batch") {
  auto lin = std::make_shared<nn::Linear>(5, 3);
  DynamicQuantizedLinear q(lin->weight, lin->bias);
  const Tensor x = randn({2, 4, 5});
  const Tensor y = q(x);
  CHECK(y.sizes() == Shape{2, 4, 3});
  check_close(y.reshape({8, 3}), q(x.reshape({8, 5})), 0, 0);
  const Tensor e = q(empty({0, 5}));
  CHECK(e.sizes() == Shape{0, 3});
  // No input features: the output is the bias.
  auto l0 = std::make_shared<nn::Linear>(0, 3);
  DynamicQuantizedLinear q0(l0->weight, l0->bias);
  check_close(q0(empty({2, 0})), l0->bias.detach().expand({2, 3}), 0, 0);
}

TEST_CASE("quantization errors: each with its message") {
  const Tensor x = randn({2, 3});
  auto msg = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  CHECK(msg([&] { quantize_per_tensor(x, 0.0, 0, DType::Int8); }) ==
        "quantize_per_tensor: scale must be positive and finite, got 0");
  CHECK(msg([&] { quantize_per_tensor(x, -1.0, 0, DType::Int8); }).find("scale must be positive") !=
        std::string::npos);
  CHECK(msg([&] { quantize_per_tensor(x, NAN, 0, DType::Int8); }).find("scale must be positive") !=
        std::string::npos);
  CHECK(msg([&] { quantize_per_tensor(x, 0.1, 200, DType::Int8); }) ==
        "quantize_per_tensor: zero_point 200 is out of range [-128, 127] for the dtype");
  CHECK(msg([&] { quantize_per_tensor(x, 0.1, -1, DType::UInt8); }) ==
        "quantize_per_tensor: zero_point -1 is out of range [0, 255] for the dtype");
  CHECK(msg([&] { quantize_per_tensor(x, 0.1, 0, DType::Int32); }) ==
        "quantize_per_tensor: dtype must be int8 (qint8) or uint8 (quint8), got int32");
  CHECK(msg([&] { quantize_per_tensor(x.to(DType::Float64), 0.1, 0, DType::Int8); }) ==
        "quantize_per_tensor: expected a float32 input, got float64");
  const Tensor s2 = ones({2}), z2 = zeros({2}, TensorOptions(DType::Int64));
  CHECK(msg([&] { quantize_per_channel(x, s2, z2, 1, DType::Int8); }) ==
        "quantize_per_channel: expected 3 scales (the size of axis 1)");
  CHECK(msg([&] { quantize_per_channel(x, s2, zeros({3}, TensorOptions(DType::Int64)), 0, DType::Int8); }) ==
        "quantize_per_channel: expected 2 zero points (the size of axis 0)");
  CHECK(msg([&] { quantize_per_channel(x, s2, z2, 2, DType::Int8); }) ==
        "quantize_per_channel: axis 2 is out of range for a tensor of 2 dimensions");
  CHECK(msg([&] { quantize_per_channel(x, s2, zeros({2}), 0, DType::Int8); }) ==
        "quantize_per_channel: zero_points must be integers");
  CHECK(msg([&] { quantize_per_channel(x, zeros({2}), z2, 0, DType::Int8); }) ==
        "quantize_per_channel: scale must be positive and finite, got 0");
  const QTensor qt = quantize_per_tensor(x, 0.1, 0, DType::Int8);
  CHECK(msg([&] { qt.q_per_channel_scales(); }) ==
        "q_per_channel_scales: the tensor is quantized per tensor (use q_scale)");
  const QTensor qc = quantize_per_channel(x, s2, z2, 0, DType::Int8);
  CHECK(msg([&] { qc.q_scale(); }) == "q_scale: the tensor is quantized per channel (use q_per_channel_scales)");
  auto lin = std::make_shared<nn::Linear>(3, 2);
  DynamicQuantizedLinear q(lin->weight, lin->bias);
  CHECK(msg([&] { q(randn({2, 4})); }) == "linear_dynamic: the input's last dimension must be in_features = 3");
  CHECK(msg([&] { quantize_dynamic(lin, {"Conv2d"}); }) ==
        "quantize_dynamic: module type 'Conv2d' is not supported (only Linear)");
  CHECK(msg([&] { quantize_dynamic(lin, {"Linear"}, DType::UInt8); }) ==
        "quantize_dynamic: only dtype int8 (torch.qint8) is supported, got uint8");
}
