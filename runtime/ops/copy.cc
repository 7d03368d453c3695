// copy_, fill_ and moving data between devices.
#include <cstring>

#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {

namespace {
// True when writing `dst` could overlap itself (stride 0 over a dim of size > 1),
// as for an expanded tensor. PyTorch refuses such in-place writes.
bool has_internal_overlap(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.strides()[d] == 0 && t.sizes()[d] > 1) return true;
  }
  return false;
}
}  // namespace

Status check_writable(const Tensor& t) {
  EMBER_CHECK(!has_internal_overlap(t), Status::InvalidArgument,
              "unsupported operation: more than one element of the written-to tensor refers to a "
              "single memory location. Please clone() the tensor before performing the operation.");
  return Status::Ok;
}

Status copy_into(const Tensor& dst, const Tensor& src) {
  EMBER_TRY(check_writable(dst));
  EMBER_TRY(core::broadcast_shapes(dst.sizes(), src.sizes()));  // PyTorch's message for incompatible shapes
  Tensor source = src.expand(dst.sizes());  // broadcastable: cannot fail
  if (source.device() == dst.device()) {
    // A source that overlaps the destination's memory is copied out first.
    if (source.storage() == dst.storage() && !source.is_same(dst)) source = source.clone();
    return run_kernel(OpKind::Copy, {source}, {dst});
  }
  // Between devices: through a contiguous host staging tensor of the source dtype.
  const Tensor packed = source.contiguous();
  Backend* from = get_backend(packed.device().type());
  Backend* to = get_backend(dst.device().type());
  EMBER_CHECK(from != nullptr && to != nullptr, Status::NotSupported, "ember is not built with support for ",
              device_type_name((from ? dst.device() : packed.device()).type()), " devices");
  const size_t bytes = packed.nbytes();
  std::vector<std::byte> host(bytes);
  const size_t src_offset = static_cast<size_t>(packed.storage_offset()) * packed.element_size();
  Status st = from->copy_out(Span<std::byte>(host.data(), bytes), packed.storage()->buffer(), src_offset);
  EMBER_CHECK(st == Status::Ok, st, "copy from ", packed.device().str(), " failed: ", status_name(st),
              backend_error_detail(*from));
  // A contiguous destination of the same dtype takes the bytes directly;
  // otherwise they land in a staging tensor on its device, then a Copy kernel.
  const bool direct = dst.is_contiguous() && dst.dtype() == packed.dtype();
  Tensor staged = direct ? dst : empty(dst.sizes(), TensorOptions(packed.dtype()).device(dst.device()));
  Buffer dst_buffer = staged.storage()->buffer();
  const size_t dst_offset = static_cast<size_t>(staged.storage_offset()) * staged.element_size();
  st = to->copy_in(dst_buffer, dst_offset, Span<const std::byte>(host.data(), bytes));
  EMBER_CHECK(st == Status::Ok, st, "copy to ", dst.device().str(), " failed: ", status_name(st),
              backend_error_detail(*to));
  return direct ? Status::Ok : run_kernel(OpKind::Copy, {staged}, {dst});
}

Status fill_into(const Tensor& dst, Scalar value) {
  EMBER_TRY(check_writable(dst));
  return run_kernel(OpKind::Fill, {}, {dst}, ScalarParams{value});
}

Status check_defined(const Tensor& t, const char* op, const char* arg) {
  EMBER_CHECK(t.defined(), Status::InvalidState, op, "(): ", arg,
              " is an undefined tensor (as grad() is before the first backward, or after "
              "zero_grad(set_to_none=true))");
  return Status::Ok;
}

Status core::copy_(const Tensor& self, const Tensor& src) {
  EMBER_TRY(check_defined(self, "copy_", "self"));
  EMBER_TRY(check_defined(src, "copy_", "src"));
  autograd::check_inplace(self);
  {
    NoGradGuard no_grad;
    EMBER_TRY(copy_into(self, src));
  }
  self.storage()->bump_version();
  autograd::record_inplace(GradRule::Copy, self, {self, src});
  return Status::Ok;
}

Tensor& Tensor::copy_(const Tensor& src) {
  unwrap(core::copy_(*this, src));
  return *this;
}

Tensor& Tensor::fill_(Scalar value) {
  unwrap(check_defined(*this, "fill_", "self"));
  autograd::check_inplace(*this);
  unwrap(fill_into(*this, value));
  storage()->bump_version();
  autograd::record_inplace(GradRule::Fill, *this, {*this});
  return *this;
}

Tensor& Tensor::zero_() {
  unwrap(check_defined(*this, "zero_", "self"));
  autograd::check_inplace(*this);
  unwrap(fill_into(*this, 0));
  storage()->bump_version();
  autograd::record_inplace(GradRule::Zero, *this, {*this});
  return *this;
}

}  // namespace ember
