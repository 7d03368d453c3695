// The eager op API: PyTorch's functions, with broadcasting and type promotion.
// Every function checks its arguments (raising ember::Error with PyTorch's
// wording), infers shapes and dtypes, allocates the output and dispatches to
// the kernel of the tensors' device (runtime/ops/dispatch.h).
#pragma once

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/graph/op_kind.h"
#include "runtime/tensor/tensor.h"

namespace ember {

// --- type promotion and broadcasting (runtime/ops/elementwise.cc) -----------
// torch.result_type over tensors and scalars (0-dim tensors and scalars rank
// below dimensioned tensors of the same category).
DType result_type(Span<const Tensor> tensors, Span<const Scalar> scalars = {});
// torch.broadcast_shapes; raises "The size of tensor a (4) must match ...".
Shape broadcast_shapes(IntArrayRef a, IntArrayRef b);

// --- elementwise: binary ------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, Scalar b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, Scalar b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, Scalar b);
Tensor div(const Tensor& a, const Tensor& b);  // true division: integers give float32
Tensor div(const Tensor& a, Scalar b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, Scalar b);
Tensor pow(Scalar a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, Scalar b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, Scalar b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, Scalar b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, Scalar b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, Scalar b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, Scalar b);
// One pair of front-ends per RT_BINARY line of ops.def: remainder (Python's %),
// fmod (C's), floor_divide, trunc_divide, bitwise_and/or/xor,
// bitwise_left_shift / bitwise_right_shift (PyTorch's: a shift past the width
// gives 0, or the sign). Inputs promote as torch.add's.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_BINARY(Name, name, ...)               \
  Tensor name(const Tensor& a, const Tensor& b); \
  Tensor name(const Tensor& a, Scalar b);
#include "runtime/graph/ops.def"
#undef RT_BINARY
#undef RT_OP
// The front-end of the RT_BINARY op `op`; NotSupported for any other op.
Tensor binary_op(OpKind op, const Tensor& a, const Tensor& b);
// torch.div with rounding_mode "trunc" or "floor" (integers stay integers).
Tensor div(const Tensor& a, const Tensor& b, std::string_view rounding_mode);
Tensor div(const Tensor& a, Scalar b, std::string_view rounding_mode);
Tensor bitwise_not(const Tensor& x);  // integers and bool
// torch.isnan / isinf / isposinf / isneginf / isfinite: bool; false for integers.
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isposinf(const Tensor& x);
Tensor isneginf(const Tensor& x);
Tensor isfinite(const Tensor& x);
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, Scalar a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, Scalar b);
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator/(Scalar a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, Scalar b);
Tensor operator!=(const Tensor& a, Scalar b);
Tensor operator<(const Tensor& a, Scalar b);
Tensor operator<=(const Tensor& a, Scalar b);
Tensor operator>(const Tensor& a, Scalar b);
Tensor operator>=(const Tensor& a, Scalar b);

// --- the graph front-ends of ops.def's RT_OP_P ops ---------------------------------
// Tensor name(in0, ..., params), defined in runtime/ops/<family>.cc; the
// executor's runners (runtime/model/op_runner.cc) are generated from the same line.
#define RT_OP_P_TENSORS_1 const Tensor&
#define RT_OP_P_TENSORS_2 RT_OP_P_TENSORS_1, const Tensor&
#define RT_OP_P_TENSORS_3 RT_OP_P_TENSORS_2, const Tensor&
#define RT_OP_P_TENSORS_4 RT_OP_P_TENSORS_3, const Tensor&
#define RT_OP_P_TENSORS_5 RT_OP_P_TENSORS_4, const Tensor&
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(...)
#define RT_UNARY_P(...)
#define RT_OP_P(Name, name, n_in, Params) Tensor name(RT_OP_P_TENSORS_##n_in, const Params& params);
#include "runtime/graph/ops.def"
#undef RT_OP_P
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP

// --- elementwise: unary ---------------------------------------------------------
// One front-end per RT_UNARY line of ops.def (neg, exp, relu, ...), with
// PyTorch's dtype rules and messages.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, ...) Tensor name(const Tensor& x);
#include "runtime/graph/ops.def"
#undef RT_UNARY
#undef RT_OP
// The front-end of the RT_UNARY op `op` (the executor runs them by OpKind);
// NotSupported for any other op.
Tensor unary_op(OpKind op, const Tensor& x);
// approximate: "none" (exact, erf) or "tanh".
Tensor gelu(const Tensor& x, std::string_view approximate = "none");
// One name_p(x, a, b) per RT_UNARY_P line of ops.def (hardsigmoid_p, elu_p, ...):
// the op with its UnaryParams a, b (the ONNX attributes); floating inputs only.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, ...)
#define RT_UNARY_P(Name, name, ...) Tensor name##_p(const Tensor& x, double a, double b);
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP
// The front-end of the RT_UNARY_P op `op` with params a, b; NotSupported for any other op.
Tensor unary_op(OpKind op, const Tensor& x, double a, double b);
// The parameterized activations with PyTorch's signatures and defaults
// (torch.nn.functional); thresholded_relu is ONNX's ThresholdedRelu: x > alpha ? x : 0.
Tensor hardsigmoid(const Tensor& x);  // relu6(x + 3) / 6
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor selu(const Tensor& x);
Tensor celu(const Tensor& x, double alpha = 1.0);
Tensor thresholded_relu(const Tensor& x, double alpha = 1.0);

// --- reductions (runtime/ops/reduce.cc) -----------------------------------------
// An empty dim list reduces over every dimension, as in PyTorch.
Tensor sum(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim = false,
           std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);
Tensor prod(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor prod(const Tensor& x, int64_t dim, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);
// correction 1 is Bessel's (unbiased); 0 is the population variance.
Tensor var(const Tensor& x, std::optional<std::vector<int64_t>> dims = std::nullopt,
           int64_t correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, std::optional<std::vector<int64_t>> dims = std::nullopt,
           int64_t correction = 1, bool keepdim = false);
// p-norm (p may be INFINITY or -INFINITY) over dims (all when empty).
Tensor norm(const Tensor& x, double p = 2.0, IntArrayRef dims = {}, bool keepdim = false);
Tensor max(const Tensor& x);  // over all elements
Tensor min(const Tensor& x);
// torch.max(x, dim): (values, indices).
std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);

// --- linear algebra (runtime/ops/linalg.cc) -------------------------------------
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
// torch.matmul: 1-D/2-D/batched with broadcasting batch dims.
Tensor matmul(const Tensor& a, const Tensor& b);
// y = x @ weight^T + bias.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// --- neural-network ops (runtime/ops/nn.cc) ----------------------------------------
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
// torch.nn.functional.scaled_dot_product_attention without dropout or
// is_causal: q [*, L, E], k [*, S, E], v [*, S, Ev], attn_mask (bool: true
// takes part; or q's dtype, added) broadcast to [*, L, S]; scale defaults to
// 1 / sqrt(E). The graph form takes AttentionParams (runtime/ops/attention.cc).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask = {},
                                    std::optional<double> scale = std::nullopt);
Tensor layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// Inference form: normalizes with the running statistics.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  double eps = 1e-5);
// Input NCHW (or channels_last strides; the output keeps that memory format).
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              IntArrayRef stride = {1, 1}, IntArrayRef padding = {0, 0},
              IntArrayRef dilation = {1, 1}, int64_t groups = 1);
Tensor max_pool2d(const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1},
                  bool ceil_mode = false);
// torch.nn.functional.max_pool2d(return_indices=True): the values and, as
// int64, the index h * W + w in its input plane of each maximum (the first
// largest value, or the last NaN). Over max_pool2d_indices (ops.def).
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride = {},
                                                  IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1},
                                                  bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0, 0}, bool ceil_mode = false,
                  bool count_include_pad = true, std::optional<int64_t> divisor_override = std::nullopt);
Tensor adaptive_avg_pool2d(const Tensor& x, IntArrayRef output_size);
// torch.nn.functional.interpolate (runtime/ops/spatial.cc, over resize()):
// modes nearest, nearest-exact, linear (3-D), bilinear / bicubic (4-D),
// trilinear (5-D), area (4-D: adaptive_avg_pool2d); one of size and
// scale_factor (one value or one per spatial dim); antialias is refused.
Tensor interpolate(const Tensor& x, IntArrayRef size = {}, const std::vector<double>& scale_factor = {},
                   std::string_view mode = "nearest", std::optional<bool> align_corners = std::nullopt,
                   bool antialias = false);
// torch.nn.functional.grid_sample (over the GridSample op: ONNX's semantics;
// bicubic with border / reflection padding pads each tap as ONNX does).
Tensor grid_sample(const Tensor& x, const Tensor& grid, std::string_view mode = "bilinear",
                   std::string_view padding_mode = "zeros", std::optional<bool> align_corners = std::nullopt);
// torch.nn.functional.conv_transpose1d/2d/3d: weight [C_in, C_out/groups, *kernel].
Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), IntArrayRef stride = {1},
                        IntArrayRef padding = {0}, IntArrayRef output_padding = {0}, int64_t groups = 1,
                        IntArrayRef dilation = {1});
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), IntArrayRef stride = {1},
                        IntArrayRef padding = {0}, IntArrayRef output_padding = {0}, int64_t groups = 1,
                        IntArrayRef dilation = {1});
Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), IntArrayRef stride = {1},
                        IntArrayRef padding = {0}, IntArrayRef output_padding = {0}, int64_t groups = 1,
                        IntArrayRef dilation = {1});
// padding_idx (negative counts from the end): that row gets no gradient (F.embedding).
Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx = std::nullopt);
// Training form (F.batch_norm(training=True)): normalizes with the batch
// statistics over every dim but 1 (biased variance) and, under no_grad, updates
// the defined running stats in place: running = (1 - momentum) * running +
// momentum * batch stat (unbiased variance for running_var). Differentiable.
Tensor batch_norm_train(const Tensor& x, Tensor running_mean, Tensor running_var, const Tensor& weight = Tensor(),
                        const Tensor& bias = Tensor(), double momentum = 0.1, double eps = 1e-5);

// --- backward helpers of the nn ops (runtime/ops/nn_backward.cc; autograd's rules) --------
// The gradient of the op's input from the gradient of its output, for the
// same arguments (x: the op's input; 3-D unbatched forms accepted).
Tensor max_pool2d_backward(const Tensor& grad, const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride,
                           IntArrayRef padding, IntArrayRef dilation, bool ceil_mode);
Tensor avg_pool2d_backward(const Tensor& grad, const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride,
                           IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override);
Tensor adaptive_avg_pool2d_backward(const Tensor& grad, const Tensor& x);
// [num_weights, D]: row i is the sum of the rows of grad [*, D] whose index is i.
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights);
// reflect / replicate / circular pad: the gradient of the input (shape
// input_sizes), accumulating every padded position into its source.
Tensor pad_backward(const Tensor& grad, IntArrayRef input_sizes, IntArrayRef pad, std::string_view mode);

// --- joining and splitting (runtime/ops/shape_ops.cc) ---------------------------------
Tensor cat(Span<const Tensor> tensors, int64_t dim = 0);
Tensor stack(Span<const Tensor> tensors, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, IntArrayRef split_sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
// torch.nn.functional.pad: `pad` lists (before, after) pairs from the last dim
// backwards; mode "constant", "reflect", "replicate" or "circular".
Tensor pad(const Tensor& x, IntArrayRef pad, std::string_view mode = "constant", double value = 0.0);

// --- indexing along a dim (runtime/ops/index.cc) -------------------------------------
// torch.gather: out[i][j] = x[index[i][j]][j] (dim 0); index int64 of x's rank.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// torch.scatter (out of place): x with src (or value) written at index along
// dim; reduce "" (replace), "add" or "multiply".
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce = "");
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value, std::string_view reduce = "");
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// index: int32/int64, 0-D or 1-D.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
// mask: bool, broadcast with x; value: a scalar or a 0-D tensor.
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value);
// torch.take_along_dim: gather with x and indices broadcast (no dim: over the flattened x).
Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim = std::nullopt);

// --- recurrences (runtime/ops/recurrence.cc) -------------------------------------------
// ONNX's LSTM, GRU and RNN over x [T, B, I] (RecurrenceParams; optional
// operands undefined): {Y [T, D, B, H], Y_h [D, B, H], Y_c [D, B, H] (LSTM;
// else undefined)}. Differentiable (composed of forward ops) in grad mode.
std::vector<Tensor> recurrence(const Tensor& x, const Tensor& w, const Tensor& r, const Tensor& b, const Tensor& lens,
                               const Tensor& h0, const Tensor& c0, const Tensor& p, const RecurrenceParams& params);

// --- selection and scans (runtime/ops/sort.cc) ------------------------------------------
// (values, int64 indices); ties: the lower index first (sort is stable).
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                               bool sorted = true);
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);
// int64 [count, rank]: the indices of the nonzero elements, in row-major order.
Tensor nonzero(const Tensor& x);
// Integer and bool inputs accumulate into int64 unless dtype says otherwise.
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
// The scan kernels as ONNX's CumSum/CumProd: x's dtype kept, no autograd.
Tensor cumulative(const Tensor& x, int64_t dim, bool product, bool exclusive, bool reverse);

// --- reordering and masking copies (runtime/ops/reorder.cc) -----------------------------
Tensor flip(const Tensor& x, IntArrayRef dims);
// No dims: x flattened, rolled, reshaped back (one shift).
Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims = {});
Tensor repeat(const Tensor& x, IntArrayRef repeats);
Tensor tile(const Tensor& x, IntArrayRef reps);
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);

// --- the Status-returning cores ------------------------------------------------
// Every front-end above has a core of the same parameters in ember::core that
// returns a Result (Status for the in-place ones) and leaves the message for
// the thread instead of raising (error.h); the front-end is
// unwrap(core::f(...)). The inference path calls the cores.
namespace core {
Result<DType> result_type(Span<const Tensor> tensors, Span<const Scalar> scalars = {});
Result<Shape> broadcast_shapes(IntArrayRef a, IntArrayRef b);
Result<Tensor> add(const Tensor& a, const Tensor& b);
Result<Tensor> add(const Tensor& a, Scalar b);
Result<Tensor> sub(const Tensor& a, const Tensor& b);
Result<Tensor> sub(const Tensor& a, Scalar b);
Result<Tensor> mul(const Tensor& a, const Tensor& b);
Result<Tensor> mul(const Tensor& a, Scalar b);
Result<Tensor> div(const Tensor& a, const Tensor& b);
Result<Tensor> div(const Tensor& a, Scalar b);
Result<Tensor> pow(const Tensor& a, const Tensor& b);
Result<Tensor> pow(const Tensor& a, Scalar b);
Result<Tensor> pow(Scalar a, const Tensor& b);
Result<Tensor> maximum(const Tensor& a, const Tensor& b);
Result<Tensor> minimum(const Tensor& a, const Tensor& b);
Result<Tensor> eq(const Tensor& a, const Tensor& b);
Result<Tensor> eq(const Tensor& a, Scalar b);
Result<Tensor> ne(const Tensor& a, const Tensor& b);
Result<Tensor> ne(const Tensor& a, Scalar b);
Result<Tensor> lt(const Tensor& a, const Tensor& b);
Result<Tensor> lt(const Tensor& a, Scalar b);
Result<Tensor> le(const Tensor& a, const Tensor& b);
Result<Tensor> le(const Tensor& a, Scalar b);
Result<Tensor> gt(const Tensor& a, const Tensor& b);
Result<Tensor> gt(const Tensor& a, Scalar b);
Result<Tensor> ge(const Tensor& a, const Tensor& b);
Result<Tensor> ge(const Tensor& a, Scalar b);
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_BINARY(Name, name, ...)                       \
  Result<Tensor> name(const Tensor& a, const Tensor& b); \
  Result<Tensor> name(const Tensor& a, Scalar b);
#include "runtime/graph/ops.def"
#undef RT_BINARY
#undef RT_OP
Result<Tensor> binary_op(OpKind op, const Tensor& a, const Tensor& b);
Result<Tensor> div(const Tensor& a, const Tensor& b, std::string_view rounding_mode);
Result<Tensor> div(const Tensor& a, Scalar b, std::string_view rounding_mode);
Result<Tensor> bitwise_not(const Tensor& x);
Result<Tensor> isnan(const Tensor& x);
Result<Tensor> isinf(const Tensor& x);
Result<Tensor> isposinf(const Tensor& x);
Result<Tensor> isneginf(const Tensor& x);
Result<Tensor> isfinite(const Tensor& x);
Result<Tensor> where(const Tensor& condition, const Tensor& a, const Tensor& b);
Result<Tensor> where(const Tensor& condition, Scalar a, const Tensor& b);
Result<Tensor> where(const Tensor& condition, const Tensor& a, Scalar b);
Result<Tensor> clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);
Result<Tensor> rsub(const Tensor& b, Scalar a);  // a - b (operator-(Scalar, Tensor), RsubBackward1)
#define RT_OP_P_TENSORS_1 const Tensor&
#define RT_OP_P_TENSORS_2 RT_OP_P_TENSORS_1, const Tensor&
#define RT_OP_P_TENSORS_3 RT_OP_P_TENSORS_2, const Tensor&
#define RT_OP_P_TENSORS_4 RT_OP_P_TENSORS_3, const Tensor&
#define RT_OP_P_TENSORS_5 RT_OP_P_TENSORS_4, const Tensor&
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(...)
#define RT_UNARY_P(...)
#define RT_OP_P(Name, name, n_in, Params) Result<Tensor> name(RT_OP_P_TENSORS_##n_in, const Params& params);
#include "runtime/graph/ops.def"
#undef RT_OP_P
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, ...) Result<Tensor> name(const Tensor& x);
#include "runtime/graph/ops.def"
#undef RT_UNARY
#undef RT_OP
Result<Tensor> unary_op(OpKind op, const Tensor& x);
Result<Tensor> gelu(const Tensor& x, std::string_view approximate = "none");
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, ...)
#define RT_UNARY_P(Name, name, ...) Result<Tensor> name##_p(const Tensor& x, double a, double b);
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP
Result<Tensor> unary_op(OpKind op, const Tensor& x, double a, double b);
Result<Tensor> hardsigmoid(const Tensor& x);
Result<Tensor> leaky_relu(const Tensor& x, double negative_slope = 0.01);
Result<Tensor> elu(const Tensor& x, double alpha = 1.0);
Result<Tensor> selu(const Tensor& x);
Result<Tensor> celu(const Tensor& x, double alpha = 1.0);
Result<Tensor> thresholded_relu(const Tensor& x, double alpha = 1.0);
Result<Tensor> sum(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Result<Tensor> sum(const Tensor& x, IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Result<Tensor> mean(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Result<Tensor> mean(const Tensor& x, IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Result<Tensor> prod(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Result<Tensor> prod(const Tensor& x, int64_t dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Result<Tensor> var(const Tensor& x, std::optional<std::vector<int64_t>> dims = std::nullopt, int64_t correction = 1,
                   bool keepdim = false);
Result<Tensor> std(const Tensor& x, std::optional<std::vector<int64_t>> dims = std::nullopt, int64_t correction = 1,
                   bool keepdim = false);
Result<Tensor> norm(const Tensor& x, double p = 2.0, IntArrayRef dims = {}, bool keepdim = false);
Result<Tensor> max(const Tensor& x);
Result<Tensor> min(const Tensor& x);
Result<std::pair<Tensor, Tensor>> max(const Tensor& x, int64_t dim, bool keepdim = false);
Result<std::pair<Tensor, Tensor>> min(const Tensor& x, int64_t dim, bool keepdim = false);
Result<Tensor> argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Result<Tensor> argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Result<Tensor> mm(const Tensor& a, const Tensor& b);
Result<Tensor> bmm(const Tensor& a, const Tensor& b);
Result<Tensor> matmul(const Tensor& a, const Tensor& b);
Result<Tensor> linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
Result<Tensor> softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Result<Tensor> log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Result<Tensor> layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight = Tensor(),
                          const Tensor& bias = Tensor(), double eps = 1e-5);
Result<Tensor> batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                          const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), double eps = 1e-5);
Result<Tensor> conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), IntArrayRef stride = {1, 1},
                      IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1}, int64_t groups = 1);
Result<Tensor> max_pool2d(const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride = {},
                          IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1}, bool ceil_mode = false);
Result<std::pair<Tensor, Tensor>> max_pool2d_with_indices(const Tensor& x, IntArrayRef kernel_size,
                                                          IntArrayRef stride = {}, IntArrayRef padding = {0, 0},
                                                          IntArrayRef dilation = {1, 1}, bool ceil_mode = false);
Result<Tensor> avg_pool2d(const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride = {},
                          IntArrayRef padding = {0, 0}, bool ceil_mode = false, bool count_include_pad = true,
                          std::optional<int64_t> divisor_override = std::nullopt);
Result<Tensor> adaptive_avg_pool2d(const Tensor& x, IntArrayRef output_size);
Result<Tensor> interpolate(const Tensor& x, IntArrayRef size = {}, const std::vector<double>& scale_factor = {},
                           std::string_view mode = "nearest", std::optional<bool> align_corners = std::nullopt,
                           bool antialias = false);
Result<Tensor> grid_sample(const Tensor& x, const Tensor& grid, std::string_view mode = "bilinear",
                           std::string_view padding_mode = "zeros", std::optional<bool> align_corners = std::nullopt);
Result<Tensor> conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                                IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef output_padding = {0},
                                int64_t groups = 1, IntArrayRef dilation = {1});
Result<Tensor> conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                                IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef output_padding = {0},
                                int64_t groups = 1, IntArrayRef dilation = {1});
Result<Tensor> conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                                IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef output_padding = {0},
                                int64_t groups = 1, IntArrayRef dilation = {1});
Result<Tensor> embedding(const Tensor& weight, const Tensor& indices,
                         std::optional<int64_t> padding_idx = std::nullopt);
Result<Tensor> batch_norm_train(const Tensor& x, Tensor running_mean, Tensor running_var,
                                const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), double momentum = 0.1,
                                double eps = 1e-5);
Result<Tensor> max_pool2d_backward(const Tensor& grad, const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride,
                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode);
Result<Tensor> avg_pool2d_backward(const Tensor& grad, const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride,
                                   IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                                   std::optional<int64_t> divisor_override);
Result<Tensor> adaptive_avg_pool2d_backward(const Tensor& grad, const Tensor& x);
Result<Tensor> embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights);
Result<Tensor> pad_backward(const Tensor& grad, IntArrayRef input_sizes, IntArrayRef pad, std::string_view mode);
Result<Tensor> cat(Span<const Tensor> tensors, int64_t dim = 0);
Result<Tensor> stack(Span<const Tensor> tensors, int64_t dim = 0);
Result<std::vector<Tensor>> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
Result<std::vector<Tensor>> split(const Tensor& x, IntArrayRef split_sizes, int64_t dim = 0);
Result<std::vector<Tensor>> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
Result<Tensor> pad(const Tensor& x, IntArrayRef pad, std::string_view mode = "constant", double value = 0.0);
Result<Tensor> gather(const Tensor& x, int64_t dim, const Tensor& index);
Result<Tensor> scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                       std::string_view reduce = "");
Result<Tensor> scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value, std::string_view reduce = "");
Result<Tensor> scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Result<Tensor> index_select(const Tensor& x, int64_t dim, const Tensor& index);
Result<Tensor> masked_fill(const Tensor& x, const Tensor& mask, Scalar value);
Result<Tensor> masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value);
Result<Tensor> take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim = std::nullopt);
Result<std::vector<Tensor>> recurrence(const Tensor& x, const Tensor& w, const Tensor& r, const Tensor& b,
                                       const Tensor& lens, const Tensor& h0, const Tensor& c0, const Tensor& p,
                                       const RecurrenceParams& params);
Result<std::pair<Tensor, Tensor>> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                                       bool sorted = true);
Result<std::pair<Tensor, Tensor>> sort(const Tensor& x, int64_t dim = -1, bool descending = false);
Result<Tensor> argsort(const Tensor& x, int64_t dim = -1, bool descending = false);
Result<Tensor> nonzero(const Tensor& x);
Result<Tensor> cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Result<Tensor> cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Result<Tensor> cumulative(const Tensor& x, int64_t dim, bool product, bool exclusive, bool reverse);
Result<Tensor> flip(const Tensor& x, IntArrayRef dims);
Result<Tensor> roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims = {});
Result<Tensor> repeat(const Tensor& x, IntArrayRef repeats);
Result<Tensor> tile(const Tensor& x, IntArrayRef reps);
Result<Tensor> tril(const Tensor& x, int64_t diagonal = 0);
Result<Tensor> triu(const Tensor& x, int64_t diagonal = 0);

}  // namespace core

// --- devices (runtime/backend/registry.cc) ---------------------------------------
// Waits until the work queued on `device` has finished (torch.cuda.synchronize);
// a no-op on the CPU. Vulkan ops are recorded and submitted when the host
// needs their results, so timing code calls this.
void synchronize(Device device);
// The devices of a backend, in the order it prefers them, as "name [type]"
// (CPU: one); raises when ember is built without it or it has no driver or
// device, with the backend's reason.
std::vector<std::string> device_names(DeviceType type);
// Picks the device of a backend ember opens on first use: an index into
// device_names() or a case-insensitive substring of a name. Raises once the
// device is open or when the backend has no choice of devices.
void select_device(DeviceType type, const std::string& spec);
// Picks the Vulkan device ember opens on first use: an index into
// vulkan_devices() or a case-insensitive substring of its name (the
// environment variable EMBER_VULKAN_DEVICE does the same). Raises once the
// device is open, or when ember is built without Vulkan.
void select_vulkan_device(const std::string& spec);
// The Vulkan devices, in the order ember prefers them (discrete, integrated,
// virtual, CPU), as "name [type]"; raises when there is no loader or device.
std::vector<std::string> vulkan_devices();
// torch.cuda.is_available() / device_count(): false and 0 when ember is built
// without CUDA or there is no driver or device (never raises).
bool cuda_is_available();
int cuda_device_count();
// The device's caching allocator (torch.cuda.memory_allocated, memory_reserved,
// empty_cache): bytes of live tensors, those plus cached free blocks; 0 for
// backends without a cache.
size_t memory_allocated(Device device);
size_t memory_reserved(Device device);
void empty_cache(Device device);

}  // namespace ember
