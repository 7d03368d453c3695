// Declarations of every reference kernel (from kernels.inc).
#pragma once

#include "runtime/backend/backend.h"

namespace ember::ref {

#define RT_KERNEL(op, dtypes, fn)                                                      \
  Status fn(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, \
            const OpParams& params);
#define RT_KERNEL_WS(op, dtypes, fn, ws)                                               \
  RT_KERNEL(op, dtypes, fn)                                                            \
  size_t ws(Span<const TensorView> in, Span<const TensorView> out, const OpParams& params);
#include "kernels/ref/kernels.inc"
#undef RT_KERNEL
#undef RT_KERNEL_WS

// ConvTranspose's operands agree with its params (shared with the CPU kernel).
bool conv_transpose_shapes_ok(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& o,
                              const ConvTransposeParams& p);

// Recurrence's operands (8 inputs, 3 outputs, absent ones with null data)
// agree with its params (shared with the CPU kernel).
bool recurrence_shapes_ok(Span<const TensorView> in, Span<const TensorView> out, const RecurrenceParams& p);

// ScaledDotProductAttention's operands: q [*, L, E], k [*, S, E], v [*, S, Ev],
// mask [*, L, S] (or null data), out [*, L, Ev], one floating dtype, the
// leading dims equal (the front-end expands them; shared with the CPU kernel).
bool attention_shapes_ok(Span<const TensorView> in, const TensorView& out);

// The weights of the reference QLinear / QConv2d kernels: kept unpacked.
Result<std::shared_ptr<const PreparedWeight>> prepare_weight(OpKind op, const WeightDesc& w);

// The argument checks a Conv2d / GridSample kernel makes, shared by every
// backend's kernel (the dtypes it takes: `dtypes`).
inline Status check_conv2d_args(Span<const TensorView> in, Span<TensorView> out, const Conv2dParams* p,
                                DTypeSet dtypes) {
  EMBER_CHECK(in.size() == 3 && out.size() == 1 && p != nullptr && p->groups > 0, Status::InvalidArgument);
  const TensorView &x = in[0], &w = in[1], &bias = in[2], &o = out[0];
  EMBER_CHECK(x.rank == 4 && w.rank == 4 && o.rank == 4, Status::InvalidArgument);
  EMBER_CHECK(x.dtype == w.dtype && x.dtype == o.dtype && (dtypes & dtype_bit(x.dtype)), Status::DTypeMismatch);
  EMBER_CHECK(bias.data == nullptr || (bias.rank == 1 && bias.dtype == x.dtype && bias.sizes[0] == o.sizes[1]),
                     Status::InvalidArgument);
  EMBER_CHECK(o.sizes[0] == x.sizes[0] && o.sizes[1] == w.sizes[0] && o.sizes[1] % p->groups == 0 &&
                         x.sizes[1] == w.sizes[1] * p->groups,
                     Status::ShapeMismatch);
  return Status::Ok;
}

inline Status check_grid_sample_args(Span<const TensorView> in, Span<TensorView> out, const GridSampleParams* p,
                                     DTypeSet dtypes) {
  EMBER_CHECK(p != nullptr && p->valid() && in.size() == 2 && out.size() == 1, Status::InvalidArgument);
  const TensorView &x = in[0], &grid = in[1], &o = out[0];
  EMBER_CHECK(x.dtype == grid.dtype && x.dtype == o.dtype && (dtypes & dtype_bit(x.dtype)),
                     Status::DTypeMismatch);
  EMBER_CHECK((x.rank == 4 || x.rank == 5) && grid.rank == x.rank && o.rank == x.rank, Status::InvalidArgument);
  const int nd = x.rank - 2;
  EMBER_CHECK(
      grid.sizes[0] == x.sizes[0] && grid.sizes[nd + 1] == nd && o.sizes[0] == x.sizes[0] && o.sizes[1] == x.sizes[1],
      Status::ShapeMismatch);
  for (int i = 0; i < nd; ++i) {
    EMBER_CHECK(o.sizes[2 + i] == grid.sizes[1 + i] && x.sizes[2 + i] > 0, Status::ShapeMismatch);
  }
  return Status::Ok;
}

}  // namespace ember::ref
