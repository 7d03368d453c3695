// scaled_dot_product_attention: torch.nn.functional's, without dropout or
// is_causal: softmax(q @ k^T * scale + attn_mask) @ v over the last two dims,
// the leading dims broadcast, and the mask broadcast with the scores (a mask
// wider than them widens them, as the Add of the ops ember convert fuses
// does; torch refuses it). Where the device's backend has the fused kernel
// (the CPU's float32 one: the scores of a few rows at a time stay in cache
// between the two products) it runs that; with autograd recording, under
// autocast, or on a backend without it, it runs as torch's math path does:
// MatMul, Mul, Add, Softmax and MatMul, whose own rules give the gradients.
#include <cmath>
#include <limits>
#include <string>

#include "runtime/amp/autocast.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {
namespace {

Shape batch_of(const Tensor& t) { return Shape(t.sizes().begin(), t.sizes().end() - 2); }

Shape with(Shape batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

Result<Tensor> attention_math(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale) {
  EMBER_ASSIGN_OR_RETURN(const Tensor kt, core::transpose(k, -2, -1));
  EMBER_ASSIGN_OR_RETURN(Tensor s, core::matmul(q, kt));
  if (scale != 1.0) {
    EMBER_ASSIGN_OR_RETURN(s, core::mul(s, Scalar(scale)));
  }
  if (mask.defined()) {
    EMBER_ASSIGN_OR_RETURN(s, core::add(s, mask));
  }
  EMBER_ASSIGN_OR_RETURN(const Tensor p, core::softmax(s, -1));
  return core::matmul(p, v);
}

}  // namespace

Result<Tensor> core::scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                                  const Tensor& attn_mask, const AttentionParams& params) {
  EMBER_TRY(check_defined(q, "scaled_dot_product_attention", "query"));
  EMBER_TRY(check_defined(k, "scaled_dot_product_attention", "key"));
  EMBER_TRY(check_defined(v, "scaled_dot_product_attention", "value"));
  EMBER_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, Status::InvalidArgument,
              "scaled_dot_product_attention: query, key and value must be at least 2-D, got ", q.dim(), "-D, ",
              k.dim(), "-D and ", v.dim(), "-D");
  EMBER_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), Status::DTypeMismatch,
              "Expected query, key, and value to have the same dtype, but got query.dtype: ", dtype_name(q.dtype()),
              " key.dtype: ", dtype_name(k.dtype()), " and value.dtype: ", dtype_name(v.dtype()), " instead.");
  EMBER_CHECK(is_floating(q.dtype()), Status::NotSupported,
              "scaled_dot_product_attention: expected floating-point query, key and value, got ",
              dtype_name(q.dtype()));
  EMBER_TRY(check_same_device({q, k, v, attn_mask}));
  const int64_t L = q.size(-2), S = k.size(-2), E = q.size(-1), Ev = v.size(-1);
  EMBER_CHECK(k.size(-1) == E, Status::ShapeMismatch, "scaled_dot_product_attention: query's last dim (", E,
              ") and key's (", k.size(-1), ") differ");
  EMBER_CHECK(v.size(-2) == S, Status::ShapeMismatch, "scaled_dot_product_attention: key has ", S,
              " positions (dim -2) and value ", v.size(-2));
  EMBER_ASSIGN_OR_RETURN(Shape batch, core::broadcast_shapes(batch_of(q), batch_of(k)));
  EMBER_ASSIGN_OR_RETURN(batch, core::broadcast_shapes(batch, batch_of(v)));
  const Shape scores = with(batch, L, S);
  Tensor mask = attn_mask;
  bool widened = false;  // a mask of more rows, columns or leading dims than the scores: they broadcast to its
  if (mask.defined()) {
    EMBER_CHECK(mask.dtype() == DType::Bool || mask.dtype() == q.dtype(), Status::DTypeMismatch,
                "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: ",
                dtype_name(mask.dtype()), " and  query.dtype: ", dtype_name(q.dtype()), " instead.");
    EMBER_ASSIGN_OR_RETURN(const Shape b, core::broadcast_shapes(scores, mask.sizes()));
    widened = b != scores;
    if (mask.dtype() == DType::Bool) {  // true: takes part; false: -inf
      EMBER_ASSIGN_OR_RETURN(const Tensor zero, core::zeros({}, TensorOptions(q.dtype()).device(q.device())));
      EMBER_ASSIGN_OR_RETURN(mask, core::where(mask, zero, Scalar(-std::numeric_limits<double>::infinity())));
    }
  }
  const Backend* backend = get_backend(q.device().type());
  const bool fused = backend != nullptr && backend->supports(OpKind::ScaledDotProductAttention, q.dtype()) &&
                     !widened && !autograd::needs_grad({q, k, v, mask}) &&
                     !amp::is_autocast_enabled(q.device().type());
  EMBER_CHECK(!params.transpose_output || batch.size() >= 1, Status::InvalidArgument,
              "scaled_dot_product_attention: transpose_output needs a leading dim (heads) before L");
  if (!fused) {
    EMBER_ASSIGN_OR_RETURN(const Tensor out, attention_math(q, k, v, mask, params.scale));
    if (!params.transpose_output) return out;
    EMBER_ASSIGN_OR_RETURN(const Tensor t, core::transpose(out, -3, -2));
    return core::contiguous(t);
  }
  EMBER_ASSIGN_OR_RETURN(const Tensor qe, core::expand(q, with(batch, L, E)));
  EMBER_ASSIGN_OR_RETURN(const Tensor ke, core::expand(k, with(batch, S, E)));
  EMBER_ASSIGN_OR_RETURN(const Tensor ve, core::expand(v, with(batch, S, Ev)));
  Tensor me;
  if (mask.defined()) {
    EMBER_ASSIGN_OR_RETURN(me, core::expand(mask, scores));
  }
  Shape out_shape = with(batch, L, Ev);
  if (params.transpose_output) std::swap(out_shape[out_shape.size() - 3], out_shape[out_shape.size() - 2]);
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty(out_shape, TensorOptions(q.dtype()).device(q.device())));
  Tensor view = out;  // the kernel's [*, L, Ev] view of it
  if (params.transpose_output) {
    EMBER_ASSIGN_OR_RETURN(view, core::transpose(out, -3, -2));
  }
  EMBER_TRY(run_kernel(OpKind::ScaledDotProductAttention, {qe, ke, ve, me}, {view}, params));
  return out;
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                                    const AttentionParams& params) {
  return unwrap(core::scaled_dot_product_attention(q, k, v, attn_mask, params));
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                                    std::optional<double> scale) {
  AttentionParams p;
  p.scale = scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(q.defined() && q.dim() > 0 ? q.size(-1) : 1));
  return scaled_dot_product_attention(q, k, v, attn_mask, p);
}

}  // namespace ember
