// MatMul: out [B, M, N] = a [B, M, K] @ b [B, K, N] on the tiled shader
// (shaders/matmul_tiled.glsl), any strides: Linear's weight arrives as the
// transposed view [K, N] of [N, K] and is read in place, broadcast batches
// have stride 0. float32, and float16 where the device has it (fp32
// accumulation, one rounding at the end). Fewer than 16 rows (Linear on one
// sample, mv, dot) run on shaders/matmul_rows.glsl, one invocation per output.
#include "kernels/vulkan/matmul.h"

#include <algorithm>
#include <string>

#include "kernels/vulkan/dispatch.h"
#include "kernels/vulkan/vk_kernels.h"

namespace ember::vk {

namespace {

// Mirrors the push-constant block of shaders/matmul_iface.glsl.
struct MatMulPush {
  uint32_t a_first, b_first, bias_first, out_first;
  uint32_t m, n, k, batch0;
  uint32_t a_sb, a_sm, a_sk;
  uint32_t b_sb, b_sk, b_sn;
  uint32_t o_sb, o_sm, o_sn;
  uint32_t bias_sm, bias_sn, has_bias;
  uint32_t a_k_fast, b_n_fast;
  uint32_t total;
};
static_assert(sizeof(MatMulPush) == 23 * 4, "MatMulPush must mirror shaders/matmul_iface.glsl");

constexpr int64_t kTile = 64;
// Fewer rows than this run on shaders/matmul_rows.glsl (one invocation per
// output) instead of 64-row tiles mostly left empty.
constexpr int64_t kRowsPathMaxM = 16;
constexpr int64_t kMaxGroups = 65535;

uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

}  // namespace

bool fits_uint32(const TensorView& v, const char* what) {
  const int64_t span = extent(v);
  if (span <= (int64_t{1} << 31)) return true;
  Context::set_why(std::string(what) + " spans " + std::to_string(span) +
                   " elements, more than the shaders' 32-bit indices reach");
  return false;
}

Status gemm(const TensorView& a, const TensorView& b, const TensorView& bias, int64_t bias_sm, int64_t bias_sn,
            const TensorView& o) {
  const int64_t batches = o.sizes[0], m = o.sizes[1], n = o.sizes[2], k = a.sizes[2];
  if (batches == 0 || m == 0 || n == 0) return Status::Ok;
  const bool f16 = o.dtype == DType::Float16;
  if (f16 && !float16_supported("matmul")) return Status::NotSupported;
  if (!fits_uint32(a, "the first operand") || !fits_uint32(b, "the second operand") || !fits_uint32(o, "the output") ||
      (bias.data != nullptr && !fits_uint32(bias, "the bias"))) {
    return Status::NotSupported;
  }
  if ((m + kTile - 1) / kTile > kMaxGroups || (n + kTile - 1) / kTile > kMaxGroups) {
    Context::set_why("matmul of " + std::to_string(m) + "x" + std::to_string(n) +
                     " outputs needs more workgroups than a dispatch allows");
    return Status::NotSupported;
  }
  MatMulPush p{};
  p.m = u32(m);
  p.n = u32(n);
  p.k = u32(k);
  // With K == 0 the operands have no elements (and maybe no memory): the
  // output is bound in their place and never read.
  const bool empty_k = k == 0;
  p.a_sb = empty_k ? 0 : u32(a.strides[0]);
  p.a_sm = u32(a.strides[1]);
  p.a_sk = u32(a.strides[2]);
  p.b_sb = empty_k ? 0 : u32(b.strides[0]);
  p.b_sk = u32(b.strides[1]);
  p.b_sn = u32(b.strides[2]);
  p.o_sb = u32(o.strides[0]);
  p.o_sm = u32(o.strides[1]);
  p.o_sn = u32(o.strides[2]);
  p.has_bias = bias.data != nullptr ? 1 : 0;
  p.bias_sm = u32(bias_sm);
  p.bias_sn = u32(bias_sn);
  p.a_k_fast = a.strides[2] == 1 || m == 1 ? 1 : 0;
  p.b_n_fast = b.strides[2] == 1 || k == 1 ? 1 : 0;
  if (m < kRowsPathMaxM && batches * m * n < (int64_t{1} << 31)) {
    p.total = u32(batches * m * n);
    Dispatch d(f16 ? shaders::matmul_rows_f16 : shaders::matmul_rows_f32);
    p.a_first = d.bind(empty_k ? o : a);
    p.b_first = d.bind(empty_k ? o : b);
    p.bias_first = d.bind_or(bias, empty_k ? o : a);
    p.out_first = d.bind(o);
    const Grid g = grid(batches * m * n, 64);
    return d.run(p, g.x, g.y, 1, {64});
  }
  const uint32_t gx = u32((n + kTile - 1) / kTile), gy = u32((m + kTile - 1) / kTile);
  for (int64_t b0 = 0; b0 < batches; b0 += kMaxGroups) {
    Dispatch d(f16 ? shaders::matmul_f16 : shaders::matmul_f32);
    p.a_first = d.bind(empty_k ? o : a);
    p.b_first = d.bind(empty_k ? o : b);
    p.bias_first = d.bind_or(bias, empty_k ? o : a);
    p.out_first = d.bind(o);
    p.batch0 = u32(b0);
    const Status s = d.run(p, gx, gy, u32(std::min(kMaxGroups, batches - b0)));
    if (s != Status::Ok) return s;
  }
  return Status::Ok;
}

Status matmul(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams&) {
  if (in.size() != 2 || out.size() != 1) return Status::InvalidArgument;
  const TensorView &a = in[0], &b = in[1], &o = out[0];
  if (a.rank != 3 || b.rank != 3 || o.rank != 3) return Status::InvalidArgument;
  if (a.sizes[0] != o.sizes[0] || b.sizes[0] != o.sizes[0] || a.sizes[1] != o.sizes[1] || b.sizes[2] != o.sizes[2] ||
      a.sizes[2] != b.sizes[1]) {
    return Status::ShapeMismatch;
  }
  if (a.dtype != o.dtype || b.dtype != o.dtype) return Status::DTypeMismatch;
  return gemm(a, b, TensorView{}, 0, 0, o);
}

}  // namespace ember::vk
