// Recurrence on Vulkan (ONNX LSTM, GRU, RNN): shaders/recurrence_body.glsl,
// one dispatch per direction and time step (two for GRU without
// linear_before_reset), one invocation per (batch entry, hidden unit) forming
// its gate rows as dot products in float32. The state alternates between two
// halves of the float32 scratch, so a step reads the whole previous h while
// writing the next. Contiguous operands (run_kernel copies the others first)
// and outputs; float32, and float16 where the device has shaderFloat16 and
// 16-bit storage. Correct rather than fast: the products are not tiled.
#include "kernels/ref/ref_kernels.h"
#include "kernels/vulkan/dispatch.h"
#include "kernels/vulkan/vk_kernels.h"

namespace ember::vk {
namespace {

struct RecurrencePush {
  uint32_t x_first, w_first, r_first, b_first, l_first, h0_first, c0_first, p_first;
  uint32_t y_first, yh_first, yc_first, s_first;
  uint32_t T, B, I, H;
  uint32_t cell, flags;
  uint32_t D, d, t, mode, cur;
  float clip;
};
static_assert(sizeof(RecurrencePush) == 96, "mirrors the push block of shaders/recurrence_body.glsl");

// Push flags (recurrence_body.glsl's kHas* ...).
enum : uint32_t {
  kHasBias = 1, kHasLens = 2, kLens64 = 4, kHasH0 = 8, kHasC0 = 16, kHasPeep = 32,
  kHasY = 64, kHasYh = 128, kHasYc = 256, kLbr = 512, kInputForget = 1024, kRelu = 2048,
};

}  // namespace

// h, the next h, c and r h: [B, H] floats each.
size_t recurrence_workspace(Span<const TensorView> in, Span<const TensorView>, const OpParams& params) {
  const auto* p = std::get_if<RecurrenceParams>(&params);
  if (p == nullptr || in.empty() || in[0].rank != 3 || !p->valid()) return 0;
  return static_cast<size_t>(4 * in[0].sizes[1] * p->hidden) * sizeof(float);
}

Status recurrence(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<RecurrenceParams>(&params);
  if (p == nullptr || !p->valid() || in.size() != 8 || out.size() != 3 || in[0].data == nullptr)
    return Status::InvalidArgument;
  if (!ref::recurrence_shapes_ok(in, Span<const TensorView>(out.data(), out.size()), *p)) return Status::ShapeMismatch;
  const DType dt = in[0].dtype;
  if (dt != DType::Float32 && dt != DType::Float16) return Status::DTypeMismatch;
  if (dt == DType::Float16 && !float16_supported("recurrence")) return Status::NotSupported;
  for (const TensorView& v : in) {
    if (v.data != nullptr && !v.is_contiguous()) return Status::InvalidArgument;  // the table entry asks for dense inputs
  }
  for (const TensorView& v : out) {
    if (v.data != nullptr && !v.is_contiguous()) {
      Context::set_why("recurrence on vulkan writes contiguous outputs only");
      return Status::NotSupported;
    }
  }
  const int64_t T = in[0].sizes[0], B = in[0].sizes[1], I = in[0].sizes[2], H = p->hidden;
  const int64_t n = B * H;
  if (n == 0) return Status::Ok;  // every output is empty
  for (Span<const TensorView> views : {in, Span<const TensorView>(out.data(), out.size())}) {
    for (const TensorView& v : views) {
      if (v.data != nullptr && v.numel() >= (int64_t{1} << 31)) {
        Context::set_why("recurrence on vulkan: an operand of 2^31 elements or more");
        return Status::NotSupported;
      }
    }
  }
  if (ctx.scratch == nullptr || ctx.scratch_bytes < recurrence_workspace(in, {}, params)) return Status::Internal;
  TensorView state;
  state.data = ctx.scratch;
  state.dtype = DType::Float32;
  state.rank = 1;
  state.sizes[0] = 4 * n;
  state.strides[0] = 1;

  RecurrencePush push{};
  push.T = static_cast<uint32_t>(T);
  push.B = static_cast<uint32_t>(B);
  push.I = static_cast<uint32_t>(I);
  push.H = static_cast<uint32_t>(H);
  push.cell = static_cast<uint32_t>(p->cell);
  push.D = static_cast<uint32_t>(p->directions);
  push.clip = static_cast<float>(p->clip);
  auto flag = [&](bool on, uint32_t bit) { push.flags |= on ? bit : 0u; };
  flag(in[3].data != nullptr, kHasBias);
  flag(in[4].data != nullptr, kHasLens);
  flag(in[4].data != nullptr && in[4].dtype == DType::Int64, kLens64);
  flag(in[5].data != nullptr, kHasH0);
  flag(in[6].data != nullptr, kHasC0);
  flag(in[7].data != nullptr, kHasPeep);
  flag(out[0].data != nullptr, kHasY);
  flag(out[1].data != nullptr, kHasYh);
  flag(out[2].data != nullptr, kHasYc);
  flag(p->linear_before_reset, kLbr);
  flag(p->input_forget, kInputForget);
  flag(p->relu, kRelu);

  const ShaderCode& shader = dt == DType::Float16 ? shaders::recurrence_f16 : shaders::recurrence;
  const bool reset_apart = p->cell == 1 && !p->linear_before_reset;
  const Grid g = grid(n, 64);
  auto run = [&](uint32_t mode) {
    Dispatch dsp(shader);
    push.x_first = dsp.bind(in[0]);
    push.w_first = dsp.bind(in[1]);
    push.r_first = dsp.bind(in[2]);
    push.b_first = dsp.bind_or(in[3], in[0]);
    push.l_first = dsp.bind_or(in[4], in[0]);
    push.h0_first = dsp.bind_or(in[5], in[0]);
    push.c0_first = dsp.bind_or(in[6], in[0]);
    push.p_first = dsp.bind_or(in[7], in[0]);
    push.y_first = dsp.bind_or(out[0], state);
    push.yh_first = dsp.bind_or(out[1], state);
    push.yc_first = dsp.bind_or(out[2], state);
    push.s_first = dsp.bind(state);
    push.mode = mode;
    return dsp.run(push, g.x, g.y, 1, {64});
  };
  for (int64_t d = 0; d < p->directions; ++d) {
    push.d = static_cast<uint32_t>(d);
    push.cur = 0;
    push.t = 0;
    EMBER_TRY(run(0));
    for (int64_t k = 0; k < T; ++k) {
      push.t = static_cast<uint32_t>(p->reverse || d == 1 ? T - 1 - k : k);
      if (reset_apart) EMBER_TRY(run(1));
      EMBER_TRY(run(2));
      push.cur = 1 - push.cur;
    }
    EMBER_TRY(run(3));
  }
  return Status::Ok;
}

}  // namespace ember::vk
