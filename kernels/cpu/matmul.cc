// float32 MatMul on the blocked GEMM (gemm.h): a [B, M, K] x b [B, K, N] ->
// out [B, M, N], any strides (packing absorbs them). Large products thread
// inside the GEMM; many small ones run one GEMM per thread over the batches.
// A Linear's or a graph MatMul's product (linear_prepacked / matmul_prepacked:
// params LinearParams, one batch, b = weight^T or the constant b) reads the
// B panels packed once (CpuPackedWeight, at the first use) while b is still what they were
// packed from (same data, same strides); a Linear's bias and activation
// (LinearParams::bias, ::activation) are applied as C is stored (sgemm_linear).
// LinearParams::bf16 runs the products on bf16-rounded operands (the bf16 GEMM).
#include <algorithm>
#include <atomic>
#include <cmath>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_tile.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/core/thread_pool.h"

namespace ember::cpu {
namespace {

struct Plan {
  int64_t batches, m, n, k;
  bool over_batches;  // one single-threaded GEMM per thread
  int threads;
  size_t per_slot;    // workspace per thread slot when over_batches
};

Plan plan_for(const TensorView& a, const TensorView& o, int threads) {
  Plan p;
  p.batches = o.sizes[0];
  p.m = o.sizes[1];
  p.n = o.sizes[2];
  p.k = a.sizes[2];
  p.threads = std::max(1, threads);
  // Below ~128^3 multiply-adds a product gains little from threads of its own.
  const double work = static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
  p.over_batches = p.batches > 1 && p.threads > 1 && work < 128.0 * 128.0 * 128.0;
  p.per_slot = sgemm_workspace(p.m, p.n, p.k, 1);
  return p;
}

// The bias and activation of a Linear's product (LinearParams: linear_prepacked).
GemmEpilogue epilogue_of(const LinearParams* lp) {
  if (lp == nullptr) return GemmEpilogue{};
  GemmEpilogue e = activation_epilogue(lp->activation);
  e.col_bias = lp->bias;
  return e;
}

// The epilogue as a pass over C [B, M, N] (after the reference kernel).
void apply_epilogue(const TensorView& o, const GemmEpilogue& e) {
  const detail::TileEpilogue t{nullptr, e.col_bias, e.clamp, e.lo, e.hi, e.hardswish};
  float* po = o.ptr<float>();
  for (int64_t bi = 0; bi < o.sizes[0]; ++bi) {
    for (int64_t i = 0; i < o.sizes[1]; ++i) {
      for (int64_t j = 0; j < o.sizes[2]; ++j) {
        float& v = po[bi * o.strides[0] + i * o.strides[1] + j * o.strides[2]];
        v = detail::epilogue(v, t, i, j);  // the micro-kernels' scalar form
      }
    }
  }
}

size_t workspace_of(const Plan& p) {
  if (p.over_batches) return p.per_slot * static_cast<size_t>(std::min<int64_t>(p.threads, p.batches));
  return sgemm_workspace(p.m, p.n, p.k, p.threads);
}

}  // namespace

size_t matmul_f32_workspace(Span<const TensorView> in, Span<const TensorView> out, const OpParams&) {
  if (in.size() != 2 || out.size() != 1 || in[0].rank != 3 || out[0].rank != 3) return 0;
  return workspace_of(plan_for(in[0], out[0], get_num_threads()));
}

Status matmul_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                  const OpParams& params) {
  EMBER_CHECK(in.size() == 2 && out.size() == 1, Status::InvalidArgument);
  const TensorView &a = in[0], &b = in[1], &o = out[0];
  EMBER_CHECK(a.rank == 3 && b.rank == 3 && o.rank == 3, Status::InvalidArgument);
  EMBER_CHECK(a.dtype == DType::Float32 && b.dtype == DType::Float32 && o.dtype == DType::Float32,
                     Status::DTypeMismatch);
  EMBER_CHECK(a.sizes[0] == o.sizes[0] && b.sizes[0] == o.sizes[0] && a.sizes[1] == o.sizes[1] &&
                         b.sizes[2] == o.sizes[2] && a.sizes[2] == b.sizes[1],
                     Status::ShapeMismatch);
  const Plan p = plan_for(a, o, ctx.num_threads);
  const auto* lp = std::get_if<LinearParams>(&params);
  const GemmEpilogue epilogue = epilogue_of(lp);
  const bool fused = epilogue.col_bias != nullptr || epilogue.clamp || epilogue.hardswish;
  if (ctx.scratch_bytes < workspace_of(p)) {
    const Status s = ref::matmul(ctx, in, out, params);
    if (s == Status::Ok && fused) apply_epilogue(o, epilogue);
    return s;
  }
  const float* pa = a.ptr<const float>();
  const float* pb = b.ptr<const float>();
  float* po = o.ptr<float>();
  const auto* pw = lp != nullptr ? dynamic_cast<const CpuPackedWeight*>(lp->weight) : nullptr;
  const bool same_b = pw != nullptr && pw->source == b.data && pw->rs == b.strides[1] && pw->cs == b.strides[2];
  const PackedOperand* packed = same_b && p.batches == 1 ? pw->gemm_operand() : nullptr;
  const bool bf16 = lp != nullptr && lp->bf16;
  auto one = [&](int64_t bi, void* ws, size_t ws_bytes, int threads) {
    const GemmOperand ga{{pa + bi * a.strides[0], a.strides[1], a.strides[2]}, nullptr, bf16};
    const GemmOperand gb{{pb + bi * b.strides[0], b.strides[1], b.strides[2]}, packed, bf16};
    const MatrixRef<float> c{po + bi * o.strides[0], o.strides[1], o.strides[2]};
    return fused ? sgemm_linear(p.m, p.n, p.k, ga, gb, c, epilogue, ws, ws_bytes, threads)
                 : sgemm_packed(p.m, p.n, p.k, ga, gb, c, /*accumulate=*/false, ws, ws_bytes, threads);
  };
  if (!p.over_batches) {
    for (int64_t bi = 0; bi < p.batches; ++bi) {
      if (!one(bi, ctx.scratch, ctx.scratch_bytes, p.threads)) return Status::OutOfMemory;
    }
    return Status::Ok;
  }
  std::atomic<bool> ok{true};
  parallel_tasks(p.batches, p.threads, [&](int64_t bi, int slot) {
    if (!one(bi, static_cast<char*>(ctx.scratch) + static_cast<size_t>(slot) * p.per_slot, p.per_slot, 1)) ok = false;
  });
  return ok.load() ? Status::Ok : Status::OutOfMemory;
}

}  // namespace ember::cpu
