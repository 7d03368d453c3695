// The CPU's run-time ops (ops.def): Backend::prepare_weight packs the weight
// once, the kernels run it.
// - QLinear, QConv2d: the blocked int8 panels of kernels/cpu/qgemm.h
//   (quant/dynamic_linear.h, quant/dynamic_conv.h); the kernels quantize x at
//   run time and run the int8 GEMM with the dequantization, bias and
//   activation fused.
// - Conv2d, Linear (float32): the GEMM's A / B panels of the weight (gemm.h
//   sgemm_pack_a / sgemm_pack_b), read by the float32 Conv2d kernel; or, for
//   a 3x3 stride-1 Conv2d of a known output size where Winograd pays, its
//   transformed weight (winograd.h).
// - SparseLinear: CSR by output row (+ the blocked AVX-512 layout), quant/csr.h's SpMM.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/winograd.h"
#include "quant/dynamic_conv.h"
#include "quant/csr.h"
#include "quant/dynamic_linear.h"
#include "runtime/core/error.h"
#include "runtime/core/thread_pool.h"

namespace ember::cpu {
namespace {

// Contiguous, or empty (any strides).
bool dense(const TensorView& v) { return v.numel() == 0 || v.is_contiguous(); }

size_t packed_bytes(const quant::PackedLinear& p) {
  return p.weight.data.bytes() + p.weight.row_sums.size() * sizeof(int32_t) +
         (p.scales.size() + p.bias.size()) * sizeof(float);
}

struct CpuQLinear final : PreparedWeight {
  quant::PackedLinear packed;
  size_t bytes() const override { return packed_bytes(packed); }
};

struct CpuQConv2d final : PreparedWeight {
  quant::PackedConv2d packed;
  size_t bytes() const override { return packed_bytes(packed.gemm); }
};

struct CpuSparseLinear final : PreparedWeight {
  sparse::CsrMatrix csr;
  size_t bytes() const override { return csr.bytes(); }
};

thread_local std::string t_last_error;

Result<std::shared_ptr<const PreparedWeight>> prepare_sparse(const WeightDesc& w) {
  auto s = std::make_shared<CpuSparseLinear>();
  const std::vector<float> scales(w.scales, w.scales + (w.scales != nullptr ? w.num_scales : 0));
  const std::vector<int64_t> zero_points(w.zero_points,
                                         w.zero_points + (w.zero_points != nullptr ? w.num_zero_points : 0));
  const Status st = sparse::pack_csr(w.indices, w.weight, w.rows, w.cols, scales, zero_points, &s->csr, &t_last_error);
  if (st != Status::Ok) return st;
  s->shape = {w.rows, w.cols};
  return std::shared_ptr<const PreparedWeight>(std::move(s));
}

// Conv2d: A = weight [C_out, C_in*kh*kw]; Linear: B = weight^T (weight [N, K]);
// MatMul: B = weight [K, N]. Float32, contiguous.
Result<std::shared_ptr<const PreparedWeight>> prepare_gemm(OpKind op, const WeightDesc& w) {
  const bool conv = op == OpKind::Conv2d;
  if (w.weight.data == nullptr || w.weight.dtype != DType::Float32 || w.weight.rank != (conv ? 4 : 2) ||
      !dense(w.weight)) {
    t_last_error = str_cat("a packed ", op_name(op), " weight must be a contiguous float32 ",
                           conv ? 4 : 2, "-D tensor");
    return Status::InvalidArgument;
  }
  const int64_t rows = w.weight.sizes[0], depth = w.weight.numel() / std::max<int64_t>(rows, 1);
  auto p = std::make_shared<CpuPackedWeight>();
  const Conv2dParams& c = w.conv;
  using Layout = CpuPackedWeight::Layout;
  // Grouped: depthwise, channels_last only (runtime/model/weights.cc picks them); depth: the taps.
  const bool depthwise = conv && c.groups > 1;
  if (depthwise && (c.groups != rows || w.weight.sizes[1] != 1 || !w.channels_last)) {
    t_last_error = "a packed grouped Conv2d weight must be a depthwise [C, 1, KH, KW] one for channels_last";
    return Status::InvalidArgument;
  }
  const bool winograd = conv && w.weight.sizes[2] == 3 && w.weight.sizes[3] == 3 && c.groups == 1 &&
                        c.stride[0] == 1 && c.stride[1] == 1 && c.dilation[0] == 1 && c.dilation[1] == 1 &&
                        w.out_h > 0 && w.out_w > 0 &&
                        winograd_profitable(w.weight.sizes[1], rows, 1, w.out_h, w.out_w, /*pretransformed=*/true);
  // bf16 where the GEMM runs it: a Winograd weight stays float32 (measured faster than im2col in bf16),
  // and so does a depthwise one (its kernel is float32).
  const bool bf16 = w.bf16 && sgemm_bf16_supported() && (!winograd || w.channels_last) && !depthwise;
  p->layout = depthwise                ? Layout::DepthwiseCl
              : conv && w.channels_last ? Layout::ConvB
              : winograd                ? Layout::Winograd
              : conv                    ? Layout::ConvA
              : op == OpKind::Linear    ? Layout::LinearB
                                        : Layout::MatMulB;
  p->rows = rows;
  p->depth = winograd && !w.channels_last ? w.weight.sizes[1] : depth;
  p->rs = p->layout == Layout::LinearB ? 1 : depth;  // B = weight^T [K, N] (else weight [K, N])
  p->cs = p->layout == Layout::LinearB ? depth : 1;
  p->bf16 = bf16;
  p->release_source = w.release_source;
  p->source = w.weight.data;
  p->shape.assign(w.weight.sizes, w.weight.sizes + w.weight.rank);
  return std::shared_ptr<const PreparedWeight>(std::move(p));
}

}  // namespace

std::string last_prepare_error() { return t_last_error; }

void CpuPackedWeight::pack() const {
  const auto* data = static_cast<const float*>(source);
  switch (layout) {
    case Layout::Winograd: winograd_u_ = winograd_pack_weight(data, rows, depth, get_num_threads()); break;
    case Layout::ConvA: packed_ = sgemm_pack_a(rows, depth, MatrixRef<const float>{data, depth, 1}, bf16); break;
    case Layout::LinearB: packed_ = sgemm_pack_b(depth, rows, MatrixRef<const float>{data, rs, cs}, bf16); break;
    case Layout::MatMulB: packed_ = sgemm_pack_b(rows, depth, MatrixRef<const float>{data, rs, cs}, bf16); break;
    case Layout::ConvB: packed_ = conv_b_weight(data, rows, shape[1], shape[2] * shape[3], bf16); break;
    case Layout::DepthwiseCl: depthwise_ = depthwise_cl_weight(data, rows, depth); break;
  }
  if (release_source) release_source();
}

const PackedOperand* CpuPackedWeight::gemm_operand() const {
  if (layout == Layout::Winograd || layout == Layout::DepthwiseCl) return nullptr;
  std::call_once(once_, [this] { pack(); });
  return &packed_;
}

const PackedOperand* CpuPackedWeight::winograd() const {
  if (layout != Layout::Winograd) return nullptr;
  std::call_once(once_, [this] { pack(); });
  return winograd_u_.data();
}

const DepthwiseClWeight* CpuPackedWeight::depthwise_cl() const {
  if (layout != Layout::DepthwiseCl) return nullptr;
  std::call_once(once_, [this] { pack(); });
  return &depthwise_;
}

size_t CpuPackedWeight::bytes() const {
  switch (layout) {
    case Layout::DepthwiseCl: return depthwise_cl_weight_bytes(rows, depth);
    case Layout::Winograd: return static_cast<size_t>(kWinogradFreqs) * sgemm_packed_bytes(true, rows, depth);
    case Layout::ConvA: return sgemm_packed_bytes(true, rows, depth, bf16);
    case Layout::LinearB: return sgemm_packed_bytes(false, rows, depth, bf16);
    case Layout::MatMulB: return sgemm_packed_bytes(false, depth, rows, bf16);
    case Layout::ConvB: return sgemm_packed_bytes(false, rows, depth, bf16);
  }
  return 0;
}

Result<std::shared_ptr<const PreparedWeight>> prepare_weight(OpKind op, const WeightDesc& w) {
  t_last_error.clear();
  if (op == OpKind::SparseLinear) return prepare_sparse(w);
  if (op == OpKind::Conv2d || op == OpKind::Linear || op == OpKind::MatMul) return prepare_gemm(op, w);
  const bool conv = op == OpKind::QConv2d;
  if (op != OpKind::QLinear && !conv) return Status::NotSupported;
  if (w.weight.data == nullptr || w.weight.dtype != DType::Int8 || w.weight.rank != (conv ? 4 : 2) ||
      !dense(w.weight) || w.scales == nullptr)
    return Status::InvalidArgument;
  const int64_t n = w.weight.sizes[0];
  if (w.num_scales != static_cast<size_t>(w.per_channel ? n : 1)) return Status::InvalidArgument;
  const float* bias = w.bias.data != nullptr ? w.bias.ptr<const float>() : nullptr;
  if (bias != nullptr && (w.bias.dtype != DType::Float32 || w.bias.rank != 1 || w.bias.sizes[0] != n))
    return Status::InvalidArgument;
  const auto* q = w.weight.ptr<const int8_t>();
  std::shared_ptr<PreparedWeight> out;
  if (conv) {
    auto c = std::make_shared<CpuQConv2d>();
    c->packed = quant::pack_conv2d(q, n, w.weight.sizes[1], w.weight.sizes[2], w.weight.sizes[3], w.scales,
                                   w.per_channel, bias, w.conv);
    out = std::move(c);
  } else {
    auto l = std::make_shared<CpuQLinear>();
    l->packed = quant::pack_linear(q, n, w.weight.sizes[1], w.scales, w.per_channel, bias);
    l->packed.per_row_activations = w.per_row_activations;
    out = std::move(l);
  }
  out->shape.assign(w.weight.sizes, w.weight.sizes + w.weight.rank);
  return std::shared_ptr<const PreparedWeight>(std::move(out));
}

// in: x float32 [*, K] contiguous (weight and bias: in the prepared weight); out: [*, N].
Status qlinear_f32(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto& p = std::get<QLinearParams>(params);
  const auto* w = dynamic_cast<const CpuQLinear*>(p.weight);
  if (w == nullptr || in.size() < 1 || out.size() != 1) return Status::InvalidArgument;
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  const quant::PackedLinear& pw = w->packed;
  if (x.rank < 1 || x.sizes[x.rank - 1] != pw.in_features || !dense(x) || !dense(y) ||
      y.dtype != DType::Float32 || y.numel() != (pw.in_features > 0 ? x.numel() / pw.in_features : 0) * pw.out_features)
    return Status::InvalidArgument;
  const int64_t m = pw.in_features > 0 ? x.numel() / pw.in_features : 0;
  quant::DynamicQuantOptions options;
  options.per_row = p.per_row_activations;
  quant::dynamic_linear(x.ptr<const float>(), m, pw.in_features, pw, y.ptr<float>(), pw.out_features, p.activation,
                        options);
  return Status::Ok;
}

// in: x float32 [N, C_in, H, W]; out: [N, C_out, OH, OW]; each contiguous or
// dense channels_last.
Status qconv2d_f32(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto& p = std::get<QConv2dParams>(params);
  const auto* w = dynamic_cast<const CpuQConv2d*>(p.weight);
  if (w == nullptr || in.size() < 1 || out.size() != 1) return Status::InvalidArgument;
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  const quant::PackedConv2d& c = w->packed;
  if (x.rank != 4 || x.sizes[1] != c.c_in || y.rank != 4 || y.dtype != DType::Float32 || y.sizes[0] != x.sizes[0] ||
      y.sizes[1] != c.c_out || y.sizes[2] != quant::conv_out_size(c, 0, x.sizes[2]) ||
      y.sizes[3] != quant::conv_out_size(c, 1, x.sizes[3]))
    return Status::InvalidArgument;
  const bool x_cl = !dense(x), y_cl = !dense(y);
  if ((x_cl && !dense_channels_last(x)) || (y_cl && !dense_channels_last(y))) return Status::InvalidArgument;
  quant::dynamic_conv2d(x.ptr<const float>(), x.sizes[0], x.sizes[2], x.sizes[3], c, y.ptr<float>(),
                        p.conv.activation, {}, 0, x_cl, y_cl);
  return Status::Ok;
}

// in: x float32 [*, K] contiguous, (weight), bias float32 [N] contiguous or
// absent; out: [*, N] = act(x @ W^T + bias).
Status sparse_linear_f32(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                         const OpParams& params) {
  const auto& p = std::get<QLinearParams>(params);
  const auto* w = dynamic_cast<const CpuSparseLinear*>(p.weight);
  if (w == nullptr || in.size() < 1 || out.size() != 1) return Status::InvalidArgument;
  const sparse::CsrMatrix& csr = w->csr;
  const TensorView& x = in[0];
  const TensorView* b = in.size() > 2 && in[2].data != nullptr ? &in[2] : nullptr;
  const TensorView& y = out[0];
  if (x.rank < 1 || x.sizes[x.rank - 1] != csr.cols || !dense(x) || !dense(y) ||
      y.dtype != DType::Float32 || (b != nullptr && (b->dtype != DType::Float32 || !dense(*b))))
    return Status::InvalidArgument;
  const int64_t m = x.numel() / std::max<int64_t>(csr.cols, 1);
  float* yp = y.ptr<float>();
  const float* bias = b != nullptr ? b->ptr<const float>() : nullptr;
  if (csr.cols == 0) {  // no terms: the bias (or zeros) in every row of y
    for (int64_t e = 0; e < y.numel(); ++e) yp[e] = bias != nullptr ? bias[e % csr.rows] : 0.0f;
  } else {
    sparse::spmm_linear(csr, x.numel() > 0 ? x.ptr<const float>() : nullptr, m, csr.cols, bias,
                        y.numel() > 0 ? yp : nullptr);
  }
  if (p.activation.kind != ActivationKind::None) {
    for (int64_t e = 0; e < y.numel(); ++e) yp[e] = activate(yp[e], p.activation);
  }
  return Status::Ok;
}

}  // namespace ember::cpu
