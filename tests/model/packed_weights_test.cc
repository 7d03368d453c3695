// Float32 Conv2d weights packed once (weights.h prepare_packed decides the
// layout at Executor::create, the first run packs): the ops read the packed
// copy (shown by overwriting the model's weight after a run), give the eager convolution's outputs bit for
// bit, fall back to the weight itself when sgemm_set_isa made the copy stale,
// and the packed bytes are what Executor::prepared_bytes (inspect's memory
// line) reports; grouped and depthwise convolutions are not packed. A 3x3
// stride-1 convolution whose output size the model fixes, large enough for
// pre-transformed Winograd, holds the Winograd-transformed weight instead of
// the panels: its outputs are the Winograd kernel's bits and close to the
// float64 reference. Creating the executor leaves a mapped file's pages as
// they are; packing a weight hands its pages back to the OS (Model::release)
// at the first run: they leave the resident set and read back the
// same from the file.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/cpu/depthwise.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/winograd.h"
#include "runtime/core/thread_pool.h"
#include "runtime/ops/qlinear.h"
#include "tests/harness/testing.h"
#include "tests/model/graph_builder.h"

using namespace ember;
using namespace ember::testing;

namespace {

struct IsaGuard {
  ~IsaGuard() { cpu::sgemm_set_isa(cpu::GemmIsa::Auto); }
};

// conv1 (3 -> 10, 3x3, pad 1, ReLU) -> depthwise (10, 3x3) -> conv2 (10 -> 7, 1x1, stride 2, clamp).
struct ConvNet {
  Tensor w1 = randn({10, 3, 3, 3}), b1 = randn({10}), wd = randn({10, 1, 3, 3}), w2 = randn({7, 10, 1, 1}),
         b2 = randn({7});
  Conv2dParams p1, pd, p2;
  int w1_index = -1, w2_index = -1;
  Graph g;

  ConvNet() {
    p1.padding[0] = p1.padding[1] = 1;
    p1.activation.kind = ActivationKind::Relu;
    pd.padding[0] = pd.padding[1] = 1;
    pd.groups = 10;
    p2.stride[0] = p2.stride[1] = 2;
    p2.activation.kind = ActivationKind::Clamp;
    p2.activation.min = -0.5;
    p2.activation.max = 1.0;
    const int x = g.input("x", {-1, 3, 9, 9}, DType::Float32, {"n", "", "", ""});
    const int c1 = g.act("c1", {-1, 10, 9, 9}), cd = g.act("cd", {-1, 10, 9, 9}), c2 = g.act("c2", {-1, 7, 5, 5});
    w1_index = g.weight("w1", w1);
    g.op(OpKind::Conv2d, {x, w1_index, g.weight("b1", b1)}, {c1}, "conv1", p1);
    g.op(OpKind::Conv2d, {c1, g.weight("wd", wd), -1}, {cd}, "dw", pd);
    w2_index = g.weight("w2", w2);
    g.op(OpKind::Conv2d, {cd, w2_index, g.weight("b2", b2)}, {c2}, "conv2", p2);
    g.output(c2);
  }

  Tensor eager(const Tensor& x, const Tensor& w1v, const Tensor& w2v) const {
    bool fused = false;
    const Tensor y1 = conv2d_activated(x, w1v, b1, p1, &fused);
    REQUIRE(fused);
    const Tensor yd = conv2d_activated(y1, wd, Tensor(), pd, &fused);
    return conv2d_activated(yd, w2v, b2, p2, &fused);
  }
};

// The bytes of w packed for `layout`: the A panels of [C_out, C_in*kh*kw]
// (NCHW), or the B panels of its channels_last product (C_in*kh*kw x C_out).
size_t packed_bytes(const Tensor& w, ConvLayout layout) {
  const Tensor flat = w.reshape({w.size(0), -1});
  if (layout == ConvLayout::ChannelsLast) return cpu::sgemm_packed_bytes(false, flat.size(0), flat.size(1));
  return cpu::sgemm_pack_a(flat.size(0), flat.size(1), {flat.data_ptr<float>(), flat.stride(0), 1}).bytes();
}

}  // namespace

TEST_CASE("packed conv weights: read by the ops, bit-exact with eager, counted once") {
  // NCHW activations (A panels), channels_last ones (B panels), and Auto:
  // channels_last, as the model has a depthwise convolution.
  for (ConvLayout layout : {ConvLayout::Contiguous, ConvLayout::ChannelsLast, ConvLayout::Auto}) {
  CAPTURE(static_cast<int>(layout));
  const ConvLayout packed_as = layout == ConvLayout::Auto ? ConvLayout::ChannelsLast : layout;
  IsaGuard guard;
  manual_seed(0);
  ConvNet net;
  const std::shared_ptr<const Model> model = net.g.model();
  std::string error;
  ExecutorOptions options;
  options.conv_layout = layout;
  Result<std::shared_ptr<const Executor>> ex = Executor::create(model, options, &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  // conv1 and conv2 are packed; the depthwise one too for channels_last activations (its kernel's layout).
  const size_t depthwise = packed_as == ConvLayout::ChannelsLast ? cpu::depthwise_cl_weight_bytes(10, 9) : 0;
  CHECK(ex.get()->prepared_bytes() == packed_bytes(net.w1, packed_as) + packed_bytes(net.w2, packed_as) + depthwise);
  CHECK(packed_bytes(net.w1, packed_as) >= static_cast<size_t>(net.w1.nbytes()));

  ExecutionContext ctx(ex.get());
  // The eager ops on the layout the executor runs (its output comes back contiguous).
  const Tensor x = packed_as == ConvLayout::ChannelsLast ? randn({2, 3, 9, 9}).contiguous(MemoryFormat::ChannelsLast)
                                                         : randn({2, 3, 9, 9});
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    RunOptions ro;
    ro.num_threads = threads;
    set_num_threads(threads);
    check_equal(run_ok(ctx, {x}, ro)[0], net.eager(x, net.w1, net.w2));
  }
  set_num_threads(1);

  // Overwrite the model's weights after create: the packed copies are what the ops read...
  const Tensor w1_orig = net.w1.clone(), w2_orig = net.w2.clone();
  model->weight(net.w1_index).data_ptr<float>()[0] += 100.0f;
  model->weight(net.w2_index).data_ptr<float>()[3] -= 100.0f;
  const Tensor w1_new = model->weight(net.w1_index).clone(), w2_new = model->weight(net.w2_index).clone();
  check_equal(run_ok(ctx, {x})[0], net.eager(x, w1_orig, w2_orig));
  // ...until another kernel family makes them stale: then the weights themselves are read.
  for (cpu::GemmIsa isa : {cpu::GemmIsa::Portable, cpu::GemmIsa::Avx2, cpu::GemmIsa::Avx512}) {
    if (!cpu::sgemm_isa_supported(isa) || isa == cpu::sgemm_isa()) continue;
    REQUIRE(cpu::sgemm_set_isa(isa));
    CAPTURE(cpu::sgemm_kernel_name());
    check_equal(run_ok(ctx, {x})[0], net.eager(x, w1_new, w2_new));
    REQUIRE(cpu::sgemm_set_isa(cpu::GemmIsa::Auto));
  }
  }
}

TEST_CASE("packed conv weights: a weight two convolutions read is packed once; grouped ones are not packed") {
  manual_seed(1);
  const Tensor w = randn({4, 4, 3, 3}), wg = randn({4, 2, 3, 3});
  Graph g;
  const int x = g.input("x", {1, 4, 6, 6});
  const int a = g.act("a", {1, 4, 4, 4}), b = g.act("b", {1, 4, 2, 2}), c = g.act("c", {1, 4, 2, 2});
  const int wi = g.weight("w", w);
  g.op(OpKind::Conv2d, {x, wi, -1}, {a}, "first", Conv2dParams{});
  g.op(OpKind::Conv2d, {a, wi, -1}, {b}, "second", Conv2dParams{});
  Conv2dParams grouped;
  grouped.padding[0] = grouped.padding[1] = 1;
  grouped.groups = 2;
  g.op(OpKind::Conv2d, {b, g.weight("wg", wg), -1}, {c}, "grouped", grouped);
  g.output(c);
  const std::shared_ptr<const Executor> ex = g.build();
  CHECK(ex->prepared_bytes() == packed_bytes(w, ConvLayout::Contiguous));
  ExecutionContext ctx(ex);
  const Tensor in = randn({1, 4, 6, 6});
  check_equal(run_ok(ctx, {in})[0], conv2d(conv2d(conv2d(in, w), w), wg, Tensor(), {1, 1}, {1, 1}, {1, 1}, 2));
}

TEST_CASE("packed linear weights: bit-exact with eager linear; the packed B panels read where the GEMM packs") {
  IsaGuard guard;
  manual_seed(2);
  const Tensor w1 = randn({30, 300}), b1 = randn({30}), w2 = randn({5, 30});
  Graph g;
  const int x = g.input("x", {-1, 300}, DType::Float32, {"n", ""});
  const int h = g.act("h", {-1, 30}), y = g.act("y", {-1, 5});
  LinearParams fc1;
  fc1.activation.kind = ActivationKind::Relu;
  const int w1_index = g.weight("w1", w1);
  g.op(OpKind::Linear, {x, w1_index, g.weight("b1", b1)}, {h}, "fc1", fc1);
  g.op(OpKind::Linear, {h, g.weight("w2", w2), -1}, {y}, "fc2", LinearParams{});
  g.output(y);
  const std::shared_ptr<const Model> model = g.model();
  std::string error;
  Result<std::shared_ptr<const Executor>> ex = Executor::create(model, &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  auto packed_b_bytes = [](const Tensor& w) {
    return cpu::sgemm_pack_b(w.size(1), w.size(0), {w.data_ptr<float>(), 1, w.size(1)}).bytes();
  };
  CHECK(ex.get()->prepared_bytes() == packed_b_bytes(w1) + packed_b_bytes(w2));
  ExecutionContext ctx(ex.get());
  // 100 rows: the blocked GEMM (packed B); 3 rows: the unpacked dot products.
  const Tensor big = randn({100, 300}), small = randn({3, 300});
  auto eager = [&](const Tensor& in, const Tensor& w) { return linear(relu(linear(in, w, b1)), w2); };
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    set_num_threads(threads);
    check_equal(run_ok(ctx, {big})[0], eager(big, w1));
    check_equal(run_ok(ctx, {small})[0], eager(small, w1));
  }
  set_num_threads(1);
  // Overwrite w1 after create: 100 rows still read the packed copy; 3 rows read w1 itself.
  const Tensor w1_orig = w1.clone();
  model->weight(w1_index).data_ptr<float>()[7] += 50.0f;
  const Tensor w1_new = model->weight(w1_index).clone();
  check_equal(run_ok(ctx, {big})[0], eager(big, w1_orig));
  check_equal(run_ok(ctx, {small})[0], eager(small, w1_new));
}

TEST_CASE("packed matmul operands: a constant 2-D second input is packed once; bit-exact with eager matmul") {
  manual_seed(3);
  const Tensor b = randn({40, 30});
  Graph g;
  const int x = g.input("x", {2, 50, 40});
  const int y = g.act("y", {2, 50, 30});
  const int bi = g.weight("b", b);
  g.op(OpKind::MatMul, {x, bi}, {y}, "proj");
  g.output(y);
  const std::shared_ptr<const Model> model = g.model();
  std::string error;
  Result<std::shared_ptr<const Executor>> ex = Executor::create(model, &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  CHECK(ex.get()->prepared_bytes() ==
        cpu::sgemm_pack_b(40, 30, {b.data_ptr<float>(), 30, 1}).bytes());
  ExecutionContext ctx(ex.get());
  const Tensor in = randn({2, 50, 40});
  check_equal(run_ok(ctx, {in})[0], matmul(in, b));
  // 100 rows: the blocked GEMM reads the packed copy, not b.
  const Tensor b_orig = b.clone();
  model->weight(bi).data_ptr<float>()[0] += 10.0f;
  check_equal(run_ok(ctx, {in})[0], matmul(in, b_orig));
}

TEST_CASE("winograd at load: a 3x3 conv of a fixed output size holds the transformed weight, not the panels") {
  IsaGuard guard;
  manual_seed(4);
  // 16 -> 16 channels at 16x16: 16 tiles, where pre-transformed Winograd pays and the per-call transform
  // does not (winograd_profitable); the 8x8 one (4 tiles) keeps the GEMM panels.
  const Tensor w = randn({16, 16, 3, 3}), b = randn({16}), w_small = randn({16, 16, 3, 3});
  Conv2dParams prm;
  prm.padding[0] = prm.padding[1] = 1;
  prm.activation.kind = ActivationKind::Relu;
  Conv2dParams pool_like;  // 3x3 stride 2: 16x16 -> 8x8 (not Winograd)
  pool_like.padding[0] = pool_like.padding[1] = 1;
  pool_like.stride[0] = pool_like.stride[1] = 2;
  const Tensor w_s2 = randn({16, 16, 3, 3});
  Graph g;
  const int x = g.input("x", {-1, 16, 16, 16}, DType::Float32, {"n", "", "", ""});
  const int a = g.act("a", {-1, 16, 16, 16}), c = g.act("c", {-1, 16, 8, 8}), d = g.act("d", {-1, 16, 8, 8});
  const int wi = g.weight("w", w);
  g.op(OpKind::Conv2d, {x, wi, g.weight("b", b)}, {a}, "winograd", prm);
  g.op(OpKind::Conv2d, {a, g.weight("w_s2", w_s2), -1}, {c}, "stride2", pool_like);
  Conv2dParams plain;
  plain.padding[0] = plain.padding[1] = 1;
  g.op(OpKind::Conv2d, {c, g.weight("w_small", w_small), -1}, {d}, "small", plain);
  g.output(d);
  g.output(a);
  const std::shared_ptr<const Model> model = g.model();
  std::string error;
  Result<std::shared_ptr<const Executor>> ex = Executor::create(model, &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  size_t u_bytes = 0;
  for (const cpu::PackedOperand& q : cpu::winograd_pack_weight(w.data_ptr<float>(), 16, 16, 1)) u_bytes += q.bytes();
  CHECK(u_bytes >= cpu::winograd_weight_bytes(16, 16));
  CHECK(ex.get()->prepared_bytes() == u_bytes + packed_bytes(w_s2, ConvLayout::Contiguous) + packed_bytes(w_small, ConvLayout::Contiguous));

  // The Winograd kernel itself, weight transformed per call.
  auto winograd = [&](const Tensor& in, const Tensor& weight) {
    Tensor out = empty({in.size(0), 16, 16, 16});
    const TensorView xv = in.kernel_view(), ov = out.kernel_view();
    std::vector<char> scratch(cpu::winograd_workspace(xv, ov, false, get_num_threads()));
    REQUIRE(cpu::winograd_conv2d(xv, weight.kernel_view(), b.kernel_view(), ov, prm, nullptr, scratch.data(),
                                 scratch.size(), get_num_threads()));
    return out;
  };
  auto same_bits = [](const Tensor& p, const Tensor& q) {
    const Tensor cp = p.contiguous(), cq = q.contiguous();
    return cp.sizes() == cq.sizes() && std::memcmp(cp.data_ptr<float>(), cq.data_ptr<float>(), cp.numel() * 4) == 0;
  };
  ExecutionContext ctx(ex.get());
  const Tensor w_orig = w.clone();
  run_ok(ctx, {randn({1, 16, 16, 16})});  // the first run transforms the weight
  model->weight(wi).data_ptr<float>()[0] += 100.0f;  // read after it: the transformed copy is what runs
  for (int64_t n : {1, 2}) {
    for (int threads : {1, 2}) {
      CAPTURE(n);
      CAPTURE(threads);
      const Tensor in = randn({n, 16, 16, 16});
      RunOptions ro;
      ro.num_threads = threads;
      set_num_threads(threads);
      const std::vector<Tensor> out = run_ok(ctx, {in}, ro);
      CHECK(same_bits(out[1], winograd(in, w_orig)));
      const Tensor ref = relu(conv2d(in.to(DType::Float64), w_orig.to(DType::Float64), b.to(DType::Float64),
                                     {1, 1}, {1, 1}, {1, 1}, 1))
                             .to(DType::Float32);
      check_close(out[1], ref, 1e-4, 1e-4);
      const Tensor rest = conv2d(conv2d(out[1], w_s2, Tensor(), {2, 2}, {1, 1}, {1, 1}, 1), w_small, Tensor(),
                                 {1, 1}, {1, 1}, {1, 1}, 1);
      check_equal(out[0], rest);
    }
  }
  set_num_threads(1);
}

namespace {

// The resident kB of this process's mapping that holds `p` (/proc/self/smaps), or -1.
long resident_kb(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2 && line.find(':') > line.find('-')) {
      inside = begin <= addr && addr < end;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      return std::atol(line.c_str() + 4);
    }
  }
  return -1;
}

}  // namespace

TEST_CASE("packed weights of a mapped file: at the first run the originals' pages leave the resident set; reading them still works") {
  manual_seed(3);
  const Tensor w = randn({512, 600}), b = randn({512});
  Graph g;
  const int x = g.input("x", {-1, 600}, DType::Float32, {"n", ""});
  const int y = g.act("y", {-1, 512});
  const int wi = g.weight("w", w);
  g.op(OpKind::Linear, {x, wi, g.weight("b", b)}, {y}, "fc", LinearParams{});
  g.output(y);
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/packed_release.ember";
  std::string error;
  REQUIRE_MESSAGE(write_model(g.def, path, &error) == Status::Ok, error);
  Result<Model> loaded = Model::load(path, Verification::Full, &error);
  REQUIRE_MESSAGE(loaded.ok(), error);
  const auto model = std::make_shared<const Model>(std::move(loaded.get()));
  check_equal(model->weight(wi), w);  // reads every page of the weight: all resident
  const long before = resident_kb(model->data());
  REQUIRE(before >= static_cast<long>(w.nbytes() / 1024));

  Result<std::shared_ptr<const Executor>> ex = Executor::create(model, &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  CHECK(resident_kb(model->data()) == before);  // loading packs nothing: packing waits for the first use

  ExecutionContext ctx(ex.get());
  const Tensor in = randn({100, 600});
  check_equal(run_ok(ctx, {in})[0], linear(in, w, b));  // packs, then runs the packed copy
  const long after = resident_kb(model->data());
  CAPTURE(before);
  CAPTURE(after);
  // All of the weight's whole pages are gone (at most two partial pages stay).
  CHECK(after <= before - static_cast<long>(w.nbytes() / 1024) + 8);
  check_equal(model->weight(wi), w);                     // the original, faulted back in from the file
  check_equal(run_ok(ctx, {in.narrow(0, 0, 3)})[0], linear(in.narrow(0, 0, 3), w, b));  // the unpacked path
  std::remove(path.c_str());
}

TEST_CASE("bf16 precision on the cpu: Conv2d / Linear weights packed as bf16, products of bf16-rounded operands") {
  // And a MatMul of two activations (attention's scores: batched, the second
  // operand a transposed view), whose products round both operands as they
  // pack them (OpState::bf16).
  manual_seed(6);
  const Tensor w = randn({24, 8, 3, 3}), b = randn({24}), fw = randn({40, 96}), fb = randn({40});
  Graph g;
  const int x = g.input("x", {1, 8, 10, 10}), v = g.input("v", {70, 96});
  const int qa = g.input("q", {2, 3, 26, 40}), ka = g.input("k", {2, 3, 50, 40});
  const int y = g.act("y", {1, 24, 8, 8}), z = g.act("z", {70, 40});
  const int kt = g.act("kt", {2, 3, 40, 50}), s = g.act("s", {2, 3, 26, 50});
  g.op(OpKind::Conv2d, {x, g.weight("w", w), g.weight("b", b)}, {y}, "conv", Conv2dParams{});
  g.op(OpKind::Linear, {v, g.weight("fw", fw), g.weight("fb", fb)}, {z}, "fc", LinearParams{});
  DimsParams swap;
  swap.rank = 4;
  swap.dims[0] = 0;
  swap.dims[1] = 1;
  swap.dims[2] = 3;
  swap.dims[3] = 2;
  g.op(OpKind::Permute, {ka}, {kt}, "kt", swap);
  g.op(OpKind::MatMul, {qa, kt}, {s}, "scores");
  // And the fused attention (AttentionParams::bf16): both of its products.
  const int va = g.input("v2", {2, 3, 50, 16}), att = g.act("att", {2, 3, 26, 16});
  AttentionParams ap;
  ap.scale = 0.2;
  g.op(OpKind::ScaledDotProductAttention, {qa, ka, va, -1}, {att}, "attention", ap);
  g.output(y);
  g.output(z);
  g.output(s);
  g.output(att);
  ExecutorOptions options;
  options.precision = Precision::BFloat16;
  std::string error;
  Result<std::shared_ptr<const Executor>> ex = g.create(options, &error);
  if (!cpu::sgemm_bf16_supported()) {
    REQUIRE(!ex.ok());
    CHECK(ex.status() == Status::UnsupportedHardware);
    CHECK(error == "bf16 precision on the cpu needs AVX-512 BF16 (avx512_bf16), which this CPU lacks");
    return;
  }
  REQUIRE_MESSAGE(ex.ok(), error);
  // Half the float32 panels: two bf16 values per slot (no Winograd U for the 3x3).
  CHECK(ex.get()->prepared_bytes() ==
        cpu::sgemm_packed_bytes(true, 24, 72, true) + cpu::sgemm_packed_bytes(false, 40, 96, true));
  const Tensor in_x = randn({1, 8, 10, 10}), in_v = randn({70, 96}), in_q = randn({2, 3, 26, 40}),
               in_k = randn({2, 3, 50, 40}), in_v2 = randn({2, 3, 50, 16});
  ExecutionContext ctx(ex.get());
  const std::vector<Tensor> out = run_ok(ctx, {in_x, in_v, in_q, in_k, in_v2});
  // The float64 results of the bf16-rounded operands (biases float32), to float32 sums' error.
  auto rounded = [](const Tensor& t) { return t.to(DType::BFloat16).to(DType::Float64); };
  const Tensor conv_ref = conv2d(rounded(in_x), rounded(w), b.to(DType::Float64), {1, 1}, {0, 0}, {1, 1}, 1);
  const Tensor fc_ref = linear(rounded(in_v), rounded(fw), fb.to(DType::Float64));
  check_close(out[0].to(DType::Float64), conv_ref, 1e-5, 1e-5);
  check_close(out[1].to(DType::Float64), fc_ref, 1e-5, 1e-5);
  const Tensor scores_ref = matmul(rounded(in_q), rounded(in_k).transpose(2, 3));
  check_close(out[2].to(DType::Float64), scores_ref, 1e-5, 1e-5);
  // Not the float32 results: those differ from these by bf16's rounding.
  const Tensor fc32 = linear(in_v, fw, fb);
  CHECK((out[1] - fc32).abs().max().item<float>() > 1e-3f);
  CHECK((out[2] - matmul(in_q, in_k.transpose(2, 3))).abs().max().item<float>() > 1e-3f);
  const Tensor att32 = scaled_dot_product_attention(in_q, in_k, in_v2, Tensor(), 0.2);
  check_close(out[3], att32, 3e-2, 3e-2);
  CHECK((out[3] - att32).abs().max().item<float>() > 1e-3f);
}

TEST_CASE("packed conv weights: a grouped weight the CPU cannot lay out is refused with its reason") {
  // The executor packs depthwise weights for channels_last activations only
  // (runtime/model/weights.cc); the backend refuses any other grouped one.
  Backend* cpu = get_backend(DeviceType::CPU);
  const Tensor grouped = randn({8, 2, 3, 3}), depthwise = randn({8, 1, 3, 3});
  auto refused = [&](const Tensor& w, int64_t groups, bool channels_last) {
    WeightDesc d;
    d.weight = w.kernel_view();
    d.conv.groups = groups;
    d.channels_last = channels_last;
    const Result<std::shared_ptr<const PreparedWeight>> r = cpu->prepare_weight(OpKind::Conv2d, d);
    CHECK(r.status() == Status::InvalidArgument);
    CHECK(cpu->last_error() ==
          "a packed grouped Conv2d weight must be a depthwise [C, 1, KH, KW] one for channels_last");
  };
  refused(grouped, 4, true);      // two input channels a group
  refused(depthwise, 8, false);   // NCHW activations: the planes' kernel reads the weight itself
  refused(depthwise, 4, true);    // groups not the output channels
  WeightDesc ok;
  ok.weight = depthwise.kernel_view();
  ok.conv.groups = 8;
  ok.channels_last = true;
  const Result<std::shared_ptr<const PreparedWeight>> r = cpu->prepare_weight(OpKind::Conv2d, ok);
  REQUIRE(r.ok());
  CHECK(r.get()->bytes() == cpu::depthwise_cl_weight_bytes(8, 9));
}
