// Lowering of the ONNX ops of the dtype family (see lowerer.h): Cast and
// CastLike with ONNX's float8 saturation, integer Div (truncating, as C),
// Mod, BitShift, the bitwise ops, IsNaN, IsInf and BitCast.
#include <cmath>
#include <limits>

#include "converter/lowerer.h"
#include "runtime/ops/ops.h"

namespace ember::converter::lowering {

double float8_max(DType dt) {
  switch (dt) {
    case DType::Float8E4M3FN: return 448;
    case DType::Float8E4M3FNUZ: return 240;
    case DType::Float8E5M2: case DType::Float8E5M2FNUZ: return 57344;
    default: return 0;
  }
}

// Pow: the output has x's dtype (ONNX); the power in the promoted dtype, then
// a Copy when that differs (int32 ** float32: the float32 power, truncated).
void Lowerer::lower_pow(const Node& n) {
  require_inputs(n, 2);
  const int x = n.inputs[0], y = n.inputs[1];
  const std::optional<DType> xdt = dtype_of(x), ydt = dtype_of(y);
  if (!xdt || !ydt) refuse("an input has an unknown dtype");
  // The front-end's promotion (result_type: a 0-d operand only raises the category).
  auto probe = [&](int id, DType dt) { return empty(Shape(rank_of(id, "input") > 0 ? 1 : 0, 1), TensorOptions(dt)); };
  const DType common = result_type({probe(x, *xdt), probe(y, *ydt)});
  if (common == *xdt) return emit(OpKind::Pow, n, {tensor(x), tensor(y)}, {out0(n)});
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  cast_new(binary_new(OpKind::Pow, tensor(x), tensor(y), common, base + "/power"), *xdt, base, out);
}

// x converted to `to`, as ONNX's Cast with `saturate` (opset 19+, default 1):
// to a float8 format (not e8m0) out-of-range values and infinities become
// +-max (a Clamp first); otherwise the conversion's own (ml_dtypes') rules.
// float8 e8m0 rounds up and saturates (round_mode "up", saturate 1) only.
void Lowerer::emit_cast(const Node& n, DType to) {
  const int x = n.inputs[0];
  const bool saturate = n.get_int("saturate", 1) != 0;
  const std::string round_mode = n.get_string("round_mode", "up");
  if (to == DType::Float8E8M0FNU && (!saturate || round_mode != "up")) {
    refuse("cast to FLOAT8E8M0 with saturate " + std::to_string(saturate ? 1 : 0) + " and round_mode '" + round_mode +
           "' is not supported (only saturate 1, round_mode 'up')");
  }
  const std::optional<DType> from = dtype_of(x);
  if (!from) refuse("input " + vname(x) + " has an unknown dtype");
  const double max = float8_max(to);
  if (!saturate || max == 0 || *from == DType::Bool || is_storage_only(*from)) {
    return emit(OpKind::Copy, n, {tensor(x)}, {out0(n)});
  }
  ClampParams p;
  p.has_min = p.has_max = true;
  p.min = -max;
  p.max = max;
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const int32_t clamped = emit_new(OpKind::Clamp, {tensor(x)}, *from, dims_of(x, "input"), p, base + "/saturated");
  emit_tensors(OpKind::Copy, {clamped}, {out}, NoParams{}, n.name);
}

// Div: true division for floats; integers divide truncating toward zero (C's /).
void Lowerer::lower_div(const Node& n) {
  require_inputs(n, 2);
  const std::optional<DType> dt = dtype_of(n.inputs[0]);
  const OpKind kind = dt && is_integral(*dt) ? OpKind::TruncDivide : OpKind::Div;
  emit(kind, n, {tensor(n.inputs[0]), tensor(n.inputs[1])}, {out0(n)});
}

// Mod: fmod 0 is Python's % (the sign of the divisor: Remainder), fmod 1 C's
// fmod (the sign of the dividend: Fmod).
void Lowerer::lower_mod(const Node& n) {
  require_inputs(n, 2);
  const int64_t fmod = n.get_int("fmod", 0);
  if (fmod != 0 && fmod != 1) refuse("fmod " + std::to_string(fmod) + " must be 0 or 1");
  const std::optional<DType> dt = dtype_of(n.inputs[0]);
  if (!dt || *dt == DType::Bool) refuse("input " + vname(n.inputs[0]) + " is not numeric");
  emit(fmod ? OpKind::Fmod : OpKind::Remainder, n, {tensor(n.inputs[0]), tensor(n.inputs[1])}, {out0(n)});
}

// BitShift: direction LEFT or RIGHT (a shift past the width gives 0, or the sign).
void Lowerer::lower_bitshift(const Node& n) {
  require_inputs(n, 2);
  const std::string direction = n.get_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") refuse("direction '" + direction + "' must be LEFT or RIGHT");
  const std::optional<DType> dt = dtype_of(n.inputs[0]);
  if (!dt || !is_integral(*dt)) refuse("input " + vname(n.inputs[0]) + " is not an integer tensor");
  emit(direction == "LEFT" ? OpKind::BitwiseLeftShift : OpKind::BitwiseRightShift, n,
       {tensor(n.inputs[0]), tensor(n.inputs[1])}, {out0(n)});
}

// BitwiseNot: x ^ all ones (true for bool).
void Lowerer::lower_bitwise_not(const Node& n) {
  const int x = n.inputs[0];
  const std::optional<DType> dt = dtype_of(x);
  if (!dt || !is_integral(*dt, /*include_bool=*/true)) refuse("input " + vname(x) + " is not an integer tensor");
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const Tensor ones = full({}, *dt == DType::Bool ? Scalar(true) : Scalar(-1), TensorOptions(*dt));
  emit_tensors(OpKind::BitwiseXor, {tensor(x), new_weight(base + "/all_ones", ones, false)}, {out}, NoParams{},
               n.name);
}

// IsNaN: x != x. IsInf: |x| == inf, x == inf or x == -inf as detect_positive
// and detect_negative say (neither: x < x, all false).
void Lowerer::lower_is_nan_inf(const Node& n) {
  const int x = n.inputs[0];
  const std::optional<DType> dt = dtype_of(x);
  if (!dt || !is_floating(*dt)) refuse("input " + vname(x) + " is not floating point");
  const int32_t in = tensor(x), out = tensor(out0(n));
  if (n.op_type == "IsNaN") return emit_tensors(OpKind::Ne, {in, in}, {out}, NoParams{}, n.name);
  const bool pos = n.get_int("detect_positive", 1) != 0, neg = n.get_int("detect_negative", 1) != 0;
  if (!pos && !neg) return emit_tensors(OpKind::Lt, {in, in}, {out}, NoParams{}, n.name);
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const int32_t inf = scalar_weight(base + "/inf", neg && !pos ? -INFINITY : INFINITY, *dt);
  const int32_t lhs = pos && neg ? emit_new(OpKind::Abs, {in}, *dt, dims_of(x, "input"), NoParams{}, base + "/abs") : in;
  emit_tensors(OpKind::Eq, {lhs, inf}, {out}, NoParams{}, n.name);
}

// BitCast (opset 26): the bytes read as `to` (the same element size only).
void Lowerer::lower_bit_cast(const Node& n) {
  const DType to = cast_target(n);
  const std::optional<DType> from = dtype_of(n.inputs[0]);
  if (!from) refuse("input " + vname(n.inputs[0]) + " has an unknown dtype");
  const DTypeSet sub_byte = dtype_bit(DType::Int4) | dtype_bit(DType::UInt4) | dtype_bit(DType::Int2) |
                            dtype_bit(DType::UInt2) | dtype_bit(DType::Float4E2M1FN);
  if ((dtype_bit(*from) | dtype_bit(to)) & sub_byte) refuse("bit cast of 4- and 2-bit types is not supported");
  if (element_size(*from) != element_size(to)) {
    refuse("bit cast from " + std::string(dtype_name(*from)) + " to " + std::string(dtype_name(to)) +
           " changes the element size (only equal sizes are supported)");
  }
  emit(OpKind::BitCast, n, {tensor(n.inputs[0])}, {out0(n)});
}

}  // namespace ember::converter::lowering
