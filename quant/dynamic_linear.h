// Dynamic int8 Linear: y = act(x @ W^T + b) with W stored as symmetric int8
// (per tensor or per output channel) and x quantized at run time to uint8
// (per tensor, as torch.ao's quantize_dynamic, or per row). The weights are
// packed once (PackedLinear is immutable: share it between threads); the GEMM
// runs on the best int8 kernel of the CPU (kernels/cpu/qgemm.h) with the
// dequantization, bias and activation fused in its epilogue.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/qgemm.h"
#include "runtime/graph/op_params.h"

namespace ember::quant {

struct DynamicQuantOptions {
  bool per_row = false;       // one activation (scale, zero point) per row instead of per tensor
  bool reduce_range = false;  // 7-bit activations, as torch's fbgemm / onednn engines
};

struct PackedLinear {
  int64_t out_features = 0, in_features = 0;
  cpu::PackedInt8Weights weight;
  std::vector<float> scales;  // 1 (per tensor) or out_features (per channel)
  std::vector<float> bias;    // empty or out_features
  bool per_channel = false;
  // How the runtime (runtime/model/executor.cc) quantizes this layer's input:
  // the file's ActivationQuant (per row when true). dynamic_linear() itself
  // takes its DynamicQuantOptions from its caller.
  bool per_row_activations = false;
};

// Packs int8 weights q (out x in, row-major) with their scales (1, or `out`
// when per_channel) and an optional bias (out floats).
PackedLinear pack_linear(const int8_t* q, int64_t out, int64_t in, const float* scales, bool per_channel,
                         const float* bias);

// y (m x out, row stride ldy) = act(dynamic_int8(x (m x in, row stride ldx)) @ W^T + b).
// threads: 0 = get_num_threads(), a cap: products too small to repay waking a
// pool worker (M = 1 at BERT sizes) run on the calling thread alone (see
// cpu::qgemm_set_min_macs_per_thread). Scratch: a per-thread buffer reused across calls.
void dynamic_linear(const float* x, int64_t m, int64_t ldx, const PackedLinear& w, float* y, int64_t ldy,
                    const Activation& act, const DynamicQuantOptions& options = {}, int threads = 0);

// The reference formulas, for tests: the same quantization, then
// kernels/ref/qgemm.h's int32 sums and the scalar epilogue on unpacked weights.
void dynamic_linear_ref(const float* x, int64_t m, int64_t in, const int8_t* q, int64_t out,
                        const float* scales, bool per_channel, const float* bias, float* y,
                        const Activation& act, const DynamicQuantOptions& options = {});

}  // namespace ember::quant
