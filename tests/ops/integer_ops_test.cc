// The integer and bitwise ops against PyTorch 1.13 (tests/golden/golden_integer_ops.py):
// remainder, fmod, floor_divide, div's rounding modes, bitwise ops and shifts,
// isnan/isinf/isfinite, their gradients; uint16/32/64 against numpy; the
// storage-only dtypes' conversions against ml_dtypes' values.
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;
using ember::testing::golden_text;

namespace {

const char* const kFloats[] = {"f32", "f64", "f16", "bf16"};
const char* const kInts[] = {"i8", "u8", "i16", "i32", "i64"};

Tensor apply(const std::string& op, const Tensor& a, const Tensor& b) {
  if (op == "remainder") return remainder(a, b);
  if (op == "fmod") return fmod(a, b);
  if (op == "floor_divide") return floor_divide(a, b);
  if (op == "div_trunc") return div(a, b, "trunc");
  if (op == "div_floor") return div(a, b, "floor");
  if (op == "bitwise_and") return bitwise_and(a, b);
  if (op == "bitwise_or") return bitwise_or(a, b);
  if (op == "bitwise_xor") return bitwise_xor(a, b);
  if (op == "bitwise_left_shift") return bitwise_left_shift(a, b);
  if (op == "bitwise_right_shift") return bitwise_right_shift(a, b);
  FAIL("unknown op " << op);
  return a;
}

}  // namespace

TEST_CASE("remainder, fmod, floor_divide and div's rounding modes match PyTorch") {
  for (const char* op : {"remainder", "fmod", "floor_divide", "div_trunc", "div_floor"}) {
    for (const char* dn : kFloats) {
      CAPTURE(op);
      CAPTURE(dn);
      const Tensor a = golden(std::string("int.fa.") + dn), b = golden(std::string("int.fb.") + dn);
      check_equal(apply(op, a, b), golden(std::string("int.") + op + "." + dn));
    }
    for (const char* dn : kInts) {
      CAPTURE(op);
      CAPTURE(dn);
      const Tensor a = golden(std::string("int.ia.") + dn), b = golden(std::string("int.ib.") + dn);
      check_equal(apply(op, a, b), golden(std::string("int.") + op + "." + dn));
    }
  }
  const Tensor a = golden("int.bc.a"), b = golden("int.bc.b");
  check_close(remainder(a, b), golden("int.bc.remainder"));
  check_close(fmod(a, b), golden("int.bc.fmod"));
  check_close(remainder(a, -1.5), golden("int.bc.remainder_scalar"));
  check_close(fmod(a, -1.5), golden("int.bc.fmod_scalar"));
}

TEST_CASE("remainder and fmod backward match PyTorch") {
  for (const char* op : {"remainder", "fmod"}) {
    CAPTURE(op);
    Tensor a = golden("int.bc.a").clone().requires_grad_(), b = golden("int.bc.b").clone().requires_grad_();
    const Tensor out = apply(op, a, b);
    REQUIRE(out.grad_fn() != nullptr);
    CHECK(out.grad_fn()->name() == golden_text(std::string("int.grad_fn.") + op));
    out.backward(ones_like(out));
    check_close(a.grad(), golden(std::string("int.grad.") + op + ".a"));
    check_close(b.grad(), golden(std::string("int.grad.") + op + ".b"));
  }
  // floor_divide is not differentiable: nothing is recorded.
  Tensor x = tensor({1.5f, -2.5f}).requires_grad_();
  CHECK_FALSE(floor_divide(x, 2.0).requires_grad());
}

TEST_CASE("bitwise ops, shifts and bitwise_not match PyTorch") {
  for (const char* dn : kInts) {
    CAPTURE(dn);
    const Tensor a = golden(std::string("bit.a.") + dn), b = golden(std::string("bit.b.") + dn);
    for (const char* op : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
      CAPTURE(op);
      check_equal(apply(op, a, b), golden(std::string("bit.") + op + "." + dn));
    }
    const Tensor s = golden(std::string("bit.shift.") + dn);
    check_equal(bitwise_left_shift(a, s), golden(std::string("bit.bitwise_left_shift.") + dn));
    check_equal(bitwise_right_shift(a, s), golden(std::string("bit.bitwise_right_shift.") + dn));
    check_equal(bitwise_not(a), golden(std::string("bit.bitwise_not.") + dn));
  }
  const Tensor p = tensor({true, true, false, false}), q = tensor({true, false, true, false});
  for (const char* op : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
    check_equal(apply(op, p, q), golden(std::string("bit.") + op + ".bool"));
  }
  check_equal(bitwise_not(p), golden("bit.bitwise_not.bool"));
  // Shifts past the width (PyTorch 2, ONNX): 0, or the sign of a signed value.
  const Tensor x = tensor({-8, 4, -1}, DType::Int8);
  check_equal(bitwise_left_shift(x, tensor({8, -1, 100}, DType::Int8)), tensor({0, 0, 0}, DType::Int8));
  check_equal(bitwise_right_shift(x, tensor({8, -1, 100}, DType::Int8)), tensor({-1, 0, -1}, DType::Int8));
}

TEST_CASE("integer and bitwise ops refuse what PyTorch refuses") {
  check_error([] { bitwise_and(tensor({1.5f}), tensor({1.5f})); }, "\"bitwise_and\" not implemented for 'Float' on cpu");
  check_error([] { bitwise_not(tensor({1.5f})); }, "\"bitwise_not_cpu\" not implemented for 'Float'");
  check_error([] { remainder(tensor({true}), tensor({true})); }, "\"remainder\" not implemented for 'Bool' on cpu");
  check_error([] { div(tensor({1}), tensor({1}), "round"); },
              "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'");
}

TEST_CASE("isnan, isinf, isposinf, isneginf and isfinite match PyTorch") {
  for (const char* dn : kFloats) {
    CAPTURE(dn);
    const Tensor x = golden(std::string("cls.x.") + dn);
    check_equal(isnan(x), golden(std::string("cls.isnan.") + dn));
    check_equal(isinf(x), golden(std::string("cls.isinf.") + dn));
    check_equal(isposinf(x), golden(std::string("cls.isposinf.") + dn));
    check_equal(isneginf(x), golden(std::string("cls.isneginf.") + dn));
    check_equal(isfinite(x), golden(std::string("cls.isfinite.") + dn));
  }
  const Tensor i = tensor({0, 1, -3});
  check_equal(isnan(i), golden("cls.isnan.i64"));
  check_equal(isinf(i), golden("cls.isinf.i64"));
  check_equal(isfinite(i), golden("cls.isfinite.i64"));
}

TEST_CASE("uint16, uint32 and uint64 compute as numpy's") {
  const struct {
    const char* name;
    DType dtype;
  } kUnsigned[] = {{"u16", DType::UInt16}, {"u32", DType::UInt32}, {"u64", DType::UInt64}};
  for (const auto& u : kUnsigned) {
    CAPTURE(u.name);
    const Tensor a = golden(std::string("uint.a.") + u.name).to(u.dtype);
    const Tensor b = golden(std::string("uint.b.") + u.name).to(u.dtype);
    CHECK(a.dtype() == u.dtype);
    auto low63 = [](const Tensor& t) {  // the reference keeps the low 63 bits
      return bitwise_and(t, Scalar(int64_t{0x7fffffffffffffff})).to(DType::Int64);
    };
    auto expect = [&](const char* op, const Tensor& got) {
      CAPTURE(op);
      CHECK(got.dtype() == u.dtype);
      check_equal(low63(got), golden(std::string("uint.") + op + "." + u.name));
    };
    expect("add", a + b);
    expect("sub", a - b);
    expect("mul", a * b);
    expect("remainder", remainder(a, b));
    expect("floor_divide", floor_divide(a, b));
    expect("maximum", maximum(a, b));
    expect("minimum", minimum(a, b));
    expect("bitwise_and", bitwise_and(a, b));
    expect("bitwise_or", bitwise_or(a, b));
    expect("bitwise_xor", bitwise_xor(a, b));
    expect("left_shift", bitwise_left_shift(a, remainder(b, 8)));
    expect("right_shift", bitwise_right_shift(a, remainder(b, 8)));
    check_equal(a < b, golden(std::string("uint.lt.") + u.name));
    check_equal(a.to(DType::Float32), golden(std::string("uint.to_f32.") + u.name));
    check_equal(a.sum(), golden(std::string("uint.sum.") + u.name).reshape({}));
  }
}

TEST_CASE("uint16/32/64 promote as PyTorch 2: only with floats") {
  const Tensor u = tensor({1, 2}).to(DType::UInt16);
  CHECK((u + tensor({0.5f, 0.5f})).dtype() == DType::Float32);
  CHECK((u + 1).dtype() == DType::UInt16);  // a Python int keeps the tensor's dtype
  check_error([&] { u + tensor({1, 2}, DType::Int32); },
              "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote UInt16 and Int");
  check_error([&] { tensor({1}).to(DType::UInt64) + tensor({1}, DType::UInt8); },
              "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote UInt64 and Byte");
  std::ostringstream os;
  os << tensor({3, 65535}).to(DType::UInt16);
  CHECK(os.str() == "tensor([    3, 65535], dtype=torch.uint16)");
}

TEST_CASE("storage-only dtypes convert as ml_dtypes and refuse arithmetic") {
  // Values and bits from ml_dtypes 0.5 (onnx.reference's casts): round to
  // nearest even; overflow is NaN (e4m3fn, fnuz) or inf (e5m2); float4 saturates.
  const Tensor x = tensor({0.3f, 464.0f, 465.0f, 61440.0f, -1e-7f, 3.0f, 100.0f, 0.0f});
  check_equal(x.to(DType::Float8E4M3FN).to(DType::Float32),
              tensor({0.3125f, 448.0f, NAN, NAN, -0.0f, 3.0f, 96.0f, 0.0f}));
  check_equal(x.to(DType::Float8E5M2).to(DType::Float32),
              tensor({0.3125f, 448.0f, 448.0f, INFINITY, -0.0f, 3.0f, 96.0f, 0.0f}));
  check_equal(x.to(DType::Float8E4M3FNUZ).to(DType::Float32),
              tensor({0.3125f, NAN, NAN, NAN, 0.0f, 3.0f, 96.0f, 0.0f}));
  check_equal(x.to(DType::Float8E5M2FNUZ).to(DType::Float32),
              tensor({0.3125f, 448.0f, 448.0f, NAN, 0.0f, 3.0f, 96.0f, 0.0f}));
  check_equal(x.to(DType::Float4E2M1FN).to(DType::Float32),
              tensor({0.5f, 6.0f, 6.0f, 6.0f, -0.0f, 3.0f, 6.0f, 0.0f}));
  // The bits of 0, -0 and NaN (check_equal does not tell -0 from 0).
  const Tensor z = tensor({0.0f, -0.0f, NAN}).to(DType::Float8E4M3FN);
  CHECK(static_cast<const uint8_t*>(z.data_ptr())[0] == 0x00);
  CHECK(static_cast<const uint8_t*>(z.data_ptr())[1] == 0x80);
  CHECK(static_cast<const uint8_t*>(z.data_ptr())[2] == 0x7f);
  check_equal(zeros({2}, DType::Float8E5M2).to(DType::Float32), tensor({0.0f, 0.0f}));
  // e8m0 as ONNX's Cast by default: the exponent, rounded up.
  check_equal(tensor({0.0f, 0.124f, 1.1f, 4.0f}).to(DType::Float8E8M0FNU).to(DType::Float32),
              tensor({std::ldexp(1.0f, -127), 0.125f, 2.0f, 4.0f}));
  // int4 / uint4 / int2: floats truncate, out of range is 0; integers wrap.
  const Tensor f = tensor({-9.0f, -8.5f, 7.5f, 8.0f, -2.5f, 1.5f});
  check_equal(f.to(DType::Int4).to(DType::Int32), tensor({0, -8, 7, 0, -2, 1}, DType::Int32));
  check_equal(f.to(DType::UInt4).to(DType::Int32), tensor({0, 0, 7, 8, 0, 1}, DType::Int32));
  check_equal(f.to(DType::Int2).to(DType::Int32), tensor({0, 0, 0, 0, -2, 1}, DType::Int32));
  check_equal(tensor({-9, 8, 300}).to(DType::Int4).to(DType::Int32), tensor({7, -8, -4}, DType::Int32));
  check_error([] { tensor({1.0f}).to(DType::Float8E4M3FN) + tensor({1.0f}); },
              "Promotion for Float8 Types is not supported, attempted to promote Float8_e4m3fn and Float");
  check_error([] {
    const Tensor t = tensor({1.0f}).to(DType::Int4);
    t + t;
  }, "\"add\" not implemented for 'Int4' on cpu");
}
