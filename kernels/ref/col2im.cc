// Reference Col2Im (Col2ImParams) and MaxUnpool (MaxUnpoolParams), as
// onnx.reference computes them. Col2Im: every column value added at its image
// position (those in the padding dropped), accumulated in double. MaxUnpool:
// zeros, then each input value written at its flat index into the unpooled
// block at the start of the output (a later duplicate index wins). Any strides.
#include <cstring>

#include "kernels/ref/ref_kernels.h"

namespace ember::ref {
namespace {

template <typename T>
void col2im_loop(const TensorView& x, const TensorView& o, const Col2ImParams& p, double* acc) {
  using C = compute_t<T>;
  const int nd = static_cast<int>(p.dims);
  int64_t blocks[kMaxRank] = {}, kvol = 1, img = 1;
  for (int d = 0; d < nd; ++d) {
    blocks[d] =
        (p.image[d] + p.pads_begin[d] + p.pads_end[d] - p.dilations[d] * (p.block[d] - 1) - 1) / p.strides[d] + 1;
    kvol *= p.block[d];
    img *= p.image[d];
  }
  const T* px = x.ptr<const T>();
  T* po = o.ptr<T>();
  const int64_t channels = o.sizes[1], cols = x.sizes[2];
  for (int64_t n = 0; n < o.sizes[0]; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t i = 0; i < img; ++i) acc[i] = 0.0;
      for (int64_t k = 0; k < kvol; ++k) {
        for (int64_t l = 0; l < cols; ++l) {
          int64_t kr = k, lr = l, pos = 0, scale = 1;
          bool inside = true;
          for (int d = nd - 1; d >= 0 && inside; --d) {
            const int64_t kd = kr % p.block[d], ld = lr % blocks[d];
            kr /= p.block[d];
            lr /= blocks[d];
            const int64_t at = ld * p.strides[d] - p.pads_begin[d] + kd * p.dilations[d];
            inside = at >= 0 && at < p.image[d];
            pos += at * scale;
            scale *= p.image[d];
          }
          if (!inside) continue;
          acc[pos] += static_cast<double>(
              static_cast<C>(px[n * x.strides[0] + (c * kvol + k) * x.strides[1] + l * x.strides[2]]));
        }
      }
      for (int64_t i = 0; i < img; ++i) {
        int64_t rest = i, off = n * o.strides[0] + c * o.strides[1];
        for (int d = nd - 1; d >= 0; --d) {
          off += (rest % p.image[d]) * o.strides[2 + d];
          rest /= p.image[d];
        }
        po[off] = static_cast<T>(static_cast<C>(acc[i]));
      }
    }
  }
}

int64_t col2im_image_size(const Col2ImParams& p) {
  int64_t img = 1;
  for (int64_t d = 0; d < p.dims; ++d) img *= p.image[d];
  return img;
}

}  // namespace

size_t col2im_workspace(Span<const TensorView>, Span<const TensorView>, const OpParams& params) {
  const auto* p = std::get_if<Col2ImParams>(&params);
  return p != nullptr && p->valid() ? static_cast<size_t>(col2im_image_size(*p)) * sizeof(double) : 0;
}

Status col2im(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<Col2ImParams>(&params);
  EMBER_CHECK(p != nullptr && p->valid() && !in.empty() && out.size() == 1, Status::InvalidArgument);
  const TensorView &x = in[0], &o = out[0];
  EMBER_CHECK(x.dtype == o.dtype && (kFloatingTypes & dtype_bit(x.dtype)), Status::DTypeMismatch);
  const int nd = static_cast<int>(p->dims);
  EMBER_CHECK(x.rank == 3 && o.rank == nd + 2 && nd >= 1, Status::InvalidArgument);
  int64_t kvol = 1, cols = 1;
  for (int d = 0; d < nd; ++d) {
    EMBER_CHECK(o.sizes[2 + d] == p->image[d] && p->block[d] >= 1, Status::ShapeMismatch);
    kvol *= p->block[d];
    const int64_t span = p->image[d] + p->pads_begin[d] + p->pads_end[d] - p->dilations[d] * (p->block[d] - 1) - 1;
    EMBER_CHECK(span >= 0, Status::ShapeMismatch);
    cols *= span / p->strides[d] + 1;
  }
  EMBER_CHECK(x.sizes[0] == o.sizes[0] && x.sizes[1] == o.sizes[1] * kvol && x.sizes[2] == cols,
                     Status::ShapeMismatch);
  if (o.numel() == 0) return Status::Ok;
  auto* acc = static_cast<double*>(ctx.scratch);
  EMBER_CHECK(acc != nullptr && ctx.scratch_bytes >= static_cast<size_t>(col2im_image_size(*p)) * sizeof(double),
                     Status::Internal);
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T>) col2im_loop<T>(x, o, *p, acc);
  });
  return Status::Ok;
}

Status max_unpool(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<MaxUnpoolParams>(&params);
  EMBER_CHECK(p != nullptr && p->valid() && in.size() >= 2 && out.size() == 1, Status::InvalidArgument);
  const TensorView &x = in[0], &idx = in[1], &o = out[0];
  EMBER_CHECK(x.dtype == o.dtype && idx.dtype == DType::Int64 && (kFloatingTypes & dtype_bit(x.dtype)),
                     Status::DTypeMismatch);
  const int nd = static_cast<int>(p->dims);
  EMBER_CHECK(x.rank == nd + 2 && idx.rank == x.rank && o.rank == x.rank, Status::InvalidArgument);
  int64_t un[kMaxRank] = {x.sizes[0], x.sizes[1]}, total = x.sizes[0] * x.sizes[1];
  for (int d = 0; d < nd; ++d) {
    un[2 + d] = p->unpooled(d, x.sizes[2 + d]);
    EMBER_CHECK(un[2 + d] >= 0 && un[2 + d] <= o.sizes[2 + d], Status::ShapeMismatch);
    total *= un[2 + d];
  }
  for (int d = 0; d < x.rank; ++d) EMBER_CHECK(idx.sizes[d] == x.sizes[d], Status::ShapeMismatch);
  EMBER_CHECK(o.sizes[0] == x.sizes[0] && o.sizes[1] == x.sizes[1], Status::ShapeMismatch);
  const int64_t count = x.numel();
  // Every index in range before anything is written.
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, ioff = 0;
    for (int d = x.rank - 1; d >= 0; --d) {
      ioff += (rest % x.sizes[d]) * idx.strides[d];
      rest /= x.sizes[d];
    }
    const int64_t v = idx.ptr<const int64_t>()[ioff];
    EMBER_CHECK(v >= 0 && v < total, Status::OutOfRange);
  }
  const size_t esize = element_size(o.dtype);
  auto* po = static_cast<std::byte*>(o.data);
  auto out_offset = [&](int64_t flat) {  // flat over the unpooled shape -> element offset in o
    int64_t off = 0;
    for (int d = o.rank - 1; d >= 0; --d) {
      off += (flat % un[d]) * o.strides[d];
      flat /= un[d];
    }
    return off;
  };
  const int64_t on = o.numel();
  for (int64_t i = 0; i < on; ++i) {
    int64_t rest = i, off = 0;
    for (int d = o.rank - 1; d >= 0; --d) {
      off += (rest % o.sizes[d]) * o.strides[d];
      rest /= o.sizes[d];
    }
    std::memset(po + off * static_cast<int64_t>(esize), 0, esize);
  }
  const auto* px = static_cast<const std::byte*>(x.data);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, xoff = 0, ioff = 0;
    for (int d = x.rank - 1; d >= 0; --d) {
      const int64_t c = rest % x.sizes[d];
      rest /= x.sizes[d];
      xoff += c * x.strides[d];
      ioff += c * idx.strides[d];
    }
    const int64_t v = idx.ptr<const int64_t>()[ioff];
    std::memcpy(po + out_offset(v) * static_cast<int64_t>(esize), px + xoff * static_cast<int64_t>(esize), esize);
  }
  return Status::Ok;
}

}  // namespace ember::ref
