// Eager front-ends of the run-time ops (ops.def: QLinear, QConv2d, SparseLinear, Conv2dPair,
// AddLayerNorm) and of
// Conv2d with its fused activation, for the executor. For the run-time ops
// the weight was prepared once by the backend of x's device
// (Backend::prepare_weight) and travels in the params. Each checks x, allocates
// the output on x's device and runs the kernel (run_kernel).
#pragma once

#include "runtime/core/result.h"
#include "runtime/graph/op_params.h"
#include "runtime/tensor/tensor.h"

namespace ember {

// y [*, N] = act(dynamic int8 linear(x [*, K] float32)).
Tensor qlinear(const Tensor& x, const QLinearParams& params);

// y [N, C_out, OH, OW] = act(dynamic int8 conv2d(x [N, C_in, H, W] float32)).
Tensor qconv2d(const Tensor& x, const QConv2dParams& params);

// y = depthwise(pointwise(x)): the 1x1 Conv2d (weight [E, C, 1, 1], bias [E]
// or undefined, p.pointwise's activation) then the depthwise one (weight [E,
// 1, KH, KW], bias, p.depthwise's geometry and activation), float32 on the
// CPU, by the kernel of the pair (no autograd: refused when an input needs a
// gradient). y is channels_last. The same values as the two convolutions.
Tensor conv2d_pair(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2,
                   const Conv2dPairParams& p);

// y = layer_norm(a + b) over the last p.normalized_rank dims (weight and bias
// their shape, or undefined; p.eps), a and b float32 of one shape on the CPU,
// by the kernel of the pair (no autograd: refused when an input needs a
// gradient). The same values as add then layer_norm.
Tensor add_layer_norm(const Tensor& a, const Tensor& b, const Tensor& weight, const Tensor& bias, const NormParams& p);

// y [*, N] = act(x [*, K] float32 @ W^T + bias (float32 [N] or undefined)), W
// the prepared sparse weight.
Tensor sparse_linear(const Tensor& x, const QLinearParams& params, const Tensor& bias);

// linear(x, weight, bias), the product reading p.weight (the weight's B panels
// the CPU backend packed at load) when it is a float32 CPU product with no
// autograd graph to record: bitwise linear()'s result (the same MatMul kernel
// on the same operands, the bias added after), with p.activation applied
// after it by the kernel as it stores the product: then *activated is true;
// else (linear()'s result) false and the caller applies the activation.
Tensor linear_prepacked(const Tensor& x, const Tensor& weight, const Tensor& bias, const LinearParams& p,
                        bool* activated);
// matmul(a, b), reading `packed` (b's B panels, packed at load) likewise:
// bitwise matmul()'s result. bf16 (Precision::BFloat16): where b is not
// packed, its float32 CPU products (no autograd graph) run on bf16-rounded
// operands, summed in float32 (the bf16 GEMM: CPUs with AVX-512 BF16).
Tensor matmul_prepacked(const Tensor& a, const Tensor& b, const PreparedWeight* packed, bool bf16 = false);

// conv2d(x, weight, bias) with p's stride, padding, dilation and groups, then
// `residual` (when defined: a residual connection's other branch, of the
// output's shape) added and p.activation applied, by the kernel when it can (a
// float32 CPU convolution with no autograd graph to record): then *fused is
// true; else the result is the plain convolution, *fused is false and the
// caller adds the residual and applies the activation. p.weight, a weight the
// CPU backend packed from `weight` at load, is read instead of `weight` by the
// float32 CPU kernel (others ignore it).
Tensor conv2d_activated(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p,
                        bool* fused, const Tensor& residual = Tensor());

// The Status-returning cores of the front-ends above (same parameters; see ops.h).
namespace core {
Result<Tensor> qlinear(const Tensor& x, const QLinearParams& params);
// out_format: the output's memory format (Preserve: x's).
Result<Tensor> qconv2d(const Tensor& x, const QConv2dParams& params, MemoryFormat out_format = MemoryFormat::Preserve);
Result<Tensor> sparse_linear(const Tensor& x, const QLinearParams& params, const Tensor& bias);
Result<Tensor> conv2d_pair(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2,
                           const Conv2dPairParams& p);
Result<Tensor> add_layer_norm(const Tensor& a, const Tensor& b, const Tensor& weight, const Tensor& bias,
                              const NormParams& p);
Result<Tensor> linear_prepacked(const Tensor& x, const Tensor& weight, const Tensor& bias, const LinearParams& p,
                                bool* activated);
Result<Tensor> matmul_prepacked(const Tensor& a, const Tensor& b, const PreparedWeight* packed, bool bf16 = false);
// out_format: the output's memory format (Preserve: as conv2d, channels_last
// where the input or the weight is).
Result<Tensor> conv2d_activated(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p,
                                bool* fused, const Tensor& residual = Tensor(),
                                MemoryFormat out_format = MemoryFormat::Preserve);
}  // namespace core

}  // namespace ember
