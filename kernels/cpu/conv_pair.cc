// Conv2dPair in float32 (ops.def; the CPU executor makes it of a 1x1 Conv2d
// and the depthwise Conv2d that alone reads its output: an inverted
// bottleneck's expansion and depthwise convolution, runtime/model/conv_pairs.cc).
//
// Unfused, the expansion writes C_exp x H x W values (MobileNetV2's first one
// 4.8 MB, beyond L2) that the depthwise convolution reads back. Here each
// thread takes a range of output rows and walks it in bands: the input rows a
// band's output rows read are expanded into a buffer of about kBandBytes (the
// channels_last product of conv2d.cc, one GEMM per band on the calling thread,
// bias and activation in its epilogue), rows the previous band expanded moved
// to the front rather than expanded again, and the depthwise kernel runs on
// the buffer while it is in L2 (depthwise_cl_band). Threads' ranges meet at
// one or two rows that both expand.
//
// The sums are the two convolutions': the GEMM's per-element sums do not
// depend on how its rows are split, and the depthwise kernel's not on which
// rows it runs, so the output is bitwise the unfused pair's (conv_pair_test).
//
// Where the expanded image fits in kPairMinBytes, or an operand is not dense
// channels_last, it runs the two convolutions (conv2d_f32), the expanded
// tensor in the scratch.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>

#include "kernels/cpu/cpu_kernels.h"
#include "runtime/core/thread_pool.h"

namespace ember::cpu {
namespace {

constexpr size_t kAlign = 64;
size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// A thread's buffer of expanded rows: well inside L2 (1 MB a core on a Zen 4)
// beside the depthwise output rows it writes and the input rows it reads.
constexpr int64_t kBandBytes = 384 << 10;
// An expanded image smaller than this stays in L2 between the two convolutions: unfused.
constexpr int64_t kPairMinBytes = 1 << 20;

struct Pair {
  const TensorView &x, &w1, &b1, &w2, &b2, &o;
  const Conv2dPairParams& prm;
};

// The expanded tensor's view: [N, E, H, W] dense channels_last (data null).
TensorView expanded(const Pair& p) {
  TensorView m = p.x;
  m.data = nullptr;
  m.sizes[1] = p.w1.sizes[0];
  m.strides[1] = 1;
  m.strides[3] = m.sizes[1];
  m.strides[2] = m.sizes[3] * m.sizes[1];
  m.strides[0] = m.sizes[2] * m.strides[2];
  return m;
}

bool fused_applies(const Pair& p) {
  const Conv2dParams &a = p.prm.pointwise, &d = p.prm.depthwise;
  const int64_t e = p.w1.sizes[0];
  return dense_channels_last(p.x) && dense_channels_last(p.o) && p.w1.is_contiguous() && p.w2.is_contiguous() &&
         p.w1.sizes[2] == 1 && p.w1.sizes[3] == 1 && a.stride[0] == 1 && a.stride[1] == 1 && a.padding[0] == 0 &&
         a.padding[1] == 0 && a.groups == 1 && d.groups == e && p.w2.sizes[1] == 1 &&
         (p.b1.data == nullptr || p.b1.strides[0] == 1) &&
         e * p.x.sizes[2] * p.x.sizes[3] * static_cast<int64_t>(sizeof(float)) >= kPairMinBytes;
}

// The expanded rows a slot's buffer holds: [lo, hi) of image n (none: n < 0).
struct Held {
  int64_t n = -1, lo = 0, hi = 0;
};

struct BandPlan {
  int64_t band_out, band_in;  // output rows a band, input rows its buffer holds
  int64_t parts;              // threads' ranges of (image, output row)
  size_t rows_bytes, gemm_bytes, ops_bytes;
  size_t slot_bytes() const { return rows_bytes + gemm_bytes + kAlign; }  // the buffer, the GEMM's, a Held
  size_t total() const { return kAlign + ops_bytes + slot_bytes() * static_cast<size_t>(parts); }
};

BandPlan band_plan(const Pair& p, int threads) {
  const Conv2dParams& d = p.prm.depthwise;
  const int64_t e = p.w1.sizes[0], w = p.x.sizes[3], span = (p.w2.sizes[2] - 1) * d.dilation[0] + 1;
  const int64_t row_bytes = w * e * static_cast<int64_t>(sizeof(float));
  BandPlan b;
  b.band_out = std::max<int64_t>(1, (std::max(span, kBandBytes / row_bytes) - span) / d.stride[0] + 1);
  b.band_in = (b.band_out - 1) * d.stride[0] + span;
  b.parts = std::max<int64_t>(1, std::min<int64_t>(threads, p.o.sizes[0] * p.o.sizes[2]));
  b.rows_bytes = aligned(static_cast<size_t>(b.band_in * row_bytes));
  b.gemm_bytes = aligned(sgemm_workspace(b.band_in * w, e, p.w1.sizes[1], 1));
  b.ops_bytes = depthwise_cl_operands_bytes(e, p.w2.sizes[2] * p.w2.sizes[3]);
  return b;
}

// The two convolutions, the expanded tensor at the scratch's start.
struct Unfused {
  size_t mid_bytes, conv_bytes;
};

Unfused unfused_plan(const Pair& p) {
  const TensorView m = expanded(p);
  const TensorView first[3] = {p.x, p.w1, p.b1}, second[3] = {m, p.w2, p.b2};
  Unfused u;
  u.mid_bytes = aligned(static_cast<size_t>(m.numel()) * sizeof(float));
  u.conv_bytes = std::max(conv2d_f32_workspace(first, Span<const TensorView>(&m, 1), p.prm.pointwise),
                          conv2d_f32_workspace(second, Span<const TensorView>(&p.o, 1), p.prm.depthwise));
  return u;
}

Status run_unfused(const KernelContext& ctx, const Pair& p) {
  const Unfused u = unfused_plan(p);
  EMBER_CHECK(ctx.scratch_bytes >= kAlign + u.mid_bytes, Status::OutOfMemory);
  char* base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(ctx.scratch) + kAlign - 1) / kAlign * kAlign);
  TensorView m = expanded(p);
  m.data = base;
  KernelContext c = ctx;
  c.scratch = base + u.mid_bytes;
  c.scratch_bytes = ctx.scratch_bytes - kAlign - u.mid_bytes;
  const TensorView first[3] = {p.x, p.w1, p.b1}, second[3] = {m, p.w2, p.b2};
  TensorView o = p.o;
  EMBER_TRY(conv2d_f32(c, first, Span<TensorView>(&m, 1), p.prm.pointwise));
  return conv2d_f32(c, second, Span<TensorView>(&o, 1), p.prm.depthwise);
}

// Output rows [u0, u1) of the flattened (image, output row) range, on the
// calling thread, with its slot of the scratch, whose buffer holds `held`
// (the rows a band shares with the slot's last are moved, not expanded again).
bool run_rows(const Pair& p, const BandPlan& b, const GemmOperand& w1, const GemmEpilogue& ep,
              const DepthwiseClOperands& dw, int64_t u0, int64_t u1, char* slot, Held& held) {
  const Conv2dParams& d = p.prm.depthwise;
  const int64_t c = p.x.sizes[1], h = p.x.sizes[2], w = p.x.sizes[3], e = p.w1.sizes[0], oh = p.o.sizes[2];
  const int64_t span = (p.w2.sizes[2] - 1) * d.dilation[0] + 1;
  const TensorView m = expanded(p);
  float* rows = reinterpret_cast<float*>(slot);
  char* gemm_ws = slot + b.rows_bytes;
  int64_t &have_n = held.n, &have_lo = held.lo, &have_hi = held.hi;
  for (int64_t u = u0; u < u1;) {
    const int64_t n = u / oh, r0 = u % oh, r1 = std::min({oh, r0 + b.band_out, r0 + u1 - u});
    const int64_t lo = std::clamp<int64_t>(r0 * d.stride[0] - d.padding[0], 0, h);
    const int64_t hi = std::clamp<int64_t>((r1 - 1) * d.stride[0] - d.padding[0] + span, lo, h);
    int64_t from = lo;
    if (have_n == n && lo >= have_lo && lo < have_hi) {  // rows the last band expanded: moved, not expanded again
      from = std::min(have_hi, hi);
      std::memmove(rows, rows + (lo - have_lo) * w * e, static_cast<size_t>((from - lo) * w * e) * sizeof(float));
    }
    if (hi > from) {
      const float* xr = p.x.ptr<const float>() + n * p.x.strides[0] + from * w * c;
      if (!sgemm_fused((hi - from) * w, e, c, GemmOperand{{xr, c, 1}, nullptr}, w1,
                       MatrixRef<float>{rows + (from - lo) * w * e, e, 1}, ep, gemm_ws, b.gemm_bytes, 1)) {
        return false;
      }
    }
    have_n = n;
    have_lo = lo;
    have_hi = hi;
    TensorView o = p.o;
    o.data = p.o.ptr<float>() + n * p.o.strides[0];
    depthwise_cl_band(m, p.w2, o, d, rows, lo, hi - lo, dw, r0, r1);
    u += r1 - r0;
  }
  return true;
}

Status run_fused(const KernelContext& ctx, const Pair& p) {
  BandPlan b = band_plan(p, ctx.num_threads);
  while (b.parts > 1 && ctx.scratch_bytes < b.total()) --b.parts;  // planned for fewer threads
  EMBER_CHECK(ctx.scratch_bytes >= b.total(), Status::OutOfMemory);
  char* base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(ctx.scratch) + kAlign - 1) / kAlign * kAlign);
  const auto* packed = dynamic_cast<const CpuPackedWeight*>(p.prm.depthwise.weight);
  const DepthwiseClOperands dw = depthwise_cl_operands(
      p.w2, p.b2, packed != nullptr && packed->source == p.w2.data ? packed->depthwise_cl() : nullptr, base);
  char* slots = base + b.ops_bytes;
  // The 1x1 weight [E, C] read as W^T (C x E), or its packed panels.
  const GemmOperand w1{{p.w1.ptr<const float>(), 1, p.w1.sizes[1]},
                       packed_weight(p.prm.pointwise, p.w1, CpuPackedWeight::Layout::ConvB)};
  GemmEpilogue ep = activation_epilogue(p.prm.pointwise.activation);
  ep.col_bias = p.b1.ptr<const float>();
  // Up to kChunksPerThread ranges of rows a thread, each thread's own in
  // order, the rows its buffer holds carried from one range to the next; a
  // thread done with its own takes ranges from the end of another's.
  const int64_t rows = p.o.sizes[0] * p.o.sizes[2];
  const int64_t tasks = b.parts > 1 ? std::min(rows, b.parts * kChunksPerThread) : 1;
  for (int64_t i = 0; i < b.parts; ++i) new (slots + i * b.slot_bytes() + b.rows_bytes + b.gemm_bytes) Held{};
  std::atomic<bool> ok{true};
  parallel_tasks(tasks, static_cast<int>(b.parts), [&](int64_t t, int slot_index) {
    char* slot = slots + slot_index * b.slot_bytes();
    Held& held = *reinterpret_cast<Held*>(slot + b.rows_bytes + b.gemm_bytes);
    if (!run_rows(p, b, w1, ep, dw, rows * t / tasks, rows * (t + 1) / tasks, slot, held)) ok = false;
  });
  return ok ? Status::Ok : Status::OutOfMemory;
}

bool valid(Span<const TensorView> in, Span<const TensorView> out, const OpParams& params) {
  if (in.size() != 5 || out.size() != 1 || std::get_if<Conv2dPairParams>(&params) == nullptr) return false;
  for (const TensorView* t : {&in[0], &in[1], &in[3], &out[0]}) {
    if (t->rank != 4 || t->dtype != DType::Float32) return false;
  }
  return in[1].sizes[1] == in[0].sizes[1] && in[1].sizes[0] == in[3].sizes[0] && out[0].sizes[1] == in[1].sizes[0] &&
         out[0].sizes[0] == in[0].sizes[0];
}

}  // namespace

size_t conv2d_pair_f32_workspace(Span<const TensorView> in, Span<const TensorView> out, const OpParams& params) {
  if (!valid(in, out, params)) return 0;
  const Pair p{in[0], in[1], in[2], in[3], in[4], out[0], std::get<Conv2dPairParams>(params)};
  if (fused_applies(p)) return band_plan(p, get_num_threads()).total();
  const Unfused u = unfused_plan(p);
  return kAlign + u.mid_bytes + u.conv_bytes;
}

Status conv2d_pair_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                       const OpParams& params) {
  EMBER_CHECK(valid(in, Span<const TensorView>(out.data(), out.size()), params), Status::InvalidArgument);
  const Pair p{in[0], in[1], in[2], in[3], in[4], out[0], std::get<Conv2dPairParams>(params)};
  if (out[0].numel() == 0) return Status::Ok;
  return fused_applies(p) ? run_fused(ctx, p) : run_unfused(ctx, p);
}

}  // namespace ember::cpu
