// Lowering of the ONNX signal ops composed of Range and elementwise ops (see
// lowerer.h): HannWindow, HammingWindow and BlackmanWindow of a size known at
// run time, computed in float64 and converted to output_datatype.
#include <cmath>

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

}  // namespace ember::converter::lowering
