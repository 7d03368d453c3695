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
int64_t host_int(const Tensor& t, int64_t fallback, const char* op, const char* what) {
  if (!t.defined()) return fallback;
  EMBER_ENFORCE(t.numel() == 1, Status::InvalidArgument, op, ": ", what, " must have one element, got shape ",
              shape_str(t.sizes()));
  EMBER_ENFORCE(!is_floating(t.dtype()) && t.dtype() != DType::Bool, Status::DTypeMismatch, op, ": ", what,
              " must be an integer, got ", dtype_name(t.dtype()));
  return t.to(Device(DeviceType::CPU)).to(DType::Int64).contiguous().to_vector<int64_t>()[0];
}

void check_complex_last(const Tensor& x, const char* op, const char* what) {
  EMBER_ENFORCE(x.dim() >= 2 && (x.size(-1) == 1 || x.size(-1) == 2), Status::InvalidArgument, op, ": ", what,
              " must have a last dim of 1 (real) or 2 (complex) and rank >= 2, got ", shape_str(x.sizes()));
  EMBER_ENFORCE(is_floating(x.dtype()), Status::NotSupported, op, ": expected a floating-point ", what, ", got ",
              dtype_name(x.dtype()));
}

}  // namespace

Tensor dft(const Tensor& x, const Tensor& dft_length, const Tensor& axis, const DftParams& params) {
  check_complex_last(x, "DFT", "input");
  DftParams p = params;
  const int64_t r = x.dim();
  const int64_t a = host_int(axis, p.axis, "DFT", "axis");
  EMBER_ENFORCE(a >= -r && a < r, Status::OutOfRange, "DFT: axis ", a, " is out of range for input ",
              shape_str(x.sizes()));
  p.axis = a < 0 ? a + r : a;
  EMBER_ENFORCE(p.axis != r - 1, Status::InvalidArgument, "DFT: axis ", a,
              " is the last dim (the real / imaginary parts) of input ", shape_str(x.sizes()));
  const int64_t n = x.size(p.axis);
  const int64_t fallback = p.length > 0 ? p.length : p.inverse && p.onesided ? 2 * (n - 1) : n;
  p.length = host_int(dft_length, fallback, "DFT", "dft_length");
  EMBER_ENFORCE(p.length >= 1, Status::InvalidArgument, "DFT: dft_length must be positive, got ", p.length,
              " (input ", shape_str(x.sizes()), ", axis ", p.axis, ")");
  Shape out = x.sizes();
  if (p.inverse && p.onesided) {
    out[static_cast<size_t>(p.axis)] = p.length;
    out.back() = 1;
  } else {
    out[static_cast<size_t>(p.axis)] = p.onesided ? p.length / 2 + 1 : p.length;
    out.back() = 2;
  }
  Tensor y = empty(out, TensorOptions(x.dtype()).device(x.device()));
  if (y.numel() > 0) unwrap(run_kernel(OpKind::DFT, {x}, {y}, p));
  return y;
}

Tensor stft(const Tensor& signal, const Tensor& frame_step, const Tensor& window, const Tensor& frame_length,
            const StftParams& params) {
  EMBER_ENFORCE(signal.dim() == 3, Status::InvalidArgument,
              "STFT: signal must be [batch, length, 1 | 2], got ", shape_str(signal.sizes()));
  check_complex_last(signal, "STFT", "signal");
  StftParams p = params;
  EMBER_ENFORCE(frame_step.defined(), Status::InvalidArgument, "STFT: frame_step is required");
  p.frame_step = host_int(frame_step, 0, "STFT", "frame_step");
  EMBER_ENFORCE(p.frame_step >= 1, Status::InvalidArgument, "STFT: frame_step must be positive, got ", p.frame_step);
  EMBER_ENFORCE(!window.defined() || window.dim() == 1, Status::InvalidArgument, "STFT: window must be 1-D, got ",
              shape_str(window.sizes()));
  const int64_t fallback = window.defined() ? window.size(0) : signal.size(1);
  p.frame_length = host_int(frame_length, fallback, "STFT", "frame_length");
  EMBER_ENFORCE(p.frame_length >= 1 && p.frame_length <= signal.size(1), Status::InvalidArgument,
              "STFT: frame_length ", p.frame_length, " must be in [1, ", signal.size(1), "] for signal ",
              shape_str(signal.sizes()));
  EMBER_ENFORCE(!window.defined() || window.size(0) == p.frame_length, Status::ShapeMismatch, "STFT: window of ",
              window.defined() ? window.size(0) : 0, " values for frame_length ", p.frame_length);
  const Tensor w = window.defined() ? window.to(signal.dtype())
                                    : ones({p.frame_length}, TensorOptions(signal.dtype()).device(signal.device()));
  unwrap(check_same_device({signal, w}));
  const int64_t frames = (signal.size(1) - p.frame_length) / p.frame_step + 1;
  const int64_t bins = p.onesided ? p.frame_length / 2 + 1 : p.frame_length;
  Tensor y = empty({signal.size(0), frames, bins, 2}, TensorOptions(signal.dtype()).device(signal.device()));
  if (y.numel() > 0) unwrap(run_kernel(OpKind::STFT, {signal, w}, {y}, p));
  return y;
}

}  // namespace ember
