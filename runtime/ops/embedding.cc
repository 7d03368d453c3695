// embedding(weight [V, D], indices int32/int64 of any shape) -> [..., D]; the
// row padding_idx, when given, gets no gradient.
#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {

Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  EMBER_ENFORCE(weight.dim() == 2, Status::InvalidArgument, "'weight' must be 2-D");
  if (padding_idx) {
    EMBER_ENFORCE(*padding_idx < weight.size(0) && *padding_idx >= -weight.size(0), Status::InvalidArgument,
                "Padding_idx must be within num_embeddings");
    if (*padding_idx < 0) *padding_idx += weight.size(0);
  }
  EMBER_ENFORCE(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32, Status::DTypeMismatch,
              "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
              "but got torch.", dtype_legacy_name(indices.dtype()), "Tensor instead (while checking arguments for "
              "embedding)");
  unwrap(check_same_device({weight, indices}));
  EMBER_ENFORCE(weight.size(0) > 0 || indices.numel() == 0, Status::OutOfRange,
              "index_select(): self indexing axis dim should be positive");
  if (indices.numel() > 0) {
    NoGradGuard no_grad;
    // Checked on the host: copied there first, then widened (no device cast needed).
    const Tensor i64 = indices.to(Device(DeviceType::CPU)).to(DType::Int64).contiguous();
    const int64_t* p = i64.data_ptr<int64_t>();
    for (int64_t k = 0; k < i64.numel(); ++k) {
      EMBER_ENFORCE(p[k] >= 0 && p[k] < weight.size(0), Status::OutOfRange, "index out of range in self");
    }
  }
  Shape shape = indices.sizes();
  shape.push_back(weight.size(1));
  Tensor out = empty(shape, TensorOptions(weight.dtype()).device(weight.device()));
  if (out.numel() > 0) unwrap(run_kernel(OpKind::Embedding, {weight, indices}, {out}));
  if (Node* n = autograd::record(GradRule::Embedding, out, {weight})) {
    n->save(indices);
    n->ints = {weight.size(0), padding_idx.value_or(-1)};
  }
  return out;
}

}  // namespace ember
