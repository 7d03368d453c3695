// Copy (strided, with dtype conversion) and Fill.
#include "runtime/tensor/convert.h"
#include "kernels/ref/loops.h"
#include "kernels/ref/ref_kernels.h"

namespace ember::ref {

Status copy(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams&) {
  const TensorView& src = in[0];
  TensorView& dst = out[0];
  EMBER_CHECK(src.rank == dst.rank, Status::InvalidArgument);
  dispatch_all_dtypes(src.dtype, [&](auto src_tag) {
    using S = typename decltype(src_tag)::type;
    dispatch_all_dtypes(dst.dtype, [&](auto dst_tag) {
      using D = typename decltype(dst_tag)::type;
      for_each_row<2>({&dst, &src}, [](std::array<char*, 2> p, int64_t n, std::array<int64_t, 2> s) {
        for (int64_t i = 0; i < n; ++i) {
          *reinterpret_cast<D*>(p[0] + i * s[0]) = convert<D>(*reinterpret_cast<const S*>(p[1] + i * s[1]));
        }
      });
    });
  });
  return Status::Ok;
}

Status fill(const KernelContext&, Span<const TensorView>, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<ScalarParams>(&params);
  EMBER_CHECK(p != nullptr, Status::InvalidArgument);
  TensorView& dst = out[0];
  dispatch_all_dtypes(dst.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T value = p->value.to<T>();
    for_each_row<1>({&dst}, [&](std::array<char*, 1> ptr, int64_t n, std::array<int64_t, 1> s) {
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(ptr[0] + i * s[0]) = value;
    });
  });
  return Status::Ok;
}

}  // namespace ember::ref
