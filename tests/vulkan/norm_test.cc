// Vulkan Softmax, LogSoftmax, LayerNorm and BatchNorm (inference) against the
// CPU reference of the same front-end call. The shaders compute in float32
// where the reference uses double: 1e-5 relative, plus 1e-5 absolute for
// outputs near zero (normalized values, log-probabilities near 0).
#include <cmath>
#include <vector>

#include "tests/vulkan/vulkan_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

void check_vk(const Tensor& vk, const Tensor& cpu, double rtol = 1e-5, double atol = 1e-5) {
  REQUIRE(vk.device() == kVulkan);
  check_close(to_cpu(vk), cpu, rtol, atol);
}

// Copies a possibly non-contiguous Vulkan result back through a CPU view of
// the same strides: downloads the whole storage-sized contiguous permutation.
Tensor back(const Tensor& vk_result, IntArrayRef perm, IntArrayRef inverse) {
  return to_cpu(vk_result.permute(perm)).permute(inverse);
}

}  // namespace

TEST_CASE("softmax and log_softmax along every dim, odd shapes") {
  manual_seed(11);
  for (const Shape& s : std::vector<Shape>{{1}, {7}, {257}, {3, 5, 7}, {2, 3, 4, 5}, {2, 1, 300}}) {
    const Tensor x = randn(s) * 4;
    for (int64_t d = -x.dim(); d < x.dim(); ++d) {
      CAPTURE(shape_str(s));
      CAPTURE(d);
      check_vk(softmax(to_vk(x), d), softmax(x, d), 1e-5, 1e-7);
      check_vk(log_softmax(to_vk(x), d), log_softmax(x, d));
    }
  }
  const Tensor scalar = full({}, 3.0f);
  check_vk(softmax(to_vk(scalar), 0), softmax(scalar, 0));
  check_vk(log_softmax(to_vk(scalar), -1), log_softmax(scalar, -1));
}

TEST_CASE("softmax: long rows, more rows than one grid dimension, -inf and NaN entries") {
  manual_seed(12);
  const Tensor longrow = randn({3, 5000}) * 10;
  check_vk(softmax(to_vk(longrow), 1), softmax(longrow, 1), 1e-5, 1e-7);
  check_vk(log_softmax(to_vk(longrow), 1), log_softmax(longrow, 1), 1e-5, 1e-4);
  const Tensor many = randn({70001, 2});
  check_vk(softmax(to_vk(many), 1), softmax(many, 1), 1e-5, 1e-7);
  Tensor special = randn({4, 6});
  special.select(0, 0).select(0, 2).fill_(-INFINITY);  // a zero probability
  special.select(0, 1).fill_(-INFINITY);               // an all -inf row: NaN
  special.select(0, 2).select(0, 5).fill_(NAN);        // a NaN: NaN row
  special.select(0, 3).select(0, 1).fill_(INFINITY);   // +inf: inf - inf is NaN, a NaN row
  for (bool log : {false, true}) {
    CAPTURE(log);
    const Tensor cpu = log ? log_softmax(special, 1) : softmax(special, 1);
    const Tensor got = to_cpu(log ? log_softmax(to_vk(special), 1) : softmax(to_vk(special), 1));
    check_close(got, cpu, 1e-5, 1e-6);
    CHECK(std::isnan(got[1][0].item<float>()));
    CHECK(std::isnan(got[2][0].item<float>()));
    CHECK(std::isnan(got[3][0].item<float>()));
  }
  CHECK(to_cpu(softmax(to_vk(special), 1))[0][2].item<float>() == 0.0f);
}

TEST_CASE("softmax over a non-last dim with contiguous rows (one invocation per row)") {
  manual_seed(19);
  for (const Shape& s : std::vector<Shape>{{2, 5, 16, 17}, {40, 300}}) {
    Tensor x = randn(s) * 3;
    x.select(0, 1).select(0, 2).fill_(NAN);  // one NaN: its row (along dim 0 or 1) is NaN
    for (int64_t d : {0, 1}) {
      CAPTURE(shape_str(s));
      CAPTURE(d);
      check_vk(softmax(to_vk(x), d), softmax(x, d), 1e-5, 1e-7);
      check_vk(log_softmax(to_vk(x), d), log_softmax(x, d));
    }
    const Tensor h = x.to(DType::Float16);
    check_close_for_dtype(to_cpu(softmax(to_vk(h), 1)), softmax(h, 1));
  }
}

TEST_CASE("softmax of non-contiguous inputs writes outputs with the input's layout") {
  manual_seed(13);
  const Tensor x = randn({9, 6});
  const Tensor t = vk_transposed_view(x);
  REQUIRE(!t.is_contiguous());
  for (int64_t d : {0, 1}) {
    const Tensor y = softmax(t, d);
    CHECK(y.strides() == t.strides());  // empty_like keeps the layout
    check_close(back(y, {1, 0}, {1, 0}), softmax(x, d), 1e-5, 1e-7);
    check_close(back(log_softmax(t, d), {1, 0}, {1, 0}), log_softmax(x, d), 1e-5, 1e-5);
  }
  const Tensor z = randn({3, 4, 5});
  const Tensor stepped = to_vk(z).slice(2, 0, std::nullopt, 2);  // strides (20, 5, 2)
  check_vk(softmax(stepped, 2), softmax(z.slice(2, 0, std::nullopt, 2), 2), 1e-5, 1e-7);
  check_vk(softmax(stepped, 0), softmax(z.slice(2, 0, std::nullopt, 2), 0), 1e-5, 1e-7);
}

TEST_CASE("layer_norm over 1 and 2 trailing dims, with and without weight and bias") {
  manual_seed(14);
  for (const Shape& s : std::vector<Shape>{{3, 7}, {2, 3, 5}, {1, 257}, {4, 1000}, {70001, 3}}) {
    const Tensor x = randn(s) * 2 + 0.5;
    for (int64_t nr = 1; nr <= std::min<int64_t>(2, x.dim()); ++nr) {
      const Shape ns(s.end() - nr, s.end());
      const Tensor w = randn(ns), b = randn(ns);
      CAPTURE(shape_str(s));
      CAPTURE(nr);
      check_vk(layer_norm(to_vk(x), ns, to_vk(w), to_vk(b)), layer_norm(x, ns, w, b));
      check_vk(layer_norm(to_vk(x), ns), layer_norm(x, ns));
      check_vk(layer_norm(to_vk(x), ns, to_vk(w), Tensor(), 1e-2), layer_norm(x, ns, w, Tensor(), 1e-2));
      check_vk(layer_norm(to_vk(x), ns, Tensor(), to_vk(b)), layer_norm(x, ns, Tensor(), b));
    }
  }
}

TEST_CASE("layer_norm of a non-contiguous input; empty input") {
  manual_seed(15);
  const Tensor x = randn({5, 8});
  const Tensor w = randn({5});
  const Tensor t = vk_transposed_view(x.transpose(0, 1).contiguous());  // [8, 5] view, column-major
  REQUIRE(!t.is_contiguous());
  const Tensor xt = x.transpose(0, 1).contiguous();
  const Tensor y = layer_norm(t, {5}, to_vk(w));
  check_close(back(y, {1, 0}, {1, 0}), layer_norm(xt, {5}, w), 1e-5, 1e-5);
  const Tensor e = zeros({0, 4});
  CHECK(layer_norm(to_vk(e), {4}).sizes() == Shape{0, 4});
}

TEST_CASE("layer_norm: a non-contiguous weight is refused with the reason") {
  const Tensor x = to_vk(randn({3, 2, 4}));
  const Tensor w = vk_transposed_view(randn({2, 4}));
  CHECK_THROWS_WITH_AS(layer_norm(x, {2, 4}, w),
                       doctest::Contains("weight, bias and running statistics must be contiguous"), ember::Error);
}

TEST_CASE("batch_norm (inference): ranks 2 to 5, optional weight and bias") {
  manual_seed(16);
  for (const Shape& s : std::vector<Shape>{{4, 3}, {2, 3, 7}, {2, 5, 4, 3}, {1, 2, 3, 2, 3}, {3, 1, 257}}) {
    const int64_t c = s[1];
    const Tensor x = randn(s) * 3;
    const Tensor m = randn({c}), v = rand({c}) + 0.5, w = randn({c}), b = randn({c});
    CAPTURE(shape_str(s));
    check_vk(batch_norm(to_vk(x), to_vk(m), to_vk(v), to_vk(w), to_vk(b)), batch_norm(x, m, v, w, b));
    check_vk(batch_norm(to_vk(x), to_vk(m), to_vk(v), Tensor(), Tensor(), 1e-3),
             batch_norm(x, m, v, Tensor(), Tensor(), 1e-3));
    check_vk(batch_norm(to_vk(x), to_vk(m), to_vk(v), to_vk(w), Tensor()), batch_norm(x, m, v, w, Tensor()));
  }
}

TEST_CASE("batch_norm of a channels-last view keeps its layout") {
  manual_seed(17);
  const Tensor nhwc = randn({2, 4, 5, 3});
  const Tensor x = nhwc.permute({0, 3, 1, 2});  // [2, 3, 4, 5], channels last
  const Tensor m = randn({3}), v = rand({3}) + 0.5, w = randn({3}), b = randn({3});
  const Tensor vx = to_vk(nhwc).permute({0, 3, 1, 2});
  const Tensor y = batch_norm(vx, to_vk(m), to_vk(v), to_vk(w), to_vk(b));
  CHECK(y.strides() == vx.strides());
  check_close(back(y, {0, 2, 3, 1}, {0, 3, 1, 2}), batch_norm(x, m, v, w, b), 1e-5, 1e-5);
}

TEST_CASE("float16: softmax, log_softmax, layer_norm, batch_norm (float16 or float32 statistics)") {
  manual_seed(18);
  for (const Shape& s : std::vector<Shape>{{7}, {3, 257}, {2, 3, 4, 5}}) {
    const Tensor x = (randn(s) * 3).to(DType::Float16);
    CAPTURE(shape_str(s));
    for (int64_t d = 0; d < x.dim(); ++d) {
      check_close_for_dtype(to_cpu(softmax(to_vk(x), d)), softmax(x, d));
      check_close_for_dtype(to_cpu(log_softmax(to_vk(x), d)), log_softmax(x, d));
    }
    const Shape ns = {s.back()};
    const Tensor w = randn(ns).to(DType::Float16), b = randn(ns).to(DType::Float16);
    check_close_for_dtype(to_cpu(layer_norm(to_vk(x), ns, to_vk(w), to_vk(b))), layer_norm(x, ns, w, b));
    if (x.dim() >= 2) {
      const int64_t c = s[1];
      const Tensor m = randn({c}), v = rand({c}) + 0.5, g = randn({c}), bb = randn({c});
      // float32 statistics (PyTorch's mixed form), then float16 ones.
      check_close_for_dtype(to_cpu(batch_norm(to_vk(x), to_vk(m), to_vk(v), to_vk(g), to_vk(bb))),
                            batch_norm(x, m, v, g, bb));
      const Tensor mh = m.to(DType::Float16), vh = v.to(DType::Float16), gh = g.to(DType::Float16);
      check_close_for_dtype(to_cpu(batch_norm(to_vk(x), to_vk(mh), to_vk(vh), to_vk(gh), Tensor())),
                            batch_norm(x, mh, vh, gh, Tensor()));
    }
  }
}

TEST_CASE("errors: float64 has no Vulkan softmax") {
  const Tensor d = to_vk(arange(4, DType::Float64));
  CHECK_THROWS_WITH_AS(softmax(d, 0), "\"softmax\" not implemented for 'Double' on vulkan", ember::Error);
  CHECK_THROWS_WITH_AS(layer_norm(d, {4}), "\"layer_norm\" not implemented for 'Double' on vulkan", ember::Error);
}

EMBER_VULKAN_NO_VALIDATION_ERRORS()
