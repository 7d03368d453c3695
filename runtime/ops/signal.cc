// Signal front-ends: DFT and STFT (ONNX's, over the DFT / STFT reference
// kernels). Their run-time length, axis, frame step and frame length inputs
// are read on the host; the params the kernels get carry the resolved values.
// No autograd.
#include <string>

#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {
namespace {

// An optional one-element integer run-time input (undefined: `fallback`).
Result<int64_t> host_int(const Tensor& t, int64_t fallback, const char* op, const char* what) {
  if (!t.defined()) return fallback;
  EMBER_CHECK(t.numel() == 1, Status::InvalidArgument, op, ": ", what, " must have one element, got shape ",
              shape_str(t.sizes()));
  EMBER_CHECK(!is_floating(t.dtype()) && t.dtype() != DType::Bool, Status::DTypeMismatch, op, ": ", what,
              " must be an integer, got ", dtype_name(t.dtype()));
  EMBER_ASSIGN_OR_RETURN(Tensor h, core::to(t, Device(DeviceType::CPU)));
  EMBER_ASSIGN_OR_RETURN(h, core::to(h, DType::Int64));
  EMBER_ASSIGN_OR_RETURN(h, core::contiguous(h));
  return h.to_vector<int64_t>()[0];
}

Status check_complex_last(const Tensor& x, const char* op, const char* what) {
  EMBER_CHECK(x.dim() >= 2 && (x.size(-1) == 1 || x.size(-1) == 2), Status::InvalidArgument, op, ": ", what,
              " must have a last dim of 1 (real) or 2 (complex) and rank >= 2, got ", shape_str(x.sizes()));
  EMBER_CHECK(is_floating(x.dtype()), Status::NotSupported, op, ": expected a floating-point ", what, ", got ",
              dtype_name(x.dtype()));
  return Status::Ok;
}

}  // namespace

Result<Tensor> core::dft(const Tensor& x, const Tensor& dft_length, const Tensor& axis, const DftParams& params) {
  EMBER_TRY(check_complex_last(x, "DFT", "input"));
  DftParams p = params;
  const int64_t r = x.dim();
  EMBER_ASSIGN_OR_RETURN(const int64_t a, host_int(axis, p.axis, "DFT", "axis"));
  EMBER_CHECK(a >= -r && a < r, Status::OutOfRange, "DFT: axis ", a, " is out of range for input ",
              shape_str(x.sizes()));
  p.axis = a < 0 ? a + r : a;
  EMBER_CHECK(p.axis != r - 1, Status::InvalidArgument, "DFT: axis ", a,
              " is the last dim (the real / imaginary parts) of input ", shape_str(x.sizes()));
  const int64_t n = x.size(p.axis);
  const int64_t fallback = p.length > 0 ? p.length : p.inverse && p.onesided ? 2 * (n - 1) : n;
  EMBER_ASSIGN_OR_RETURN(p.length, host_int(dft_length, fallback, "DFT", "dft_length"));
  EMBER_CHECK(p.length >= 1, Status::InvalidArgument, "DFT: dft_length must be positive, got ", p.length,
              " (input ", shape_str(x.sizes()), ", axis ", p.axis, ")");
  Shape out = x.sizes();
  if (p.inverse && p.onesided) {
    out[static_cast<size_t>(p.axis)] = p.length;
    out.back() = 1;
  } else {
    out[static_cast<size_t>(p.axis)] = p.onesided ? p.length / 2 + 1 : p.length;
    out.back() = 2;
  }
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::empty(out, TensorOptions(x.dtype()).device(x.device())));
  if (y.numel() > 0) EMBER_TRY(run_kernel(OpKind::DFT, {x}, {y}, p));
  return y;
}

Result<Tensor> core::stft(const Tensor& signal, const Tensor& frame_step, const Tensor& window,
                          const Tensor& frame_length, const StftParams& params) {
  EMBER_CHECK(signal.dim() == 3, Status::InvalidArgument,
              "STFT: signal must be [batch, length, 1 | 2], got ", shape_str(signal.sizes()));
  EMBER_TRY(check_complex_last(signal, "STFT", "signal"));
  StftParams p = params;
  EMBER_CHECK(frame_step.defined(), Status::InvalidArgument, "STFT: frame_step is required");
  EMBER_ASSIGN_OR_RETURN(p.frame_step, host_int(frame_step, 0, "STFT", "frame_step"));
  EMBER_CHECK(p.frame_step >= 1, Status::InvalidArgument, "STFT: frame_step must be positive, got ", p.frame_step);
  EMBER_CHECK(!window.defined() || window.dim() == 1, Status::InvalidArgument, "STFT: window must be 1-D, got ",
              shape_str(window.sizes()));
  const int64_t fallback = window.defined() ? window.size(0) : signal.size(1);
  EMBER_ASSIGN_OR_RETURN(p.frame_length, host_int(frame_length, fallback, "STFT", "frame_length"));
  EMBER_CHECK(p.frame_length >= 1 && p.frame_length <= signal.size(1), Status::InvalidArgument,
              "STFT: frame_length ", p.frame_length, " must be in [1, ", signal.size(1), "] for signal ",
              shape_str(signal.sizes()));
  EMBER_CHECK(!window.defined() || window.size(0) == p.frame_length, Status::ShapeMismatch, "STFT: window of ",
              window.defined() ? window.size(0) : 0, " values for frame_length ", p.frame_length);
  Tensor w;
  if (window.defined()) {
    EMBER_ASSIGN_OR_RETURN(w, core::to(window, signal.dtype()));
  } else {
    EMBER_ASSIGN_OR_RETURN(w, core::full({p.frame_length}, 1, TensorOptions(signal.dtype()).device(signal.device())));
  }
  EMBER_TRY(check_same_device({signal, w}));
  const int64_t frames = (signal.size(1) - p.frame_length) / p.frame_step + 1;
  const int64_t bins = p.onesided ? p.frame_length / 2 + 1 : p.frame_length;
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::empty({signal.size(0), frames, bins, 2},
                                               TensorOptions(signal.dtype()).device(signal.device())));
  if (y.numel() > 0) EMBER_TRY(run_kernel(OpKind::STFT, {signal, w}, {y}, p));
  return y;
}

Tensor dft(const Tensor& x, const Tensor& dft_length, const Tensor& axis, const DftParams& params) {
  return unwrap(core::dft(x, dft_length, axis, params));
}

Tensor stft(const Tensor& signal, const Tensor& frame_step, const Tensor& window, const Tensor& frame_length,
            const StftParams& params) {
  return unwrap(core::stft(signal, frame_step, window, frame_length, params));
}

}  // namespace ember
