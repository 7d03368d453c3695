// Lowering of the ONNX signal ops composed of Range and elementwise ops (see
// lowerer.h): HannWindow, HammingWindow and BlackmanWindow of a size known at
// run time, and MelWeightMatrix of run-time parameters, computed in float64
// and converted to output_datatype; DFT and STFT (one op each).
#include <cmath>
#include <cstdint>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

// The windows as onnx.reference writes them, with n = 0..size-1 and N = size
// (periodic) or size - 1 (symmetric):
//   Hann     sin(pi n / N)^2
//   Hamming  25/46 - 21/46 cos(2 pi n / N)
//   Blackman 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)
void Lowerer::lower_window_function(const Node& n) {
  const int size = n.inputs[0];
  const std::optional<DType> sdt = dtype_of(size);
  if (sdt != DType::Int64 && sdt != DType::Int32) refuse("size " + vname(size) + " is not int32 or int64");
  if (!dims_of(size, "size").empty()) refuse("size " + vname(size) + " is not a scalar");
  const std::optional<DType> dt = dtype_from_onnx(n.get_int("output_datatype", 1));
  if (!dt || !is_floating(*dt)) {
    refuse("output_datatype " + std::to_string(n.get_int("output_datatype", 1)) + " is not a supported float type");
  }
  set_output_dtype(out0(n), *dt);
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const DType f = DType::Float64;
  const int32_t count = cast_new(tensor(size), DType::Int64, base + "/size");
  Dim length;
  if (is_const(size)) length = Dim::fixed(static_cast<int64_t>(val(size).constant.item().to_double()));
  const int32_t idx = cast_new(arange_along(count, 0, 1, length, base + "/n"), f, base + "/n_f");
  int32_t span = cast_new(count, f, base + "/size_f");
  if (n.get_int("periodic", 1) == 0) span = binary_new(OpKind::Sub, span, scalar_weight(base + "/one", 1.0, f), f, base + "/span");
  const int32_t phase = binary_new(OpKind::Div, idx, span, f, base + "/phase");  // n / N
  auto cos_of = [&](double k, const std::string& what) {
    const int32_t a = binary_new(OpKind::Mul, phase, scalar_weight(base + "/" + what + "_k", k * M_PI, f), f,
                                 base + "/" + what + "_angle");
    return emit_new(OpKind::Cos, {a}, f, {length}, NoParams{}, base + "/" + what);
  };
  auto affine = [&](int32_t t, double scale, double shift, const std::string& what) {
    const int32_t scaled = binary_new(OpKind::Mul, t, scalar_weight(base + "/" + what + "_scale", scale, f), f,
                                      base + "/" + what + "_scaled");
    return binary_new(OpKind::Add, scaled, scalar_weight(base + "/" + what + "_shift", shift, f), f,
                      base + "/" + what + "_shifted");
  };
  int32_t w = -1;
  if (n.op_type == "HannWindow") {  // sin^2(pi n / N) = (1 - cos(2 pi n / N)) / 2
    w = affine(cos_of(2.0, "cos2"), -0.5, 0.5, "hann");
  } else if (n.op_type == "HammingWindow") {
    const double alpha = 25.0 / 46.0;
    w = affine(cos_of(2.0, "cos2"), -(1.0 - alpha), alpha, "hamming");
  } else {
    const int32_t first = affine(cos_of(2.0, "cos2"), -0.5, 0.42, "blackman");
    w = binary_new(OpKind::Add, first,
                   binary_new(OpKind::Mul, cos_of(4.0, "cos4"), scalar_weight(base + "/beta", 0.08, f), f,
                              base + "/second"),
                   f, base + "/blackman");
  }
  cast_new(w, *dt, base, out);
}

// MelWeightMatrix as onnx.reference computes it: M + 2 points evenly spaced
// in mel between the edges, in Hz, as bins floor((dft_length + 1) hz /
// sample_rate); filter i over spectrogram bin j (0 <= j <= dft_length / 2)
// rises from bin l = b[i] to 1 at c = b[i + 1] and falls to 0 at r = b[i + 2]:
// j < l: 0; j < c: (j - l) / (c - l); j == c: 1; j < r: (r - j) / (r - c); else 0.
void Lowerer::lower_mel_weight_matrix(const Node& n) {
  require_inputs(n, 5);
  const std::optional<DType> dt = dtype_from_onnx(n.get_int("output_datatype", 1));
  if (!dt || !is_floating(*dt)) {
    refuse("output_datatype " + std::to_string(n.get_int("output_datatype", 1)) + " is not a supported float type");
  }
  for (size_t i = 0; i < 5; ++i) {
    const std::optional<DType> it = dtype_of(n.inputs[i]);
    if (!it || *it == DType::Bool || !dims_of(n.inputs[i], "input").empty()) {
      refuse("input " + vname(n.inputs[i]) + " is not a numeric scalar");
    }
  }
  set_output_dtype(out0(n), *dt);
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const DType f = DType::Float64;
  auto in = [&](size_t i, const std::string& what) { return cast_new(tensor(n.inputs[i]), f, base + "/" + what); };
  auto c = [&](double v, const std::string& what) { return scalar_weight(base + "/" + what, v, f); };
  auto bin = [&](OpKind k, int32_t a, int32_t b, const std::string& what) {
    return binary_new(k, a, b, k == OpKind::Lt || k == OpKind::Eq ? DType::Bool : f, base + "/" + what);
  };
  auto unary = [&](OpKind k, int32_t a, const std::string& what) {
    return emit_new(k, {a}, f, tensor_dims(a), NoParams{}, base + "/" + what);
  };
  const int32_t bins = in(0, "num_mel_bins"), dft = in(1, "dft_length"), rate = in(2, "sample_rate");
  auto mel = [&](int32_t hz, const std::string& what) {  // 2595 log10(1 + hz / 700)
    const int32_t l = unary(OpKind::Log1p, bin(OpKind::Div, hz, c(700.0, what + "_700"), what + "_ratio"), what + "_log");
    return bin(OpKind::Mul, l, c(2595.0 / std::log(10.0), what + "_scale"), what);
  };
  const int32_t low = mel(in(3, "lower_edge_hertz"), "low_mel"), high = mel(in(4, "upper_edge_hertz"), "high_mel");
  const int32_t points = bin(OpKind::Add, bins, c(2.0, "two"), "points");
  const int32_t step = bin(OpKind::Div, bin(OpKind::Sub, high, low, "mel_span"), points, "mel_step");
  const int32_t k = cast_new(arange_along(cast_new(points, DType::Int64, base + "/points_i"), 0, 1, Dim{}, base + "/k"),
                             f, base + "/k_f");
  const int32_t mels = bin(OpKind::Add, bin(OpKind::Mul, k, step, "k_step"), low, "mels");
  const int32_t hz = bin(OpKind::Mul, unary(OpKind::Expm1, bin(OpKind::Mul, mels, c(std::log(10.0) / 2595.0, "inv"), "e"),
                                            "expm1"),
                         c(700.0, "hz_scale"), "hz");
  const int32_t scaled = bin(OpKind::Mul, bin(OpKind::Add, dft, c(1.0, "one"), "dft_1"), hz, "scaled");
  const int32_t b = unary(OpKind::Floor, bin(OpKind::Div, scaled, rate, "bin_f"), "bins");
  auto edge = [&](int64_t start, int64_t end, const std::string& what) {  // b[start : size + end] as [1, M]
    const int32_t s = emit_new(OpKind::Slice, {b, ints_weight(base + "/" + what + "_start", {start}),
                                               ints_weight(base + "/" + what + "_end", {end}), -1, -1},
                               f, {Dim{}}, NoParams{}, base + "/" + what + "_flat");
    return emit_new(OpKind::Unsqueeze, {s, -1}, f, {Dim::fixed(1), Dim{}}, dims_params({0}, "axes"), base + "/" + what);
  };
  const int32_t l = edge(0, -2, "left"), m = edge(1, -1, "center"), r = edge(2, INT64_MAX, "right");
  // j = 0..dft_length / 2 as a column.
  const int32_t half = cast_new(unary(OpKind::Floor, bin(OpKind::Mul, dft, c(0.5, "half"), "dft_half"), "dft_half_floor"),
                                DType::Int64, base + "/half_i");
  const int32_t count = binary_new(OpKind::Add, half, int_scalar(base + "/one_i", 1), DType::Int64, base + "/spectrum");
  const int32_t j = cast_new(arange_along(count, 0, 2, Dim{}, base + "/j"), f, base + "/j_f");
  const int32_t up = bin(OpKind::Div, bin(OpKind::Sub, j, l, "j_l"), bin(OpKind::Sub, m, l, "c_l"), "up");
  const int32_t down = bin(OpKind::Div, bin(OpKind::Sub, r, j, "r_j"), bin(OpKind::Sub, r, m, "r_c"), "down");
  const std::vector<Dim> grid = {Dim{}, Dim{}};
  auto where = [&](int32_t cond, int32_t a, int32_t e, const std::string& what) {
    return emit_new(OpKind::Where, {cond, a, e}, f, grid, NoParams{}, base + "/" + what);
  };
  const int32_t zero = c(0.0, "zero");
  const int32_t falling = where(bin(OpKind::Lt, j, r, "before_r"), down, zero, "falling");
  const int32_t peak = where(bin(OpKind::Eq, j, m, "at_c"), c(1.0, "peak_one"), falling, "peak");
  const int32_t rising = where(bin(OpKind::Lt, j, m, "before_c"), up, peak, "rising");
  cast_new(where(bin(OpKind::Lt, j, l, "before_l"), zero, rising, "weights"), *dt, base, out);
}

// DFT (17-19: axis attribute, default 1; 20+: axis input, default -2) and
// STFT (17+): inverse and onesided attributes; dft_length, axis, frame_step
// and frame_length inputs (constants or run-time values) read on the host.
void Lowerer::lower_dft(const Node& n) {
  const int64_t rank = rank_of(n.inputs[0], "input");
  if (rank < 2) refuse("input " + vname(n.inputs[0]) + " has rank " + std::to_string(rank) + ", not >= 2");
  float_input(n, 0);
  DftParams p;
  p.inverse = n.get_int("inverse", 0) != 0;
  p.onesided = n.get_int("onesided", 0) != 0;
  if (entry_->since >= 20) {
    p.axis = -2;
  } else {
    p.axis = n.get_int("axis", 1);
    if (p.axis < -rank || p.axis >= rank) refuse("axis " + std::to_string(p.axis) + " is out of range");
  }
  if (has_input(n, 1)) require_index_dtype(n.inputs[1], "dft_length");
  if (has_input(n, 2)) require_index_dtype(n.inputs[2], "axis");
  emit(OpKind::DFT, n,
       {tensor(n.inputs[0]), has_input(n, 1) ? tensor(n.inputs[1]) : -1, has_input(n, 2) ? tensor(n.inputs[2]) : -1},
       {out0(n)}, p);
}

void Lowerer::lower_stft(const Node& n) {
  require_inputs(n, 2);
  if (rank_of(n.inputs[0], "signal") != 3) refuse("signal " + vname(n.inputs[0]) + " is not 3-D");
  float_input(n, 0);
  require_index_dtype(n.inputs[1], "frame_step");
  if (has_input(n, 3)) require_index_dtype(n.inputs[3], "frame_length");
  StftParams p;
  p.onesided = n.get_int("onesided", 1) != 0;
  emit(OpKind::STFT, n,
       {tensor(n.inputs[0]), tensor(n.inputs[1]), has_input(n, 2) ? tensor(n.inputs[2]) : -1,
        has_input(n, 3) ? tensor(n.inputs[3]) : -1},
       {out0(n)}, p);
}

}  // namespace ember::converter::lowering
