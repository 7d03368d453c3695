// Pad: constant / reflect / replicate / circular padding of every dimension,
// with PyTorch's semantics for negative pads (they crop). The output's index
// along a dimension maps to one input index (or to the constant value).
#include <algorithm>

#include "kernels/ref/loops.h"
#include "kernels/ref/pad_index.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/tensor/convert.h"

namespace ember::ref {

namespace {

// Whether every output index of a dimension maps inside the input.
bool dim_is_valid(PadMode mode, int64_t size, int64_t before, int64_t after, int64_t out_size) {
  if (out_size != size + before + after) return false;
  if (out_size == 0 || (before == 0 && after == 0)) return true;
  switch (mode) {
    case PadMode::Constant: return true;
    case PadMode::Reflect: return size > 0 && before < size && after < size;
    case PadMode::Replicate: return size > 0;
    case PadMode::Circular: {
      const int64_t kept = size - std::max<int64_t>(-before, 0) - std::max<int64_t>(-after, 0);
      return kept > 0 && before <= kept && after <= kept;
    }
  }
  return false;
}

}  // namespace

Status pad(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<PadParams>(&params);
  RT_CHECK_OR_RETURN(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView& src = in[0];
  TensorView& dst = out[0];
  RT_CHECK_OR_RETURN(src.rank == dst.rank && src.dtype == dst.dtype, Status::InvalidArgument);
  for (int d = 0; d < src.rank; ++d) {
    RT_CHECK_OR_RETURN(dim_is_valid(p->mode, src.sizes[d], p->before[d], p->after[d], dst.sizes[d]),
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
