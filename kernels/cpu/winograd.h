// Winograd float32 Conv2d, F(4x4, 3x3) (Lavin & Gray, points 0, +-1, +-2, inf),
// for kernels/cpu/conv2d.cc: 3x3 kernels, stride 1, dilation 1, one group,
// any padding, any batch, any input/output strides. Each 6x6 input tile
// (4x4 outputs) becomes 36 frequencies:
//   V[f, ci, t] = (B^T d B)[f]   (d: the tile t of input channel ci)
//   U[f, co, ci] = (G g G^T)[f]  (g: the 3x3 weight of (co, ci))
//   M[f] = U[f] @ V[f]           (36 sgemm products, Cout x Cin by Cin x tiles)
//   out tile = act(bias + A^T M A [+ residual])
// Tiles of every image share the GEMM columns. The transforms run over
// vectors of consecutive tiles (input, output) or input channels (weight) in
// the GEMM's ISA (gemm.h: AVX-512, AVX2, or 4-lane GCC vectors) and give the
// same bits on every ISA (no contraction: -std=c++17). No allocation: V, M,
// U (unless given) and the GEMM's packing buffers come from the caller's
// workspace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "runtime/backend/backend.h"

namespace ember::cpu {

// Frequencies per tile (6 x 6) and outputs per tile side.
constexpr int64_t kWinogradFreqs = 36;
constexpr int64_t kWinogradTile = 4;

// True when the convolution is one the kernel computes: float32, weight
// [Cout, Cin, 3, 3] contiguous, stride 1, dilation 1, groups 1.
bool winograd_applies(const TensorView& x, const TensorView& w, const TensorView& o, const Conv2dParams& prm);

// True when it also beats the im2col GEMM path (measured with
// //bench/ops:conv_bench; `pretransformed`: the weight need not be transformed
// per call).
bool winograd_profitable(const TensorView& x, const TensorView& w, const TensorView& o, bool pretransformed);
// The same from the channels and the output's spatial size (n images).
bool winograd_profitable(int64_t cin, int64_t cout, int64_t n, int64_t oh, int64_t ow, bool pretransformed);

// Bytes of the transformed weight U: 36 * cout * cin floats.
size_t winograd_weight_bytes(int64_t cout, int64_t cin);

// U[f, co, ci] (f = 6 * row + column of the 6x6 frequency grid) from a
// contiguous [cout, cin, 3, 3] float32 weight. `u` holds
// winograd_weight_bytes(cout, cin) bytes.
void winograd_transform_weight(const float* w, int64_t cout, int64_t cin, float* u, int threads);

// U packed for the GEMM as it reads it: one A operand (sgemm_pack_a) of
// [cout, cin] per frequency, 36 in all. The per-call packing of U cost about
// as much as the GEMM itself for few tiles (ResNet-18's 256@14x14: 16 tiles).
std::vector<PackedOperand> winograd_pack_weight(const float* w, int64_t cout, int64_t cin, int threads);

// Scratch bytes winograd_conv2d needs (without U when `pretransformed`).
size_t winograd_workspace(const TensorView& x, const TensorView& o, bool pretransformed, int threads);

// out = act(bias + conv(x, w) + residual) for a convolution winograd_applies
// to. bias: [Cout] or none (data == nullptr). `u`: the 36 operands of
// winograd_pack_weight, or nullptr to transform the weight into the workspace.
// `residual`: out's shape with out's strides (a residual connection, added
// as an Add after the convolution would), or nullptr. False (nothing
// written) when the workspace is too small, or when `u` was packed for
// another GEMM kernel (sgemm_packed_current).
bool winograd_conv2d(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& o,
                     const Conv2dParams& prm, const PackedOperand* u, void* scratch, size_t scratch_bytes,
                     int threads, const float* residual = nullptr);

}  // namespace ember::cpu
