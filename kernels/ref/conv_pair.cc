// Reference Conv2dPair (a run-time op, ops.def): the reference conv2d twice,
// each output activated as its Conv2dParams says (activate(), op_params.h):
//   mid = act1(conv2d(x, w1, b1)), out = act2(conv2d(mid, w2, b2)),
// mid a float32 tensor of its own, as the two ops' output is.
#include <vector>

#include "kernels/ref/ref_kernels.h"

namespace ember::ref {
namespace {

// t = act(t) for every element of a float32 4-D view of any strides.
void activate_all(const TensorView& t, const Activation& a) {
  float* p = t.ptr<float>();
  for (int64_t n = 0; n < t.sizes[0]; ++n) {
    for (int64_t c = 0; c < t.sizes[1]; ++c) {
      for (int64_t h = 0; h < t.sizes[2]; ++h) {
        for (int64_t w = 0; w < t.sizes[3]; ++w) {
          float& v = p[n * t.strides[0] + c * t.strides[1] + h * t.strides[2] + w * t.strides[3]];
          v = activate(v, a);
        }
      }
    }
  }
}

}  // namespace

Status conv2d_pair(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<Conv2dPairParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 5 && out.size() == 1 && in[0].rank == 4 && in[1].rank == 4,
              Status::InvalidArgument);
  const TensorView& x = in[0];
  TensorView mid;
  mid.dtype = DType::Float32;
  mid.rank = 4;
  const int64_t sizes[4] = {x.sizes[0], in[1].sizes[0], x.sizes[2], x.sizes[3]};
  int64_t stride = 1;
  for (int d = 3; d >= 0; --d) {
    mid.sizes[d] = sizes[d];
    mid.strides[d] = stride;
    stride *= sizes[d];
  }
  std::vector<float> values(static_cast<size_t>(stride));
  mid.data = values.data();
  const TensorView first[3] = {x, in[1], in[2]}, second[3] = {mid, in[3], in[4]};
  EMBER_TRY(check_conv2d_args(first, Span<TensorView>(&mid, 1), &p->pointwise, dtype_bit(DType::Float32)));
  EMBER_TRY(check_conv2d_args(second, out, &p->depthwise, dtype_bit(DType::Float32)));
  EMBER_TRY(conv2d(ctx, first, Span<TensorView>(&mid, 1), p->pointwise));
  activate_all(mid, p->pointwise.activation);
  EMBER_TRY(conv2d(ctx, second, out, p->depthwise));
  activate_all(out[0], p->depthwise.activation);
  return Status::Ok;
}

}  // namespace ember::ref
