// AddLayerNorm (ops.def; kernels/cpu/norm.cc): an Add and the LayerNorm
// after it as one op. The front-end against add then layer_norm (bit for bit,
// 1-3 threads, and against float64), its refusals, and the executor's pairing
// (pair_ops): which ops pair, the profile, the arena without the sum, the
// fallback for broadcasting inputs and the trainer's gradient.
#include <string>
#include <vector>

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

NormParams norm(int normalized_rank, double eps = 1e-5) {
  NormParams p;
  p.normalized_rank = normalized_rank;
  p.eps = eps;
  return p;
}

// add then layer_norm, as the executor runs the two ops.
Tensor two_ops(const Tensor& a, const Tensor& b, const Tensor& w, const Tensor& bias, const NormParams& p) {
  const Shape s = a.sizes();
  return layer_norm(a + b, Shape(s.end() - p.normalized_rank, s.end()), w, bias, p.eps);
}

}  // namespace

TEST_CASE("add_layer_norm: bit for bit add then layer_norm, every thread count, and close to float64") {
  struct Case {
    Shape shape;
    int nr;
    bool weight, bias;
  };
  const std::vector<Case> cases = {{{8, 128, 384}, 1, true, true},  // BERT at batch 8
                                   {{3, 5, 65}, 2, true, false},
                                   {{70001, 3}, 1, false, true},  // many short rows
                                   {{1, 257}, 1, false, false}};
  const int saved = get_num_threads();
  for (const Case& t : cases) {
    CAPTURE(shape_str(t.shape));
    manual_seed(static_cast<uint64_t>(t.shape.back()));
    const Tensor a = randn(t.shape) * 3.0 + 1.0, b = randn(t.shape);
    const Shape ns(t.shape.end() - t.nr, t.shape.end());
    const Tensor w = t.weight ? randn(ns) : Tensor(), bias = t.bias ? randn(ns) : Tensor();
    const NormParams p = norm(t.nr);
    for (int threads : {1, 2, 3}) {
      CAPTURE(threads);
      set_num_threads(threads);
      check_equal(add_layer_norm(a, b, w, bias, p), two_ops(a, b, w, bias, p));
    }
    // Against float64 (not the kernel checking itself).
    const auto d = [](const Tensor& v) { return v.defined() ? v.to(DType::Float64) : v; };
    const Tensor expected = layer_norm(d(a) + d(b), ns, d(w), d(bias), p.eps);
    check_close(add_layer_norm(a, b, w, bias, p), expected.to(DType::Float32), 1e-5, 1e-5);
  }
  set_num_threads(saved);
  // Non-contiguous inputs are read as their values.
  const Tensor a = randn({6, 40}), b = randn({40, 6}).t();
  check_equal(add_layer_norm(a, b, Tensor(), Tensor(), norm(1)), two_ops(a, b, Tensor(), Tensor(), norm(1)));
}

TEST_CASE("add_layer_norm: refusals name the problem") {
  const Tensor a = randn({4, 8}), b = randn({4, 8}), w = randn({8});
  CHECK(core::add_layer_norm(a, b, w, w, norm(1)).ok());
  const auto fails = [](Result<Tensor> r, Status s, const std::string& text) {
    CHECK(r.status() == s);
    CHECK_MESSAGE(error_message().find(text) != std::string::npos, error_message());
  };
  fails(core::add_layer_norm(a, randn({1, 8}), w, w, norm(1)), Status::ShapeMismatch,
        "expected two inputs of one shape and a weight and bias [8]; got [4, 8], [1, 8], [8], [8]");
  fails(core::add_layer_norm(a, b, randn({4}), Tensor(), norm(1)), Status::ShapeMismatch, "[4, 8], [4, 8], [4], []");
  fails(core::add_layer_norm(a, b, w, w, norm(3)), Status::InvalidArgument,
        "add_layer_norm normalizes 3 dims of an input of rank 2");
  fails(core::add_layer_norm(a.to(DType::Float64), b.to(DType::Float64), Tensor(), Tensor(), norm(1)),
        Status::DTypeMismatch, "expected float32 tensors, got float64");
  fails(core::add_layer_norm(a, b, w.clone().requires_grad_(), w, norm(1)), Status::NotSupported,
        "add_layer_norm has no backward");
  fails(core::add_layer_norm(Tensor(), b, w, w, norm(1)), Status::InvalidState, "input");
}

namespace {

// x + r -> LayerNorm over the last dim (weight, bias) -> y, r [rows, 96] or a
// broadcast [96]; with `sum_out`, the sum is a graph output too (two readers).
struct AddNormNet {
  Graph g;
  Tensor w, bias;
  int w_index = -1;

  AddNormNet(bool sum_out, bool broadcast) {
    manual_seed(11);
    w = randn({96});
    bias = randn({96});
    const int x = g.input("x", {16, 96}), r = g.input("r", broadcast ? std::vector<int64_t>{96}
                                                                       : std::vector<int64_t>{16, 96});
    const int sum = g.act("sum", {16, 96}), y = g.act("y", {16, 96});
    g.op(OpKind::Add, {x, r}, {sum}, "residual");
    w_index = g.weight("ln.weight", w);
    g.op(OpKind::LayerNorm, {sum, w_index, g.weight("ln.bias", bias)}, {y}, "ln", norm(1));
    g.output(y);
    if (sum_out) g.output(sum);
  }
};

std::vector<std::string> profiled_types(ExecutionContext& ctx, const Tensor& x, const Tensor& r) {
  RunOptions ro;
  ro.profile = true;
  run_ok(ctx, {x, r}, ro);
  std::vector<std::string> types;
  for (const OpProfile& op : ctx.profile()) {
    types.push_back(op.type);
    if (op.type == "add_layer_norm") CHECK(op.input_shapes == std::vector<Shape>{{16, 96}, {16, 96}, {96}, {96}});
  }
  return types;
}

}  // namespace

TEST_CASE("the executor runs an Add and the LayerNorm that alone reads its sum as one op") {
  AddNormNet net(false, false);
  const Tensor x = randn({16, 96}) * 2.0, r = randn({16, 96});
  const Tensor expected = two_ops(x, r, net.w, net.bias, norm(1));
  ExecutionContext ctx(net.g.build());
  CHECK(profiled_types(ctx, x, r) == std::vector<std::string>{"add_layer_norm"});
  const int saved = get_num_threads();
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    set_num_threads(threads);
    RunOptions ro;
    ro.num_threads = threads;
    check_equal(run_ok(ctx, {x, r}, ro)[0], expected);
  }
  set_num_threads(saved);
  // The sum is never made: the arena holds the output only.
  CHECK(ctx.memory_plan().arena_bytes < size_t{2 * 16 * 96 * 4});

  // The sum read twice (a graph output too): two ops, the same values.
  AddNormNet both(true, false);
  ExecutionContext ctx2(both.g.build());
  CHECK(profiled_types(ctx2, x, r) == std::vector<std::string>{"add", "layer_norm"});
  check_equal(run_ok(ctx2, {x, r})[0], expected);

  // A broadcast addend (declared shapes differ): two ops.
  AddNormNet bcast(false, true);
  const Tensor r1 = randn({96});
  ExecutionContext ctx3(bcast.g.build());
  CHECK(profiled_types(ctx3, x, r1) == std::vector<std::string>{"add", "layer_norm"});
  check_equal(run_ok(ctx3, {x, r1})[0], two_ops(x, r1.expand({16, 96}).contiguous(), net.w, net.bias, norm(1)));
}

TEST_CASE("a paired LayerNorm weight the trainer trains gets add then layer_norm's gradient") {
  AddNormNet net(false, false);
  manual_seed(12);
  const Tensor x = randn({16, 96}), r = randn({16, 96});
  const Tensor w = net.w.clone().requires_grad_();
  std::string error;
  Result<std::vector<Tensor>> y = run_recording(*net.g.build(), {x, r}, {{net.w_index, w}}, {}, &error);
  REQUIRE_MESSAGE(y.ok(), error);
  (y.get()[0] * y.get()[0]).sum().backward();

  const Tensor w_ref = net.w.clone().requires_grad_();
  const Tensor ref = layer_norm(x + r, {96}, w_ref, net.bias, 1e-5);
  (ref * ref).sum().backward();
  check_equal(y.get()[0].detach(), ref.detach());
  check_close(w.grad(), w_ref.grad(), 1e-5, 1e-5);
}
