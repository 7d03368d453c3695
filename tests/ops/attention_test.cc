// scaled_dot_product_attention against torch's math path (golden_linalg.py:
// softmax(q @ k^T * scale + mask) @ v in float64), the fused CPU kernel at 1
// and 2 threads against the math path the front-end takes under autograd, and
// its errors.
#include <cmath>
#include <limits>
#include <string>

#include "kernels/cpu/gemm.h"
#include "runtime/core/thread_pool.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;
using ember::testing::has_golden;

namespace {

// The ops the converter fuses, as a graph runs them without the fused op.
Tensor math_path(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale) {
  Tensor s = matmul(q, k.transpose(-2, -1)) * scale;
  if (mask.defined()) s = s + mask;
  return matmul(softmax(s, -1), v);
}

struct Threads {
  int saved = get_num_threads();
  explicit Threads(int n) { set_num_threads(n); }
  ~Threads() { set_num_threads(saved); }
};

}  // namespace

TEST_CASE("scaled_dot_product_attention: torch's values, fused at 1 and 2 threads") {
  for (const char* name : {"plain", "bert_mask", "bool_mask", "broadcast", "rank3", "long", "one_query", "causal"}) {
    CAPTURE(name);
    const std::string p = std::string("linalg.sdpa.") + name;
    const Tensor mask = has_golden(p + ".mask") ? golden(p + ".mask") : Tensor();
    const std::optional<double> scale =
        std::string(name) == "bert_mask" ? 0.5 : std::string(name) == "long" ? std::optional<double>(0.25) : std::nullopt;
    for (int threads : {1, 2}) {
      Threads t(threads);
      const Tensor out = scaled_dot_product_attention(golden(p + ".q"), golden(p + ".k"), golden(p + ".v"), mask, scale);
      check_close(out, golden(p + ".out"), 1e-5, 1e-5);
      CHECK(out.is_contiguous());
    }
  }
}

TEST_CASE("scaled_dot_product_attention: permuted heads and a transposed key as the converter hands them") {
  manual_seed(3);
  // [B, L, H, E] projections viewed as [B, H, L, E]; the key as the Transpose of k^T.
  const Tensor q = randn({2, 9, 4, 16}).permute({0, 2, 1, 3});
  const Tensor kt = randn({2, 20, 4, 16}).permute({0, 2, 3, 1});
  const Tensor v = randn({2, 20, 4, 8}).permute({0, 2, 1, 3});
  Tensor mask = zeros({2, 1, 1, 20});
  mask.narrow(3, 15, 5).fill_(-10000.0);
  AttentionParams p;
  p.scale = 0.25;
  const Tensor out = scaled_dot_product_attention(q, kt.transpose(-2, -1), v, mask, p);
  check_close(out, math_path(q, kt.transpose(-2, -1), v, mask, 0.25), 1e-5, 1e-6);
  // At scale 1 (the converter folds the scale into q's weights) the mask row is the GEMM's column bias.
  p.scale = 1.0;
  check_close(scaled_dot_product_attention(q, kt.transpose(-2, -1), v, mask, p),
              math_path(q, kt.transpose(-2, -1), v, mask, 1.0), 1e-5, 1e-6);
  p.scale = 0.25;
  // The padded keys take no part: the same as attending to the first 15 alone.
  check_close(out, math_path(q, kt.transpose(-2, -1).narrow(2, 0, 15), v.narrow(2, 0, 15), Tensor(), 0.25), 1e-5,
              1e-6);
}

TEST_CASE("scaled_dot_product_attention: transpose_output writes [B, L, H, Ev], fused and on the math path") {
  manual_seed(8);
  const Tensor q = randn({2, 3, 9, 8}), k = randn({2, 3, 11, 8}), v = randn({2, 3, 11, 4});
  AttentionParams p;
  p.scale = 0.3;
  const Tensor plain = scaled_dot_product_attention(q, k, v, Tensor(), p);
  p.transpose_output = true;
  const Tensor t = scaled_dot_product_attention(q, k, v, Tensor(), p);
  CHECK(t.sizes() == Shape{2, 9, 3, 4});
  CHECK(t.is_contiguous());
  check_close(t, plain.transpose(1, 2), 1e-6, 1e-6);
  const Tensor qg = q.clone().requires_grad_();  // autograd: the math path
  check_close(scaled_dot_product_attention(qg, k, v, Tensor(), p).detach(), t, 1e-6, 1e-6);
  check_error([&] { scaled_dot_product_attention(ones({9, 8}), ones({11, 8}), ones({11, 4}), Tensor(), p); },
              "scaled_dot_product_attention: transpose_output needs a leading dim (heads) before L");
}

TEST_CASE("scaled_dot_product_attention: a fully masked row is NaN, the others are not") {
  const Tensor q = ones({1, 2, 4}), k = ones({1, 3, 4}), v = arange(6.0).reshape({1, 3, 2});
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor mask = tensor({{{0.0, -inf, 0.0}, {-inf, -inf, -inf}}}).to(DType::Float32);
  const Tensor out = scaled_dot_product_attention(q, k, v, mask, 1.0);
  check_equal(out[0][0], tensor({2.0f, 3.0f}));  // the mean of v's rows 0 and 2
  CHECK(std::isnan(out[0][1][0].item<float>()));
  CHECK(std::isnan(out[0][1][1].item<float>()));
}

TEST_CASE("scaled_dot_product_attention: padded keys are skipped only where their weights are exactly 0") {
  // A padding mask (one row for every query): the CPU kernel skips the keys
  // past the last one a score can reach (attention.cc's keys_kept), so v's
  // rows there are not read: NaN in them stays out of the output, where the
  // math path's 0 * NaN spreads it.
  manual_seed(6);
  const Tensor q = randn({2, 3, 40, 16}), k = randn({2, 3, 40, 16});
  const Tensor finite = randn({2, 3, 40, 8});
  Tensor mask = zeros({2, 1, 1, 40}), v = finite.clone();
  mask[0].narrow(2, 27, 13).fill_(-10000.0);
  mask[1].narrow(2, 10, 30).fill_(-1e9);
  v[0].narrow(1, 27, 13).fill_(std::numeric_limits<double>::quiet_NaN());
  v[1].narrow(1, 10, 30).fill_(std::numeric_limits<double>::quiet_NaN());
  for (int threads : {1, 2}) {
    Threads t(threads);
    check_close(scaled_dot_product_attention(q, k, v, mask, 0.25), math_path(q, k, finite, mask, 0.25), 1e-6, 1e-6);
    check_close(scaled_dot_product_attention(q, k, v, mask, 1.0), math_path(q, k, finite, mask, 1.0), 1e-6, 1e-6);
  }
  // Scores that outweigh the mask: key 5, masked by -10000, scores 16000
  // (q . k = 16 * 10 * 100) against 0 for the others, so it takes all the
  // weight; the norms' bound keeps every key.
  const Tensor q2 = full({1, 2, 16}, 10.0);
  Tensor k2 = zeros({1, 6, 16}), mask2 = zeros({1, 1, 6});
  k2[0][5].fill_(100.0);
  mask2.narrow(2, 3, 3).fill_(-10000.0);
  const Tensor v2 = arange(12.0).reshape({1, 6, 2}).to(DType::Float32);
  check_equal(scaled_dot_product_attention(q2, k2, v2, mask2, 1.0), tensor({{{10.0f, 11.0f}, {10.0f, 11.0f}}}));
}

TEST_CASE("scaled_dot_product_attention: the padded keys' bound counts every column, vector or not") {
  // Key 5, masked by -4000, scores exactly 4000 (q . k over the 4 columns
  // that carry values: 4 * 10 * 100), so it weighs as much as keys 0-2;
  // keys 3-4 (masked, scores 0) weigh 0. The bound keeps key 5 only if it
  // counts those columns: in the first or a later vector of 8 columns, in the
  // columns after the last whole vector, or with k transposed (no vectors).
  const int64_t E = 20;
  const Tensor v = arange(12.0).reshape({1, 6, 2}).to(DType::Float32);
  Tensor mask = zeros({1, 1, 6});
  mask.narrow(2, 3, 3).fill_(-4000.0);
  const Tensor expected = tensor({{{4.0f, 5.0f}, {4.0f, 5.0f}}});  // (v0 + v1 + v2 + v5) / 4
  for (int64_t first : {0, 8, 16}) {
    for (bool transposed : {false, true}) {
      CAPTURE(first);
      CAPTURE(transposed);
      Tensor q = zeros({1, 2, E}), k = zeros({1, 6, E});
      q.narrow(2, first, 4).fill_(10.0);
      k[0][5].narrow(0, first, 4).fill_(100.0);
      const Tensor kv = transposed ? k.transpose(-2, -1).contiguous().transpose(-2, -1) : k;
      check_equal(scaled_dot_product_attention(q, kv, v, mask, 1.0), expected);
    }
  }
  // A NaN in a padded key's row: no key is skipped, every score row meets
  // it and comes out NaN, as the math path's.
  for (int64_t col : {2, 17}) {
    CAPTURE(col);
    Tensor q = randn({1, 3, E}), k = randn({1, 6, E});
    k[0][4][col].fill_(std::numeric_limits<double>::quiet_NaN());
    const Tensor out = scaled_dot_product_attention(q, k, v, mask, 1.0);
    check_equal(isnan(out), full({1, 3, 2}, 1.0).to(DType::Bool));
    check_equal(isnan(math_path(q, k, v, mask, 1.0)), full({1, 3, 2}, 1.0).to(DType::Bool));
  }
}

TEST_CASE("scaled_dot_product_attention: no keys give zeros; no queries an empty output") {
  check_equal(scaled_dot_product_attention(ones({2, 3, 4}), ones({2, 0, 4}), ones({2, 0, 5})), zeros({2, 3, 5}));
  CHECK(scaled_dot_product_attention(ones({2, 0, 4}), ones({2, 3, 4}), ones({2, 3, 5})).sizes() == Shape{2, 0, 5});
}

TEST_CASE("scaled_dot_product_attention: a mask wider than the scores widens them, as the fused Add does") {
  manual_seed(4);
  const Tensor q = randn({2, 1, 8}), k = randn({2, 7, 8}), v = randn({2, 7, 3}), mask = randn({2, 5, 7});
  const Tensor out = scaled_dot_product_attention(q, k, v, mask, 1.0);
  CHECK(out.sizes() == Shape{2, 5, 3});
  check_close(out, math_path(q, k, v, mask, 1.0), 1e-6, 1e-6);
}

TEST_CASE("scaled_dot_product_attention: gradients through torch's math path") {
  manual_seed(6);
  const Tensor q = randn({2, 5, 8}).requires_grad_(), k = randn({2, 6, 8}).requires_grad_();
  const Tensor v = randn({2, 6, 3}).requires_grad_(), mask = randn({5, 6}).requires_grad_();
  const Tensor out = scaled_dot_product_attention(q, k, v, mask, 0.5);
  check_close(out.detach(), scaled_dot_product_attention(q.detach(), k.detach(), v.detach(), mask.detach(), 0.5),
              1e-6, 1e-6);
  (out * out).sum().backward();
  const Tensor q2 = q.detach().requires_grad_(), k2 = k.detach().requires_grad_();
  const Tensor v2 = v.detach().requires_grad_(), m2 = mask.detach().requires_grad_();
  const Tensor ref = math_path(q2, k2, v2, m2, 0.5);
  (ref * ref).sum().backward();
  check_equal(q.grad(), q2.grad());
  check_equal(k.grad(), k2.grad());
  check_equal(v.grad(), v2.grad());
  check_equal(mask.grad(), m2.grad());
}

TEST_CASE("scaled_dot_product_attention: bf16 products (Precision::BFloat16) stay within bf16's rounding") {
  if (!cpu::sgemm_bf16_supported()) return;  // the flag selects the bf16 GEMM, which this CPU lacks
  manual_seed(7);
  const Tensor q = randn({2, 4, 33, 32}), k = randn({2, 4, 40, 32}), v = randn({2, 4, 40, 16});
  AttentionParams p;
  p.scale = 0.2;
  const Tensor f32 = scaled_dot_product_attention(q, k, v, Tensor(), p);
  p.bf16 = true;
  const Tensor bf = scaled_dot_product_attention(q, k, v, Tensor(), p);
  CHECK((bf - f32).abs().max().item<float>() > 0.0f);  // the bf16 kernel ran
  check_close(bf, f32, 3e-2, 3e-2);
}

TEST_CASE("scaled_dot_product_attention: errors") {
  check_error([] { scaled_dot_product_attention(ones({3}), ones({3, 4}), ones({3, 4})); },
              "scaled_dot_product_attention: query, key and value must be at least 2-D, got 1-D, 2-D and 2-D");
  check_error([] { scaled_dot_product_attention(ones({2, 4}), ones({3, 4}, DType::Float64), ones({3, 4})); },
              "Expected query, key, and value to have the same dtype, but got query.dtype: float32 key.dtype: "
              "float64 and value.dtype: float32 instead.");
  check_error([] { scaled_dot_product_attention(ones({2, 4}), ones({3, 5}), ones({3, 4})); },
              "scaled_dot_product_attention: query's last dim (4) and key's (5) differ");
  check_error([] { scaled_dot_product_attention(ones({2, 4}), ones({3, 4}), ones({2, 4})); },
              "scaled_dot_product_attention: key has 3 positions (dim -2) and value 2");
  check_error([] { scaled_dot_product_attention(ones({2, 4}, DType::Int64), ones({3, 4}, DType::Int64), ones({3, 4}, DType::Int64)); },
              "scaled_dot_product_attention: expected floating-point query, key and value, got int64");
  check_error([] { scaled_dot_product_attention(ones({2, 4}), ones({3, 4}), ones({3, 4}), ones({2, 3}, DType::Int64)); },
              "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: int64 "
              "and  query.dtype: float32 instead.");
  check_error([] { scaled_dot_product_attention(ones({2, 4}), ones({3, 4}), ones({3, 4}), ones({4, 3})); },
              "The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 0");
  check_error([] { scaled_dot_product_attention(Tensor(), ones({3, 4}), ones({3, 4})); },
              "scaled_dot_product_attention(): query is an undefined tensor (as grad() is before the first backward, or "
              "after zero_grad(set_to_none=true))");
}
