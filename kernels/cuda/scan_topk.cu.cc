// CumSum/CumProd and TopK on CUDA, with kernels/ref/scan.cc and topk.cc's
// semantics.
// Scan: a thread per line for short lines, else a warp per line scanning
// steps of 32 (Hillis-Steele shuffles, the step's total carried on); a few
// long lines are cut in chunks of 2048, a warp each, joined through carries
// in the workspace. Floating values accumulate in float (double for double),
// as PyTorch's CUDA cumsum, integers in wrapping 64 bits.
// TopK: a block per line sorts (value, index) pairs with a bitonic network
// under the reference's strict order (NaN largest, ties by index) and writes
// the first k: in shared memory for lines up to kTopKSharedLine, in the
// workspace (global memory) for longer ones.
#include "kernels/cuda/reduce_rows.h"

namespace ember::cuda {
namespace {

template <typename T>
using scan_acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t, float_acc_t<T>>;

__device__ inline float shfl_from(float v, int src, int width) { return __shfl_sync(0xffffffffu, v, src, width); }
__device__ inline double shfl_from(double v, int src, int width) { return __shfl_sync(0xffffffffu, v, src, width); }
__device__ inline uint64_t shfl_from(uint64_t v, int src, int width) {
  return static_cast<uint64_t>(__shfl_sync(0xffffffffu, static_cast<unsigned long long>(v), src, width));
}

template <typename A, bool kProduct>
__device__ inline A scan_op(A a, A b) {
  return kProduct ? a * b : a + b;
}

// A few long lines are cut in chunks, a warp each, in three launches: each
// chunk's total (into the workspace), each line's carries (the totals'
// exclusive scan, in order), then each chunk scanned from its carry.
struct ScanChunks {
  int64_t chunks, size;  // chunks a line, elements a chunk
};
constexpr int64_t kScanSplitMin = 8192, kScanSplitLines = 64, kScanChunk = 2048;

ScanChunks scan_chunks(int64_t lines, int64_t n) {
  if (n < kScanSplitMin || lines > kScanSplitLines) return ScanChunks{1, n};
  return ScanChunks{(n + kScanChunk - 1) / kScanChunk, kScanChunk};
}

enum class ScanPass : int { Whole, Totals, FromCarries };

// rows: the other dims (x, y); each line has n elements at strides sx, sy;
// items are (line, chunk) pairs. `carries`: a state per item (Totals: written;
// FromCarries: read as the chunk's start).
template <typename T, bool kProduct>
__global__ void scan_kernel(const T* x, T* y, Dims<2> rows, int64_t n, int64_t sx, int64_t sy, RowLayout l,
                            bool exclusive, bool reverse, ScanChunks ch, ScanPass pass,
                            scan_acc_t<T>* carries) {
  using A = scan_acc_t<T>;
  const A identity = kProduct ? A(1) : A(0);
  const int lane = l.lane(), G = l.G;
  const int64_t per_block = l.rows_per_block(), items = rows.numel * ch.chunks;
  for (int64_t base = blockIdx.x * per_block; base < items; base += gridDim.x * per_block) {
    const int64_t item = base + l.group();
    const bool live = item < items;
    const int64_t row = item / ch.chunks, lo = (item % ch.chunks) * ch.size;
    const int64_t hi = lo + ch.size < n ? lo + ch.size : n;
    const T* xl = x + (live ? rows.offset(0, row) : 0);
    T* yl = y + (live ? rows.offset(1, row) : 0);
    A carry = live && pass == ScanPass::FromCarries ? carries[item] : identity;
    for (int64_t s0 = lo; s0 < lo + ch.size; s0 += G) {
      const int64_t s = s0 + lane;
      const int64_t i = reverse ? n - 1 - s : s;
      const bool here = live && s < hi;
      A v = identity;
      if (here) {
        if constexpr (std::is_integral_v<T>) v = static_cast<A>(static_cast<int64_t>(xl[i * sx]));
        else v = convert<A>(xl[i * sx]);
      }
      A before = identity;  // the product/sum of this step's earlier lanes
      if (G > 1) {
        for (int d = 1; d < G; d *= 2) {
          const A u = shfl_from(v, lane >= d ? lane - d : lane, G);
          if (lane >= d) v = scan_op<A, kProduct>(u, v);
        }
        const A prev = shfl_from(v, lane > 0 ? lane - 1 : 0, G);
        if (lane > 0) before = prev;
      }
      const A out = scan_op<A, kProduct>(carry, exclusive ? before : v);
      if (here && pass != ScanPass::Totals) {
        if constexpr (std::is_integral_v<T>) yl[i * sy] = static_cast<T>(static_cast<int64_t>(out));
        else yl[i * sy] = convert<T>(out);
      }
      carry = scan_op<A, kProduct>(carry, G > 1 ? shfl_from(v, G - 1, G) : v);
    }
    if (live && lane == 0 && pass == ScanPass::Totals) carries[item] = carry;
  }
}

// A thread per line: the chunks' totals become their carries (exclusive scan, in order).
template <typename A, bool kProduct>
__global__ void scan_carries_kernel(A* carries, int64_t lines, int64_t chunks) {
  const int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (line >= lines) return;
  A acc = kProduct ? A(1) : A(0);
  for (int64_t c = 0; c < chunks; ++c) {
    const A total = carries[line * chunks + c];
    carries[line * chunks + c] = acc;
    acc = scan_op<A, kProduct>(acc, total);
  }
}

struct ScanShape {
  int64_t axis = 0, n = 0, lines = 0;
};

ScanShape scan_shape(const TensorView& x, const ScanParams& p) {
  ScanShape s;
  s.axis = p.axis < 0 ? p.axis + x.rank : p.axis;
  s.n = x.rank == 0 ? 1 : x.sizes[s.axis];
  s.lines = s.n > 0 ? x.numel() / s.n : 0;
  return s;
}

template <bool kProduct>
Status scan(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<ScanParams>(&params);
  EMBER_CHECK(p != nullptr && !in.empty() && out.size() == 1, Status::InvalidArgument);
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  EMBER_CHECK(x.dtype == y.dtype && x.rank == y.rank, Status::DTypeMismatch);
  for (int d = 0; d < x.rank; ++d) EMBER_CHECK(x.sizes[d] == y.sizes[d], Status::ShapeMismatch);
  const ScanShape sh = scan_shape(x, *p);
  EMBER_CHECK(sh.axis >= 0 && sh.axis < std::max(x.rank, 1), Status::InvalidArgument);
  return on_dtype<kCudaNumeric>(x.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using A = scan_acc_t<T>;
    if (x.numel() == 0) return Status::Ok;
    const TensorView* v[2] = {&x, &y};
    const Dims<2> rows = make_dims<2>(v, [&](int d) { return d != sh.axis; });
    const int64_t n = sh.n;
    const int64_t sx = x.rank == 0 ? 0 : x.strides[sh.axis], sy = y.rank == 0 ? 0 : y.strides[sh.axis];
    const RowLayout l{n <= kThreadRow ? 1 : 32, 1};
    const ScanChunks ch = scan_chunks(rows.numel, n);
    EMBER_ASSIGN_OR_RETURN(Context * c, Context::get());
    const char* what = kProduct ? "cumprod kernel" : "cumsum kernel";
    auto* k = &scan_kernel<T, kProduct>;
    const dim3 grid(row_blocks(rows.numel * ch.chunks, l));
    if (ch.chunks == 1) {
      EMBER_LAUNCH(k, grid, dim3(kRowThreads), 0, c->stream(), x.ptr<const T>(), y.ptr<T>(), rows, n, sx, sy, l,
                   p->exclusive, p->reverse, ch, ScanPass::Whole, static_cast<A*>(nullptr));
      return Context::check(cudaGetLastError(), what);
    }
    EMBER_CHECK(ctx.scratch != nullptr && ctx.scratch_bytes >= static_cast<size_t>(rows.numel * ch.chunks) * 8,
                       Status::InvalidArgument);
    A* carries = static_cast<A*>(ctx.scratch);
    EMBER_LAUNCH(k, grid, dim3(kRowThreads), 0, c->stream(), x.ptr<const T>(), y.ptr<T>(), rows, n, sx, sy, l,
                 p->exclusive, p->reverse, ch, ScanPass::Totals, carries);
    EMBER_TRY(Context::check(cudaGetLastError(), what));
    auto* fix = &scan_carries_kernel<A, kProduct>;
    EMBER_LAUNCH(fix, dim3(1), dim3(kRowThreads), 0, c->stream(), carries, rows.numel, ch.chunks);
    EMBER_TRY(Context::check(cudaGetLastError(), what));
    EMBER_LAUNCH(k, grid, dim3(kRowThreads), 0, c->stream(), x.ptr<const T>(), y.ptr<T>(), rows, n, sx, sy, l,
                 p->exclusive, p->reverse, ch, ScanPass::FromCarries, carries);
    return Context::check(cudaGetLastError(), what);
  });
}

// --- TopK ------------------------------------------------------------------------

constexpr int64_t kTopKSharedLine = 2048;  // (index, key) pairs of a line in shared memory: 32 KiB at most
constexpr size_t kTopKPairBytes = 16;      // int64 index + a key of at most 8 bytes
constexpr size_t kTopKMaxWorkspace = size_t{64} << 20;

int64_t pow2_line(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

// The lines sorted at once in global memory (each needs pow2_line(n) pairs of the workspace).
int64_t topk_global_lines(int64_t lines, int64_t padded) {
  const int64_t fit = static_cast<int64_t>(kTopKMaxWorkspace / (static_cast<size_t>(padded) * kTopKPairBytes));
  return std::max<int64_t>(1, std::min<int64_t>(std::min<int64_t>(lines, fit), 1024));
}

// a before b: by value (NaN largest), then by index; padding (index >= n) last.
template <typename K>
__device__ inline bool topk_before(K va, int64_t ia, K vb, int64_t ib, int64_t n, bool largest) {
  if (ia >= n || ib >= n) return ia < ib;
  const bool na = ref::is_nan(va), nb = ref::is_nan(vb);
  if (na != nb) return largest ? na : nb;
  if (!na && va != vb) return largest ? va > vb : va < vb;
  return ia < ib;
}

// rows: the other dims (x, values, indices); line strides sx, sv, si. `work`:
// null (pairs in dynamic shared memory) or `padded` pairs per block.
template <typename T>
__global__ void topk_kernel(const T* x, T* values, int64_t* indices, Dims<3> rows, int64_t n, int64_t k,
                            int64_t sx, int64_t sv, int64_t si, int64_t padded, bool largest, char* work) {
  using K = compute_t<T>;
  EMBER_DYNAMIC_SHARED(unsigned char, shared);
  char* mine = work != nullptr ? work + static_cast<int64_t>(blockIdx.x) * padded * static_cast<int64_t>(kTopKPairBytes)
                               : reinterpret_cast<char*>(shared);
  int64_t* idx = reinterpret_cast<int64_t*>(mine);
  K* key = reinterpret_cast<K*>(mine + padded * static_cast<int64_t>(sizeof(int64_t)));
  const int64_t tid = threadIdx.x, nt = blockDim.x;
  for (int64_t row = blockIdx.x; row < rows.numel; row += gridDim.x) {
    const T* line = x + rows.offset(0, row);
    for (int64_t t = tid; t < padded; t += nt) {
      idx[t] = t;
      key[t] = t < n ? static_cast<K>(line[t * sx]) : K(0);
    }
    __syncthreads();
    for (int64_t size = 2; size <= padded; size *= 2) {
      for (int64_t j = size / 2; j > 0; j /= 2) {
        for (int64_t t = tid; t < padded; t += nt) {
          const int64_t u = t ^ j;
          if (u <= t) continue;
          const bool up = (t & size) == 0;
          const bool swap = up ? topk_before(key[u], idx[u], key[t], idx[t], n, largest)
                               : topk_before(key[t], idx[t], key[u], idx[u], n, largest);
          if (swap) {
            const K kt = key[t];
            key[t] = key[u];
            key[u] = kt;
            const int64_t it = idx[t];
            idx[t] = idx[u];
            idx[u] = it;
          }
        }
        __syncthreads();
      }
    }
    T* vl = values + rows.offset(1, row);
    int64_t* il = indices + rows.offset(2, row);
    for (int64_t j = tid; j < k; j += nt) {
      vl[j * sv] = line[idx[j] * sx];
      il[j * si] = idx[j];
    }
    __syncthreads();
  }
}

struct TopKShape {
  int64_t axis = 0, n = 0, k = 0, lines = 0;
};

TopKShape topk_shape(const TensorView& x, const TensorView& values, const TopKParams& p) {
  TopKShape s;
  s.axis = p.axis < 0 ? p.axis + x.rank : p.axis;
  s.n = x.rank == 0 ? 1 : x.sizes[s.axis];
  s.k = x.rank == 0 ? values.numel() : values.sizes[s.axis];
  s.lines = s.n > 0 ? x.numel() / s.n : 0;
  return s;
}

}  // namespace

size_t scan_workspace(Span<const TensorView> in, Span<const TensorView>, const OpParams& params) {
  const auto* p = std::get_if<ScanParams>(&params);
  if (p == nullptr || in.empty()) return 0;
  const ScanShape sh = scan_shape(in[0], *p);
  const ScanChunks ch = scan_chunks(sh.lines, sh.n);
  return ch.chunks == 1 ? 0 : static_cast<size_t>(sh.lines * ch.chunks) * 8;  // a state (at most 8 bytes) a chunk
}

Status cumsum(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return scan<false>(ctx, in, out, params);
}

Status cumprod(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return scan<true>(ctx, in, out, params);
}

size_t topk_workspace(Span<const TensorView> in, Span<const TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<TopKParams>(&params);
  if (p == nullptr || in.empty() || out.empty()) return 0;
  const TopKShape s = topk_shape(in[0], out[0], *p);
  if (s.n <= kTopKSharedLine || s.k == 0) return 0;
  const int64_t padded = pow2_line(s.n);
  return static_cast<size_t>(topk_global_lines(s.lines, padded) * padded) * kTopKPairBytes;
}

Status topk(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<TopKParams>(&params);
  EMBER_CHECK(p != nullptr && !in.empty() && out.size() == 2, Status::InvalidArgument);
  const TensorView& x = in[0];
  const TensorView &values = out[0], &indices = out[1];
  EMBER_CHECK(values.dtype == x.dtype && indices.dtype == DType::Int64, Status::DTypeMismatch);
  EMBER_CHECK(values.rank == x.rank && indices.rank == x.rank, Status::ShapeMismatch);
  const TopKShape s = topk_shape(x, values, *p);
  EMBER_CHECK(s.axis >= 0 && s.axis < std::max(x.rank, 1), Status::InvalidArgument);
  EMBER_CHECK(s.k <= s.n, Status::ShapeMismatch);
  for (int d = 0; d < x.rank; ++d) {
    EMBER_CHECK(values.sizes[d] == indices.sizes[d] && (d == s.axis || values.sizes[d] == x.sizes[d]),
                       Status::ShapeMismatch);
  }
  return on_dtype<kCudaNumeric>(x.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (values.numel() == 0) return Status::Ok;
    const TensorView* v[3] = {&x, &values, &indices};
    const Dims<3> rows = make_dims<3>(v, [&](int d) { return d != s.axis; });
    const int64_t sx = x.rank == 0 ? 0 : x.strides[s.axis];
    const int64_t sv = x.rank == 0 ? 0 : values.strides[s.axis], si = x.rank == 0 ? 0 : indices.strides[s.axis];
    const int64_t padded = pow2_line(s.n);
    const bool shared = s.n <= kTopKSharedLine;
    char* work = shared ? nullptr : static_cast<char*>(ctx.scratch);
    const int64_t blocks = shared ? std::min<int64_t>(s.lines, int64_t{1} << 20) : topk_global_lines(s.lines, padded);
    if (!shared) {
      EMBER_CHECK(ctx.scratch_bytes >= static_cast<size_t>(blocks * padded) * kTopKPairBytes,
                         Status::InvalidArgument);
    }
    const size_t smem = shared ? static_cast<size_t>(padded) * (sizeof(int64_t) + sizeof(compute_t<T>)) : 0;
    const int threads = static_cast<int>(std::min<int64_t>(shared ? kRowThreads : 1024, std::max<int64_t>(32, padded / 2)));
    EMBER_ASSIGN_OR_RETURN(Context * c, Context::get());
    auto* k = &topk_kernel<T>;
    EMBER_LAUNCH(k, dim3(static_cast<unsigned>(blocks)), dim3(threads), smem, c->stream(), x.ptr<const T>(),
                 values.ptr<T>(), indices.ptr<int64_t>(), rows, s.n, s.k, sx, sv, si, padded, p->largest, work);
    return Context::check(cudaGetLastError(), "topk kernel");
  });
}

}  // namespace ember::cuda
