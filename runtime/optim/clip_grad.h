// Gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_):
// gradients are changed in place; parameters without a gradient are skipped.
#pragma once

#include <vector>

#include "runtime/tensor/tensor.h"

namespace ember::optim {

// Scales all gradients by min(1, max_norm / (total_norm + 1e-6)), where
// total_norm is the norm_type-norm (INFINITY: max abs) of the per-gradient
// norms, and returns total_norm (0 when no parameter has a gradient). With
// error_if_nonfinite, a NaN or infinite total norm raises torch's error.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient to [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

}  // namespace ember::optim
