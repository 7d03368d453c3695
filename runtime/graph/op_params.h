// Parameters of the ops in ops.def. Plain data: kernels read them, front-ends
// and (later) the model loader fill them.
#pragma once

#include <cmath>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <variant>

#include "runtime/core/host_device.h"
#include "runtime/tensor/scalar.h"
#include "runtime/tensor/tensor_view.h"

namespace ember {

// How params reach model files. The structs below up to UnaryParams have an
// attribute table each in runtime/model/ember.fbs (the first format version).
// A params struct added since needs none: it lists its fields, in the order
// they are stored (append only: a file from before a field was appended
// leaves it at its default), as member pointers in a static fields(), e.g.
//
//   struct DepthToSpaceParams {
//     int64_t blocksize = 1;
//     bool column_row_depth = false;
//     static constexpr auto fields() {
//       return std::make_tuple(&DepthToSpaceParams::blocksize, &DepthToSpaceParams::column_row_depth);
//     }
//   };
//
// and is stored as a FieldAttrs table (runtime/model/format_fields.h):
// integers, bools and enums, floating point, fixed-size arrays of them. A
// struct may add `bool valid() const` (an enum's range, say): the loader
// refuses a file whose values it rejects.
template <typename P, typename = void>
struct has_fields : std::false_type {};
template <typename P>
struct has_fields<P, std::void_t<decltype(P::fields())>> : std::true_type {};

struct NoParams {};

struct ScalarParams {
  Scalar value;
};

struct GeluParams {
  bool tanh_approximation = false;
};

struct ClampParams {
  bool has_min = false, has_max = false;
  Scalar min, max;
};

struct ReduceParams {
  uint32_t dims = 0;     // bit d set: dimension d is reduced
  int64_t correction = 1;  // var: divide by N - correction
  double p = 2.0;          // norm order (inf allowed)
  bool keepdim = true;     // graph ops: whether the output keeps the reduced dims
  bool noop_empty = false; // run-time axes input (ops.def) that is empty: reduce nothing (else every dim)
};

struct SoftmaxParams {
  int dim = -1;
};

struct NormParams {
  double eps = 1e-5;
  int normalized_rank = 1;  // layer_norm: how many trailing dims are normalized
};

// An activation fused into the op that produces a tensor (the converter fuses
// Relu, Clip and HardSwish into Conv and Gemm): applied to the op's output in
// place. Stored in model files: append only.
enum class ActivationKind : uint8_t { None, Relu, Clamp, HardSwish };

struct Activation {
  ActivationKind kind = ActivationKind::None;
  double min = -INFINITY, max = INFINITY;  // Clamp bounds (an infinite bound: none)
};

// x * clamp(x + 3, 0, 6) / 6, operation for operation as ops.def's Hardswish
// formula (so a fused HardSwish rounds as the op alone).
EMBER_HD inline float hardswish_value(float x) {
  const float t = x + 3.0f;
  return x * (t < 0.0f ? 0.0f : (t > 6.0f ? 6.0f : t)) / 6.0f;
}

// The activation of one value: the scalar form kernel epilogues apply.
EMBER_HD inline float activate(float v, const Activation& a) {
  switch (a.kind) {
    case ActivationKind::None:
      return v;
    case ActivationKind::Relu:
      return v < 0.0f ? 0.0f : v;
    case ActivationKind::Clamp: {
      const float lo = static_cast<float>(a.min), hi = static_cast<float>(a.max);
      return v < lo ? lo : (v > hi ? hi : v);
    }
    case ActivationKind::HardSwish:
      return hardswish_value(v);
  }
  return v;
}

class PreparedWeight;

struct Conv2dParams {
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  int64_t groups = 1;
  Activation activation;  // graph ops only; the float32 CPU kernel applies it (conv2d_activated), others ignore it
  // Graph ops only: the weight the CPU backend prepares at Executor::create
  // (prepare_weight; packed once, at its first use); the float32 CPU kernel reads it while it was
  // packed from the op's weight input, other kernels ignore it. Not stored in files.
  const PreparedWeight* weight = nullptr;
};

struct Pool2dParams {
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  bool ceil_mode = false;
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // 0: none
};

enum class PadMode : uint8_t { Constant, Reflect, Replicate, Circular };

struct PadParams {
  PadMode mode = PadMode::Constant;
  // before/after padding per dimension of the input, outermost first.
  int64_t before[kMaxRank] = {};
  int64_t after[kMaxRank] = {};
  double value = 0.0;
};

// A list of dims: a permutation or a set of axes (negative: from the end).
struct DimsParams {
  int64_t dims[kMaxRank] = {};
  int rank = 0;  // how many entries of dims are used
};

struct AxisParams {
  int64_t axis = 0;  // negative: from the end
};

struct LinearParams {
  Activation activation;
  // Graph ops only: the weight packed once at Executor::create (as
  // Conv2dParams::weight), read by the float32 CPU MatMul kernel through
  // linear_prepacked. Not stored in files.
  const PreparedWeight* weight = nullptr;
  // Kernel calls only (linear_prepacked): a contiguous float32 [N] bias the
  // float32 CPU MatMul kernel adds to its product before `activation`, both
  // as it stores C. Not stored in files; graph MatMuls leave it null.
  const float* bias = nullptr;
  // Kernel calls only (matmul_prepacked under Precision::BFloat16): the
  // float32 CPU MatMul kernel rounds both operands to bf16 as it packs them
  // and sums in float32 (gemm.h: GemmOperand::bf16). Not stored in files.
  bool bf16 = false;
};

// A weight a backend prepared (packed) once for a run-time op
// (runtime/backend/backend.h); the executor owns it, params point to it.

// QLinear and SparseLinear.
struct QLinearParams {
  Activation activation;
  bool per_row_activations = false;        // x quantized per row (else per tensor)
  const PreparedWeight* weight = nullptr;  // from the kernel's backend's prepare_weight
};

struct QConv2dParams {
  Conv2dParams conv;  // geometry (groups 1) and the fused activation, applied by the kernel
  const PreparedWeight* weight = nullptr;
};

// Conv2dPair (a run-time op): depthwise(pointwise(x)), each with its fused
// activation and its weight prepared for the CPU (Conv2dParams::weight).
struct Conv2dPairParams {
  Conv2dParams pointwise;  // 1x1, stride 1, no padding, groups 1
  Conv2dParams depthwise;  // groups = its channels
};

// The parameters of an RT_UNARY_P op of ops.def (alpha, beta / gamma...).
struct UnaryParams {
  double a = 0, b = 0;
};

// ScatterElements: how an update combines with the value it lands on.
enum class ScatterReduction : uint8_t { None, Add, Mul, Max, Min };

struct ScatterParams {
  int64_t axis = 0;  // negative: from the end
  ScatterReduction reduction = ScatterReduction::None;
  static constexpr auto fields() { return std::make_tuple(&ScatterParams::axis, &ScatterParams::reduction); }
  bool valid() const { return reduction <= ScatterReduction::Min; }
};

// CumSum, CumProd along axis; exclusive: the element itself is left out; reverse: from the end.
struct ScanParams {
  int64_t axis = 0;  // negative: from the end
  bool exclusive = false, reverse = false;
  static constexpr auto fields() {
    return std::make_tuple(&ScanParams::axis, &ScanParams::exclusive, &ScanParams::reverse);
  }
};

// TopK: the k largest (else smallest) along axis, sorted (ties: the lower index first).
struct TopKParams {
  int64_t axis = -1;  // negative: from the end
  bool largest = true, sorted = true;
  static constexpr auto fields() { return std::make_tuple(&TopKParams::axis, &TopKParams::largest, &TopKParams::sorted); }
};

// Unique: over the flattened input, or the slices along axis (has_axis);
// sorted ascending, else in the order of first occurrence.
struct UniqueParams {
  int64_t axis = 0;
  bool has_axis = false, sorted = true;
  static constexpr auto fields() {
    return std::make_tuple(&UniqueParams::axis, &UniqueParams::has_axis, &UniqueParams::sorted);
  }
};

// Resize (ONNX Resize / Upsample, torch.nn.functional.interpolate): each
// output element interpolates the input along every resized dim (separable
// taps: 1 nearest, 2 linear, 4 cubic, more with antialias when shrinking).
// Per dim d < rank: the output size is sizes[d] when bit d of `fixed` is set,
// else floor(input size * scales[d]); the scale the coordinates use is
// scales[d] when > 0, else output size / input size. A dim whose output size
// and scale leave it unchanged (and roi [0, 1]) is copied as it is. ONNX's
// roi, scales and sizes given at run time (the op's inputs 1 to 3) replace
// these for the dims `axes` (num_axes 0: every dim), sizes by keep_aspect.
enum class ResizeMode : uint8_t { Nearest, Linear, Cubic };
enum class ResizeCoord : uint8_t { HalfPixel, PytorchHalfPixel, AlignCorners, Asymmetric, TfCropAndResize, HalfPixelSymmetric };
enum class NearestMode : uint8_t { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };
enum class KeepAspect : uint8_t { Stretch, NotLarger, NotSmaller };

struct ResizeParams {
  ResizeMode mode = ResizeMode::Nearest;
  ResizeCoord coord = ResizeCoord::HalfPixel;
  NearestMode nearest = NearestMode::RoundPreferFloor;
  bool exclude_outside = false;  // taps outside the input get weight 0 (the rest renormalized)
  bool antialias = false;        // linear / cubic: the filter widened by 1 / scale when shrinking
  double cubic_coeff_a = -0.75;
  double extrapolation_value = 0.0;  // tf_crop_and_resize: outside the input
  int64_t rank = 0;                  // the input's rank
  uint32_t fixed = 0;                // bit d: sizes[d] is the output size
  int64_t sizes[kMaxRank] = {};
  double scales[kMaxRank] = {};
  double roi_start[kMaxRank] = {};  // tf_crop_and_resize: the region, relative to the input
  double roi_end[kMaxRank] = {};
  int64_t num_axes = 0;  // run-time inputs: the dims they describe, in order
  int64_t axes[kMaxRank] = {};
  KeepAspect keep_aspect = KeepAspect::Stretch;
  static constexpr auto fields() {
    return std::make_tuple(&ResizeParams::mode, &ResizeParams::coord, &ResizeParams::nearest,
                           &ResizeParams::exclude_outside, &ResizeParams::antialias, &ResizeParams::cubic_coeff_a,
                           &ResizeParams::extrapolation_value, &ResizeParams::rank, &ResizeParams::fixed,
                           &ResizeParams::sizes, &ResizeParams::scales, &ResizeParams::roi_start,
                           &ResizeParams::roi_end, &ResizeParams::num_axes, &ResizeParams::axes,
                           &ResizeParams::keep_aspect);
  }
  // The output size of dim d for an input of size `in` (negative: too large).
  int64_t output_size(int d, int64_t in) const {
    if (fixed & (1u << d)) return sizes[d];
    const double v = scales[d] * static_cast<double>(in);
    return v >= 0.0 && v < 9.2e18 ? static_cast<int64_t>(v) : -1;
  }
  // The scale the coordinates of dim d use.
  double coord_scale(int d, int64_t in, int64_t out) const {
    if (scales[d] > 0.0) return scales[d];
    return in > 0 ? static_cast<double>(out) / static_cast<double>(in) : 1.0;
  }
  bool valid() const {
    return mode <= ResizeMode::Cubic && coord <= ResizeCoord::HalfPixelSymmetric && nearest <= NearestMode::Ceil &&
           keep_aspect <= KeepAspect::NotSmaller && rank >= 0 && rank <= kMaxRank && num_axes >= 0 &&
           num_axes <= rank;
  }
};

// ConvTranspose (1-D to 3-D: x [N, C_in, *spatial], weight [C_in, C_out/groups,
// *kernel], bias [C_out]): per spatial dim i, input position p with kernel tap
// k lands at output p*stride - pad_begin + k*dilation; the output size is
// (in - 1)*stride + dilation*(kernel - 1) + 1 + output_padding - pad_begin - pad_end.
struct ConvTransposeParams {
  int64_t stride[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0};
  int64_t pad_end[3] = {0, 0, 0};
  int64_t output_padding[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
  int64_t groups = 1;
  static constexpr auto fields() {
    return std::make_tuple(&ConvTransposeParams::stride, &ConvTransposeParams::pad_begin,
                           &ConvTransposeParams::pad_end, &ConvTransposeParams::output_padding,
                           &ConvTransposeParams::dilation, &ConvTransposeParams::groups);
  }
  bool valid() const {
    for (int i = 0; i < 3; ++i) {
      if (stride[i] < 1 || dilation[i] < 1 || output_padding[i] < 0) return false;
    }
    return groups >= 1;
  }
};

// GridSample (ONNX GridSample, torch.nn.functional.grid_sample): x [N, C,
// *in] (2-D or 3-D) sampled at grid [N, *out, dims] (the last dim x, y[, z]:
// the innermost spatial dim first, normalized to [-1, 1]) -> [N, C, *out].
enum class GridPadding : uint8_t { Zeros, Border, Reflection };

struct GridSampleParams {
  ResizeMode mode = ResizeMode::Linear;  // nearest (round half to even), linear, cubic (a = -0.75)
  GridPadding padding = GridPadding::Zeros;
  bool align_corners = false;
  static constexpr auto fields() {
    return std::make_tuple(&GridSampleParams::mode, &GridSampleParams::padding, &GridSampleParams::align_corners);
  }
  bool valid() const { return mode <= ResizeMode::Cubic && padding <= GridPadding::Reflection; }
};

// NonMaxSuppression (ONNX): boxes [B, N, 4] as [y1, x1, y2, x2] (any corner
// order) or, with center_point_box, [x_center, y_center, width, height].
struct NmsParams {
  bool center_point_box = false;
  static constexpr auto fields() { return std::make_tuple(&NmsParams::center_point_box); }
};

// RoiAlign (ONNX, torchvision's roi_align): x [N, C, H, W], rois [R, 4] as
// [x1, y1, x2, y2] in input coordinates times spatial_scale, int64
// batch_indices [R] -> [R, C, output_height, output_width]. half_pixel:
// coordinate_transformation_mode half_pixel (the rois shifted by -0.5: torch's
// aligned=True; opset 16's default), else output_half_pixel (opset 10; the
// roi size at least 1). sampling_ratio 0: ceil(roi size / output size) points
// per bin and dim.
enum class RoiAlignMode : uint8_t { Avg, Max };

struct RoiAlignParams {
  RoiAlignMode mode = RoiAlignMode::Avg;
  int64_t output_height = 1;
  int64_t output_width = 1;
  int64_t sampling_ratio = 0;
  double spatial_scale = 1.0;
  bool half_pixel = true;
  static constexpr auto fields() {
    return std::make_tuple(&RoiAlignParams::mode, &RoiAlignParams::output_height, &RoiAlignParams::output_width,
                           &RoiAlignParams::sampling_ratio, &RoiAlignParams::spatial_scale,
                           &RoiAlignParams::half_pixel);
  }
  bool valid() const {
    return mode <= RoiAlignMode::Max && output_height >= 1 && output_width >= 1 && sampling_ratio >= 0;
  }
};

// DFT (ONNX): x [..., 1 | 2] (real, or complex as [re, im]) transformed along
// `axis` (negative: from the end, the last dim counted; the op's run-time
// axis input, opset 20, replaces it) with `length` points (0: the input's
// size along axis, or 2 (n - 1) for an inverse one-sided transform; the op's
// dft_length input replaces it); the input is cut or zero-padded to `length`.
// Forward: [..., 2], one-sided keeps length / 2 + 1 bins. Inverse: divided by
// length; one-sided (irfft) reads a half spectrum and writes [..., length, 1].
struct DftParams {
  int64_t axis = 1;
  bool inverse = false;
  bool onesided = false;
  int64_t length = 0;
  static constexpr auto fields() {
    return std::make_tuple(&DftParams::axis, &DftParams::inverse, &DftParams::onesided, &DftParams::length);
  }
};

// STFT (ONNX): signal [B, L, 1 | 2] cut into frames of frame_length samples
// every frame_step, each multiplied by the window and transformed: [B,
// frames, bins, 2] (frames = (L - frame_length) / frame_step + 1; bins
// frame_length / 2 + 1 when onesided). frame_step and frame_length come from
// the op's run-time inputs; here they are what the front-end hands its kernel.
struct StftParams {
  bool onesided = true;
  int64_t frame_step = 0;
  int64_t frame_length = 0;
  static constexpr auto fields() {
    return std::make_tuple(&StftParams::onesided, &StftParams::frame_step, &StftParams::frame_length);
  }
};

// AffineGrid (ONNX, torch's affine_grid): theta [N, 2, 3] (2-D) or [N, 3, 4]
// (3-D) applied to the normalized coordinates (x, y[, z], 1) of every output
// position of size [N, C, (D,) H, W] (the op's run-time size input) -> [N,
// (D,) H, W, 2 | 3]; align_corners: -1 and 1 are the corner pixels' centers.
struct AffineGridParams {
  bool align_corners = false;
  static constexpr auto fields() { return std::make_tuple(&AffineGridParams::align_corners); }
};

// Col2Im (ONNX): x [N, C * prod(block), L] summed into [N, C, *image]; per
// spatial dim d (dims of them), block position l_d and block offset k_d land
// at l_d * strides[d] - pads_begin[d] + k_d * dilations[d]. image and block
// come from the op's run-time inputs; here they are what the front-end hands
// its kernel.
struct Col2ImParams {
  int64_t dims = 0;
  int64_t dilations[kMaxRank] = {1, 1, 1, 1, 1, 1, 1, 1};
  int64_t pads_begin[kMaxRank] = {};
  int64_t pads_end[kMaxRank] = {};
  int64_t strides[kMaxRank] = {1, 1, 1, 1, 1, 1, 1, 1};
  int64_t image[kMaxRank] = {};
  int64_t block[kMaxRank] = {};
  static constexpr auto fields() {
    return std::make_tuple(&Col2ImParams::dims, &Col2ImParams::dilations, &Col2ImParams::pads_begin,
                           &Col2ImParams::pads_end, &Col2ImParams::strides, &Col2ImParams::image,
                           &Col2ImParams::block);
  }
  bool valid() const {
    if (dims < 0 || dims > kMaxRank - 2) return false;
    for (int64_t d = 0; d < dims; ++d) {
      if (dilations[d] < 1 || strides[d] < 1 || pads_begin[d] < 0 || pads_end[d] < 0) return false;
    }
    return true;
  }
};

// DeformConv (ONNX, torchvision's deform_conv2d), 2-D: x [N, C, H, W],
// weight [OC, C / groups, kh, kw], offset [N, offset_groups * kh * kw * 2, oh,
// ow] (dy, dx per tap), bias [OC] or none, mask [N, offset_groups * kh * kw,
// oh, ow] or none. Tap (i, j) of output (y, x) reads input channel c at
// (y * stride_h - pad_top + i * dilation_h + dy, x * stride_w - pad_left +
// j * dilation_w + dx), bilinearly, zero outside, times its mask; c's offset
// group is c / (C / offset_groups).
struct DeformConvParams {
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1, offset_groups = 1;
  static constexpr auto fields() {
    return std::make_tuple(&DeformConvParams::stride_h, &DeformConvParams::stride_w, &DeformConvParams::pad_top,
                           &DeformConvParams::pad_left, &DeformConvParams::pad_bottom, &DeformConvParams::pad_right,
                           &DeformConvParams::dilation_h, &DeformConvParams::dilation_w, &DeformConvParams::groups,
                           &DeformConvParams::offset_groups);
  }
  bool valid() const {
    return stride_h >= 1 && stride_w >= 1 && pad_top >= 0 && pad_left >= 0 && pad_bottom >= 0 && pad_right >= 0 &&
           dilation_h >= 1 && dilation_w >= 1 && groups >= 1 && offset_groups >= 1;
  }
  // The output height / width of input size `in` and kernel size `k` (-1: the
  // kernel does not fit).
  int64_t out_h(int64_t in, int64_t k) const { return out_size(in + pad_top + pad_bottom, k, dilation_h, stride_h); }
  int64_t out_w(int64_t in, int64_t k) const { return out_size(in + pad_left + pad_right, k, dilation_w, stride_w); }
  static int64_t out_size(int64_t padded, int64_t k, int64_t dilation, int64_t stride) {
    const int64_t span = padded - dilation * (k - 1) - 1;
    return span < 0 ? -1 : span / stride + 1;
  }
};

// MaxUnpool (ONNX): x [N, C, *in] written at its flat indices (MaxPool's:
// over the whole [N, C, *unpooled] tensor) into zeros of the unpooled shape,
// unpooled = (in - 1) * stride - pad_begin - pad_end + kernel per spatial dim;
// that block is placed at the start of a larger output_shape (the op's
// run-time input), as onnx.reference does.
struct MaxUnpoolParams {
  int64_t dims = 0;
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0};
  int64_t pad_end[3] = {0, 0, 0};
  static constexpr auto fields() {
    return std::make_tuple(&MaxUnpoolParams::dims, &MaxUnpoolParams::kernel, &MaxUnpoolParams::stride,
                           &MaxUnpoolParams::pad_begin, &MaxUnpoolParams::pad_end);
  }
  bool valid() const {
    if (dims < 1 || dims > 3) return false;
    for (int64_t d = 0; d < dims; ++d) {
      if (kernel[d] < 1 || stride[d] < 1 || pad_begin[d] < 0 || pad_end[d] < 0) return false;
    }
    return true;
  }
  // The unpooled size of spatial dim d for an input of size `in`.
  int64_t unpooled(int64_t d, int64_t in) const { return (in - 1) * stride[d] - pad_begin[d] - pad_end[d] + kernel[d]; }
};

// Control flow (ONNX If, Loop, Scan): the subgraphs they run are the model's
// `subgraphs` (ember.fbs), by index; a subgraph reads only its own inputs
// (what ONNX lets it capture from outer scopes is passed as the op's last
// inputs, in the same order as the subgraph's last inputs).
// If: input 0 the condition (one element), then the captured values; the
// branches have those captured inputs and the op's outputs.
struct IfParams {
  int32_t then_graph = -1, else_graph = -1;
  static constexpr auto fields() { return std::make_tuple(&IfParams::then_graph, &IfParams::else_graph); }
  bool valid() const { return then_graph >= 0 && else_graph >= 0; }
};

// Loop: inputs max trip count (int64, optional), condition (bool, optional),
// `carried` initial values, captured values; outputs the final carried values
// then the scan outputs (each iteration's, stacked along a new axis 0). The
// body reads (iteration, condition, carried..., captured...) and returns
// (condition, carried..., scan outputs...).
struct LoopParams {
  int32_t body = -1;
  int32_t carried = 0;
  static constexpr auto fields() { return std::make_tuple(&LoopParams::body, &LoopParams::carried); }
  bool valid() const { return body >= 0 && carried >= 0; }
};

// Scan (ONNX 9+): inputs `state` initial states, `scan_inputs` sequences,
// captured values; outputs the final states then the scan outputs. Axes may be
// negative (from the end); reverse: the sequence is read (written) from its end.
constexpr int kMaxScanValues = 16;  // scan inputs and scan outputs per Scan
struct ScanLoopParams {
  int32_t body = -1;
  int32_t state = 0, scan_inputs = 0;
  int32_t input_axes[kMaxScanValues] = {};
  bool input_reverse[kMaxScanValues] = {};
  int32_t output_axes[kMaxScanValues] = {};
  bool output_reverse[kMaxScanValues] = {};
  static constexpr auto fields() {
    return std::make_tuple(&ScanLoopParams::body, &ScanLoopParams::state, &ScanLoopParams::scan_inputs,
                           &ScanLoopParams::input_axes, &ScanLoopParams::input_reverse, &ScanLoopParams::output_axes,
                           &ScanLoopParams::output_reverse);
  }
  bool valid() const { return body >= 0 && state >= 0 && scan_inputs >= 1 && scan_inputs <= kMaxScanValues; }
};

// ONNX's LSTM, GRU and RNN over a whole sequence, fused (the Recurrence op):
// x [T, B, I] (ONNX's layout 0), W [D, G*H, I], R [D, G*H, H], B [D, 2*G*H],
// sequence_lens [B], initial_h / initial_c [D, B, H], P [D, 3*H] (LSTM
// peepholes i, o, f), as ONNX names them; G = 4 (LSTM: gates i, o, f, c), 3
// (GRU: z, r, h) or 1 (RNN). Outputs Y [T, D, B, H], Y_h and Y_c [D, B, H].
// The activations are ONNX's defaults (sigmoid, tanh; RNN: tanh, or relu);
// other activation functions are unrolled by the converter. A step t at or
// past an entry's sequence length outputs zeros and keeps the state.
struct RecurrenceParams {
  int64_t cell = 0;                 // 0 LSTM, 1 GRU, 2 RNN
  int64_t directions = 1;           // 1 or 2 (bidirectional: the second runs backward)
  bool reverse = false;             // one direction, run backward
  int64_t hidden = 0;               // H
  double clip = 0.0;                // > 0: gate inputs clipped to [-clip, clip]
  bool linear_before_reset = false; // GRU
  bool input_forget = false;        // LSTM: f = 1 - i
  bool relu = false;                // RNN: relu instead of tanh
  static constexpr auto fields() {
    return std::make_tuple(&RecurrenceParams::cell, &RecurrenceParams::directions, &RecurrenceParams::reverse,
                           &RecurrenceParams::hidden, &RecurrenceParams::clip,
                           &RecurrenceParams::linear_before_reset, &RecurrenceParams::input_forget,
                           &RecurrenceParams::relu);
  }
  int64_t gates() const { return cell == 0 ? 4 : cell == 1 ? 3 : 1; }
  bool valid() const {
    return cell >= 0 && cell <= 2 && (directions == 1 || directions == 2) && hidden >= 1 && clip >= 0 &&
           !(directions == 2 && reverse);
  }
};

// ScaledDotProductAttention: out = softmax(q @ k^T * scale + mask) @ v, the
// softmax over the last dim (a row whose scores are all -inf is NaN, as
// torch's). The eager front-end's default scale is 1 / sqrt(E), as torch's.
struct AttentionParams {
  double scale = 1.0;
  // The output with dims -3 and -2 swapped, [*, L, H, Ev] for [*, H, L, Ev]:
  // the Transpose a multi-head attention applies before it merges its heads
  // (ember convert fuses it; the merging Reshape is then a view). Rank >= 3.
  bool transpose_output = false;
  // Kernel calls only (Precision::BFloat16, set at Executor::create): the
  // float32 CPU kernel runs both products on bf16-rounded operands, as
  // LinearParams::bf16. Not stored in files.
  bool bf16 = false;
  static constexpr auto fields() {
    return std::make_tuple(&AttentionParams::scale, &AttentionParams::transpose_output);
  }
};

using OpParams = std::variant<NoParams, ScalarParams, GeluParams, ClampParams, ReduceParams,
                              SoftmaxParams, NormParams, Conv2dParams, Pool2dParams, PadParams,
                              DimsParams, AxisParams, LinearParams, QLinearParams, QConv2dParams,
                              UnaryParams, ScatterParams, ScanParams, TopKParams, UniqueParams,
                              ResizeParams, ConvTransposeParams, GridSampleParams, NmsParams,
                              RoiAlignParams, DftParams, StftParams, AffineGridParams, Col2ImParams,
                              MaxUnpoolParams, IfParams, LoopParams, ScanLoopParams, DeformConvParams,
                              RecurrenceParams, AttentionParams, Conv2dPairParams>;

}  // namespace ember
