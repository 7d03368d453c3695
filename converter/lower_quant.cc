// Lowering of the ONNX quantization ops (see lowerer.h) to ember's float and
// integer ops, with the semantics of onnx.reference (op_quantize_linear.py,
// op_dequantize_linear.py, op_dynamic_quantize_linear.py, op_qlinear_matmul.py,
// op_qlinear_conv.py, op_matmul_integer.py, op_conv_integer.py):
// - DequantizeLinear: (float32(x) - zero_point) * scale, then the output dtype
//   (the scale's, or output_dtype);
// - QuantizeLinear: saturate(round_half_even(x / scale) + zero_point), the
//   division in the dtype of x and scale (or `precision`), the rest in float;
// - scales and zero points per tensor, per axis (1-D) or blocked (block_size);
// - MatMulInteger, ConvInteger: (x - zero point) in int32, then MatMul or
//   Conv2d in int32: exact (ember's integer kernels accumulate in 64 bits and
//   wrap to 32, as int32 arithmetic does);
// - QLinearMatMul, QLinearConv: that int32 product, then requantized in
//   float64 with the multiplier x_scale * w_scale / y_scale computed in the
//   scales' dtype, as numpy promotes the reference's int32 * float array.
// The integer outputs are int8, uint8, int16, uint16 and the 4- and 2-bit
// integers; the float8 (not e8m0) and float4 outputs are x / scale cast as
// the reference does (float8: saturated unless saturate is 0, the zero point
// ignored; float4: plus the zero point, saturating by itself).
#include <cmath>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

namespace {

// The range of an integer quantized dtype.
std::optional<std::pair<double, double>> quant_range(DType dt) {
  if (dt == DType::Int8) return std::make_pair(-128.0, 127.0);
  if (dt == DType::UInt8) return std::make_pair(0.0, 255.0);
  if (dt == DType::Int16) return std::make_pair(-32768.0, 32767.0);
  if (dt == DType::UInt16) return std::make_pair(0.0, 65535.0);
  if (dt == DType::Int4) return std::make_pair(-8.0, 7.0);
  if (dt == DType::UInt4) return std::make_pair(0.0, 15.0);
  if (dt == DType::Int2) return std::make_pair(-2.0, 1.0);
  if (dt == DType::UInt2) return std::make_pair(0.0, 3.0);
  return std::nullopt;
}

std::string dt_name(std::optional<DType> dt) { return dt ? std::string(dtype_name(*dt)) : "unknown"; }

}  // namespace

int32_t Lowerer::quant_param(int id, const std::vector<Dim>& x, int64_t axis, int64_t block, DType dt,
                             const std::string& name) {
  const std::vector<Dim> s = dims_of(id, "quantization parameter");
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t numel = 1;
  for (const Dim& d : s) numel = (numel < 0 || !d.is_static()) ? -1 : numel * d.value;
  if (numel == 1 && block == 0) return cast_new(tensor(id), dt, name);
  axis = norm_axis(axis, rank, "axis");  // read only where it matters (the default 1 on a 1-D x)
  const size_t a = static_cast<size_t>(axis);
  if (s.size() == 1 && block == 0) {  // per axis: [C] -> [C, 1, ...]
    if (s[0].is_static() && x[a].is_static() && s[0].value != x[a].value) {
      refuse("quantization parameter " + vname(id) + " has " + std::to_string(s[0].value) + " values, axis " +
             std::to_string(axis) + " has " + std::to_string(x[a].value));
    }
    std::vector<int64_t> shape = {-1};
    shape.resize(static_cast<size_t>(rank - axis), 1);
    std::vector<Dim> dims = {s[0]};
    dims.resize(shape.size(), Dim::fixed(1));
    if (is_const(id)) return new_weight(name, val(id).constant.reshape(shape).to(dt), false);
    const int32_t r = shape.size() == 1 ? tensor(id)
                                        : emit_new(OpKind::Reshape, {tensor(id), ints_weight(name + "/shape", shape)},
                                                   *dtype_of(id), dims, NoParams{}, name + "/per_axis");
    return cast_new(r, dt, name);
  }
  if (block <= 0 || static_cast<int64_t>(s.size()) != rank) {
    refuse("quantization parameter " + vname(id) + " of rank " + std::to_string(s.size()) +
           (block > 0 ? " is not blocked (x has rank " + std::to_string(rank) + ")"
                      : " is neither one value nor 1-D (block_size is 0)"));
  }
  // Blocked: each value covers `block` elements along axis; the last block may be cut.
  std::vector<int64_t> ps, xs;
  for (size_t d = 0; d < s.size(); ++d) {
    if (!s[d].is_static() || !x[d].is_static()) refuse("blocked quantization needs static shapes");
    ps.push_back(s[d].value);
    xs.push_back(x[d].value);
  }
  for (size_t d = 0; d < s.size(); ++d) {
    const int64_t want = d == a ? (xs[d] + block - 1) / block : xs[d];
    if (ps[d] != want) {
      refuse("quantization parameter " + vname(id) + " has shape " + join_ints(ps) + " for x of shape " +
             join_ints(xs) + " and block_size " + std::to_string(block));
    }
  }
  std::vector<int64_t> expanded = ps, repeated = ps;
  expanded.insert(expanded.begin() + axis + 1, block);
  repeated[a] *= block;
  if (is_const(id)) {
    const Tensor t = val(id).constant.unsqueeze(axis + 1).expand(expanded).reshape(repeated).narrow(axis, 0, xs[a]);
    return new_weight(name, t.to(dt).contiguous(), false);
  }
  auto dims = [](const std::vector<int64_t>& v) {
    std::vector<Dim> d;
    for (int64_t e : v) d.push_back(Dim::fixed(e));
    return d;
  };
  const DType pdt = *dtype_of(id);
  std::vector<int64_t> unsq = ps;
  unsq.insert(unsq.begin() + axis + 1, 1);
  int32_t t = emit_new(OpKind::Unsqueeze, {tensor(id)}, pdt, dims(unsq), dims_params({axis + 1}, "axes"),
                       name + "/unsqueezed");
  t = emit_new(OpKind::Expand, {t, ints_weight(name + "/expanded_shape", expanded)}, pdt, dims(expanded), NoParams{},
               name + "/expanded");
  t = emit_new(OpKind::Reshape, {t, ints_weight(name + "/repeated_shape", repeated)}, pdt, dims(repeated), NoParams{},
               name + "/repeated");
  if (repeated[a] != xs[a]) {
    t = emit_new(OpKind::Slice,
                 {t, ints_weight(name + "/starts", {0}), ints_weight(name + "/ends", {xs[a]}),
                  ints_weight(name + "/axes", {axis}), -1},
                 pdt, dims(xs), NoParams{}, name + "/cut");
  }
  return cast_new(t, dt, name);
}

void Lowerer::lower_dequantize_linear(const Node& n) {
  require_inputs(n, 2);
  const int x = n.inputs[0], scale = n.inputs[1];
  const std::optional<DType> sdt = dtype_of(scale);
  if (!sdt || !is_floating(*sdt)) refuse("x_scale " + vname(scale) + " of dtype " + dt_name(sdt) + " is not floating point");
  DType out_dt = *sdt;
  if (n.get_int("output_dtype", 0) != 0) {
    const std::optional<DType> o = dtype_from_onnx(n.get_int("output_dtype", 0));
    if (!o || !is_floating(*o)) refuse("output_dtype " + onnx_dtype_name(n.get_int("output_dtype", 0)) + " is not supported");
    out_dt = *o;
  }
  const std::optional<DType> xdt = dtype_of(x);
  if (!xdt || !((is_integral(*xdt) && *xdt != DType::Int64) || is_storage_only(*xdt))) {
    refuse("x " + vname(x) + " of dtype " + dt_name(xdt) +
           " is not supported (8-, 16- and 32-bit integers, float8, float4, int4, uint4, int2, uint2)");
  }
  const std::vector<Dim> xs = dims_of(x, "x");
  const int64_t axis = n.get_int("axis", 1);
  const int64_t block = n.get_int("block_size", 0);
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  int32_t v = cast_new(tensor(x), DType::Float32, base + "/float");
  if (has_input(n, 2)) {
    const std::optional<DType> zdt = dtype_of(n.inputs[2]);
    if (zdt != xdt) refuse("x_zero_point " + vname(n.inputs[2]) + " of dtype " + dt_name(zdt) + " is not x's " + dt_name(xdt));
    v = binary_new(OpKind::Sub, v, quant_param(n.inputs[2], xs, axis, block, DType::Float32, base + "/zero_point"),
                   DType::Float32, base + "/centered");
  }
  const int32_t s = quant_param(scale, xs, axis, block, DType::Float32, base + "/scale");
  if (out_dt == DType::Float32) {
    binary_new(OpKind::Mul, v, s, DType::Float32, base, out);
    return;
  }
  cast_new(binary_new(OpKind::Mul, v, s, DType::Float32, base + "/float32"), out_dt, base, out);
}

void Lowerer::lower_quantize_linear(const Node& n) {
  require_inputs(n, 2);
  const int x = n.inputs[0], scale = n.inputs[1];
  const std::optional<DType> xdt = dtype_of(x), sdt = dtype_of(scale);
  if (!xdt || !is_floating(*xdt)) refuse("x " + vname(x) + " of dtype " + dt_name(xdt) + " is not floating point");
  if (!sdt || !is_floating(*sdt)) refuse("y_scale " + vname(scale) + " of dtype " + dt_name(sdt) + " is not floating point");
  // The output dtype: the zero point's, else output_dtype, else uint8.
  std::optional<DType> qdt = DType::UInt8;
  const int64_t output_dtype = n.get_int("output_dtype", 0);
  if (output_dtype != 0) qdt = dtype_from_onnx(output_dtype);
  if (has_input(n, 2)) qdt = dtype_of(n.inputs[2]);
  const std::optional<std::pair<double, double>> range = qdt ? quant_range(*qdt) : std::nullopt;
  const bool to_float = qdt && (float8_max(*qdt) > 0 || *qdt == DType::Float4E2M1FN);
  if (!range && !to_float) {
    refuse("output dtype " + (qdt ? std::string(dtype_name(*qdt)) : onnx_dtype_name(output_dtype)) +
           " is not supported (int8, uint8, int16, uint16, int4, uint4, int2, uint2, float8 but e8m0, float4)");
  }
  // The division: in the promoted dtype of x and the scale (numpy's), or `precision`.
  DType div_dt = promote_types(*xdt, *sdt);
  if (n.get_int("precision", 0) != 0) {
    const std::optional<DType> p = dtype_from_onnx(n.get_int("precision", 0));
    if (!p || !is_floating(*p)) refuse("precision " + onnx_dtype_name(n.get_int("precision", 0)) + " is not supported");
    div_dt = *p;
  }
  const std::vector<Dim> xs = dims_of(x, "x");
  const int64_t axis = n.get_int("axis", 1);
  const int64_t block = n.get_int("block_size", 0);
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const int32_t s = quant_param(scale, xs, axis, block, div_dt, base + "/scale");
  const int32_t q = binary_new(OpKind::Div, cast_new(tensor(x), div_dt, base + "/x"), s, div_dt, base + "/scaled");
  if (to_float) {
    int32_t v = q;
    if (*qdt == DType::Float4E2M1FN && has_input(n, 2)) {
      v = binary_new(OpKind::Add, v, quant_param(n.inputs[2], xs, axis, block, div_dt, base + "/zero_point"), div_dt,
                     base + "/shifted");
    }
    if (*qdt != DType::Float4E2M1FN && n.get_int("saturate", 1) != 0) {
      ClampParams c;
      c.has_min = c.has_max = true;
      c.min = -float8_max(*qdt);
      c.max = float8_max(*qdt);
      v = emit_new(OpKind::Clamp, {v}, div_dt, tensor_dims(v), c, base + "/saturated");
    }
    cast_new(v, *qdt, base, out);
    return;
  }
  const int32_t rounded = emit_new(OpKind::Round, {q}, div_dt, tensor_dims(q), NoParams{}, base + "/rounded");
  // The zero point is added in float32 (float64 for a float64 division): exact for these ranges.
  const DType acc_dt = div_dt == DType::Float64 ? DType::Float64 : DType::Float32;
  int32_t v = cast_new(rounded, acc_dt, base + "/rounded_" + std::string(dtype_name(acc_dt)));
  if (has_input(n, 2)) {
    v = binary_new(OpKind::Add, v, quant_param(n.inputs[2], xs, axis, block, acc_dt, base + "/zero_point"), acc_dt,
                   base + "/shifted");
  }
  ClampParams c;
  c.has_min = c.has_max = true;
  c.min = range->first;
  c.max = range->second;
  const int32_t sat = emit_new(OpKind::Clamp, {v}, acc_dt, tensor_dims(v), c, base + "/saturated");
  cast_new(sat, *qdt, base, out);
}

void Lowerer::lower_dynamic_quantize_linear(const Node& n) {
  const int x = n.inputs[0];
  if (dtype_of(x) != DType::Float32) refuse("x " + vname(x) + " of dtype " + dt_name(dtype_of(x)) + " is not float32");
  const DType f = DType::Float32;
  const int32_t in = tensor(x);
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  auto output = [&](size_t k) { return n.outputs.size() > k && n.outputs[k] >= 0 ? tensor(n.outputs[k]) : -1; };
  const int32_t scale_out = output(1), zp_out = output(2);
  ReduceParams all;
  all.keepdim = false;
  const int32_t hi = new_activation(base + "/max", f, {}), lo = new_activation(base + "/min", f, {});
  emit_tensors(OpKind::Max, {in}, {hi, -1}, all, base + "/max");
  emit_tensors(OpKind::Min, {in}, {lo, -1}, all, base + "/min");
  const int32_t zero = scalar_weight(base + "/zero", 0.0, f);
  // The range always holds 0: [min(0, min x), max(0, max x)]; an empty range has scale 1 / 255.
  const int32_t maxx = binary_new(OpKind::Maximum, hi, zero, f, base + "/range_max");
  const int32_t minx = binary_new(OpKind::Minimum, lo, zero, f, base + "/range_min");
  const int32_t width = binary_new(OpKind::Sub, maxx, minx, f, base + "/width");
  const int32_t empty = binary_new(OpKind::Eq, maxx, minx, DType::Bool, base + "/empty");
  const int32_t safe = emit_new(OpKind::Where, {empty, scalar_weight(base + "/one", 1.0, f), width}, f, {}, NoParams{},
                                base + "/safe_width");
  const int32_t scale = binary_new(OpKind::Div, safe, scalar_weight(base + "/levels", 255.0, f), f, base + "/scale",
                                   scale_out);
  ClampParams c;
  c.has_min = c.has_max = true;
  c.min = 0.0;
  c.max = 255.0;
  const int32_t zp0 = binary_new(OpKind::Sub, zero, binary_new(OpKind::Div, minx, scale, f, base + "/min_scaled"), f,
                                 base + "/zero_point_float");
  const int32_t zp = emit_new(OpKind::Round, {emit_new(OpKind::Clamp, {zp0}, f, {}, c, base + "/zero_point_clamped")},
                              f, {}, NoParams{}, base + "/zero_point_rounded");
  if (zp_out >= 0) cast_new(zp, DType::UInt8, base + "/zero_point", zp_out);
  const std::vector<Dim> xs = dims_of(x, "x");
  const int32_t q = emit_new(OpKind::Round, {binary_new(OpKind::Div, in, scale, f, base + "/scaled")}, f, xs,
                             NoParams{}, base + "/rounded");
  const int32_t sat =
      emit_new(OpKind::Clamp, {binary_new(OpKind::Add, q, zp, f, base + "/shifted")}, f, xs, c, base + "/saturated");
  cast_new(sat, DType::UInt8, base, out);
}

// ids: x, x zero point, w, w zero point, bias (-1: none). MatMul: zero points
// per row of x ([M] -> [M, 1]) and per column of w; Conv: per output channel of w.
int32_t Lowerer::integer_product(const Node& n, const int (&ids)[5], const std::string& name, int32_t into) {
  const bool conv = n.op_type == "ConvInteger" || n.op_type == "QLinearConv";
  for (int k : {0, 2}) {
    const std::optional<DType> dt = dtype_of(ids[k]);
    if (dt != DType::Int8 && dt != DType::UInt8) {
      refuse("input " + vname(ids[k]) + " of dtype " + dt_name(dt) + " is not int8 or uint8");
    }
  }
  auto centered = [&](int v, int zp, int64_t axis, const std::string& what) {
    const int32_t t = cast_new(tensor(v), DType::Int32, name + "/" + what + "_int32");
    if (zp < 0) return t;
    const std::vector<Dim> vs = dims_of(v, what);
    return binary_new(OpKind::Sub, t, quant_param(zp, vs, axis, 0, DType::Int32, name + "/" + what + "_zero_point"),
                      DType::Int32, name + "/" + what + "_centered");
  };
  const int32_t a = centered(ids[0], ids[1], conv ? 1 : -2, "a");
  const int32_t b = centered(ids[2], ids[3], conv ? 0 : -1, "b");
  const std::vector<Dim> out_shape = dims_of(out0(n), "output");
  if (!conv) return emit_new(OpKind::MatMul, {a, b}, DType::Int32, out_shape, NoParams{}, name, into);
  const Conv2dParams p = conv_params(n, ids[0], ids[2]);  // the attributes as lower_conv reads them
  int32_t bias = -1;
  if (ids[4] >= 0) {
    if (dtype_of(ids[4]) != DType::Int32) refuse("bias " + vname(ids[4]) + " is not int32");
    bias = tensor(ids[4]);
  }
  return emit_new(OpKind::Conv2d, {a, b, bias}, DType::Int32, out_shape, p, name, into);
}

void Lowerer::lower_integer_op(const Node& n) {
  require_inputs(n, 2);
  const int32_t out = tensor(out0(n));
  const int in2 = has_input(n, 2) ? n.inputs[2] : -1, in3 = has_input(n, 3) ? n.inputs[3] : -1;
  const std::string name = def_.tensors[static_cast<size_t>(out)].name;  // a copy: def_.tensors grows
  integer_product(n, {n.inputs[0], in2, n.inputs[1], in3, -1}, name, out);
}

void Lowerer::requantize(int32_t acc, int32_t multiplier, int zero_point, DType dt, const std::vector<Dim>& shape,
                         const std::string& name, int32_t into) {
  const DType d = DType::Float64;
  int32_t v = binary_new(OpKind::Mul, cast_new(acc, d, name + "/acc_float64"), cast_new(multiplier, d, name + "/m64"),
                         d, name + "/scaled");
  if (zero_point >= 0) {
    v = binary_new(OpKind::Add, v, cast_new(tensor(zero_point), d, name + "/y_zero_point_float64"), d,
                   name + "/shifted");
  }
  const std::pair<double, double> range = *quant_range(dt);
  ClampParams c;
  c.has_min = c.has_max = true;
  c.min = range.first;
  c.max = range.second;
  const int32_t r = emit_new(OpKind::Round, {v}, d, shape, NoParams{}, name + "/rounded");
  cast_new(emit_new(OpKind::Clamp, {r}, d, shape, c, name + "/saturated"), dt, name, into);
}

// QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point.
// QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B.
void Lowerer::lower_qlinear_op(const Node& n) {
  require_inputs(n, 7);
  const bool conv = n.op_type == "QLinearConv";
  auto opt = [&](size_t i) { return has_input(n, i) ? n.inputs[i] : -1; };
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const std::vector<Dim> ys = dims_of(out0(n), "output");
  const int64_t yrank = static_cast<int64_t>(ys.size());
  const std::optional<DType> out_dt = has_input(n, 7) ? dtype_of(n.inputs[7]) : dtype_of(n.inputs[0]);
  if (!out_dt || !quant_range(*out_dt)) refuse("output dtype " + dt_name(out_dt) + " is not supported (int8, uint8)");
  const int32_t acc =
      integer_product(n, {n.inputs[0], opt(2), n.inputs[3], opt(5), conv ? opt(8) : -1}, base + "/acc", -1);
  // The multiplier a_scale * b_scale / y_scale in the scales' dtype, shaped
  // for the output: a per row, b per column (MatMul); w per output channel (Conv).
  const std::optional<DType> sdt = dtype_of(n.inputs[1]);
  if (!sdt || !is_floating(*sdt)) refuse("scale " + vname(n.inputs[1]) + " is not floating point");
  for (size_t i : {4, 6}) {
    if (dtype_of(n.inputs[i]) != sdt) refuse("scale " + vname(n.inputs[i]) + " has another dtype than " + vname(n.inputs[1]));
  }
  if (yrank < (conv ? 2 : 1)) refuse("output " + vname(out0(n)) + " has too small a rank");
  const int32_t sa = quant_param(n.inputs[1], ys, conv ? 1 : -2, 0, *sdt, base + "/a_scale");
  const int32_t sb = quant_param(n.inputs[4], ys, conv ? 1 : -1, 0, *sdt, base + "/b_scale");
  const int32_t sy = quant_param(n.inputs[6], ys, 0, 0, *sdt, base + "/y_scale");
  const int32_t m = binary_new(OpKind::Div, binary_new(OpKind::Mul, sa, sb, *sdt, base + "/ab_scale"), sy, *sdt,
                               base + "/multiplier");
  requantize(acc, m, opt(7), *out_dt, ys, base, out);
}

}  // namespace ember::converter::lowering
