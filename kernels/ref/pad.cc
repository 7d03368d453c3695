// Pad: constant / reflect / replicate / circular padding of every dimension,
// with PyTorch's semantics for negative pads (they crop). The output's index
// along a dimension maps to one input index (or to the constant value).
#include <algorithm>

#include "kernels/ref/loops.h"
#include "kernels/ref/pad_index.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/tensor/convert.h"

namespace ember::ref {

Status pad(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<PadParams>(&params);
  RT_CHECK_OR_RETURN(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView& src = in[0];
  TensorView& dst = out[0];
  RT_CHECK_OR_RETURN(src.rank == dst.rank && src.dtype == dst.dtype, Status::InvalidArgument);
  for (int d = 0; d < src.rank; ++d) {
    RT_CHECK_OR_RETURN(pad_dim_is_valid(p->mode, src.sizes[d], p->before[d], p->after[d], dst.sizes[d]),
                       Status::InvalidArgument);
  }
  if (dst.numel() == 0) return Status::Ok;
  dispatch_dtype(src.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T value = convert<T>(p->value);
    const T* s = src.ptr<const T>();
    T* o = dst.ptr<T>();
    int64_t index[kMaxRank] = {};
    do {
      int64_t src_off = 0;
      bool inside = true;
      for (int d = 0; d < dst.rank && inside; ++d) {
        const int64_t i = pad_source(p->mode, index[d], src.sizes[d], p->before[d], p->after[d]);
        inside = i >= 0;
        src_off += i * src.strides[d];
      }
      o[offset_of(dst, index)] = inside ? s[src_off] : value;
    } while (next_index(index, dst.sizes, dst.rank));
  });
  return Status::Ok;
}

}  // namespace ember::ref
