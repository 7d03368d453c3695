// Magnitude pruning, as torch.nn.utils.prune.l1_unstructured: zero the
// round(fraction x numel) entries of smallest |w| of one weight tensor.
// Pruning loses accuracy; the converter warns and reports per-layer sparsity.
#pragma once

#include <string>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/tensor/tensor.h"

namespace ember::sparse {

// "magnitude:FRACTION[:OP_TYPES]", e.g. "magnitude:0.9" or
// "magnitude:0.9:Gemm,MatMul" (op types of the ONNX nodes whose weights are
// pruned; default Gemm and MatMul).
struct PruneSpec {
  double fraction = 0.0;                 // in [0, 1]
  std::vector<std::string> op_types;     // ONNX op types
};

// Parses a spec; on failure returns InvalidArgument and sets *error.
Status parse_prune_spec(const std::string& text, PruneSpec* spec, std::string* error);

// A copy of `w` (floating, CPU) with the round(fraction * numel) smallest-|w|
// entries set to zero (ties: the lower flat index first). Raises ember::Error.
Tensor magnitude_prune(const Tensor& w, double fraction);

}  // namespace ember::sparse
