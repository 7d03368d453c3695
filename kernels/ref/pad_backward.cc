// PadBackward: the gradient of reflect / replicate / circular (and constant)
// padding: every element of grad_out is added to the input position it was
// read from (constant padding's value positions are dropped). The output
// (grad_in, the input's shape) is zeroed by the front-end. The index map
// is the forward kernel's (pad_index.h), negative (cropping) pads included.
#include <algorithm>
#include <type_traits>

#include "kernels/ref/loops.h"
#include "kernels/ref/pad_index.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/tensor/convert.h"

namespace ember::ref {

Status pad_backward(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<PadParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView& grad = in[0];
  TensorView& grad_in = out[0];
  EMBER_CHECK(grad.rank == grad_in.rank && grad.dtype == grad_in.dtype, Status::InvalidArgument);
  for (int d = 0; d < grad.rank; ++d) {
    const int64_t size = grad_in.sizes[d];
    EMBER_CHECK(grad.sizes[d] == size + p->before[d] + p->after[d], Status::ShapeMismatch);
    if (grad.sizes[d] > 0 && (p->before[d] != 0 || p->after[d] != 0) && p->mode != PadMode::Constant) {
      const int64_t kept = size - std::max<int64_t>(-p->before[d], 0) - std::max<int64_t>(-p->after[d], 0);
      EMBER_CHECK(size > 0 && kept > 0, Status::InvalidArgument);
      if (p->mode == PadMode::Reflect) {
        EMBER_CHECK(p->before[d] < size && p->after[d] < size, Status::InvalidArgument);
      }
    }
  }
  if (grad.numel() == 0) return Status::Ok;
  dispatch_dtype(grad.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    if constexpr (std::is_floating_point_v<A>) {
      const T* g = grad.ptr<const T>();
      T* gi = grad_in.ptr<T>();
      int64_t index[kMaxRank] = {};
      do {
        int64_t off = 0;
        bool inside = true;
        for (int d = 0; d < grad.rank && inside; ++d) {
          const int64_t i = pad_source(p->mode, index[d], grad_in.sizes[d], p->before[d], p->after[d]);
          inside = i >= 0;
          off += i * grad_in.strides[d];
        }
        if (inside) gi[off] = convert<T>(convert<A>(gi[off]) + convert<A>(g[offset_of(grad, index)]));
      } while (next_index(index, grad.sizes, grad.rank));
    }
  });
  return Status::Ok;
}

}  // namespace ember::ref
