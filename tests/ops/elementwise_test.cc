// Elementwise ops against PyTorch: unary, binary, broadcasting, type
// promotion, scalars, in-place forms, where, clamp, NaN handling, errors.
#include <cmath>
#include <cstring>
#include <vector>

#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_close_for_dtype;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;

namespace {

Tensor apply_unary(const std::string& op, const Tensor& x) {
  if (op == "neg") return neg(x);
  if (op == "abs") return abs(x);
  if (op == "exp") return exp(x);
  if (op == "log") return log(x);
  if (op == "sqrt") return sqrt(x);
  if (op == "rsqrt") return rsqrt(x);
  if (op == "sin") return sin(x);
  if (op == "cos") return cos(x);
  if (op == "tanh") return tanh(x);
  if (op == "sigmoid") return sigmoid(x);
  if (op == "relu") return relu(x);
  if (op == "silu") return silu(x);
  if (op == "erf") return erf(x);
  if (op == "gelu") return gelu(x);
  if (op == "gelu_tanh") return gelu(x, "tanh");
  if (op == "reciprocal") return reciprocal(x);
  if (op == "floor") return floor(x);
  if (op == "ceil") return ceil(x);
  if (op == "round") return round(x);
  if (op == "sign") return sign(x);
  if (op == "tan") return tan(x);
  if (op == "asin") return asin(x);
  if (op == "acos") return acos(x);
  if (op == "atan") return atan(x);
  if (op == "sinh") return sinh(x);
  if (op == "cosh") return cosh(x);
  if (op == "asinh") return asinh(x);
  if (op == "acosh") return acosh(x);
  if (op == "atanh") return atanh(x);
  if (op == "softsign") return softsign(x);
  if (op == "mish") return mish(x);
  if (op == "softplus") return softplus(x);
  if (op == "expm1") return expm1(x);
  if (op == "log1p") return log1p(x);
  FAIL("unknown op " << op);
  return x;
}

Tensor apply_binary(const std::string& op, const Tensor& a, const Tensor& b) {
  if (op == "add") return a + b;
  if (op == "sub") return a - b;
  if (op == "mul") return a * b;
  if (op == "div") return a / b;
  if (op == "maximum") return maximum(a, b);
  if (op == "minimum") return minimum(a, b);
  if (op == "eq") return a == b;
  if (op == "ne") return a != b;
  if (op == "lt") return a < b;
  if (op == "le") return a <= b;
  if (op == "gt") return a > b;
  if (op == "ge") return a >= b;
  FAIL("unknown op " << op);
  return a;
}

const char* kFloatNames[] = {"f32", "f64", "f16", "bf16"};

// The activations of golden_elementwise.py's ACT (a suffix: a non-default param).
Tensor apply_act(const std::string& op, const Tensor& x) {
  if (op == "hardswish") return hardswish(x);
  if (op == "hardsigmoid") return hardsigmoid(x);
  if (op == "leaky_relu") return leaky_relu(x);
  if (op == "leaky_relu_0.2") return leaky_relu(x, 0.2);
  if (op == "elu") return elu(x);
  if (op == "elu_0.5") return elu(x, 0.5);
  if (op == "selu") return selu(x);
  if (op == "celu") return celu(x);
  if (op == "celu_2") return celu(x, 2.0);
  if (op == "thresholded_relu") return thresholded_relu(x);
  if (op == "thresholded_relu_-0.5") return thresholded_relu(x, -0.5);
  FAIL("unknown op " << op);
  return x;
}
const char* kActs[] = {"hardswish", "hardsigmoid", "leaky_relu", "leaky_relu_0.2", "elu", "elu_0.5", "selu",
                       "celu", "celu_2", "thresholded_relu", "thresholded_relu_-0.5"};

// The unary math ops of golden_elementwise.py's MATH, with their input domains.
const std::pair<const char*, const char*> kMathOps[] = {
    {"reciprocal", "x"}, {"floor", "q"},     {"ceil", "q"},     {"round", "q"},  {"sign", "q"},
    {"tan", "x"},        {"asin", "unit"},   {"acos", "unit"},  {"atan", "x"},   {"sinh", "x"},
    {"cosh", "x"},       {"asinh", "x"},     {"acosh", "above1"}, {"atanh", "unit"}, {"softsign", "x"},
    {"mish", "x"},       {"softplus", "wide"}, {"expm1", "x"}, {"log1p", "unit"}};

}  // namespace

TEST_CASE("unary ops match PyTorch in every floating dtype") {
  const char* ops[] = {"neg", "abs", "exp", "log",  "sqrt", "rsqrt", "sin",  "cos",
                       "tanh", "sigmoid", "relu", "silu", "erf", "gelu", "gelu_tanh"};
  for (const char* dn : kFloatNames) {
    const Tensor x = golden(std::string("ew.x.") + dn);
    const Tensor pos = golden(std::string("ew.pos.") + dn);
    for (const char* op : ops) {
      CAPTURE(op);
      CAPTURE(dn);
      const std::string o = op;
      const Tensor in = (o == "log" || o == "sqrt" || o == "rsqrt") ? pos : x;
      check_close_for_dtype(apply_unary(o, in), golden("ew." + o + "." + dn));
    }
    // Non-contiguous input: the output keeps the input's (transposed) layout.
    const Tensor e = exp(x.t());
    check_close_for_dtype(e, golden(std::string("ew.exp_t.") + dn));
    CHECK(e.strides() == x.t().strides());
  }
}

TEST_CASE("gelu: torch's unfused erf graph (x / sqrt 2, erf, + 1, * x, * 0.5) on every 4099th float") {
  // The AVX-512 kernel (gelu_avx512.cc) multiplies by 1 / sqrt 2 and divides
  // the erf rational by a refined reciprocal; elsewhere the float32 kernel's
  // quotient is div_rn's, bitwise the unfused ops. Both within 4 ulp of x / 2
  // (the size of the two terms x / 2 * erf + x / 2 the formula sums: near the
  // negative tail they cancel, and erf's own last place decides the value), and
  // where erf is clamped (|x| / sqrt 2 > 4) exactly x or 0. Every 4099th float of
  // both signs (subnormals to the largest), +-0, +-inf, NaN.
  std::vector<float> xs = {0.0f, -0.0f, INFINITY, -INFINITY, NAN};
  for (uint64_t b = 0; b < 0x7f800000u; b += 4099) {
    float x;
    const uint32_t bits = static_cast<uint32_t>(b);
    std::memcpy(&x, &bits, 4);
    xs.push_back(x);
    xs.push_back(-x);
  }
  const Tensor x = tensor(xs, {static_cast<int64_t>(xs.size())});
  const Tensor got = gelu(x);
  const Tensor want = x * (erf(x / 1.41421354) + 1.0) * 0.5;
  const float* g = got.data_ptr<float>();
  const float* w = want.data_ptr<float>();
  int64_t wrong = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float xi = xs[static_cast<size_t>(i)];
    // Beyond the clamp GELU is x or 0 (the unfused x * 2 overflows past 1.7e38: x there).
    const float exact = xi > 0 ? xi : 0.0f;
    const bool same = (std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i] ||
                      (std::fabs(xi) > 5.66f ? g[i] == exact
                                             : std::fabs(static_cast<double>(g[i]) - w[i]) <= std::fabs(xi) * 0x1p-22);
    if (!same && wrong++ < 5) MESSAGE("x " << xs[static_cast<size_t>(i)] << ": " << g[i] << " vs " << w[i]);
  }
  CHECK(wrong == 0);
}

TEST_CASE("unary ops on integers: float ops promote to float32, abs/neg/relu stay integral") {
  const Tensor xi = golden("ew.int.x");
  check_close(exp(xi), golden("ew.int.exp"));
  CHECK(exp(xi).dtype() == DType::Float32);
  check_close(sigmoid(xi), golden("ew.int.sigmoid"));
  check_equal(abs(xi), golden("ew.int.abs"));
  check_equal(neg(xi), golden("ew.int.neg"));
  check_equal(relu(xi), golden("ew.int.relu"));
  check_equal(abs(tensor({-128, 5}, DType::Int8)), tensor({-128, 5}, DType::Int8));  // wraps, as PyTorch
}

TEST_CASE("unary math ops (reciprocal ... log1p) match PyTorch in every floating dtype") {
  for (const char* dn : kFloatNames) {
    for (const auto& [op, dom] : kMathOps) {
      CAPTURE(op);
      CAPTURE(dn);
      const Tensor x = golden(std::string("um.") + dom + "." + dn);
      check_close_for_dtype(apply_unary(op, x), golden(std::string("um.") + op + "." + dn));
      check_close_for_dtype(apply_unary(op, x.t()), golden(std::string("um.") + op + "." + dn).t());
    }
  }
}

TEST_CASE("unary math ops on NaN, inf, +-0, ties and domain edges") {
  const Tensor x = golden("um.special.x");
  for (const auto& [op, dom] : kMathOps) {
    CAPTURE(op);
    const Tensor y = apply_unary(op, x), e = golden(std::string("um.special.") + op);
    check_close_for_dtype(y, e);
    for (int64_t i = 0; i < y.numel(); ++i) {  // the sign of zeros too: round(-0.5) = -0, sign(-0) = +0
      const float a = y.data_ptr<float>()[i], b = e.data_ptr<float>()[i];
      CAPTURE(i);
      if (a == 0 && b == 0) CHECK(std::signbit(a) == std::signbit(b));
    }
  }
  check_equal(round(tensor({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f})), tensor({0.0f, 2.0f, 2.0f, -0.0f, -2.0f, -2.0f}));
  CHECK(std::isnan(asin(tensor({1.5f})).item().to_double()));
  CHECK(std::isnan(acosh(tensor({0.5f})).item().to_double()));
  check_equal(atanh(tensor({1.0f, -1.0f})), tensor({INFINITY, -INFINITY}));
  // softplus is x itself above PyTorch's threshold 20 (ONNX's ln(1 + e^x) differs by < 2.1e-9 there).
  check_equal(softplus(tensor({20.5, 30.0})), tensor({20.5, 30.0}));
}

TEST_CASE("unary math ops on integers and bool: rounding and sign keep the dtype, the others become float32") {
  const Tensor big = golden("um.int.x");  // beyond 2^53: no trip through double
  for (const char* op : {"floor", "ceil", "round", "sign"}) {
    CAPTURE(op);
    const Tensor y = apply_unary(op, big);
    CHECK(y.dtype() == DType::Int64);
    check_equal(y, golden(std::string("um.int.") + op));
  }
  const Tensor small = golden("um.int.small");
  for (const char* op : {"reciprocal", "tan", "atan", "sinh", "asinh", "softsign", "expm1"}) {
    CAPTURE(op);
    const Tensor y = apply_unary(op, small);
    CHECK(y.dtype() == DType::Float32);
    check_close_for_dtype(y, golden(std::string("um.int.") + op));
  }
  check_equal(sign(small.to(DType::Int32)), golden("um.int.sign_i32"));
  check_equal(sign(tensor({0, 3, 255}, DType::UInt8)), golden("um.int.sign_u8"));
  check_equal(sign(tensor({true, false})), golden("um.int.sign_bool"));
  check_equal(floor(tensor({0, 3, 255}, DType::UInt8)), golden("um.int.floor_u8"));
  check_close(acosh(tensor({true, false})), golden("um.int.acosh_bool"));
  check_error([] { floor(tensor({true})); }, "\"floor_vml_cpu\" not implemented for 'Bool'");
  check_error([] { ceil(tensor({true})); }, "\"ceil_vml_cpu\" not implemented for 'Bool'");
  check_error([] { round(tensor({true})); }, "\"round_vml_cpu\" not implemented for 'Bool'");
  check_error([] { softsign(tensor({true})); }, "\"abs_cpu\" not implemented for 'Bool'");
  check_error([] { mish(tensor({1})); }, "\"mish_cpu\" not implemented for 'Long'");
  check_error([] { mish(tensor({1}, DType::Int32)); }, "\"mish_cpu\" not implemented for 'Int'");
  check_error([] { mish(tensor({true})); }, "\"mish_cpu\" not implemented for 'Bool'");
  check_error([] { softplus(tensor({1})); }, "\"softplus_cpu\" not implemented for 'Long'");
  check_error([] { softplus(tensor({1}, DType::UInt8)); }, "\"softplus_cpu\" not implemented for 'Byte'");
}

TEST_CASE("binary ops broadcast [3,1,4] with [2,1] like PyTorch") {
  const Tensor a = golden("bin.a"), b = golden("bin.b");
  for (const char* op : {"add", "sub", "mul", "div", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"}) {
    CAPTURE(op);
    const Tensor out = apply_binary(op, a, b);
    CHECK(out.sizes() == Shape{3, 2, 4});
    check_close_for_dtype(out, golden(std::string("bin.") + op));
  }
  check_close(pow(abs(a), b), golden("bin.pow"), 1e-5, 1e-6);
  check_close(pow(a, 2), golden("bin.pow_scalar"));
  check_close(pow(2, a), golden("bin.rpow_scalar"));
  check_close(1.5 - a, golden("bin.rsub_scalar"));
  check_close(3 / b, golden("bin.rdiv_scalar"));
  for (const char* dn : kFloatNames) {
    CAPTURE(dn);
    const DType dt = golden(std::string("ew.x.") + dn).dtype();
    check_close_for_dtype(a.to(dt) * b.to(dt), golden(std::string("bin.mul.") + dn));
    check_close_for_dtype(a.to(dt) / b.to(dt), golden(std::string("bin.div.") + dn));
  }
}

TEST_CASE("binary ops on non-contiguous and expanded operands") {
  const Tensor a = golden("bin.a");  // [3, 1, 4]
  const Tensor at = a.permute({2, 1, 0}).contiguous().permute({2, 1, 0});  // same values, other strides
  CHECK(!at.is_contiguous());
  check_equal(at + golden("bin.b"), golden("bin.add"));
  const Tensor sliced = arange(20.0).slice(0, 1, 20, 3);  // 1, 4, ..., 19
  check_equal(sliced * 2, tensor({2., 8., 14., 20., 26., 32., 38.}));
  const Tensor m = arange(12.0).view({3, 4});
  check_equal(m.t() + m.t(), (m + m).t());
  check_equal(m.t() * m.t().contiguous(), (m * m).t());
  check_equal(m.select(1, 2) / m.select(1, 1), tensor({2.0f, 6.0f / 5.0f, 10.0f / 9.0f}));
}

TEST_CASE("integer arithmetic: true division, wrap-around, integer powers") {
  const Tensor ia = golden("int.a"), ib = golden("int.b");
  check_equal(ia + ib, golden("int.add"));
  check_equal(ia * ib, golden("int.mul"));
  check_close(ia / ib, golden("int.div"));
  CHECK((ia / ib).dtype() == DType::Float32);
  check_equal(pow(ia, tensor({2, 3, 0})), golden("int.pow"));
  check_equal(pow(tensor({1, -1, 2, -1}), tensor({-1, -3, -2, -2})), golden("int.pow_neg"));
  check_equal(tensor({250, 3}, DType::UInt8) + tensor({10, 4}, DType::UInt8), golden("int.u8_add"));
  check_equal(tensor({int64_t{1} << 30}, DType::Int32) * 4, golden("int.i32_mul_wrap"));
  check_error([] { pow(tensor({2}), -1); }, "Integers to negative integer powers are not allowed.");
}

TEST_CASE("type promotion follows torch.result_type") {
  for (const char* name : {"i64_f32", "u8_i8", "f16_bf16", "f32_0dim_f64", "i32_0dim_f64", "bool_i16", "f16_i64"}) {
    CAPTURE(name);
    const std::string n = name;
    const Tensor out = golden("mix." + n + ".a") + golden("mix." + n + ".b");
    check_close_for_dtype(out, golden("mix." + n + ".add"));
  }
  check_close(tensor({1, 2}, DType::Int32) + 2.5, golden("mix.i32_plus_float"));
  check_close(tensor({1, 2}, DType::Float16) * 2.5, golden("mix.f16_times_float"));
  check_equal(tensor({1, 2}, DType::UInt8) + 300, golden("mix.u8_plus_int"));
  check_equal(tensor({true, false}) + tensor({true, false}), golden("mix.bool_plus_bool"));
  CHECK(result_type({ones({2}, DType::Int32), scalar_tensor(1.5, DType::Float64)}) == DType::Float64);
  CHECK(result_type({ones({2}, DType::Float16), scalar_tensor(1.5, DType::Float64)}) == DType::Float16);
  CHECK(result_type({ones({2}, DType::Float16)}, {Scalar(2.5)}) == DType::Float16);
  CHECK(result_type({ones({2}, DType::Int8)}, {Scalar(7)}) == DType::Int8);
  CHECK(result_type({scalar_tensor(1, DType::Int32)}, {Scalar(2.0)}) == DType::Float32);
}

TEST_CASE("in-place ops: results must broadcast to self and cast to its dtype") {
  Tensor x = zeros({2, 3});
  x.add_(tensor({1, 2, 3}));
  x.mul_(2);
  x.sub_(tensor({{1.}, {2.}}));
  x.div_(2);
  check_equal(x, tensor({{0.5, 1.5, 2.5}, {0.0, 1.0, 2.0}}));
  Tensor xi = tensor({1, 2});
  xi.add_(tensor({true, true}));
  check_equal(xi, tensor({2, 3}));
  check_error([&] { xi.add_(tensor({0.5, 1.0})); }, "result type Float can't be cast to the desired output type Long");
  check_error([] { zeros({3}).add_(ones({2, 3})); }, "output with shape [3] doesn't match the broadcast shape [2, 3]");
  // Aliasing: x += x.flip-like view of itself reads the original values.
  Tensor s = arange(4.0);
  s.add_(s.slice(0, 0, 4).view({4}));
  check_equal(s, tensor({0., 2., 4., 6.}));
  Tensor r = tensor({-1.0, 2.0});
  r.relu_();
  check_equal(r, tensor({0.0, 2.0}));
}

TEST_CASE("where and clamp") {
  check_close(where(golden("where.c"), golden("where.a"), tensor({1, 2, 3})), golden("where.out"));
  check_close(where(golden("where.c"), golden("where.a"), 0.0), golden("where.scalar"));
  const Tensor x = golden("clamp.x");
  check_close(clamp(x, -1.0, 0.5), golden("clamp.both"));
  check_close(clamp(x, 0.25, std::nullopt), golden("clamp.min"));
  check_close(clamp(tensor({1, 5, 9}), 1.5, 6), golden("clamp.int_float_bound"));
  Tensor y = x.clone();
  y.clamp_(-1.0, 0.5);
  check_close(y, golden("clamp.both"));
  check_error([] { where(ones({1}), ones({1}), ones({1})); },
              "where expected condition to be a boolean tensor, but got a tensor with dtype Float");
  check_error([] { clamp(ones({2}), std::nullopt, std::nullopt); },
              "torch.clamp: At least one of 'min' or 'max' must not be None");
}

TEST_CASE("NaN propagates through relu, clamp, maximum") {
  const Tensor nan = golden("nan.x");
  check_equal(relu(nan), golden("nan.relu"));
  check_equal(clamp(nan, -1, 0.5), golden("nan.clamp"));
  check_equal(maximum(nan, tensor({0.0f, NAN, -3.0f})), golden("nan.maximum"));
}

TEST_CASE("the vectorized, threaded CPU path agrees with the reference loops") {
  manual_seed(5);
  const Tensor a = randn({70001}), b = randn({70001});
  // Every other element of a [n, 2] buffer: strided, so the reference loops run;
  // the contiguous originals take the vectorized, threaded CPU kernels.
  auto strided = [](const Tensor& t) {
    Tensor buf = zeros({t.numel(), 2});
    buf.select(1, 0).copy_(t);
    return buf.select(1, 0);
  };
  const Tensor as = strided(a), bs = strided(b);
  CHECK(as.strides() == Shape{2});
  check_equal(a + b, as + bs);
  check_equal(a - b, as - bs);
  check_equal(a * b, as * bs);
  check_equal(a / 3, as / 3);
  check_equal(3 / a, 3 / as);
  check_equal(maximum(a, b), maximum(as, bs));
  check_equal(minimum(a, b), minimum(as, bs));
  check_equal(relu(a), relu(as));
  check_equal(a.clone(), as.contiguous());
  // Row broadcasts ([200, 257] with [257] and with [200, 1]) take the row kernel.
  const Tensor m = a.narrow(0, 0, 200 * 257).view({200, 257}), row = b.narrow(0, 0, 257);
  const Tensor col = b.narrow(0, 1000, 200).view({200, 1});
  check_equal(m + row, strided(m.flatten()).view({200, 257}) + strided(row));
  check_equal(maximum(col, m), maximum(strided(col.flatten()).view({200, 1}), strided(m.flatten()).view({200, 257})));
  check_equal(m.t() * row.unsqueeze(1), (strided(m.flatten()).view({200, 257}) * strided(row)).t());
}

TEST_CASE("zero-size and 0-dim operands") {
  check_equal(zeros({0, 3}) + ones({3}), zeros({0, 3}));
  CHECK((zeros({2, 0}) * 2).sizes() == Shape{2, 0});
  const Tensor s = scalar_tensor(2.0) * scalar_tensor(3.0);
  CHECK(s.dim() == 0);
  CHECK(s.item<double>() == 6.0);
}

TEST_CASE("errors name the problem like PyTorch") {
  check_error([] { ones({2, 3}) + ones({4}); },
              "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
  check_error([] { tensor({true}) - tensor({true}); },
              "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
              "`logical_xor()` operator instead.");
  check_error([] { -tensor({true}); },
              "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert "
              "a mask, use the `~` or `logical_not()` operator instead.");
  check_error([] { abs(tensor({true})); }, "\"abs_cpu\" not implemented for 'Bool'");
  check_error([] { relu(tensor({true})); }, "Boolean inputs not supported for relu");
  check_error([] { gelu(ones({2}), "x"); }, "approximate argument must be either none or tanh.");
  check_error([] { gelu(tensor({1})); }, "\"GeluKernelImpl\" not implemented for 'Long'");
  check_error([] { silu(tensor({1})); }, "\"silu_cpu\" not implemented for 'Long'");
}

TEST_CASE("vectorized exp, sigmoid and silu stay within a few ulp of the reference over the float range") {
  // Contiguous inputs take the CPU kernels (polynomial exp); the strided copy
  // of the same values takes the reference loops (std::exp).
  Tensor x = linspace(-110.0, 95.0, 200001);
  x.slice(0, 0, 4).copy_(tensor({NAN, INFINITY, -INFINITY, 0.0f}));
  Tensor buf = zeros({x.numel(), 2});
  buf.select(1, 0).copy_(x);
  const Tensor xs = buf.select(1, 0);
  check_close(exp(x), exp(xs), 2.4e-7, 3e-45);  // subnormal results: within 2 of their ulps
  check_close(sigmoid(x), sigmoid(xs), 4e-7, 1e-38);  // exp, an add and a divide: 3 ulp
  check_close(silu(x), silu(xs), 4e-7, 1e-38);
  CHECK(std::isnan(exp(x)[0].item<float>()));
  CHECK(exp(x)[1].item<float>() == INFINITY);
  CHECK(exp(x)[2].item<float>() == 0.0f);
  CHECK(exp(x)[3].item<float>() == 1.0f);
  CHECK(exp(tensor({88.8f, -104.0f})).to_vector<float>() == std::vector<float>{INFINITY, 0.0f});
}

TEST_CASE("vectorized erf stays within 4.5e-7 of the reference, tiny inputs relatively") {
  // The contiguous input takes the CPU kernel (rational approximation), the
  // strided copy the reference loop (std::erf).
  Tensor x = linspace(-6.0, 6.0, 120001);
  x.slice(0, 0, 4).copy_(tensor({NAN, INFINITY, -INFINITY, 0.0f}));
  Tensor buf = zeros({x.numel(), 2});
  buf.select(1, 0).copy_(x);
  const Tensor xs = buf.select(1, 0);
  check_close(erf(x), erf(xs), 0.0, 4.5e-7);
  const Tensor tiny = tensor({1e-30f, -3e-20f, 1e-10f, 2.5e-5f, -1e-3f});
  check_close(erf(tiny), erf(tiny.to(DType::Float64)).to(DType::Float32), 4.5e-7, 0.0);
  CHECK(std::isnan(erf(x)[0].item<float>()));
  CHECK(erf(x)[1].item<float>() == 1.0f);
  CHECK(erf(x)[2].item<float>() == -1.0f);
  CHECK(erf(x)[3].item<float>() == 0.0f);
}

TEST_CASE("activations (hardswish, hardsigmoid, leaky_relu, elu, selu, celu, thresholded_relu) match PyTorch") {
  for (const char* dn : kFloatNames) {
    const Tensor x = golden(std::string("act.x.") + dn);
    for (const char* op : kActs) {
      CAPTURE(op);
      CAPTURE(dn);
      check_close_for_dtype(apply_act(op, x), golden(std::string("act.") + op + "." + dn));
      check_close_for_dtype(apply_act(op, x.t()), golden(std::string("act.") + op + "." + dn).t());
    }
  }
  const Tensor sp = golden("act.special.x");
  for (const char* op : kActs) {
    CAPTURE(op);
    check_close_for_dtype(apply_act(op, sp), golden(std::string("act.special.") + op));
  }
}

TEST_CASE("activations refuse integer inputs with PyTorch's messages") {
  check_error([] { hardswish(tensor({1})); }, "\"hardswish_cpu\" not implemented for 'Long'");
  check_error([] { hardsigmoid(tensor({1})); }, "\"hardsigmoid_cpu\" not implemented for 'Long'");
  check_error([] { leaky_relu(tensor({1}, DType::Int32)); }, "\"leaky_relu_cpu\" not implemented for 'Int'");
  check_error([] { elu(tensor({1})); }, "\"elu_cpu\" not implemented for 'Long'");
  check_error([] { selu(tensor({1})); }, "\"elu_cpu\" not implemented for 'Long'");
  check_error([] { celu(tensor({true})); }, "\"elu_cpu\" not implemented for 'Bool'");
  check_error([] { unary_op(OpKind::Exp, tensor({1.0}), 1, 2); }, "\"exp\" is not a parameterized unary op");
  // The generic form takes ONNX's params: hardsigmoid_p(x, 0.2, 0.5) is ONNX HardSigmoid's default.
  check_close(hardsigmoid_p(tensor({1.0, -3.0, 3.0}), 0.2, 0.5), tensor({0.7, 0.0, 1.0}));
  check_close(unary_op(OpKind::LeakyRelu, tensor({-2.0, 2.0}), 0.5, 0), tensor({-1.0, 2.0}));
}

namespace {

// Bitwise equality of two float32 tensors' values (in logical order): -0 and 0,
// and NaN payloads, must agree too.
void check_bitwise(const Tensor& actual, const Tensor& expected) {
  REQUIRE(actual.sizes() == expected.sizes());
  REQUIRE(actual.dtype() == DType::Float32);
  REQUIRE(expected.dtype() == DType::Float32);
  const Tensor a = actual.contiguous(), e = expected.contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) {
    uint32_t x, y;
    std::memcpy(&x, a.data_ptr<float>() + i, 4);
    std::memcpy(&y, e.data_ptr<float>() + i, 4);
    REQUIRE_MESSAGE(x == y, "element " << i << ": " << a.data_ptr<float>()[i] << " != " << e.data_ptr<float>()[i]);
  }
}

Tensor channels_last(const Tensor& t) {
  const Tensor c = t.contiguous(MemoryFormat::ChannelsLast);
  CHECK(c.is_contiguous(MemoryFormat::ChannelsLast));
  if (t.size(1) > 1 && t.size(2) * t.size(3) > 1) CHECK(!c.is_contiguous());
  return c;
}

// The result keeps the channels_last input's layout (so the kernel wrote a
// channels_last output: the dense loops ran on reordered dims).
void check_layout(const Tensor& out) {
  CHECK(out.is_contiguous(MemoryFormat::ChannelsLast));
}

}  // namespace

TEST_CASE("channels_last operands: binary ops with every broadcast, bitwise the contiguous results") {
  manual_seed(17);
  using Fn = Tensor (*)(const Tensor&, const Tensor&);
  const std::vector<std::pair<const char*, Fn>> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
  };
  for (int64_t n : {1, 2}) {
    for (int64_t c : {1, 3, 17, 40}) {
      for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 7}, {14, 14}, {1, 7}, {14, 1}, {7, 14}}) {
        CAPTURE(n);
        CAPTURE(c);
        CAPTURE(h);
        CAPTURE(w);
        const Tensor x = randn({n, c, h, w}), y = randn({n, c, h, w});
        const Tensor xc = channels_last(x), yc = channels_last(y);
        // [N,C,1,1], [1,C,1,1], [C,1,1] (rank broadcast), [1], a 0-dim scalar.
        const std::vector<Tensor> bcast = {randn({n, c, 1, 1}), randn({1, c, 1, 1}), randn({c, 1, 1}), randn({1}),
                                           scalar_tensor(1.75f)};
        for (const auto& [name, op] : ops) {
          CAPTURE(name);
          const Tensor same = op(xc, yc);
          check_layout(same);
          check_bitwise(same, op(x, y));
          check_bitwise(op(xc, y), op(x, y));  // mixed layouts: right, whatever path
          check_bitwise(op(x, yc), op(x, y));
          for (const Tensor& s : bcast) {
            CAPTURE(s.sizes());
            const Tensor right = op(xc, s), left = op(s, xc);
            check_layout(right);
            check_layout(left);
            check_bitwise(right, op(x, s));
            check_bitwise(left, op(s, x));
          }
        }
        // In place (out is the first operand): channels_last += channels_last, *= [N,C,1,1], += scalar.
        Tensor t = xc.clone();
        check_layout(t);
        t.add_(yc);
        check_bitwise(t, x + y);
        t.mul_(bcast[0]);
        check_bitwise(t, (x + y) * bcast[0]);
        t.add_(2.5);
        check_bitwise(t, (x + y) * bcast[0] + 2.5);
        check_layout(t);
      }
    }
  }
  // An output that is not dense (channels_last, W sliced): rows of W * C through the
  // reordered views, or the reference loop: the same values.
  const Tensor big = randn({2, 5, 6, 9}), s = randn({2, 5, 1, 1});
  Tensor view = channels_last(big).narrow(3, 1, 6);
  const Tensor expected = big.narrow(3, 1, 6) * s;
  view.mul_(s);
  check_bitwise(view, expected);
  // Empty channels_last operands.
  const Tensor e = zeros({2, 3, 0, 4}).contiguous(MemoryFormat::ChannelsLast);
  CHECK((e + e).sizes() == Shape{2, 3, 0, 4});
  CHECK((e * randn({2, 3, 1, 1})).numel() == 0);
}

TEST_CASE("channels_last operands: unary ops bitwise the contiguous results (the vector loops, not the reference)") {
  manual_seed(18);
  using Fn = Tensor (*)(const Tensor&);
  const std::vector<std::pair<const char*, Fn>> ops = {
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"hardswish", [](const Tensor& x) { return hardswish(x); }},
      {"hardsigmoid", [](const Tensor& x) { return hardsigmoid(x); }},
      {"clamp", [](const Tensor& x) { return clamp(x, -0.5, 0.75); }},
      {"clamp_min", [](const Tensor& x) { return clamp(x, 0.1, std::nullopt); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"exp", [](const Tensor& x) { return exp(x); }},
  };
  for (int64_t c : {1, 3, 17, 40}) {
    for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 7}, {14, 14}, {7, 14}}) {
      CAPTURE(c);
      CAPTURE(h);
      CAPTURE(w);
      const Tensor x = randn({2, c, h, w}) * 4.0;
      const Tensor xc = channels_last(x);
      for (const auto& [name, op] : ops) {
        const std::string op_name = name;  // (a const char* binding captures as its address)
        CAPTURE(op_name);
        const Tensor out = op(xc);
        check_layout(out);
        check_bitwise(out, op(x));
      }
      Tensor t = xc.clone();
      t.relu_();
      check_bitwise(t, relu(x));
      t = xc.clone();
      t.clamp_(-1.0, 1.0);
      check_bitwise(t, clamp(x, -1.0, 1.0));
    }
  }
  // The witness: on these values the reference loops (a strided view) round
  // gelu, sigmoid and exp differently from the vector loops somewhere, so the
  // bitwise matches above came from the vector loops on channels_last.
  const Tensor x = randn({2, 40, 14, 14}) * 4.0;
  Tensor strided = zeros({2, 40, 14, 28}).narrow(3, 0, 14);  // dense in no dim order
  strided.copy_(x);
  for (Fn op : {+[](const Tensor& t) { return gelu(t); }, +[](const Tensor& t) { return sigmoid(t); },
                +[](const Tensor& t) { return exp(t); }}) {
    const Tensor fast = op(x).contiguous(), slow = op(strided).contiguous();
    // 1e-5 absolute: GELU's 1 + erf(x / sqrt 2) cancels below x = -4, where the
    // vector erf's last bits (fused or not: the sanitizer build's -O1 scalar
    // clone on a Zen 4) moved gelu(-5.1) = -7.7e-7 by 1.1e-6.
    check_close(slow, fast, 1e-5, 1e-5);
    CHECK(std::memcmp(fast.data_ptr<float>(), slow.data_ptr<float>(), sizeof(float) * fast.numel()) != 0);
  }
}
