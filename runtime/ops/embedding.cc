// embedding(weight [V, D], indices int32/int64 of any shape) -> [..., D]; the
// row padding_idx, when given, gets no gradient.
#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {

Result<Tensor> core::embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  EMBER_CHECK(weight.dim() == 2, Status::InvalidArgument, "'weight' must be 2-D");
  if (padding_idx) {
    EMBER_CHECK(*padding_idx < weight.size(0) && *padding_idx >= -weight.size(0), Status::InvalidArgument,
                "Padding_idx must be within num_embeddings");
    if (*padding_idx < 0) *padding_idx += weight.size(0);
  }
  EMBER_CHECK(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32, Status::DTypeMismatch,
              "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
              "but got torch.", dtype_legacy_name(indices.dtype()), "Tensor instead (while checking arguments for "
              "embedding)");
  EMBER_TRY(check_same_device({weight, indices}));
  EMBER_CHECK(weight.size(0) > 0 || indices.numel() == 0, Status::OutOfRange,
              "index_select(): self indexing axis dim should be positive");
  if (indices.numel() > 0) {
    NoGradGuard no_grad;
    // Checked on the host: copied there first, then widened (no device cast needed).
    EMBER_ASSIGN_OR_RETURN(Tensor i64, core::to(indices, Device(DeviceType::CPU)));
    EMBER_ASSIGN_OR_RETURN(i64, core::to(i64, DType::Int64));
    EMBER_ASSIGN_OR_RETURN(i64, core::contiguous(i64));
    const int64_t* p = i64.data_ptr<int64_t>();
    for (int64_t k = 0; k < i64.numel(); ++k) {
      EMBER_CHECK(p[k] >= 0 && p[k] < weight.size(0), Status::OutOfRange, "index out of range in self");
    }
  }
  Shape shape = indices.sizes();
  shape.push_back(weight.size(1));
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty(shape, TensorOptions(weight.dtype()).device(weight.device())));
  if (out.numel() > 0) EMBER_TRY(run_kernel(OpKind::Embedding, {weight, indices}, {out}));
  if (Node* n = autograd::record(GradRule::Embedding, out, {weight})) {
    n->save(indices);
    n->ints = {weight.size(0), padding_idx.value_or(-1)};
  }
  return out;
}

Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  return unwrap(core::embedding(weight, indices, padding_idx));
}

}  // namespace ember
