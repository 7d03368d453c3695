// Loss functions (torch.nn.functional), composed from differentiable forward
// ops so autograd needs no rules of its own. Semantics, dtypes and messages
// follow PyTorch 1.13.
#pragma once

#include <cstdint>

#include "runtime/tensor/tensor.h"

namespace ember::nn {

enum class Reduction { None, Mean, Sum };

// Mean squared error (input - target)^2; input and target broadcast.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

// Mean absolute error |input - target|; input and target broadcast.
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

// Negative log likelihood of log-probabilities `input` ([C], [N, C] or
// [N, C, d1, ...]) at int64 class indices `target` ([], [N] or [N, d1, ...]).
// `weight` (optional, [C]) rescales each class; targets equal to ignore_index
// contribute nothing. Mean divides by the summed weights of the counted targets.
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                int64_t ignore_index = -100, Reduction reduction = Reduction::Mean);

// log_softmax over the class dim (0 for 1-D input, else 1) followed by
// nll_loss. A target of the same shape as input holds class probabilities.
// label_smoothing in [0, 1] mixes in the uniform distribution as torch does.
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                     int64_t ignore_index = -100, Reduction reduction = Reduction::Mean,
                     double label_smoothing = 0.0);

// Sigmoid + binary cross entropy in torch's numerically stable form. `weight`
// broadcasts to the loss, `pos_weight` (per class, last dim) weights positives.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = Tensor(),
                                        const Tensor& pos_weight = Tensor(),
                                        Reduction reduction = Reduction::Mean);

}  // namespace ember::nn
