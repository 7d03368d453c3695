// The CUDA backend: device memory from the caching allocator of
// kernels/cuda/context.h and the kernel table of kernels/cuda/kernels.inc.
#include <memory>

#include "kernels/cuda/context.h"
#include "kernels/cuda/cuda_kernels.h"
#include "runtime/core/error.h"

namespace ember {
namespace {

using cuda::kCudaAll;
using cuda::kCudaFloat;
using cuda::kCudaNumeric;

constexpr KernelEntry kCudaKernels[] = {
#define RT_KERNEL(op, dtypes, fn) {OpKind::op, dtypes, &cuda::fn, nullptr, false},
#define RT_KERNEL_DENSE(op, dtypes, fn) {OpKind::op, dtypes, &cuda::fn, nullptr, true},
#define RT_KERNEL_WS(op, dtypes, fn, ws) {OpKind::op, dtypes, &cuda::fn, &cuda::ws, false},
#include "kernels/cuda/kernels.inc"
#undef RT_KERNEL
#undef RT_KERNEL_DENSE
#undef RT_KERNEL_WS
};

Status copy_check(size_t offset, size_t bytes, size_t size) {
  return offset <= size && bytes <= size - offset ? Status::Ok : Status::OutOfRange;
}

class CudaGraph final : public Backend::Graph {
 public:
  CudaGraph(cudaGraphExec_t exec, cudaStream_t stream) : exec_(exec), stream_(stream) {}
  ~CudaGraph() override { (void)cudaGraphExecDestroy(exec_); }
  Status replay() override { return cuda::Context::check(cudaGraphLaunch(exec_, stream_), "cudaGraphLaunch"); }

 private:
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
};

class CudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }
  DeviceType device_type() const override { return DeviceType::CUDA; }
  Span<const KernelEntry> kernels() const override {
    return Span<const KernelEntry>(kCudaKernels, sizeof(kCudaKernels) / sizeof(kCudaKernels[0]));
  }

  Result<Buffer> allocate(size_t bytes, size_t) override {
    EMBER_ASSIGN_OR_RETURN(cuda::Context * c, cuda::Context::get());
    // The tail padding kernels may read past the end (kTensorTailPadding).
    EMBER_ASSIGN_OR_RETURN(void* p, c->allocate(bytes + kTensorTailPadding));
    Buffer b;
    b.data = p;
    b.bytes = bytes;
    return b;
  }
  void release(Buffer& buffer) override {
    Result<cuda::Context*> c = cuda::Context::get();
    if (c.ok() && buffer.data != nullptr) c.get()->release(buffer.data);
    buffer = Buffer{};
  }
  Status copy_in(Buffer& dst, size_t offset, Span<const std::byte> src) override {
    EMBER_TRY(copy_check(offset, src.size(), dst.bytes));
    EMBER_ASSIGN_OR_RETURN(cuda::Context * c, cuda::Context::get());
    // Synchronous from the host's point of view: src may be freed on return.
    EMBER_TRY(cuda::Context::check(
        cudaMemcpyAsync(static_cast<char*>(dst.data) + offset, src.data(), src.size(), cudaMemcpyHostToDevice,
                        c->stream()),
        "cudaMemcpyAsync (host to device)"));
    return c->synchronize();
  }
  Status copy_out(Span<std::byte> dst, const Buffer& src, size_t offset) override {
    const CopyOut one{dst, &src, offset};
    return copy_out_batch(Span<const CopyOut>(&one, 1));
  }
  // Every read queued behind the work before it, one synchronization for all.
  Status copy_out_batch(Span<const CopyOut> copies) override {
    EMBER_ASSIGN_OR_RETURN(cuda::Context * c, cuda::Context::get());
    for (const CopyOut& o : copies) {
      EMBER_TRY(copy_check(o.offset, o.dst.size(), o.src->bytes));
      EMBER_TRY(cuda::Context::check(
          cudaMemcpyAsync(o.dst.data(), static_cast<const char*>(o.src->data) + o.offset, o.dst.size(),
                          cudaMemcpyDeviceToHost, c->stream()),
          "cudaMemcpyAsync (device to host)"));
    }
    return c->synchronize();
  }
  Status synchronize() override {
    EMBER_ASSIGN_OR_RETURN(cuda::Context * c, cuda::Context::get());
    return c->synchronize();
  }
  std::string last_error() const override { return cuda::Context::why(); }
  MemoryStats memory_stats() override {
    Result<cuda::Context*> c = cuda::Context::get();
    if (!c.ok()) return {};
    return MemoryStats{c.get()->memory_allocated(), c.get()->memory_reserved()};
  }
  Status empty_cache() override {
    EMBER_ASSIGN_OR_RETURN(cuda::Context * c, cuda::Context::get());
    return c->empty_cache();
  }
  Result<DeviceInfo> open() override {
    EMBER_ASSIGN_OR_RETURN(cuda::Context * c, cuda::Context::get());
    return DeviceInfo{c->caps().name, true, c->caps().bfloat16};
  }
  Status begin_capture() override {
    EMBER_ASSIGN_OR_RETURN(cuda::Context * c, cuda::Context::get());
    // Relaxed: a cache miss may still cudaMalloc (run at once, not captured).
    return cuda::Context::check(cudaStreamBeginCapture(c->stream(), cudaStreamCaptureModeRelaxed),
                                "cudaStreamBeginCapture");
  }
  Result<std::unique_ptr<Graph>> end_capture() override {
    EMBER_ASSIGN_OR_RETURN(cuda::Context * c, cuda::Context::get());
    cudaGraph_t graph = nullptr;
    EMBER_TRY(cuda::Context::check(cudaStreamEndCapture(c->stream(), &graph), "cudaStreamEndCapture"));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    (void)cudaGraphDestroy(graph);
    EMBER_TRY(cuda::Context::check(e, "cudaGraphInstantiate"));
    return std::unique_ptr<Graph>(new CudaGraph(exec, c->stream()));
  }
  Result<std::vector<std::string>> devices() override { return cuda::Context::list_devices(); }
  Status select_device(const std::string& spec) override { return cuda::Context::select_device(spec); }
  Result<std::shared_ptr<const PreparedWeight>> prepare_weight(OpKind op, const WeightDesc& w) override {
    if (op == OpKind::QLinear) return cuda::prepare_qlinear(w);
    if (op == OpKind::QConv2d) return cuda::prepare_qconv2d(w);
    if (op == OpKind::SparseLinear) return cuda::prepare_sparse_linear(w);
    return Status::NotSupported;
  }
};

}  // namespace

Backend* cuda_backend() {
  static CudaBackend backend;
  return &backend;
}

}  // namespace ember
