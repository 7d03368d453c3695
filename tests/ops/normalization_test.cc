// softmax, log_softmax, layer_norm and batch_norm (inference) against PyTorch.
#include <cmath>
#include <limits>
#include <string>

#include "runtime/core/thread_pool.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_close_for_dtype;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;

namespace {

const char* kDtypes[] = {"f32", "f64", "f16", "bf16"};

}  // namespace

TEST_CASE("softmax and log_softmax along every dim, negative dims, strides") {
  const Tensor x = golden("norm.x");
  for (int64_t d : {0, 1, 2, -1, -2}) {
    CAPTURE(d);
    check_close(softmax(x, d), golden("norm.softmax.d" + std::to_string(d)));
    check_close(x.softmax(d), golden("norm.softmax.d" + std::to_string(d)));
    check_close(log_softmax(x, d), golden("norm.log_softmax.d" + std::to_string(d)), 1e-5, 1e-5);
  }
  const Tensor xt = x.transpose(0, 2);
  check_close(softmax(xt, 0), golden("norm.t.softmax.d0"));
  check_close(log_softmax(xt, -1), golden("norm.t.log_softmax.dm1"), 1e-5, 1e-5);
  check_close(softmax(x, 1, DType::Float64), golden("norm.softmax.f64dtype"), 1e-12, 1e-12);
  const Tensor i = golden("norm.int");
  check_close(softmax(i, 1, DType::Float32), golden("norm.softmax.int_f32"));
  check_close(log_softmax(i, 0, DType::Float64), golden("norm.log_softmax.int_f64"), 1e-12, 1e-12);
  // Hand-computed: equal logits.
  check_equal(softmax(zeros({2, 4}), 1), full({2, 4}, 0.25));
  check_close(log_softmax(zeros({3}), 0), full({3}, -std::log(3.0)));
}

TEST_CASE("softmax is numerically stable and handles inf, NaN, 0-dim and empty inputs") {
  const Tensor big = golden("norm.big");
  check_close(softmax(big, 1), golden("norm.softmax.big"));
  check_close(log_softmax(big, 1), golden("norm.log_softmax.big"), 1e-5, 1e-5);
  const Tensor special = golden("norm.special");
  check_close(softmax(special, 1), golden("norm.softmax.special"));
  check_close(log_softmax(special, 1), golden("norm.log_softmax.special"));
  check_equal(softmax(scalar_tensor(3.0), 0), golden("norm.softmax.scalar"));
  check_equal(log_softmax(scalar_tensor(3.0), -1), golden("norm.log_softmax.scalar"));
  CHECK(softmax(empty({0, 3}), 1).sizes() == Shape{0, 3});
  const Tensor ei = softmax(empty({0}, DType::Int64), 0);  // PyTorch returns before dispatching
  CHECK(ei.dtype() == DType::Int64);
  CHECK(ei.numel() == 0);
}

TEST_CASE("softmax over wide rows, single- and multi-threaded") {
  const Tensor wide = golden("norm.wide");
  const int saved = get_num_threads();
  for (int threads : {1, 4}) {
    set_num_threads(threads);
    check_close(softmax(wide, 1), golden("norm.softmax.wide"));
    check_close(log_softmax(wide, -1), golden("norm.log_softmax.wide"), 1e-5, 1e-5);
  }
  set_num_threads(saved);
}

// The float32 row kernel (kernels/cpu/softmax_avx512.cc where the CPU has
// AVX-512, softmax_avx2.cc where it has AVX2 and FMA, the ISA clones
// elsewhere) against softmax computed in float64:
// every tail length of a 16-lane vector, -inf entries (exactly 0), results
// down to the subnormals, and the rows it hands back to the clones (a NaN,
// +inf, every value -inf), which the strided copy (the reference kernel) gives.
TEST_CASE("softmax: the float32 row kernel agrees with float64 for every row length") {
  manual_seed(5);
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t n : {1, 2, 7, 15, 16, 17, 31, 32, 33, 40, 128, 1000}) {
    Tensor x = randn({6, n}) * 8;
    x.select(0, 1).fill_(-inf);
    x.select(0, 1).narrow(0, n - 1, 1).fill_(3.0);  // one finite value: 1 there, 0 elsewhere
    x.select(0, 2).copy_(arange(0, static_cast<double>(n), 1.0) * (-110.0 / static_cast<double>(n)));
    for (int64_t j = 0; j < n; j += 3) x.select(0, 3).narrow(0, j, 1).fill_(-inf);
    x.select(0, 3).narrow(0, n - 1, 1).fill_(0.5);
    const Tensor y = softmax(x, 1), ly = log_softmax(x, 1);
    // x - m rounds in float32, as PyTorch's does: half an ulp of |x - m| <= 110
    // is a relative 3.8e-6 after exp; subnormal results round to 1.4e-45.
    check_close(y, softmax(x.to(DType::Float64), 1).to(DType::Float32), 5e-6, 3e-45);
    check_close(ly, log_softmax(x.to(DType::Float64), 1).to(DType::Float32), 1e-6, 1e-5);
    check_equal(y.select(0, 1).narrow(0, 0, n - 1), zeros({n - 1}));
    CHECK(y.select(0, 1)[n - 1].item<float>() == 1.0f);
    CHECK(y.select(0, 2)[0].item<float>() > 0.0f);
    if (n >= 16) CHECK(y.select(0, 2)[n - 1].item<float>() < std::numeric_limits<float>::min());  // subnormal or 0
    if (n > 1) check_equal(y.select(0, 3).narrow(0, 0, 1), zeros({1}));
  }
  Tensor special = randn({4, 37});
  special.select(0, 0).narrow(0, 20, 1).fill_(std::nan(""));
  special.select(0, 1).narrow(0, 5, 1).fill_(inf);
  special.select(0, 2).fill_(-inf);
  special.select(0, 3).narrow(0, 36, 1).fill_(-inf);
  const Tensor strided = special.t().contiguous().t();  // same values: the reference kernel
  check_close(softmax(special, 1), softmax(strided, 1), 5e-6, 3e-45);
  check_close(log_softmax(special, 1), log_softmax(strided, 1), 1e-6, 1e-5);
  CHECK(std::isnan(softmax(special, 1)[0][0].item<float>()));
  // Rows taken four (AVX-512) or two (AVX2) at a time equal each row alone, bit
  // for bit, blocks with a row handed back included.
  for (int64_t n : {5, 16, 37, 128}) {
    Tensor rows = randn({11, n}) * 4;
    rows.select(0, 6).narrow(0, 1, 1).fill_(std::nan(""));
    for (bool log : {false, true}) {
      const Tensor all = log ? log_softmax(rows, 1) : softmax(rows, 1);
      for (int64_t r = 0; r < 11; ++r) {
        const Tensor one = rows.narrow(0, r, 1);
        check_equal(all.narrow(0, r, 1), log ? log_softmax(one, 1) : softmax(one, 1));
      }
    }
  }
}

TEST_CASE("softmax dtypes") {
  for (const char* d : kDtypes) {
    CAPTURE(d);
    const std::string p = std::string("norm.") + d;
    const Tensor x = golden(p + ".x");
    check_close_for_dtype(softmax(x, -1), golden(p + ".softmax.dm1"));
    const Tensor ls = log_softmax(x, 1);
    const Tensor expected = golden(p + ".log_softmax.d1");
    // log_softmax values reach ~10: compare with the dtype's relative precision.
    if (x.dtype() == DType::Float32) check_close(ls, expected, 1e-5, 1e-5);
    else check_close_for_dtype(ls, expected);
  }
}

TEST_CASE("layer_norm: trailing dims, optional weight and bias, strides, dtypes") {
  const Tensor x = golden("norm.x");
  const Tensor w = golden("norm.ln.w"), b = golden("norm.ln.b");
  check_close(layer_norm(x, {5}), golden("norm.ln.last"), 1e-5, 1e-5);
  check_close(layer_norm(x, {5}, w[0], b[0]), golden("norm.ln.last.wb"), 1e-5, 1e-5);
  check_close(layer_norm(x, {5}, w[0]), golden("norm.ln.last.w"), 1e-5, 1e-5);
  check_close(layer_norm(x, {5}, Tensor(), b[0]), golden("norm.ln.last.b"), 1e-5, 1e-5);
  check_close(layer_norm(x, {4, 5}, w, b, 1e-3), golden("norm.ln.two.wb"), 1e-5, 1e-5);
  check_close(layer_norm(x, {3, 4, 5}), golden("norm.ln.all"), 1e-5, 1e-5);
  // Non-contiguous input, weight and bias.
  check_close(layer_norm(x.transpose(0, 2), {3}, w[0].slice(0, 0, 3), b[1].slice(0, 0, 3)),
              golden("norm.ln.t.wb"), 1e-5, 1e-5);
  check_equal(layer_norm(full({2, 6}, 7.0), {6}), golden("norm.ln.const"));
  for (const char* d : kDtypes) {
    CAPTURE(d);
    const std::string p = std::string("norm.") + d;
    const Tensor y = golden(p + ".x");
    const Tensor out = layer_norm(y, {5}, golden(p + ".ln.w"), golden(p + ".ln.b"));
    if (y.dtype() == DType::Float32) check_close(out, golden(p + ".ln"), 1e-5, 1e-5);
    else check_close_for_dtype(out, golden(p + ".ln"));
  }
  check_equal(layer_norm(empty({0, 5}), {5}), golden("norm.ln.empty"));
}

TEST_CASE("batch_norm inference: 2-D, 3-D, 4-D, channels_last, dtypes") {
  const Tensor rm = golden("norm.bn.rm"), rv = golden("norm.bn.rv");
  const Tensor w = golden("norm.bn.w"), b = golden("norm.bn.b");
  for (const char* name : {"x2", "x3", "x4"}) {
    CAPTURE(name);
    const Tensor x = golden(std::string("norm.bn.") + name);
    check_close(batch_norm(x, rm, rv, w, b), golden(std::string("norm.bn.") + name + ".out"), 1e-5, 1e-5);
  }
  const Tensor x4 = golden("norm.bn.x4");
  check_close(batch_norm(x4, rm, rv, Tensor(), Tensor(), 1e-3), golden("norm.bn.x4.noaffine"), 1e-5, 1e-5);
  const Tensor cl = x4.contiguous(MemoryFormat::ChannelsLast);
  const Tensor out = batch_norm(cl, rm, rv, w, b);
  CHECK(out.is_contiguous(MemoryFormat::ChannelsLast));
  check_close(out, golden("norm.bn.x4.cl"), 1e-5, 1e-5);
  // A transposed (non-dense-order) input.
  const Tensor x3 = golden("norm.bn.x3");
  check_close(batch_norm(x3.transpose(0, 2).contiguous().transpose(0, 2), rm, rv, w, b), golden("norm.bn.x3.out"),
              1e-5, 1e-5);
  for (const char* d : kDtypes) {
    CAPTURE(d);
    const std::string p = std::string("norm.") + d;
    const Tensor y = golden(p + ".bn.x3");
    const DType t = y.dtype();
    const Tensor got = batch_norm(y, rm.to(t), rv.to(t), w.to(t), b.to(t));
    if (t == DType::Float32) check_close(got, golden(p + ".bn"), 1e-5, 1e-5);
    else check_close_for_dtype(got, golden(p + ".bn"));
  }
  check_close_for_dtype(batch_norm(golden("norm.bf16.bn.x3"), rm, rv, w, b), golden("norm.bf16.bn.mixed"));
  CHECK(batch_norm(empty({0, 3}), rm, rv).sizes() == Shape{0, 3});
  // Hand-computed: (x - mean) / sqrt(var + eps) * w + b.
  check_close(batch_norm(tensor({{1.0, 2.0}}), tensor({1.0, 0.0}), tensor({4.0, 1.0}), tensor({2.0, 1.0}),
                         tensor({0.5, -1.0}), 0.0),
              tensor({{0.5, 1.0}}));
}

TEST_CASE("normalization errors use PyTorch's messages") {
  const Tensor x = zeros({2, 3, 4});
  const Tensor xi = zeros({2, 3}, DType::Int64);
  check_error([&] { softmax(x, 3); }, "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  check_error([&] { log_softmax(xi, 5); }, "Dimension out of range (expected to be in range of [-2, 1], but got 5)");
  check_error([&] { softmax(xi, 0); }, "\"softmax_kernel_impl\" not implemented for 'Long'");
  check_error([&] { softmax(xi, -1); }, "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'");
  check_error([&] { softmax(xi.to(DType::Int32), 1); }, "\"softmax_lastdim_kernel_impl\" not implemented for 'Int'");
  check_error([&] { softmax(scalar_tensor(int64_t{3}), 0); },
              "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'");
  check_error([&] { log_softmax(xi, 0); }, "\"softmax_kernel_impl\" not implemented for 'Long'");
  check_error([&] { log_softmax(xi, 1); }, "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Long'");
  check_error([&] { softmax(zeros({2}), 0, DType::Int64); },
              "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'");

  check_error([&] { layer_norm(x, {5}); },
              "Given normalized_shape=[5], expected input with shape [*, 5], but got input of size[2, 3, 4]");
  check_error([&] { layer_norm(x, {3, 5}); },
              "Given normalized_shape=[3, 5], expected input with shape [*, 3, 5], but got input of size[2, 3, 4]");
  check_error([&] { layer_norm(x, {2, 2, 3, 4}); },
              "Given normalized_shape=[2, 2, 3, 4], expected input with shape [*, 2, 2, 3, 4], but got input of "
              "size[2, 3, 4]");
  check_error([&] { layer_norm(x, IntArrayRef{}); },
              "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but "
              "got normalized_shape = []");
  check_error([&] { layer_norm(x, {4}, ones({3})); },
              "Expected weight to be of same shape as normalized_shape, but got weight of shape [3] and "
              "normalized_shape = [4]");
  check_error([&] { layer_norm(x, {4}, Tensor(), ones({3})); },
              "Expected bias to be of same shape as normalized_shape, but got bias of shape [3] and "
              "normalized_shape = [4]");
  check_error([&] { layer_norm(x, {4}, ones({4}, DType::Float64)); }, "expected scalar type Float but found Double");
  check_error([&] { layer_norm(x.to(DType::BFloat16), {4}, ones({4})); },
              "expected scalar type BFloat16 but found Float");
  check_error([&] { layer_norm(xi, {3}); }, "\"LayerNormKernelImpl\" not implemented for 'Long'");

  const Tensor m3 = zeros({3}), v3 = ones({3});
  check_error([&] { batch_norm(x, zeros({4}), v3); }, "running_mean should contain 3 elements not 4");
  check_error([&] { batch_norm(x, m3, ones({4})); }, "running_var should contain 3 elements not 4");
  check_error([&] { batch_norm(x, m3, v3, ones({4})); }, "weight should contain 3 elements not 4");
  check_error([&] { batch_norm(x, m3, v3, Tensor(), ones({4})); }, "bias should contain 3 elements not 4");
  check_error([&] { batch_norm(zeros({3}), m3, v3); }, "running_mean should contain 0 elements not 3");
  check_error([&] { batch_norm(x, Tensor(), v3); }, "running_mean must be defined in evaluation mode");
  check_error([&] { batch_norm(xi, m3.to(DType::Int64), v3.to(DType::Int64)); },
              "\"batch_norm\" not implemented for 'Long'");
  check_error([&] { batch_norm(x.to(DType::Float64), m3, v3); },
              "mixed dtype (CPU): expect input to have scalar type of BFloat16");
  check_error([&] { batch_norm(x, m3, v3.to(DType::Float64)); }, "expected scalar type Float but found Double");
  check_error([&] { batch_norm(x, m3, v3, ones({3}, DType::Float64)); },
              "mixed dtype (CPU): expect parameter to have scalar type of Float");
  check_error([&] { batch_norm(x.to(DType::BFloat16), m3, v3.to(DType::BFloat16)); },
              "mixed dtype (CPU): expect parameter to have scalar type of Float");
}

TEST_CASE("layer_norm: the float32 row kernel agrees with the reference kernel") {
  manual_seed(3);
  const Tensor x = randn({64, 771}) * 3 + 1, w = randn({771}), b = randn({771});
  const Tensor xs = x.t().contiguous().t();  // same values, column-major: the reference kernel
  CHECK(!xs.is_contiguous());
  check_close(layer_norm(x, {771}, w, b), layer_norm(xs, {771}, w, b), 1e-6, 1e-6);
  check_close(layer_norm(x, {771}), layer_norm(xs, {771}), 1e-6, 1e-6);
  check_close(layer_norm(x.view({8, 8, 771}), {8, 771}), layer_norm(xs.view({8, 8, 771}), {8, 771}), 1e-6, 1e-6);
}
