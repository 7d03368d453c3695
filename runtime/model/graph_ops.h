// Graph ops with ONNX semantics, as plain functions on Tensors: the ONE
// implementation that the executor runs (ops.def's graph ops) and that the
// converter folds constants with (converter/fold.cc), so a graph op means the
// same folded and at run time.
//
// They are composed from the Status-returning cores of the views and the op
// front-ends (runtime/tensor/tensor.h, runtime/ops/ops.h) and return a Status
// / Result on invalid arguments, leaving the message for the calling thread
// (error_message(), error.h); the converter's folding unwrap()s them. Results may be views of their input
// (the converter makes them contiguous before it stores them). Axes follow
// ONNX: negative axes count from the end. Integer arguments that come from
// tensors at run time (shapes, starts, indices) are read on the host by
// read_ints().
#pragma once

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/graph/op_params.h"
#include "runtime/tensor/tensor.h"

namespace ember {

// The values of a small int64 or int32 tensor of rank 0 or 1 on the CPU
// (`what` names it in errors: "the shape input must be int64, ...").
Result<std::vector<int64_t>> read_ints(const Tensor& t, const char* what);

// An ONNX axis in [-rank, rank) (in [-rank, rank] when `inclusive`) -> [0, rank).
Result<int64_t> onnx_axis(int64_t axis, int64_t rank, const char* what, bool inclusive = false);

// Reshape: a 0 entry copies the input's dim at that index (unless
// `allow_zero`: then it is a literal 0), one -1 entry is inferred.
Result<Tensor> onnx_reshape(const Tensor& x, const std::vector<int64_t>& shape, bool allow_zero = false);

// Flatten: [d0 * .. * d(axis-1), d(axis) * .. * d(r-1)], always 2-D; axis in [-r, r].
Result<Tensor> onnx_flatten(const Tensor& x, int64_t axis);

// Squeeze the given axes (each of size 1); no axes: every size-1 dim.
Result<Tensor> onnx_squeeze(const Tensor& x, const std::vector<int64_t>& axes);

// Unsqueeze: `axes` are axes of the output (in [-r', r'), r' = rank + axes.size()).
Result<Tensor> onnx_unsqueeze(const Tensor& x, const std::vector<int64_t>& axes);

// Transpose by `perm`; an empty perm reverses the dims.
Result<Tensor> onnx_transpose(const Tensor& x, const std::vector<int64_t>& perm);

// Concat along axis (one input: itself).
Result<Tensor> onnx_concat(const std::vector<Tensor>& xs, int64_t axis);

// Split along axis into `sizes` (when given, they must sum to the axis' size)
// or, when `sizes` is null, into n_outputs parts of ceil(dim / n) (the last one
// smaller).
Result<std::vector<Tensor>> onnx_split(const Tensor& x, int64_t axis, const std::vector<int64_t>* sizes,
                                       int64_t n_outputs);

// Slice: x[starts:ends:steps] on `axes` (empty: 0, 1, ...; steps empty: all 1).
// ONNX clamping: with a positive step start and end clamp to [0, dim]; with a
// negative step start clamps to [0, dim-1] and end to [-1, dim-1] (so an end
// of INT64_MIN, or of -dim-1, walks down to index 0). A negative step copies
// (the elements picked in descending order); a positive one is a view.
Result<Tensor> onnx_slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                          std::vector<int64_t> axes = {}, std::vector<int64_t> steps = {});
// The same with starts, ends, axes and steps as int tensors (axes and steps may be undefined).
Result<Tensor> onnx_slice(const Tensor& x, const Tensor& starts, const Tensor& ends, const Tensor& axes,
                          const Tensor& steps);

// Gather along axis: x.shape[:axis] + indices.shape + x.shape[axis+1:];
// int64 or int32 indices, negative ones count from the end, each checked.
Result<Tensor> onnx_gather(const Tensor& data, const Tensor& indices, int64_t axis);

// Expand: broadcasts x and `shape` both ways (ONNX, unlike torch's expand).
Result<Tensor> onnx_expand(const Tensor& x, const std::vector<int64_t>& shape);

// Shape: x's dims [start, end) as an int64 [n] tensor (ONNX clamping).
Result<Tensor> onnx_shape(const Tensor& x, int64_t start = 0,
                          int64_t end = std::numeric_limits<int64_t>::max());

// ConstantOfShape: a tensor of `shape` (each dim >= 0) filled with `value`.
Result<Tensor> onnx_constant_of_shape(const std::vector<int64_t>& shape, Scalar value, TensorOptions options);

// Range: start, start + delta, ... while below limit (above it for a negative
// delta): max(ceil((limit - start) / delta), 0) elements of `dtype`; start,
// limit and delta are one-element tensors (any numeric dtype), delta nonzero.
Result<Tensor> onnx_range(const Tensor& start, const Tensor& limit, const Tensor& delta,
                          TensorOptions options);

// --- indexing, selection and scans (graph_ops_index.cc) ---
// GatherElements / ScatterElements: RT_OP_P ops (runtime/ops/index.cc).
// TopK: (values, int64 indices) of the k largest (smallest) along axis.
Result<std::pair<Tensor, Tensor>> onnx_topk(const Tensor& x, int64_t k, int64_t axis, bool largest,
                                            bool sorted);
// NonZero: int64 [rank, count].
Result<Tensor> onnx_nonzero(const Tensor& x);
// Unique: values, int64 indices (first occurrences), inverse indices, counts.
Result<std::vector<Tensor>> onnx_unique(const Tensor& x, const UniqueParams& p);
// BitCast: x's bytes read as `to` (a CPU tensor of the same shape; the element
// sizes must match), sharing x's storage when x is contiguous.
Result<Tensor> onnx_bit_cast(const Tensor& x, DType to);

}  // namespace ember
