// Dispatch from an op front-end to the kernel of the tensors' device. The
// inference path's form: each returns a Status and leaves a message for the
// thread (error.h); eager-only code calls them through unwrap().
#pragma once

#include <initializer_list>

#include "runtime/backend/backend.h"
#include "runtime/core/error.h"
#include "runtime/graph/op_params.h"
#include "runtime/tensor/tensor.h"

namespace ember {

// Checks that all defined tensors share one device (PyTorch's message), then
// runs the kernel registered for `op` and the dtype key (the first input's
// dtype, or the first output's for ops without inputs). Undefined input tensors
// (optional arguments) reach the kernel as views with data == nullptr.
Status run_kernel(OpKind op, std::initializer_list<Tensor> inputs, std::initializer_list<Tensor> outputs,
                const OpParams& params = NoParams{});

// The kernels behind copy_ and fill_, without autograd and without a version
// bump: for outputs a front-end is still building.
Status copy_into(const Tensor& dst, const Tensor& src);
Status fill_into(const Tensor& dst, Scalar value);

// Fails with PyTorch's message when writing `t` would write one memory location
// twice (an expanded tensor), as PyTorch refuses such in-place writes.
Status check_writable(const Tensor& t);

// Fails with "op(): arg is an undefined tensor ..." (an in-place op on grad()
// before any backward, say) instead of failing deeper down.
Status check_defined(const Tensor& t, const char* op, const char* arg);

// Fails with PyTorch's message unless every defined tensor is on one device.
Status check_same_device(Span<const Tensor> tensors);

}  // namespace ember
