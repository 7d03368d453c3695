// Reference run-time ops (ops.def), the weight kept unpacked (ref::prepare_weight):
// - QLinear, QConv2d: x quantized by quant/qscheme.h's formulas, exact int32
//   sums (kernels/ref/qgemm.h) and the scalar epilogue. The CPU kernels
//   (kernels/cpu/qlinear.cc) match them bit for bit.
// - SparseLinear: the COO weight densified (int8: dequantized), sums in double.
#include <algorithm>
#include <memory>
#include <vector>

#include "kernels/ref/qgemm.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/qscheme.h"
#include "runtime/tensor/half.h"

namespace ember::ref {
namespace {

// Contiguous, or empty (any strides).
bool dense(const TensorView& v) { return v.numel() == 0 || v.is_contiguous(); }

struct RefQWeight final : PreparedWeight {
  std::vector<int8_t> q;  // [N, K] row-major (Conv2d: [C_out, C_in * kh * kw])
  std::vector<float> scales, bias;
  bool per_channel = false;
  Conv2dParams conv;
  size_t bytes() const override { return q.size() + (scales.size() + bias.size()) * sizeof(float); }
};

// y = act(float(acc - zp * rowsum) * (a_scale * w_scale) + bias), as the CPU epilogue.
float epilogue(int32_t acc, int32_t zp, int32_t rowsum, float a_scale, const RefQWeight& w, int64_t j,
               const Activation& act) {
  const int32_t v = acc - zp * rowsum;
  float o = static_cast<float>(v) * (a_scale * w.scales[static_cast<size_t>(w.per_channel ? j : 0)]);
  if (!w.bias.empty()) o += w.bias[static_cast<size_t>(j)];
  return activate(o, act);
}

// A sparse weight densified: W [rows, cols] in double.
struct RefSparseWeight final : PreparedWeight {
  std::vector<double> w;
  size_t bytes() const override { return w.size() * sizeof(double); }
};

int64_t coo_at(const TensorView& idx, int64_t pos) {
  switch (idx.dtype) {
    case DType::Int16: return static_cast<const int16_t*>(idx.data)[pos];
    case DType::Int32: return static_cast<const int32_t*>(idx.data)[pos];
    default: return static_cast<const int64_t*>(idx.data)[pos];
  }
}

Result<std::shared_ptr<const PreparedWeight>> prepare_sparse(const WeightDesc& d) {
  const TensorView& v = d.weight;
  const TensorView& idx = d.indices;
  if (idx.rank != 2 || idx.sizes[0] != 2 || v.rank != 1 || v.sizes[0] != idx.sizes[1] ||
      (v.sizes[0] > 0 && (!dense(idx) || !dense(v))) || (v.dtype == DType::Int8 && d.num_scales == 0))
    return Status::InvalidArgument;
  auto r = std::make_shared<RefSparseWeight>();
  r->w.assign(static_cast<size_t>(d.rows * d.cols), 0.0);
  const int64_t nnz = v.sizes[0];
  for (int64_t k = 0; k < nnz; ++k) {
    const int64_t row = coo_at(idx, k), col = coo_at(idx, nnz + k);
    if (row < 0 || row >= d.rows || col < 0 || col >= d.cols) return Status::OutOfRange;
    double value;
    if (v.dtype == DType::Float32) {
      value = v.ptr<const float>()[k];
    } else if (v.dtype == DType::Float16) {
      value = static_cast<float>(v.ptr<const Half>()[k]);
    } else if (v.dtype == DType::Int8) {
      const size_t ch = d.num_scales == 1 ? 0 : static_cast<size_t>(row);
      const int64_t z = d.num_zero_points > 0 ? d.zero_points[ch] : 0;
      value = static_cast<double>(d.scales[ch]) * static_cast<double>(v.ptr<const int8_t>()[k] - z);
    } else {
      return Status::DTypeMismatch;
    }
    r->w[static_cast<size_t>(row * d.cols + col)] += value;
  }
  r->shape = {d.rows, d.cols};
  return std::shared_ptr<const PreparedWeight>(std::move(r));
}

int64_t out_size(int64_t in, int64_t k, const Conv2dParams& c, int d) {
  const int64_t span = c.dilation[d] * (k - 1) + 1;
  const int64_t padded = in + 2 * c.padding[d];
  return padded < span ? 0 : (padded - span) / c.stride[d] + 1;
}

}  // namespace

Result<std::shared_ptr<const PreparedWeight>> prepare_weight(OpKind op, const WeightDesc& w) {
  if (op == OpKind::SparseLinear) return prepare_sparse(w);
  const bool conv = op == OpKind::QConv2d;
  if (op != OpKind::QLinear && !conv) return Status::NotSupported;
  if (w.weight.data == nullptr || w.weight.dtype != DType::Int8 || w.weight.rank != (conv ? 4 : 2) ||
      !dense(w.weight) || w.scales == nullptr)
    return Status::InvalidArgument;
  auto r = std::make_shared<RefQWeight>();
  const int64_t n = w.weight.sizes[0];
  r->q.assign(w.weight.ptr<const int8_t>(), w.weight.ptr<const int8_t>() + w.weight.numel());
  r->scales.assign(w.scales, w.scales + w.num_scales);
  if (w.bias.data != nullptr) r->bias.assign(w.bias.ptr<const float>(), w.bias.ptr<const float>() + n);
  r->per_channel = w.per_channel;
  r->conv = w.conv;
  r->shape.assign(w.weight.sizes, w.weight.sizes + w.weight.rank);
  return std::shared_ptr<const PreparedWeight>(std::move(r));
}

Status qlinear(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto& p = std::get<QLinearParams>(params);
  const auto* w = dynamic_cast<const RefQWeight*>(p.weight);
  if (w == nullptr || in.size() < 1 || out.size() != 1 || w->shape.size() != 2) return Status::InvalidArgument;
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  const int64_t n = w->shape[0], k = w->shape[1];
  if (x.rank < 1 || x.sizes[x.rank - 1] != k || !dense(x) || !dense(y)) return Status::InvalidArgument;
  const int64_t m = k > 0 ? x.numel() / k : 0;
  if (m <= 0 || n <= 0) return Status::Ok;
  const size_t rows = static_cast<size_t>(p.per_row_activations ? m : 1);
  std::vector<uint8_t> qx(static_cast<size_t>(m * k));
  std::vector<float> as(rows);
  std::vector<int32_t> az(rows);
  quant::quantize_activations_u8(x.ptr<const float>(), m, k, k, p.per_row_activations, false, qx.data(), k,
                                 as.data(), az.data());
  std::vector<int32_t> acc(static_cast<size_t>(m * n));
  qgemm_u8s8s32(m, n, k, qx.data(), k, w->q.data(), k, acc.data(), n);
  float* yp = y.ptr<float>();
  for (int64_t j = 0; j < n; ++j) {
    int32_t rowsum = 0;
    for (int64_t q = 0; q < k; ++q) rowsum += w->q[static_cast<size_t>(j * k + q)];
    for (int64_t i = 0; i < m; ++i) {
      const size_t r = p.per_row_activations ? static_cast<size_t>(i) : 0;
      yp[i * n + j] = epilogue(acc[static_cast<size_t>(i * n + j)], az[r], rowsum, as[r], *w, j, p.activation);
    }
  }
  return Status::Ok;
}

// Direct convolution over the quantized input: padding is the zero point (real 0).
Status qconv2d(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto& p = std::get<QConv2dParams>(params);
  const auto* w = dynamic_cast<const RefQWeight*>(p.weight);
  if (w == nullptr || in.size() < 1 || out.size() != 1 || w->shape.size() != 4) return Status::InvalidArgument;
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  const int64_t co = w->shape[0], ci = w->shape[1], kh = w->shape[2], kw = w->shape[3];
  if (x.rank != 4 || x.sizes[1] != ci || y.rank != 4) return Status::InvalidArgument;
  const int64_t nb = x.sizes[0], h = x.sizes[2], wd = x.sizes[3];
  const Conv2dParams& c = p.conv;
  const int64_t oh = out_size(h, kh, c, 0), ow = out_size(wd, kw, c, 1);
  if (y.sizes[0] != nb || y.sizes[1] != co || y.sizes[2] != oh || y.sizes[3] != ow) return Status::InvalidArgument;
  if (nb <= 0 || oh <= 0 || ow <= 0 || co <= 0) return Status::Ok;
  // x and y at any strides (NCHW, channels_last): x copied as NCHW first (the Copy kernel).
  const int64_t total = x.numel();
  std::vector<float> xs(static_cast<size_t>(total));
  TensorView xv = x;
  xv.data = xs.data();
  xv.strides[3] = 1;
  xv.strides[2] = wd;
  xv.strides[1] = h * wd;
  xv.strides[0] = ci * h * wd;
  EMBER_TRY(copy(ctx, Span<const TensorView>(in.data(), 1), Span<TensorView>(&xv, 1), NoParams{}));
  std::vector<uint8_t> qx(static_cast<size_t>(total));
  float scale;
  int32_t zp;
  quant::quantize_activations_u8(xs.data(), 1, total, total, false, false, qx.data(), total, &scale, &zp);
  const int64_t depth = ci * kh * kw;
  float* yp = y.ptr<float>();
  for (int64_t o = 0; o < co; ++o) {
    const int8_t* wo = w->q.data() + o * depth;
    int32_t rowsum = 0;
    for (int64_t q = 0; q < depth; ++q) rowsum += wo[q];
    for (int64_t b = 0; b < nb; ++b) {
      for (int64_t oy = 0; oy < oh; ++oy) {
        for (int64_t ox = 0; ox < ow; ++ox) {
          int32_t acc = 0;
          for (int64_t cc = 0; cc < ci; ++cc) {
            for (int64_t ky = 0; ky < kh; ++ky) {
              const int64_t iy = oy * c.stride[0] - c.padding[0] + ky * c.dilation[0];
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t ix = ox * c.stride[1] - c.padding[1] + kx * c.dilation[1];
                const int32_t v = (iy < 0 || iy >= h || ix < 0 || ix >= wd) ? zp : qx[static_cast<size_t>(((b * ci + cc) * h + iy) * wd + ix)];
                acc += v * wo[(cc * kh + ky) * kw + kx];
              }
            }
          }
          yp[b * y.strides[0] + o * y.strides[1] + oy * y.strides[2] + ox * y.strides[3]] =
              epilogue(acc, zp, rowsum, scale, *w, o, c.activation);
        }
      }
    }
  }
  return Status::Ok;
}

// x [*, K] contiguous, (weight), bias [N] or absent -> y [*, N] = act(x @ W^T + bias).
Status sparse_linear(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto& p = std::get<QLinearParams>(params);
  const auto* w = dynamic_cast<const RefSparseWeight*>(p.weight);
  if (w == nullptr || in.size() < 1 || out.size() != 1) return Status::InvalidArgument;
  const TensorView& x = in[0];
  const TensorView* b = in.size() > 2 && in[2].data != nullptr ? &in[2] : nullptr;
  const TensorView& y = out[0];
  const int64_t n = w->shape[0], k = w->shape[1];
  if (x.rank < 1 || x.sizes[x.rank - 1] != k || !dense(x) || !dense(y) ||
      (b != nullptr && (b->dtype != DType::Float32 || b->rank != 1 || b->sizes[0] != n)))
    return Status::InvalidArgument;
  const int64_t m = n > 0 ? y.numel() / n : 0;  // x's rows (also when K = 0)
  const float* xp = x.ptr<const float>();
  float* yp = y.ptr<float>();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = b != nullptr ? static_cast<double>(b->ptr<const float>()[j]) : 0.0;
      for (int64_t q = 0; q < k; ++q) acc += static_cast<double>(xp[i * k + q]) * w->w[static_cast<size_t>(j * k + q)];
      yp[i * n + j] = activate(static_cast<float>(acc), p.activation);
    }
  }
  return Status::Ok;
}

}  // namespace ember::ref
