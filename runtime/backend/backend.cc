#include "runtime/backend/backend.h"

namespace ember {

const KernelEntry* Backend::find_kernel(OpKind op, DType dtype) const {
  for (const KernelEntry& e : kernels()) {
    if (e.op == op && (e.dtypes & dtype_bit(dtype)) != 0) return &e;
  }
  return nullptr;
}

}  // namespace ember
