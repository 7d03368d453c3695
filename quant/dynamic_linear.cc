#include "quant/dynamic_linear.h"

#include <cstring>

#include "kernels/ref/qgemm.h"
#include "quant/qscheme.h"
#include "runtime/core/thread_pool.h"

namespace ember::quant {

PackedLinear pack_linear(const int8_t* q, int64_t out, int64_t in, const float* scales, bool per_channel,
                         const float* bias) {
  PackedLinear p;
  p.out_features = out;
  p.in_features = in;
  p.per_channel = per_channel;
  cpu::pack_int8_weights(q, out, in, in, &p.weight);
  p.scales.assign(scales, scales + (per_channel ? out : 1));
  if (bias) p.bias.assign(bias, bias + out);
  return p;
}

void dynamic_linear(const float* x, int64_t m, int64_t ldx, const PackedLinear& w, float* y, int64_t ldy,
                    const Activation& act, const DynamicQuantOptions& options, int threads) {
  if (m <= 0 || w.out_features <= 0) return;
  if (threads <= 0) threads = get_num_threads();
  const int64_t k4 = w.weight.k4;
  thread_local std::vector<uint8_t> qx;
  thread_local std::vector<float> a_scale;
  thread_local std::vector<int32_t> a_zp;
  const size_t rows = static_cast<size_t>(options.per_row ? m : 1);
  if (qx.size() < static_cast<size_t>(m * k4)) qx.resize(static_cast<size_t>(m * k4));
  if (a_scale.size() < rows) {
    a_scale.resize(rows);
    a_zp.resize(rows);
  }
  quantize_activations_u8(x, m, w.in_features, ldx, options.per_row, options.reduce_range, qx.data(), k4,
                          a_scale.data(), a_zp.data());
  cpu::QGemmEpilogue ep;
  ep.a_scale = a_scale.data();
  ep.a_zero_point = a_zp.data();
  ep.a_per_row = options.per_row;
  ep.w_scale = w.scales.data();
  ep.w_per_channel = w.per_channel;
  ep.bias = w.bias.empty() ? nullptr : w.bias.data();
  ep.activation = act;
  cpu::qgemm_u8s8(m, qx.data(), k4, w.weight, &ep, nullptr, y, ldy, threads);
}

void dynamic_linear_ref(const float* x, int64_t m, int64_t in, const int8_t* q, int64_t out,
                        const float* scales, bool per_channel, const float* bias, float* y,
                        const Activation& act, const DynamicQuantOptions& options) {
  const size_t rows = static_cast<size_t>(options.per_row ? m : 1);
  std::vector<uint8_t> qx(static_cast<size_t>(m * in));
  std::vector<float> as(rows);
  std::vector<int32_t> az(rows);
  quantize_activations_u8(x, m, in, in, options.per_row, options.reduce_range, qx.data(), in, as.data(),
                          az.data());
  std::vector<int32_t> acc(static_cast<size_t>(m * out));
  ref::qgemm_u8s8s32(m, out, in, qx.data(), in, q, in, acc.data(), out);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < out; ++j) {
      int32_t rowsum = 0;
      for (int64_t p = 0; p < in; ++p) rowsum += q[j * in + p];
      const size_t r = options.per_row ? static_cast<size_t>(i) : 0;
      const int32_t v = acc[static_cast<size_t>(i * out + j)] - az[r] * rowsum;
      float o = static_cast<float>(v) * (as[r] * scales[per_channel ? j : 0]);
      if (bias) o += bias[j];
      y[i * out + j] = activate(o, act);
    }
  }
}

}  // namespace ember::quant
