// Losses composed from forward ops (their autograd rules give the backward).
// The checks mirror PyTorch 1.13's, in its order, with its messages.
#include "runtime/nn/loss.h"

#include <limits>
#include <string>
#include <vector>

#include "runtime/amp/autocast.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/ops.h"

namespace ember::nn {
namespace {

Tensor reduce(const Tensor& loss, Reduction reduction) {
  switch (reduction) {
    case Reduction::Mean: return loss.mean();
    case Reduction::Sum: return loss.sum();
    case Reduction::None: break;
  }
  return loss;
}

// torch's refusal of a gradient it has no formula for.
void check_not_differentiable(const Tensor& t, const char* function, const char* argument) {
  EMBER_ENFORCE(!(GradMode::is_enabled() && t.defined() && t.requires_grad()), Status::InvalidArgument,
              "The function '", function, "' is not differentiable with respect to argument '", argument,
              "'. This input cannot have requires_grad True.");
}

std::string size_str(const Tensor& t) { return "torch.Size(" + shape_str(t.sizes()) + ")"; }

// torch's dtype check of log_softmax (floating types but Half on CPU).
void check_log_softmax_dtype(const Tensor& x, int64_t class_dim) {
  const DType d = x.dtype();
  const bool ok = d == DType::Float32 || d == DType::Float64 || d == DType::BFloat16;
  EMBER_ENFORCE(ok, Status::NotSupported, "\"",
              class_dim == x.dim() - 1 ? "log_softmax_lastdim_kernel_impl" : "softmax_kernel_impl",
              "\" not implemented for '", dtype_legacy_name(d), "'");
}

// The per-element loss -w[t] * input[t] (0 where ignored) and the weights w[t]
// (0 where ignored), both shaped like the target (the class dim removed), and
// the one-hot mask of the picked classes (input's shape). Computed without
// recording: nll_reduce records one NllLossBackward0 node, as torch does.
struct NllParts {
  Tensor loss;
  Tensor weights;
  Tensor mask;
  int64_t class_dim = 0;
};

// Validates as at::nll_loss_nd does and returns the unreduced parts.
NllParts nll_parts(const Tensor& input, Tensor target, const Tensor& weight, int64_t ignore_index) {
  EMBER_ENFORCE(input.dim() >= 1, Status::InvalidArgument, "Expected 1 or more dimensions (got ", input.dim(),
              ")");
  const int64_t target_batch = target.dim() == 0 ? 0 : target.size(0);
  EMBER_ENFORCE(input.dim() == 1 || input.size(0) == target_batch, Status::ShapeMismatch,
              "Expected input batch_size (", input.size(0), ") to match target batch_size (", target_batch,
              ").");
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  const int64_t n_classes = input.size(class_dim);
  const bool spatial = input.dim() > 2;
  if (!spatial) {
    EMBER_ENFORCE(target.dim() <= 1, Status::ShapeMismatch,
                "0D or 1D target tensor expected, multi-target not supported");
    const bool no_batch_dim = input.dim() == 1 && target.dim() == 0;
    EMBER_ENFORCE(no_batch_dim || input.size(0) == target.size(0), Status::ShapeMismatch,
                "size mismatch (got input: ", shape_str(input.sizes()), ", target: ", shape_str(target.sizes()),
                ")");
    EMBER_ENFORCE(!weight.defined() || (weight.dim() == 1 && weight.numel() == n_classes), Status::ShapeMismatch,
                "weight tensor should be defined either for all ", n_classes,
                " classes or no classes but got weight tensor of shape: ", shape_str(weight.sizes()));
  } else {
    if (input.dim() != 4) {
      Shape expected{input.size(0)};
      expected.insert(expected.end(), input.sizes().begin() + 2, input.sizes().end());
      const bool same = target.dim() >= 1 && Shape(target.sizes().begin() + 1, target.sizes().end()) ==
                                                 Shape(input.sizes().begin() + 2, input.sizes().end());
      EMBER_ENFORCE(same, Status::ShapeMismatch, "Expected target size ", shape_str(expected), ", got ",
                  shape_str(target.sizes()));
    } else {
      EMBER_ENFORCE(target.dim() == 3, Status::ShapeMismatch,
                  "only batches of spatial targets supported (3D tensors) but got targets of dimension: ",
                  target.dim());
    }
    EMBER_ENFORCE(!weight.defined() || weight.numel() == n_classes, Status::ShapeMismatch,
                "weight tensor should be defined either for all or no classes");
    if (input.dim() == 4) {
      const bool same = input.size(0) == target.size(0) && input.size(2) == target.size(1) &&
                        input.size(3) == target.size(2);
      EMBER_ENFORCE(same, Status::ShapeMismatch, "size mismatch (got input: ", shape_str(input.sizes()),
                  " , target: ", shape_str(target.sizes()));
    }
  }
  // The kernel's dtype checks: input, then weight, then target.
  const DType d = input.dtype();
  EMBER_ENFORCE(d == DType::Float32 || d == DType::Float64 || d == DType::BFloat16, Status::NotSupported, "\"",
              spatial ? "nll_loss2d_forward_out_frame" : "nll_loss_out_frame", "\" not implemented for '",
              dtype_legacy_name(d), "'");
  EMBER_ENFORCE(!weight.defined() || weight.dtype() == d, Status::DTypeMismatch, "expected scalar type ",
              dtype_legacy_name(d), " but found ", dtype_legacy_name(weight.dtype()));
  const bool byte_ok = !spatial && target.dtype() == DType::UInt8;
  EMBER_ENFORCE(target.dtype() == DType::Int64 || byte_ok, Status::DTypeMismatch,
              "expected scalar type Long but found ", dtype_legacy_name(target.dtype()));
  if (target.dtype() != DType::Int64) target = target.to(DType::Int64);
  // A 1-D input reads only the first target.
  if (input.dim() == 1 && target.dim() == 1) target = target.select(0, 0);
  for (int64_t t : target.to_vector<int64_t>()) {
    EMBER_ENFORCE(t == ignore_index || (t >= 0 && t < n_classes), Status::OutOfRange, "Target ", t,
                " is out of bounds.");
  }

  // Pick input[t] with a one-hot mask (ignored targets become -1: no class).
  const Tensor valid = ember::ne(target, Scalar(ignore_index));
  Tensor mask;
  {
    NoGradGuard no_grad;
    Shape class_shape(static_cast<size_t>(input.dim()), 1);
    class_shape[static_cast<size_t>(class_dim)] = n_classes;
    const Tensor classes = arange(n_classes, TensorOptions(DType::Int64).device(input.device())).view(class_shape);
    const Tensor safe = ember::where(valid, target, Scalar(int64_t{-1}));
    mask = ember::eq(classes, safe.unsqueeze(class_dim));
  }
  const Tensor picked = ember::sum(ember::where(mask, input, Scalar(0.0)), {class_dim});
  Tensor weights;
  if (weight.defined()) {
    Shape class_shape(static_cast<size_t>(input.dim()), 1);
    class_shape[static_cast<size_t>(class_dim)] = n_classes;
    NoGradGuard no_grad;  // torch gives no gradient for the class weights
    weights = ember::sum(ember::where(mask, weight.detach().reshape(class_shape), Scalar(0.0)), {class_dim});
  } else {
    weights = valid.to(d);
  }
  return {-picked * weights, weights, mask, class_dim};
}

NllParts nll_parts_no_grad(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index) {
  check_not_differentiable(weight, "nll_loss_forward", "weight");
  NoGradGuard no_grad;
  return nll_parts(input, target, weight, ignore_index);
}

// The reduced loss, recorded as one NllLossBackward0 node reading the mask and the weights.
Tensor nll_reduce(const Tensor& input, const NllParts& parts, Reduction reduction) {
  Tensor out;
  {
    NoGradGuard no_grad;
    switch (reduction) {
      case Reduction::Mean: out = parts.loss.sum() / parts.weights.sum(); break;
      case Reduction::Sum: out = parts.loss.sum(); break;
      case Reduction::None: out = parts.loss; break;
    }
  }
  if (Node* n = autograd::record(GradRule::NllLoss, out, {input})) {
    n->save(parts.mask).save(parts.weights);
    n->ints = {parts.class_dim, static_cast<int64_t>(reduction)};
  }
  return out;
}

}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (amp::Cast c = amp::autocast(amp::Op::MseLoss, {input, target})) return mse_loss(c[0], c[1], reduction);
  const Shape shape = broadcast_shapes(input.sizes(), target.sizes());
  const DType d = result_type(std::vector<Tensor>{input, target});
  EMBER_ENFORCE(is_floating(d), Status::NotSupported, "\"mse_cpu\" not implemented for '", dtype_legacy_name(d),
              "'");
  Tensor out;
  {
    NoGradGuard no_grad;
    const Tensor diff = input.expand(shape) - target.expand(shape);
    out = reduce(diff * diff, reduction);
  }
  if (Node* n = autograd::record(GradRule::MseLoss, out, {input, target})) {
    n->save(input).save(target);
    n->ints = {static_cast<int64_t>(reduction)};
  }
  return out;
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (amp::Cast c = amp::autocast(amp::Op::L1Loss, {input, target})) return l1_loss(c[0], c[1], reduction);
  const Shape shape = broadcast_shapes(input.sizes(), target.sizes());
  return reduce(ember::abs(input.expand(shape) - target.expand(shape)), reduction);
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                Reduction reduction) {
  if (amp::Cast c = amp::autocast(amp::Op::NllLoss, {input, target, weight})) {
    return nll_loss(c[0], c[1], c[2], ignore_index, reduction);
  }
  return nll_reduce(input, nll_parts_no_grad(input, target, weight, ignore_index), reduction);
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                     Reduction reduction, double label_smoothing) {
  if (amp::Cast c = amp::autocast(amp::Op::CrossEntropy, {input, target, weight})) {
    return cross_entropy(c[0], c[1], c[2], ignore_index, reduction, label_smoothing);
  }
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  if (input.sizes() == target.sizes()) {  // class probabilities
    EMBER_ENFORCE(target.is_floating_point(), Status::DTypeMismatch,
                "Expected floating point type for target with class probabilities, got ",
                dtype_legacy_name(target.dtype()));
    EMBER_ENFORCE(ignore_index < 0, Status::InvalidArgument, "ignore_index is not supported for floating point target");
    const int64_t n_classes = input.size(class_dim);
    EMBER_ENFORCE(!weight.defined() || (weight.dim() == 1 && weight.numel() == n_classes), Status::ShapeMismatch,
                "cross_entropy: weight tensor should be defined either for all ", n_classes,
                " classes or no classes but got weight tensor of shape: ", shape_str(weight.sizes()));
    check_log_softmax_dtype(input, class_dim);
    const Tensor log_probs = ember::log_softmax(input, class_dim);
    Tensor probs = target;
    if (label_smoothing > 0.0) {
      EMBER_ENFORCE(label_smoothing <= 1.0, Status::InvalidArgument,
                  "label_smoothing must be between 0.0 and 1.0. Got: ", label_smoothing);
      probs = target * (1 - label_smoothing) + label_smoothing / static_cast<double>(n_classes);
    }
    Tensor terms = log_probs * probs;
    if (weight.defined()) {
      Shape class_shape(static_cast<size_t>(input.dim()), 1);
      class_shape[static_cast<size_t>(class_dim)] = n_classes;
      terms = terms * (input.dim() > 1 ? weight.view(class_shape) : weight);
    }
    switch (reduction) {
      case Reduction::Mean:
        if (input.numel() == 0) return -terms.sum() * std::numeric_limits<double>::quiet_NaN();
      {
        Tensor out = -terms.sum() / static_cast<double>(input.numel() / n_classes);
        autograd::rename_grad_fn(out, GradRule::DivScalar);  // torch divides by a C++ number here
        return out;
      }
      case Reduction::Sum: return -terms.sum();
      case Reduction::None: break;
    }
    return -ember::sum(terms, {class_dim});
  }
  if (label_smoothing > 0.0) {
    EMBER_ENFORCE(label_smoothing <= 1.0, Status::InvalidArgument,
                "label_smoothing must be between 0.0 and 1.0. Got: ", label_smoothing);
  }
  if (input.dim() >= 1) check_log_softmax_dtype(input, class_dim);
  const Tensor log_probs = input.dim() >= 1 ? ember::log_softmax(input, class_dim) : input;
  const NllParts parts = nll_parts_no_grad(log_probs, target, weight, ignore_index);
  const Tensor nll = nll_reduce(log_probs, parts, reduction);
  if (!(label_smoothing > 0.0)) return nll;

  // torch's cross_entropy_loss_label_smoothing.
  const int64_t n_classes = log_probs.size(class_dim);
  Tensor smooth;
  if (weight.defined()) {
    Shape class_shape(static_cast<size_t>(log_probs.dim()), 1);
    class_shape[static_cast<size_t>(class_dim)] = n_classes;
    smooth = -ember::sum(log_probs * weight.view(class_shape), {class_dim});
  } else {
    smooth = -ember::sum(log_probs, {class_dim});
  }
  const Tensor counted = log_probs.dim() == 1 && target.dim() == 1 ? target.select(0, 0) : target;
  const Tensor ignore_mask = ember::eq(counted, Scalar(ignore_index));
  smooth = ember::where(ignore_mask, Scalar(0.0), smooth);
  Tensor ret;
  switch (reduction) {
    case Reduction::Mean:
      if (weight.defined()) {
        ret = smooth.sum() / parts.weights.sum();
      } else {
        ret = smooth.sum() / ember::ne(counted, Scalar(ignore_index)).sum();
      }
      break;
    case Reduction::Sum: ret = smooth.sum(); break;
    case Reduction::None: ret = smooth; break;
  }
  return (1 - label_smoothing) * nll + ret * (label_smoothing / static_cast<double>(n_classes));
}

namespace {
// torch's binary_cross_entropy_with_logits forward (its checks and casts).
Tensor bce_with_logits_value(const Tensor& input, const Tensor& target, const Tensor& weight,
                             const Tensor& pos_weight, Reduction reduction) {
  EMBER_ENFORCE(target.sizes() == input.sizes(), Status::ShapeMismatch, "Target size (", size_str(target),
              ") must be the same as input size (", size_str(input), ")");
  // The in-place steps of torch's formula fix what may be cast to what.
  const auto cast_error = [](DType result, DType out) {
    raise_error(Status::DTypeMismatch, str_cat("result type ", dtype_legacy_name(result),
                                               " can't be cast to the desired output type ",
                                               dtype_legacy_name(out)));
  };
  if (!target.is_floating_point()) {
    const DType r = result_type(std::vector<Tensor>{target, input});
    if (r != target.dtype()) cast_error(r, target.dtype());
    cast_error(kDefaultFloat, input.dtype());
  }
  if (!input.is_floating_point()) cast_error(kDefaultFloat, input.dtype());
  const auto check_inplace_shape = [&](IntArrayRef other) {
    const Shape b = broadcast_shapes(input.sizes(), other);
    EMBER_ENFORCE(b == input.sizes(), Status::ShapeMismatch, "output with shape ", shape_str(input.sizes()),
                " doesn't match the broadcast shape ", shape_str(b));
  };
  Tensor log_weight;
  if (pos_weight.defined()) {
    const Shape b = broadcast_shapes(pos_weight.sizes(), target.sizes());
    check_inplace_shape(b);
    log_weight = (pos_weight - 1) * target + 1;
  }
  if (weight.defined()) check_inplace_shape(weight.sizes());

  const Tensor max_val = ember::clamp(-input, Scalar(0), std::nullopt);
  const Tensor log_term = ember::log(ember::exp(-max_val) + ember::exp(-input - max_val));
  Tensor loss;
  if (pos_weight.defined()) {
    loss = (1 - target) * input + log_weight * (log_term + max_val);
  } else {
    loss = (1 - target) * input + max_val + log_term;
  }
  if (loss.dtype() != target.dtype()) loss = loss.to(target.dtype());
  if (weight.defined()) {
    loss = loss * weight;
    if (loss.dtype() != target.dtype()) loss = loss.to(target.dtype());
  }
  return reduce(loss, reduction);
}
}  // namespace

// One BinaryCrossEntropyWithLogitsBackward0 node: gradients for input and
// target (torch has none for weight and pos_weight).
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        const Tensor& pos_weight, Reduction reduction) {
  if (amp::Cast c = amp::autocast(amp::Op::BinaryCrossEntropyWithLogits, {input, target, weight, pos_weight})) {
    return binary_cross_entropy_with_logits(c[0], c[1], c[2], c[3], reduction);
  }
  check_not_differentiable(weight, "binary_cross_entropy_with_logits", "weight");
  check_not_differentiable(pos_weight, "binary_cross_entropy_with_logits", "pos_weight");
  Tensor out;
  {
    NoGradGuard no_grad;
    out = bce_with_logits_value(input, target, weight, pos_weight, reduction);
  }
  if (Node* n = autograd::record(GradRule::BceWithLogits, out, {input, target})) {
    n->save(input).save(target).save(weight).save(pos_weight);
    n->ints = {static_cast<int64_t>(reduction)};
  }
  return out;
}

}  // namespace ember::nn
