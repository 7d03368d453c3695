// Pad: constant / reflect / replicate / circular padding of every dimension,
// with PyTorch's semantics for negative pads (they crop). The output's index
// along a dimension maps to one input index (or to the constant value); the
// last dim's map is computed once, the others' once per output row.
#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/ref/loops.h"
#include "kernels/ref/pad_index.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/tensor/convert.h"

namespace ember::ref {

Status pad(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<PadParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView& src = in[0];
  TensorView& dst = out[0];
  EMBER_CHECK(src.rank == dst.rank && src.dtype == dst.dtype, Status::InvalidArgument);
  for (int d = 0; d < src.rank; ++d) {
    EMBER_CHECK(pad_dim_is_valid(p->mode, src.sizes[d], p->before[d], p->after[d], dst.sizes[d]),
                       Status::InvalidArgument);
  }
  if (dst.numel() == 0) return Status::Ok;
  // Row by row along the last dim, whose source offsets (kValue: the value)
  // are mapped once; the other dims map once per row.
  constexpr int64_t kValue = std::numeric_limits<int64_t>::min();
  const int last = std::max(dst.rank - 1, 0);
  const int64_t width = dst.rank > 0 ? dst.sizes[last] : 1;
  auto col_of = [&](int64_t j) {
    if (dst.rank == 0) return int64_t{0};
    const int64_t i = pad_source(p->mode, j, src.sizes[last], p->before[last], p->after[last]);
    return i >= 0 ? i * src.strides[last] : kValue;
  };
  // The map, where it is small next to the output (rows wider than 64 Ki map each element).
  std::vector<int64_t> cols(static_cast<size_t>(width <= (int64_t{1} << 16) ? width : 0));
  for (size_t j = 0; j < cols.size(); ++j) cols[j] = col_of(static_cast<int64_t>(j));
  const int64_t ds = dst.rank > 0 ? dst.strides[last] : 0;
  dispatch_dtype(src.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T value = convert<T>(p->value);
    const T* s = src.ptr<const T>();
    T* o = dst.ptr<T>();
    int64_t index[kMaxRank] = {};  // over the dims before the last
    do {
      int64_t src_off = 0;
      bool inside = true;
      for (int d = 0; d < last && inside; ++d) {
        const int64_t i = pad_source(p->mode, index[d], src.sizes[d], p->before[d], p->after[d]);
        inside = i >= 0;
        src_off += i * src.strides[d];
      }
      T* row = o + offset_of(dst, index);
      if (!inside) {
        for (int64_t j = 0; j < width; ++j) row[j * ds] = value;
      } else if (!cols.empty()) {
        const int64_t* map = cols.data();
        for (int64_t j = 0; j < width; ++j) row[j * ds] = map[j] != kValue ? s[src_off + map[j]] : value;
      } else {
        for (int64_t j = 0; j < width; ++j) {
          const int64_t c = col_of(j);
          row[j * ds] = c != kValue ? s[src_off + c] : value;
        }
      }
    } while (next_index(index, dst.sizes, last));
  });
  return Status::Ok;
}

}  // namespace ember::ref
