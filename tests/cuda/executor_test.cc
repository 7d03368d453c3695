// The executor on CUDA (the host emulation here; a GPU in the --config=cuda
// build): outputs equal to the CPU executor's, fp16 and bf16 precision, and
// CUDA graphs — the second run of an input signature is captured, later runs
// replay it, new input values included; a model a replay could not serve
// (a host op reading an input's data) runs op by op. A Linear with a sparse
// COO weight runs the device's SparseLinear.
#include "quant/coo.h"
#include "runtime/model/executor.h"

#include "tests/harness/testing.h"
#include "tests/model/graph_builder.h"

using namespace ember;
using namespace ember::testing;

namespace {

ExecutorOptions on_cuda(Precision precision = Precision::Float32) {
  ExecutorOptions o;
  o.device = DeviceType::CUDA;
  o.precision = precision;
  return o;
}

// y = relu(x @ w + b): x [2, 4, 8] input, w [1, 8, 16], b [16].
Graph mlp_model() {
  manual_seed(3);
  Graph g;
  const int x = g.input("x", {2, 4, 8});
  const int w = g.weight("w", randn({1, 8, 16}));
  const int b = g.weight("b", randn({16}));
  const int h = g.act("h", {2, 4, 16});
  const int s = g.act("s", {2, 4, 16});
  const int y = g.act("y", {2, 4, 16});
  g.op(OpKind::MatMul, {x, w}, {h}, "mm");
  g.op(OpKind::Add, {h, b}, {s}, "add");
  g.op(OpKind::Relu, {s}, {y}, "relu");
  g.output(y);
  return g;
}

}  // namespace

TEST_CASE("every node on CUDA; outputs equal the CPU executor's; graphs replay new inputs") {
  const Graph g = mlp_model();
  const auto cuda_ex = g.build(on_cuda());
  const auto cpu_ex = g.build();
  for (int k = 0; k < 3; ++k) CHECK(cuda_ex->placement(k) == Placement::Device);
  ExecutionContext cuda_ctx(cuda_ex), cpu_ctx(cpu_ex);
  for (int run = 0; run < 4; ++run) {
    const Tensor x = randn({2, 4, 8});
    const std::vector<Tensor> want = run_ok(cpu_ctx, {x});
    const std::vector<Tensor> got = run_ok(cuda_ctx, {x});
    CHECK(got[0].device().is_cpu());
    check_close(got[0], want[0], 1e-5, 1e-6);
    // Run 1 plans; run 2 is captured; runs 3 and 4 replay the graph.
    CHECK(cuda_ctx.graph_captured() == (run >= 1));
  }
  // Another signature: captured again on its second run.
  for (int run = 0; run < 2; ++run) {
    const Tensor x = randn({2, 8, 4}).transpose(1, 2);  // other strides: another signature
    check_close(run_ok(cuda_ctx, {x})[0], run_ok(cpu_ctx, {x})[0], 1e-5, 1e-6);
  }
  CHECK(cuda_ctx.graph_captured());
  // Profiling runs op by op (per-op times need each op on its own).
  RunOptions profile;
  profile.profile = true;
  const Tensor x = randn({2, 4, 8});
  check_close(run_ok(cuda_ctx, {x}, profile)[0], run_ok(cpu_ctx, {x})[0], 1e-5, 1e-6);
  CHECK(cuda_ctx.profile().size() == 3);
}

TEST_CASE("graphs off: every run op by op, same outputs") {
  ExecutorOptions o = on_cuda();
  o.graphs = false;
  const Graph g = mlp_model();
  const auto ex = g.build(o);
  const auto cpu_ex = g.build();
  ExecutionContext ctx(ex), cpu_ctx(cpu_ex);
  for (int run = 0; run < 3; ++run) {
    const Tensor x = randn({2, 4, 8});
    check_close(run_ok(ctx, {x})[0], run_ok(cpu_ctx, {x})[0], 1e-5, 1e-6);
    CHECK_FALSE(ctx.graph_captured());
  }
}

TEST_CASE("fp16 and bf16 precision: float32 weights and activations stored 16-bit on the device") {
  const Graph g = mlp_model();
  const auto cpu_ex = g.build();
  ExecutionContext cpu_ctx(cpu_ex);
  const Tensor x = randn({2, 4, 8});
  const Tensor want = run_ok(cpu_ctx, {x})[0];
  for (Precision p : {Precision::Float16, Precision::BFloat16}) {
    const auto ex = g.build(on_cuda(p));
    ExecutionContext ctx(ex);
    for (int run = 0; run < 3; ++run) {
      const Tensor got = run_ok(ctx, {x})[0];
      CHECK(got.dtype() == DType::Float32);
      // bfloat16 keeps 8 bits of mantissa: 2^-8 relative per rounding, a few roundings deep.
      const double tol = p == Precision::Float16 ? 5e-3 : 4e-2;
      check_close(got, want, tol, tol);
    }
  }
}

TEST_CASE("a Linear with a sparse COO weight runs on the device, as the CPU executor") {
  manual_seed(5);
  Graph g;
  const int x = g.input("x", {5, 40});
  const Tensor dense = where(gt(randn({24, 40}), 1.0), randn({24, 40}), zeros({24, 40}));  // about 16% nonzero
  const sparse::CooParts coo = sparse::dense_to_coo(dense, DType::Int16);
  const int w = g.weight("fc.weight", coo.values);
  g.def.tensors[static_cast<size_t>(w)].shape = {24, 40};
  g.def.tensors[static_cast<size_t>(w)].sparse = SparseCooDef{w + 1, coo.values.numel()};
  g.weight("fc.weight.indices", coo.indices);
  const int b = g.weight("fc.bias", randn({24}));
  const int y = g.act("y", {5, 24});
  LinearParams p;
  p.activation.kind = ActivationKind::Relu;
  g.op(OpKind::Linear, {x, w, b}, {y}, "fc", p);
  g.output(y);
  const auto ex = g.build(on_cuda());
  CHECK(ex->placement(0) == Placement::Device);
  ExecutionContext ctx(ex), cpu_ctx(g.build());
  for (int run = 0; run < 3; ++run) {
    const Tensor in = randn({5, 40});
    const Tensor got = run_ok(ctx, {in})[0];
    check_close(got, run_ok(cpu_ctx, {in})[0], 1e-5, 1e-6);
    check_close(got, relu(matmul(in, dense.t()) + g.def.tensors[static_cast<size_t>(b)].tensor), 1e-5, 1e-6);
  }
}
