// Conv2dPair (ops.def; kernels/cpu/conv_pair.cc): a 1x1 Conv2d and the
// depthwise Conv2d after it as one op. The front-end against the two
// convolutions (bit for bit, both the banded path and the small pairs' two
// kernels, every GEMM ISA, 1-3 threads, against float64 too), its refusals,
// and the executor's pairing (pair_ops): which ops pair, the profile,
// the arena without the expanded tensor, and the trainer's gradient through
// the pair's two convolutions.
#include <string>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "runtime/core/error.h"
#include "runtime/core/thread_pool.h"
#include "runtime/ops/qlinear.h"
#include "tests/harness/testing.h"
#include "tests/model/graph_builder.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::Graph;
using ember::testing::run_ok;

namespace {

Activation clamp6() { return Activation{ActivationKind::Clamp, 0.0, 6.0}; }

struct Case {
  int64_t n, c, e, h, w, k, stride, pad, dil;
  Activation first, second;
  bool biases;
};

Conv2dPairParams params_of(const Case& t) {
  Conv2dPairParams p;
  p.pointwise.activation = t.first;
  p.depthwise.groups = t.e;
  for (int i = 0; i < 2; ++i) {
    p.depthwise.stride[i] = t.stride;
    p.depthwise.padding[i] = t.pad;
    p.depthwise.dilation[i] = t.dil;
  }
  p.depthwise.activation = t.second;
  return p;
}

// The two convolutions as the executor runs them unpaired (each activation in its kernel's epilogue).
Tensor two_convs(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2,
                 const Conv2dPairParams& p) {
  bool fused = false;
  const Tensor mid = unwrap(core::conv2d_activated(x, w1, b1, p.pointwise, &fused));
  REQUIRE((fused || p.pointwise.activation.kind == ActivationKind::None));
  const Tensor y = unwrap(core::conv2d_activated(mid, w2, b2, p.depthwise, &fused));
  REQUIRE((fused || p.depthwise.activation.kind == ActivationKind::None));
  return y;
}

}  // namespace

TEST_CASE("conv2d_pair: bit for bit the two convolutions, banded and not, every ISA and thread count") {
  const Activation none, hswish{ActivationKind::HardSwish};
  // The first five expand to at least 1 MB an image (the banded path); the last two do not.
  const std::vector<Case> cases = {
      {2, 16, 120, 48, 48, 3, 2, 1, 1, clamp6(), clamp6(), true},   // MobileNetV2's stride-2 blocks; 120: a tail
      {1, 16, 64, 64, 66, 3, 1, 1, 1, clamp6(), hswish, false},     // stride 1: bands overlap by two rows
      {2, 24, 72, 61, 59, 5, 2, 2, 1, none, clamp6(), true},        // 5x5, odd sizes
      {1, 8, 96, 56, 50, 3, 1, 2, 2, hswish, none, true},           // dilated
      {1, 4, 128, 45, 47, 3, 3, 0, 1, clamp6(), clamp6(), false},   // stride 3, no padding
      {2, 8, 24, 10, 12, 3, 2, 1, 1, clamp6(), clamp6(), true},     // small: the two kernels
      {1, 16, 40, 9, 9, 5, 1, 2, 1, hswish, hswish, false},
  };
  const int saved = get_num_threads();
  for (const Case& t : cases) {
    CAPTURE(t.e);
    CAPTURE(t.h);
    CAPTURE(t.stride);
    manual_seed(static_cast<uint64_t>(t.e + t.h));
    const Tensor x = (randn({t.n, t.c, t.h, t.w}) * 2.0).contiguous(MemoryFormat::ChannelsLast);
    const Tensor w1 = randn({t.e, t.c, 1, 1}) * 0.5, w2 = randn({t.e, 1, t.k, t.k});
    const Tensor b1 = t.biases ? randn({t.e}) : Tensor(), b2 = t.biases ? randn({t.e}) : Tensor();
    const Conv2dPairParams p = params_of(t);
    for (cpu::GemmIsa isa : cpu::sgemm_supported_isas()) {
      REQUIRE(cpu::sgemm_set_isa(isa));
      CAPTURE(std::string(cpu::sgemm_kernel_name()));
      for (int threads : {1, 2, 3}) {
        CAPTURE(threads);
        set_num_threads(threads);
        const Tensor y = conv2d_pair(x, w1, b1, w2, b2, p);
        CHECK(y.is_contiguous(MemoryFormat::ChannelsLast));
        check_equal(y, two_convs(x, w1, b1, w2, b2, p));
        // An NCHW input gives the same values.
        check_equal(conv2d_pair(x.contiguous(), w1, b1, w2, b2, p), y);
      }
    }
    REQUIRE(cpu::sgemm_set_isa(cpu::GemmIsa::Auto));
    // Against float64 convolutions with the activations applied (not the kernels checking themselves).
    const auto act = [](const Tensor& v, const Activation& a) {
      if (a.kind == ActivationKind::Clamp) return clamp(v, 0.0, 6.0);
      return a.kind == ActivationKind::HardSwish ? hardswish(v) : v;
    };
    const Tensor b1d = t.biases ? b1.to(DType::Float64) : Tensor(), b2d = t.biases ? b2.to(DType::Float64) : Tensor();
    const Tensor mid = act(conv2d(x.to(DType::Float64), w1.to(DType::Float64), b1d), t.first);
    const Tensor expected = act(conv2d(mid, w2.to(DType::Float64), b2d, {t.stride, t.stride}, {t.pad, t.pad},
                                       {t.dil, t.dil}, t.e),
                                t.second);
    check_close(conv2d_pair(x, w1, b1, w2, b2, p), expected.to(DType::Float32), 1e-4, 1e-4);
  }
  set_num_threads(saved);
}

TEST_CASE("conv2d_pair: refusals name the problem") {
  const Tensor x = randn({1, 4, 8, 8}), w1 = randn({8, 4, 1, 1}), w2 = randn({8, 1, 3, 3});
  Conv2dPairParams p;
  p.depthwise.groups = 8;
  p.depthwise.padding[0] = p.depthwise.padding[1] = 1;
  CHECK(core::conv2d_pair(x, w1, Tensor(), w2, Tensor(), p).ok());
  const auto fails = [](Result<Tensor> r, Status s, const std::string& text) {
    CHECK(r.status() == s);
    CHECK_MESSAGE(error_message().find(text) != std::string::npos, error_message());
  };
  fails(core::conv2d_pair(x, w1, Tensor(), randn({8, 2, 3, 3}), Tensor(), p), Status::ShapeMismatch,
        "depthwise weight [E, 1, KH, KW]");
  fails(core::conv2d_pair(x, randn({8, 4, 3, 3}), Tensor(), w2, Tensor(), p), Status::ShapeMismatch,
        "a 1x1 weight [E, C, 1, 1]");
  fails(core::conv2d_pair(x, w1, randn({7}), w2, Tensor(), p), Status::ShapeMismatch, "got x [1, 4, 8, 8]");
  fails(core::conv2d_pair(x.to(DType::Float64), w1.to(DType::Float64), Tensor(), w2.to(DType::Float64), Tensor(), p),
        Status::DTypeMismatch, "expected float32 tensors, got float64");
  fails(core::conv2d_pair(x, w1.clone().requires_grad_(), Tensor(), w2, Tensor(), p), Status::NotSupported,
        "conv2d_pair has no backward");
  fails(core::conv2d_pair(randn({1, 4, 1, 1}), w1, Tensor(), w2, Tensor(), Conv2dPairParams{{}, {{1, 1}, {0, 0}, {1, 1}, 8}}),
        Status::ShapeMismatch, "smaller than the depthwise kernel");
  fails(core::conv2d_pair(Tensor(), w1, Tensor(), w2, Tensor(), p), Status::InvalidState, "input");
}

namespace {

// x [2, 16, 48, 48] -> 1x1 to 120 channels (ReLU6) -> 3x3 depthwise, stride 2 (HardSwish) -> y; with
// `mid_out`, the expanded tensor is a graph output too (two readers: not paired).
struct PairNet {
  Graph g;
  Tensor w1, b1, w2, b2;
  int w1_index = -1;
  Conv2dPairParams p;

  explicit PairNet(bool mid_out) {
    manual_seed(7);
    w1 = randn({120, 16, 1, 1}) * 0.5;
    b1 = randn({120});
    w2 = randn({120, 1, 3, 3});
    b2 = randn({120});
    p.pointwise.activation = clamp6();
    p.depthwise = Conv2dParams{{2, 2}, {1, 1}, {1, 1}, 120, Activation{ActivationKind::HardSwish}};
    const int x = g.input("x", {2, 16, 48, 48});
    const int mid = g.act("mid", {2, 120, 48, 48}), y = g.act("y", {2, 120, 24, 24});
    w1_index = g.weight("w1", w1);
    g.op(OpKind::Conv2d, {x, w1_index, g.weight("b1", b1)}, {mid}, "expand", p.pointwise);
    g.op(OpKind::Conv2d, {mid, g.weight("w2", w2), g.weight("b2", b2)}, {y}, "depthwise", p.depthwise);
    g.output(y);
    if (mid_out) g.output(mid);
  }
};

std::vector<std::string> profiled_types(ExecutionContext& ctx, const Tensor& x) {
  RunOptions ro;
  ro.profile = true;
  run_ok(ctx, {x}, ro);
  std::vector<std::string> types;
  for (const OpProfile& op : ctx.profile()) {
    types.push_back(op.type);
    // A pair's entry: x, the 1x1 weight and bias, the depthwise weight and bias.
    if (op.type == "conv2d_pair")
      CHECK(op.input_shapes == std::vector<Shape>{{2, 16, 48, 48}, {120, 16, 1, 1}, {120}, {120, 1, 3, 3}, {120}});
  }
  return types;
}

}  // namespace

TEST_CASE("the executor pairs a 1x1 Conv2d with the depthwise one that alone reads it") {
  PairNet net(false);
  manual_seed(8);
  const Tensor x = randn({2, 16, 48, 48});
  const Tensor expected =
      two_convs(x.contiguous(MemoryFormat::ChannelsLast), net.w1, net.b1, net.w2, net.b2, net.p).contiguous();
  std::shared_ptr<const Executor> ex = net.g.build();
  ExecutionContext ctx(ex);
  CHECK(profiled_types(ctx, x) == std::vector<std::string>{"conv2d_pair"});
  const int saved = get_num_threads();
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    set_num_threads(threads);
    RunOptions ro;
    ro.num_threads = threads;
    check_equal(run_ok(ctx, {x}, ro)[0], expected);
  }
  set_num_threads(saved);
  // The expanded tensor (2 x 120 x 48 x 48 floats) is never made: the arena holds the output only.
  CHECK(ctx.memory_plan().arena_bytes < size_t{2 * 120 * 48 * 48 * 4});

  // Expanded tensor read twice (a graph output too): two Conv2d ops, the same values.
  PairNet both(true);
  ExecutionContext ctx2(both.g.build());
  CHECK(profiled_types(ctx2, x) == std::vector<std::string>{"conv2d", "conv2d"});
  check_equal(run_ok(ctx2, {x})[0], expected);

  // NCHW activations: no pair.
  ExecutorOptions nchw;
  nchw.conv_layout = ConvLayout::Contiguous;
  ExecutionContext ctx3(net.g.build(nchw));
  CHECK(profiled_types(ctx3, x) == std::vector<std::string>{"conv2d", "conv2d"});
  check_close(run_ok(ctx3, {x})[0], expected, 1e-5, 1e-5);
}

TEST_CASE("a paired 1x1 weight the trainer trains gets the two convolutions' gradient") {
  PairNet net(false);
  manual_seed(9);
  const Tensor x = randn({2, 16, 48, 48});
  const Tensor w1 = net.w1.clone().requires_grad_();
  std::string error;
  Result<std::vector<Tensor>> y = run_recording(*net.g.build(), {x}, {{net.w1_index, w1}}, {}, &error);
  REQUIRE_MESSAGE(y.ok(), error);
  y.get()[0].sum().backward();

  const Tensor w1_ref = net.w1.clone().requires_grad_();
  const Tensor xc = x.contiguous(MemoryFormat::ChannelsLast);
  const Tensor mid = clamp(conv2d(xc, w1_ref, net.b1), 0.0, 6.0);
  const Tensor ref = hardswish(conv2d(mid, net.w2, net.b2, {2, 2}, {1, 1}, {1, 1}, 120));
  ref.sum().backward();
  check_close(y.get()[0], ref, 1e-5, 1e-5);
  check_close(w1.grad(), w1_ref.grad(), 1e-4, 1e-4);
}
