// int8 GEMM for dynamic quantization: uint8 activations (m x k) times int8
// weights (n x k, one row per output channel) accumulated in int32, with a
// fused epilogue that dequantizes (activation scale x weight scale, minus the
// activation zero point times the weight row sums), adds the bias and applies
// the fused Activation.
//
// Weights are packed once (pack_int8_weights) into panels of 16 output
// channels, for the micro-kernel family selected when they are packed (the
// product then runs that family). K is padded to a multiple of 4 and N to a
// multiple of 16 with zero weights. Inside a panel, depth runs
//  * in groups of 4 int8 (VNNI, NEON, portable): for group g and column c the 4
//    bytes W[c][4g .. 4g+3] (the vpdpbusd layout);
//  * in pairs (AVX2): for pair g and column c the two int8 W[c][2g],
//    W[c][2g+1] (widened to int16 in the kernel: the vpmaddwd layout), unless every
//    weight lies within [-64, 64] (ONNX Runtime's reduce_range, ember convert
//    --reduce-range): then groups of 4 int8, which AVX2 runs with vpmaddubsw
//    (exact there: 2 x 255 x 64 < 2^15; it saturates on full-range weights).
//
// Micro-kernels, chosen at run time: AVX512-VNNI (vpdpbusd, up to 6 rows x 64
// columns), AVX2 (vpmaddwd on weight pairs widened to int16 in the kernel and
// the activations widened to int16 once per product, 6 rows x 16 columns;
// exact: no saturating vpmaddubsw), NEON on aarch64 (widening multiply-accumulate), and a portable
// one. All of them produce the same int32 sums as kernels/ref/qgemm.h, bit for
// bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/core/weight_memory.h"
#include "runtime/graph/op_params.h"

namespace ember::cpu {

enum class QGemmIsa { Auto, Portable, Avx2, Avx512Vnni, Amx, Neon };

struct PackedInt8Weights {
  int64_t n = 0, k = 0;     // logical output channels and depth
  int64_t k4 = 0, n16 = 0;  // padded depth (a multiple of 4; of 64 for AMX) and channels (of 16)
  QGemmIsa isa = QGemmIsa::Portable;  // the micro-kernel family packed for (never Auto)
  bool w7 = false;  // every weight within [-64, 64] (AVX2 then packs groups of 4, not pairs)
  WeightBuffer data;               // int8: n16 / 16 panels of panel_bytes() (runtime/core/weight_memory.h)
  std::vector<int32_t> row_sums;   // per output channel: sum_p W[j][p]
  int64_t panel_bytes() const { return k4 * 16; }
};

// Packs W (n x k int8, rows of stride ldw) for the selected micro-kernel family.
void pack_int8_weights(const int8_t* w, int64_t n, int64_t k, int64_t ldw, PackedInt8Weights* out);

// The dequantizing epilogue: for row i, column j,
//   y[i][j] = act(float(acc - a_zero_point[i] * row_sums[j]) * (a_scale[i] * w_scale[j]) + bias[j])
// a_scale / a_zero_point: one value (per tensor) or one per row (a_per_row);
// w_scale: one value or one per output channel (w_per_channel); bias may be null.
struct QGemmEpilogue {
  const float* a_scale = nullptr;
  const int32_t* a_zero_point = nullptr;
  bool a_per_row = false;
  const float* w_scale = nullptr;
  bool w_per_channel = false;
  const float* bias = nullptr;
  Activation activation;
  bool y_transposed = false;  // y[j * ldc + i]: C^T (an NCHW convolution's output, channel j)
};

// A: m rows of uint8 at stride lda; each row must hold w.k4 readable bytes (the
// bytes past k are multiplied by zero weights). With `epilogue` null, writes
// the raw int32 sums to c32 (m x n, stride ldc); otherwise writes floats to y
// (stride ldc). `threads` caps the threads (1: the calling thread only).
void qgemm_u8s8(int64_t m, const uint8_t* a, int64_t lda, const PackedInt8Weights& w,
                const QGemmEpilogue* epilogue, int32_t* c32, float* y, int64_t ldc, int threads);

// Threads: qgemm_u8s8 uses at most one thread per `min macs per thread`
// multiply-adds (m x padded n x padded k), so products too small to repay a
// parallel region run on the calling thread alone. The default, 2^20 (1 M:
// about 5 us of VNNI work), is about what a region costs while the pool's
// workers spin between the ops of a run (runtime/core/thread_pool.cc). It was
// 2^23 while a region woke sleeping workers (20-25 us on the 2-core Zen 4 VM,
// bench/quant/README.md), which left an int8 MobileNetV2's 1x1 convolutions
// (10-20 M each) on one thread: 3.02 -> 2.13 ms a run at two threads. Sets
// the value (>= 1; 1: every task may get a thread) and returns the previous
// one (tests, benchmarks).
constexpr int64_t kDefaultMinMacsPerThread = int64_t{1} << 20;
int64_t qgemm_set_min_macs_per_thread(int64_t macs);

// Selects the micro-kernel family for weights packed from now on (tests,
// benchmarks); false when unsupported here.
bool qgemm_set_isa(QGemmIsa isa);
bool qgemm_isa_supported(QGemmIsa isa);
// The selected family: "amx-int8 16x64", "avx512-vnni 6x64", "avx2 6x16", "neon 1x16" or
// "portable 4x64".
const char* qgemm_kernel_name();

// AMX (x86): whether the CPU has the tile unit with the extension whose
// CPUID.(EAX=7, ECX=0):EDX bit is `edx_bit` (22: AMX-BF16, 25: AMX-INT8) and
// Linux lets this process use the tile data (arch_prctl ARCH_REQ_XCOMP_PERM,
// asked once); false elsewhere. The tile configuration both AMX kernels
// (this int8 GEMM and gemm_bf16.cc's) load: palette 1, tile t of rows[t] rows
// of colsb[t] bytes.
bool amx_usable(int edx_bit);
struct alignas(64) AmxTileConfig {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
// Loads `cfg` (static storage: compared by address) as the calling thread's
// tile configuration unless it is the one this function loaded there last
// (only where amx_usable). The AMX kernels keep their tiles configured
// between calls (no TILERELEASE): a LDTILECFG per 16 x 32 bf16 micro-tile
// was about a quarter of its time.
void amx_configure(const AmxTileConfig& cfg);

}  // namespace ember::cpu
