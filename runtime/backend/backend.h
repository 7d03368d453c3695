// Backend: the one interface a device implements (CPU now; Vulkan and CUDA plug
// in as one folder each under kernels/ without touching any op front-end).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/core/status.h"
#include "runtime/graph/op_kind.h"
#include "runtime/graph/op_params.h"
#include "runtime/tensor/device.h"
#include "runtime/tensor/tensor_view.h"

namespace ember {

struct KernelContext {
  void* scratch = nullptr;     // workspace the kernel asked for (see KernelEntry::workspace)
  size_t scratch_bytes = 0;
  int num_threads = 1;
  void* stream = nullptr;      // backend queue or stream (GPU backends)
};

using KernelFn = Status (*)(const KernelContext& ctx, Span<const TensorView> in,
                            Span<TensorView> out, const OpParams& params);
// Scratch bytes a kernel needs for these arguments (optional; none when null).
using WorkspaceFn = size_t (*)(Span<const TensorView> in, Span<const TensorView> out,
                               const OpParams& params);

// One line of a backend's kernels.inc: the kernel for `op` over the dtypes in
// `dtypes` (the dtype of the first input, or of the output for ops without inputs).
struct KernelEntry {
  OpKind op;
  DTypeSet dtypes;
  KernelFn fn;
  WorkspaceFn workspace = nullptr;
  // The kernel reads only contiguous inputs: run_kernel makes the others
  // contiguous first (a Copy on the same device). Outputs front-ends allocate
  // are contiguous already.
  bool contiguous_inputs = false;
};

struct Buffer {
  void* data = nullptr;   // host-visible address (CPU), or backend handle
  size_t bytes = 0;
  void* handle = nullptr;  // backend-private (VkBuffer, ...)
};

// A weight prepared once by a backend for a run-time op (QLinear, QConv2d,
// SparseLinear: ops.def): packed int8 panels, CSR, device buffers. Opaque above the kernels;
// the backend's kernel for the op reads it from its params. Immutable: shared
// by every thread running the op.
class PreparedWeight {
 public:
  virtual ~PreparedWeight() = default;
  // Bytes it holds (host or device memory).
  virtual size_t bytes() const = 0;
  // The logical weight shape: [N, K] (QLinear, SparseLinear) or [C_out, C_in, kh, kw] (QConv2d).
  std::vector<int64_t> shape;
  // The device whose backend prepared it (its kernels read it).
  DeviceType device = DeviceType::CPU;
};

// What prepare_weight() packs: the weight as the model file stores it.
struct WeightDesc {
  // Dense int8, contiguous: [N, K] or [C_out, C_in, kh, kw]. SparseLinear: the
  // COO values [nnz] (float32, float16 or int8), contiguous.
  TensorView weight;
  // int8 quantization: scales (1: per tensor, or N: per output channel) and,
  // sparse only, zero points (none, or one per scale).
  const float* scales = nullptr;
  size_t num_scales = 0;
  const int64_t* zero_points = nullptr;
  size_t num_zero_points = 0;
  bool per_channel = false;
  bool per_row_activations = false;  // QLinear: the file's ActivationQuant is per row
  TensorView bias;                   // float32 [N], or data == nullptr
  Conv2dParams conv;                 // QConv2d, Conv2d: the geometry
  // Conv2d: the output's height and width when the model fixes them (0: not
  // known before the run), so a backend can choose a layout by size.
  int64_t out_h = 0, out_w = 0;
  // SparseLinear: the COO indices [2, nnz] (int16, int32 or int64, sorted
  // row-major, contiguous) of the [rows, cols] weight.
  TensorView indices;
  int64_t rows = 0, cols = 0;
  // Called once the backend no longer reads `weight` (it holds a packed copy),
  // if it packs later than prepare_weight: the owner may drop the weight's
  // pages then. Null: nothing to call.
  std::function<void()> release_source;
  // Float32 GEMM weights (Conv2d, Linear, MatMul) packed as bfloat16 for a
  // bf16 kernel (Precision::BFloat16 on the CPU); ignored where none runs.
  bool bf16 = false;
  // Conv2d: the activations it reads and writes are channels_last
  // (ExecutorOptions::conv_layout), so a backend can pack for that layout.
  bool channels_last = false;
};

class Backend {
 public:
  static constexpr uint32_t kApiVersion = 1;
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;
  virtual DeviceType device_type() const = 0;
  // Kernels in priority order: the first entry matching (op, dtype) is used.
  virtual Span<const KernelEntry> kernels() const = 0;

  virtual Result<Buffer> allocate(size_t bytes, size_t alignment) = 0;
  virtual void release(Buffer& buffer) = 0;
  virtual Status copy_in(Buffer& dst, size_t offset, Span<const std::byte> src) = 0;
  virtual Status copy_out(Span<std::byte> dst, const Buffer& src, size_t offset) = 0;
  // Several copy_out()s at once: a queued backend submits its work once for
  // all of them (the executor reads a run's outputs back this way).
  struct CopyOut {
    Span<std::byte> dst;
    const Buffer* src = nullptr;
    size_t offset = 0;
  };
  virtual Status copy_out_batch(Span<const CopyOut> copies) {
    for (const CopyOut& c : copies) {
      const Status s = copy_out(c.dst, *c.src, c.offset);
      if (s != Status::Ok) return s;
    }
    return Status::Ok;
  }
  // (optional) waits for queued work; synchronous backends need not override.
  virtual Status synchronize() { return Status::Ok; }
  // (optional) what went wrong in this thread's last failed call, in words
  // ("no Vulkan device found"); error messages append it.
  virtual std::string last_error() const { return {}; }
  // What an opened device can do (executors check it at create).
  struct DeviceInfo {
    std::string device_name;
    bool float16 = false;   // float16 arithmetic and storage
    bool bfloat16 = false;  // bfloat16 storage (arithmetic in float32)
  };
  // (optional) opens the backend's device (driver, device, queues) if it is
  // not open yet; fails, with last_error() saying why, when it cannot.
  virtual Result<DeviceInfo> open() { return DeviceInfo{std::string(name()), false, false}; }
  // (optional) the devices, in the order the backend prefers them, as
  // "name [type]"; fails (last_error() says why) without a driver or device.
  virtual Result<std::vector<std::string>> devices() { return std::vector<std::string>{std::string(name())}; }
  // (optional) the caching allocator's figures, as torch.cuda.memory_allocated()
  // and memory_reserved(): bytes in live blocks, and those plus cached free ones.
  struct MemoryStats {
    size_t allocated = 0;
    size_t reserved = 0;
  };
  virtual MemoryStats memory_stats() { return {}; }
  // (optional) gives cached free blocks back to the driver (torch.cuda.empty_cache()).
  virtual Status empty_cache() { return Status::Ok; }
  // (optional) records the work queued on the device's queue between
  // begin_capture() and end_capture() into a graph that replay() queues
  // again with one call (CUDA Graphs): no per-kernel launch cost. Memory the
  // graph reads or writes must stay allocated while it lives. Work that needs
  // the host mid-capture (a synchronization, a copy) fails the capture.
  class Graph {
   public:
    virtual ~Graph() = default;
    virtual Status replay() = 0;
  };
  virtual Status begin_capture() { return Status::NotSupported; }
  virtual Result<std::unique_ptr<Graph>> end_capture() { return Status::NotSupported; }
  // (optional) picks the device opened at first use: an index into devices()
  // or a case-insensitive substring of its name.
  virtual Status select_device(const std::string& spec) {
    (void)spec;
    return Status::NotSupported;
  }

  // (optional) prepares `w` once for the kernel of run-time op `op` (QLinear,
  // QConv2d, SparseLinear), which then reads it through its params' `weight`;
  // NotSupported when the backend has no such kernel (the executor falls back
  // or refuses). Other failures: last_error() says why.
  virtual Result<std::shared_ptr<const PreparedWeight>> prepare_weight(OpKind op, const WeightDesc& w) {
    (void)op;
    (void)w;
    return Status::NotSupported;
  }

  // Derived from kernels(): never hand-written.
  const KernelEntry* find_kernel(OpKind op, DType dtype) const;
  bool supports(OpKind op, DType dtype) const { return find_kernel(op, dtype) != nullptr; }
};

// The backend compiled in for a device type, or nullptr.
Backend* get_backend(DeviceType type);

}  // namespace ember
