#include "runtime/ops/dispatch.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "runtime/core/thread_pool.h"

namespace ember {

Status check_same_device(Span<const Tensor> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (first == nullptr) {
      first = &t;
    } else {
      EMBER_CHECK(t.device() == first->device(), Status::DeviceMismatch,
                  "Expected all tensors to be on the same device, but found at least two devices, ",
                  first->device(), " and ", t.device(), "!");
    }
  }
  return Status::Ok;
}

namespace {
// Per-thread scratch for kernels that ask for a workspace; grows, never shrinks.
struct Scratch {
  std::unique_ptr<std::byte[]> data;
  size_t bytes = 0;
  void* reserve(size_t n) {
    if (n > bytes) {
      data.reset(new std::byte[n + kTensorTailPadding]);
      bytes = n;
    }
    return data.get();
  }
};

// A device backend's scratch: allocated for one kernel and released after it.
// Device backends run their work in order on one queue, so memory released
// while the kernel's work is still queued is reused only by work queued later.
class DeviceScratch {
 public:
  explicit DeviceScratch(Backend* backend) : backend_(backend) {}
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  ~DeviceScratch() {
    if (buffer_.data != nullptr) backend_->release(buffer_);
  }
  Status allocate(size_t bytes, void** data) {
    Result<Buffer> b = backend_->allocate(bytes, 256);
    EMBER_CHECK(b.ok(), b.status(), "allocating ", bytes, " bytes of ", backend_->name(), " scratch failed",
                backend_error_detail(*backend_));
    buffer_ = b.get();
    *data = buffer_.data;
    return Status::Ok;
  }

 private:
  Backend* backend_;
  Buffer buffer_;
};

}  // namespace

Status run_kernel(OpKind op, std::initializer_list<Tensor> inputs, std::initializer_list<Tensor> outputs,
                const OpParams& params) {
  // The operands, on the stack for up to kInline of them (a heap allocation
  // per call was a few percent of small models' runs: an LSTM's 769 nodes).
  constexpr size_t kInline = 6;
  const size_t n = inputs.size() + outputs.size();
  Tensor inline_all[kInline];
  TensorView inline_views[kInline];
  std::vector<Tensor> heap_all;
  std::vector<TensorView> heap_views;
  Tensor* all = inline_all;
  TensorView* views = inline_views;
  if (n > kInline) {
    heap_all.resize(n);
    heap_views.resize(n);
    all = heap_all.data();
    views = heap_views.data();
  }
  std::copy(outputs.begin(), outputs.end(), std::copy(inputs.begin(), inputs.end(), all));
  EMBER_TRY(check_same_device(Span<const Tensor>(all, n)));
  const Tensor* key = nullptr;
  for (size_t i = 0; i < n && key == nullptr; ++i) {
    if (all[i].defined()) key = &all[i];
  }
  EMBER_ASSERT(key != nullptr, "run_kernel without tensors");
  const Device device = key->device();
  Backend* backend = get_backend(device.type());
  EMBER_CHECK(backend != nullptr, Status::NotSupported, "ember is not built with support for ",
              device_type_name(device.type()), " devices");
  const KernelEntry* kernel = backend->find_kernel(op, key->dtype());
  EMBER_CHECK(kernel != nullptr, Status::NotSupported, "\"", op_name(op), "\" not implemented for '",
              dtype_legacy_name(key->dtype()), "' on ", backend->name());

  if (kernel->contiguous_inputs) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (all[i].defined() && !all[i].is_contiguous()) {
        EMBER_ASSIGN_OR_RETURN(all[i], core::contiguous(all[i]));
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    views[i] = TensorView{};
    if (all[i].defined()) {
      EMBER_ASSIGN_OR_RETURN(views[i], core::kernel_view(all[i]));  // fails above kMaxRank dims
    }
  }
  const Span<const TensorView> in(views, inputs.size());
  const Span<TensorView> out(views + inputs.size(), outputs.size());

  KernelContext ctx;
  ctx.num_threads = get_num_threads();
  DeviceScratch device_scratch(backend);
  if (kernel->workspace != nullptr) {
    ctx.scratch_bytes = kernel->workspace(in, Span<const TensorView>(out.data(), out.size()), params);
    if (backend->device_type() == DeviceType::CPU) {
      thread_local Scratch scratch;
      ctx.scratch = scratch.reserve(ctx.scratch_bytes);
    } else if (ctx.scratch_bytes > 0) {
      EMBER_TRY(device_scratch.allocate(ctx.scratch_bytes, &ctx.scratch));
    }
  }
  const Status status = kernel->fn(ctx, in, out, params);
  EMBER_CHECK(status == Status::Ok, status, "kernel \"", op_name(op), "\" on ", backend->name(),
              " failed: ", status_name(status), backend_error_detail(*backend));
  return Status::Ok;
}

}  // namespace ember
