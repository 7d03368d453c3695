// The eager sparse COO API against PyTorch 1.13 (values from
// tests/sparse/torch_reference.py, run with /usr/bin/python3), the SpMM
// kernel against its reference and dense linear, and magnitude pruning
// against torch.nn.utils.prune.l1_unstructured.
#include <cmath>
#include <random>

#include "quant/coo.h"
#include "quant/prune.h"
#include "quant/sparse_tensor.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::check_error;

namespace {

SparseTensor example() {
  // torch: i = [[1, 0, 1, 0, 2], [2, 1, 2, 0, 3]], v = [1.5, -2, 0.25, 4, -1], size (3, 4).
  return sparse_coo_tensor(tensor<int64_t>({{1, 0, 1, 0, 2}, {2, 1, 2, 0, 3}}),
                           tensor<float>({1.5f, -2.f, 0.25f, 4.f, -1.f}), Shape{3, 4});
}

}  // namespace

TEST_CASE("sparse api: sparse_coo_tensor, is_sparse, coalesce, to_dense (torch)") {
  const SparseTensor s = example();
  CHECK(is_sparse(s));
  CHECK(!is_sparse(tensor<float>({1.f})));
  CHECK(s.nnz() == 5);
  CHECK(s.sizes() == Shape{3, 4});
  CHECK(!s.is_coalesced());
  const SparseTensor c = s.coalesce();
  CHECK(c.is_coalesced());
  check_equal(c.indices(), tensor<int64_t>({{0, 0, 1, 2}, {0, 1, 2, 3}}));
  check_equal(c.values(), tensor<float>({4.f, -2.f, 1.75f, -1.f}));
  const Tensor dense = tensor<float>({{4, -2, 0, 0}, {0, 0, 1.75f, 0}, {0, 0, 0, -1}});
  check_equal(s.to_dense(), dense);
  check_equal(to_dense(c), dense);
  // int32 indices are converted; the size can be inferred.
  const SparseTensor inferred =
      sparse_coo_tensor(tensor<int64_t>({{1, 0}, {2, 5}}).to(DType::Int32), tensor<float>({1.f, 2.f}).to(DType::Float64));
  CHECK(inferred.sizes() == Shape{2, 6});
  CHECK(inferred.indices().dtype() == DType::Int64);
  CHECK(inferred.dtype() == DType::Float64);
}

TEST_CASE("sparse api: to_sparse, mm, add (torch)") {
  // torch: x.to_sparse() -> indices [[0, 1, 2], [1, 2, 0]], values [1.5, -2, 3], coalesced.
  const SparseTensor t = to_sparse(tensor<float>({{0, 1.5f, 0}, {0, 0, -2}, {3, 0, 0}}));
  CHECK(t.is_coalesced());
  check_equal(t.indices(), tensor<int64_t>({{0, 1, 2}, {1, 2, 0}}));
  check_equal(t.values(), tensor<float>({1.5f, -2.f, 3.f}));
  // torch.sparse.mm(s, d)
  const Tensor d = tensor<float>({{1, 2}, {3, 4}, {5, 6}, {7, 8}});
  check_equal(mm(example(), d), tensor<float>({{-2, 0}, {8.75f, 10.5f}, {-7, -8}}));
  const SparseTensor e64 = sparse_coo_tensor(example().indices(), example().values().to(DType::Float64), Shape{3, 4});
  check_equal(mm(e64, d.to(DType::Float64).t().contiguous().t()),
              tensor<float>({{-2, 0}, {8.75f, 10.5f}, {-7, -8}}).to(DType::Float64));
  // dense + sparse (torch) and sparse + dense -> dense.
  const Tensor dd = arange(12, DType::Float32).reshape({3, 4});
  const Tensor sum_ds = tensor<float>({{4, -1, 2, 3}, {4, 5, 7.75f, 7}, {8, 9, 10, 10}});
  check_equal(add(dd, example()), sum_ds);
  check_equal(add(example(), dd), sum_ds);
  // sparse + sparse -> coalesced sparse (torch: (s + s2).coalesce()).
  const SparseTensor s2 = sparse_coo_tensor(tensor<int64_t>({{2, 1}, {3, 2}}), tensor<float>({1.f, -1.75f}), Shape{3, 4});
  const SparseTensor sum_ss = add(example(), s2);
  CHECK(sum_ss.is_coalesced());
  check_equal(sum_ss.indices(), tensor<int64_t>({{0, 0, 1, 2}, {0, 1, 2, 3}}));
  check_equal(sum_ss.values(), tensor<float>({4.f, -2.f, 0.f, 0.f}));
}

TEST_CASE("sparse api: errors") {
  const Tensor i = tensor<int64_t>({{1, 0, 1, 0, 2}, {2, 1, 2, 0, 3}});
  const Tensor v = tensor<float>({1.5f, -2.f, 0.25f, 4.f, -1.f});
  // torch's message.
  check_error([&] { sparse_coo_tensor(i, v, Shape{2, 4}); },
              "size is inconsistent with indices: for dim 0, size is 2 but found index 2");
  check_error([&] { sparse_coo_tensor(i, v.narrow(0, 0, 4), Shape{3, 4}); },
              "sparse_coo_tensor: number of values (4) does not match number of indices (5)");
  check_error([&] { sparse_coo_tensor(i.to(DType::Float32), v, Shape{3, 4}); },
              "sparse_coo_tensor: indices must be an integer tensor, got float32");
  check_error([&] { sparse_coo_tensor(i.reshape({10}), v, Shape{3, 4}); },
              "sparse_coo_tensor: indices must be 2-D [ndim, nnz], got [10]");
  check_error([&] { sparse_coo_tensor(i, v.reshape({5, 1}), Shape{3, 4}); },
              "sparse_coo_tensor: values must be 1-D [nnz] (hybrid sparse tensors are not supported), got [5, 1]");
  check_error([&] { sparse_coo_tensor(i, v, Shape{3, 4, 1}); },
              "sparse_coo_tensor: number of dimensions of the size (3) does not match the indices (2)");
  check_error([&] { sparse_coo_tensor(tensor<int64_t>({{-1}, {0}}), tensor<float>({1.f}), Shape{3, 4}); },
              "sparse_coo_tensor: found negative index -1 for dim 0");
  check_error([&] { mm(example(), zeros({3, 2})); },
              "mm: mat1 and mat2 shapes cannot be multiplied (3x4 and 3x2)");
  check_error([&] { mm(example(), zeros({4, 2}, DType::Float64)); },
              "mm: expected mat1 and mat2 to have the same dtype, but got: float32 != float64");
  check_error([&] { add(example(), zeros({4, 3})); }, "add: sparse [3, 4] and dense [4, 3] must have the same size");
  check_error([&] { add(example(), to_sparse(zeros({3, 5}))); },
              "add: sparse tensors of sizes [3, 4] and [3, 5] cannot be added");
  check_error([&] { to_dense(SparseTensor()); }, "to_dense: undefined sparse tensor");
}

TEST_CASE("spmm: packed CSR linear matches the reference and dense linear") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t m : {1, 2, 3, 16}) {
    for (auto [n, k] : {std::pair<int64_t, int64_t>{37, 70}, {5, 70000}}) {
      CAPTURE(m);
      CAPTURE(k);
      // ~85 % zeros.
      std::vector<float> wv(static_cast<size_t>(n * k));
      for (float& x : wv) x = (rng() % 100 < 85) ? 0.f : u(rng);
      const Tensor w = tensor(wv, {n, k});
      std::vector<float> xv(static_cast<size_t>(m * k)), bv(static_cast<size_t>(n));
      for (float& x : xv) x = u(rng);
      for (float& x : bv) x = u(rng);
      const Tensor x = tensor(xv, {m, k}), b = tensor(bv, {n});
      const sparse::CooParts coo = sparse::dense_to_coo(w, sparse::coo_index_dtype({n, k}));
      CHECK(coo.indices.dtype() == (k > 32768 ? DType::Int32 : DType::Int16));
      const sparse::CsrMatrix csr = sparse::pack_csr(coo.indices, coo.values, n, k);
      CHECK(csr.narrow == (k <= 65536));
      CHECK(csr.nnz() == coo.values.numel());
      const Tensor y = sparse::sparse_linear(x, csr, b);
      Tensor ref = empty({m, n});
      sparse::spmm_linear_ref(csr, x.data_ptr<float>(), m, k, b.data_ptr<float>(), ref.data_ptr<float>());
      check_close(y, ref, 1e-4, 1e-4);
      check_close(y, linear(x, w, b), 2e-4, 2e-4);
    }
  }
  // Batched leading dims and a strided input; no bias.
  const Tensor w = tensor<float>({{0, 2, 0}, {1, 0, -1}});
  const sparse::CsrMatrix csr = sparse::pack_csr_dense(w);
  const Tensor x = arange(12, DType::Float32).reshape({2, 3, 2}).transpose(1, 2);  // [2, 2, 3]
  check_equal(sparse::sparse_linear(x, csr), linear(x, w));
  check_error([&] { sparse::sparse_linear(zeros({2, 4}), csr); },
              "sparse linear: input [2, 4] does not end in 3 (weight [2, 3])");
  check_error([&] { sparse::sparse_linear(zeros({2, 3}), csr, zeros({3})); },
              "sparse linear: bias [3] is not [2]");
  check_error([&] { sparse::sparse_linear(zeros({2, 3}, DType::Float64), csr); },
              "sparse linear needs a float32 input, got float64");
  // Unsorted COO is refused at pack.
  check_error([&] { sparse::pack_csr(tensor<int64_t>({{1, 0}, {0, 0}}), tensor<float>({1.f, 2.f}), 2, 2); },
              "pack_csr: COO value 1 at (0, 0) is not sorted in row-major order or repeats a coordinate (coalesce first)");
}

namespace {

// A random [n, k] weight with `zero_pct` % zeros, row `empty_row` all zero and
// row `full_row` without zeros (either may be -1: none).
std::vector<float> random_weight(std::mt19937& rng, int64_t n, int64_t k, int zero_pct, int64_t empty_row,
                                 int64_t full_row) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> wv(static_cast<size_t>(n * k));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      float v = static_cast<int>(rng() % 100) < zero_pct ? 0.f : u(rng);
      if (r == full_row && v == 0.f) v = 0.5f;
      if (r == empty_row) v = 0.f;
      wv[static_cast<size_t>(r * k + c)] = v;
    }
  }
  return wv;
}

// |y - ref| <= 1e-5 * (sum_k |W[r, k] x[i, k]| + |b[r]|): the kernel against
// the double-accumulated reference, relative to the magnitude of the row's terms.
void check_spmm(const sparse::CsrMatrix& w, const std::vector<float>& dense_w, const std::vector<float>& x, int64_t m,
                int64_t ldx, const std::vector<float>& bias) {
  std::vector<float> y(static_cast<size_t>(m * w.rows), -7.f), ref(y.size(), -9.f);
  sparse::spmm_linear(w, x.data(), m, ldx, bias.data(), y.data());
  sparse::spmm_linear_ref(w, x.data(), m, ldx, bias.data(), ref.data());
  int bad = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t r = 0; r < w.rows; ++r) {
      double mag = std::fabs(bias[static_cast<size_t>(r)]);
      for (int64_t c = 0; c < w.cols; ++c)
        mag += std::fabs(static_cast<double>(dense_w[static_cast<size_t>(r * w.cols + c)]) *
                         x[static_cast<size_t>(i * ldx + c)]);
      const size_t o = static_cast<size_t>(i * w.rows + r);
      if (!(std::fabs(static_cast<double>(y[o]) - ref[o]) <= 1e-5 * mag)) {
        if (++bad <= 3)
          FAIL_CHECK("x row ", i, ", output ", r, ": ", y[o], " vs reference ", ref[o], " (terms ", mag, ")");
      }
    }
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("spmm: blocked and portable kernels match the reference (fp32 and int8 values, odd shapes)") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  struct Case {
    int64_t n, k;
    int zero_pct;
    int64_t empty_row, full_row;
  };
  // Rows not a multiple of 16, columns not a multiple of 32, an empty row, a
  // row with every column, K > 65536 (int32 columns), one column, one row.
  for (const Case& c : {Case{37, 70, 85, 3, 20}, Case{16, 32, 90, 0, 15}, Case{3, 1, 0, -1, -1},
                        Case{1, 33, 50, -1, 0}, Case{50, 768, 90, 49, 17}, Case{5, 70000, 99, 1, 4}}) {
    for (const bool int8 : {false, true}) {
      CAPTURE(c.n);
      CAPTURE(c.k);
      CAPTURE(int8);
      std::vector<float> wv = random_weight(rng, c.n, c.k, c.zero_pct, c.empty_row, c.full_row);
      sparse::CsrMatrix w;
      std::vector<float> real(wv.size());  // the weight the kernel computes with
      if (int8) {
        // Symmetric per-channel int8 (q in [-127, 127], nonzero where wv is).
        std::vector<int8_t> q(wv.size());
        std::vector<float> scales(static_cast<size_t>(c.n));
        for (int64_t r = 0; r < c.n; ++r) scales[static_cast<size_t>(r)] = 0.01f * static_cast<float>(r % 7 + 1);
        for (size_t e = 0; e < wv.size(); ++e) {
          q[e] = static_cast<int8_t>(wv[e] == 0.f ? 0 : (wv[e] > 0 ? 1 : -1) * static_cast<int>(1 + rng() % 127));
          real[e] = scales[e / static_cast<size_t>(c.k)] * q[e];
        }
        const sparse::CooParts coo = sparse::dense_to_coo(tensor(q, {c.n, c.k}), sparse::coo_index_dtype({c.n, c.k}));
        w = sparse::pack_csr(coo.indices, coo.values, c.n, c.k, scales);
        CHECK(w.int8);
        CHECK(w.values.empty());
      } else {
        real = wv;
        const sparse::CooParts coo = sparse::dense_to_coo(tensor(wv, {c.n, c.k}), sparse::coo_index_dtype({c.n, c.k}));
        w = sparse::pack_csr(coo.indices, coo.values, c.n, c.k);
        CHECK(!w.int8);
      }
      CHECK(w.narrow == (c.k <= 65536));
      CHECK(w.blocked.empty() == !sparse::has_fast_spmm());
      sparse::CsrMatrix portable = w;
      portable.blocked = sparse::BlockedSpmm();
      std::vector<float> bias(static_cast<size_t>(c.n));
      for (float& b : bias) b = u(rng);
      for (int64_t m : {1, 3, 5, 16}) {
        for (int64_t pad : {0, 3}) {  // ldx = k + pad
          CAPTURE(m);
          CAPTURE(pad);
          const int64_t ldx = c.k + pad;
          std::vector<float> x(static_cast<size_t>(m * ldx));
          for (float& v : x) v = u(rng);
          check_spmm(w, real, x, m, ldx, bias);
          check_spmm(portable, real, x, m, ldx, bias);
        }
      }
    }
  }
}

TEST_CASE("spmm: the blocked layout of a small matrix") {
  if (!sparse::has_fast_spmm()) return;  // built only on AVX-512 CPUs
  // [18, 40]: slices {rows 0-15, rows 16-17}, blocks {cols 0-31, cols 32-39}.
  // Row 0: cols 1, 5, 33; row 2: col 31; row 17: cols 0, 32, 39.
  std::vector<float> wv(18 * 40, 0.f);
  wv[0 * 40 + 1] = 1.f, wv[0 * 40 + 5] = 2.f, wv[0 * 40 + 33] = 3.f, wv[2 * 40 + 31] = 4.f;
  wv[17 * 40 + 0] = 5.f, wv[17 * 40 + 32] = 6.f, wv[17 * 40 + 39] = 7.f;
  const sparse::CsrMatrix csr = sparse::pack_csr_dense(tensor(wv, {18, 40}));
  const sparse::BlockedSpmm& b = csr.blocked;
  CHECK(b.slices == 2);
  CHECK(b.blocks == 2);
  CHECK(b.count == std::vector<uint8_t>{2, 1, 1, 2});
  CHECK(b.slot_start == std::vector<int64_t>{0, 3, 6});
  // Slot 0: row 0 col 1, row 2 col 31; slot 1: row 0 col 5; slot 2 (block 1): row 0 col 33 - 32.
  std::vector<uint8_t> col(6 * 16, 0);
  std::vector<float> val(6 * 16, 0.f);
  col[0 * 16 + 0] = 1, val[0 * 16 + 0] = 1.f;
  col[0 * 16 + 2] = 31, val[0 * 16 + 2] = 4.f;
  col[1 * 16 + 0] = 5, val[1 * 16 + 0] = 2.f;
  col[2 * 16 + 0] = 1, val[2 * 16 + 0] = 3.f;
  col[3 * 16 + 1] = 0, val[3 * 16 + 1] = 5.f;  // slice 1, block 0: row 17 col 0
  col[4 * 16 + 1] = 0, val[4 * 16 + 1] = 6.f;  // block 1: col 32
  col[5 * 16 + 1] = 7, val[5 * 16 + 1] = 7.f;  // col 39
  CHECK(b.col == col);
  CHECK(b.values == val);
  CHECK(b.qvalues.empty());
}

TEST_CASE("prune: magnitude pruning as torch's l1_unstructured, and the spec") {
  // torch: l1_unstructured(amount=0.5) on [[0.5, -0.1, 0.3], [-0.7, 0.2, 0.05]].
  const Tensor w = tensor<float>({{0.5f, -0.1f, 0.3f}, {-0.7f, 0.2f, 0.05f}});
  check_equal(sparse::magnitude_prune(w, 0.5), tensor<float>({{0.5f, 0.f, 0.3f}, {-0.7f, 0.f, 0.f}}));
  check_equal(sparse::magnitude_prune(w, 0.0), w);
  check_equal(sparse::magnitude_prune(w, 1.0), zeros({2, 3}));
  CHECK(sparse::zero_fraction(sparse::magnitude_prune(randn({64, 50}), 0.9)) == doctest::Approx(0.9));
  check_error([&] { sparse::magnitude_prune(w, 1.5); }, "magnitude_prune: fraction 1.5 is not in [0, 1]");
  check_error([&] { sparse::magnitude_prune(tensor<int64_t>({1}), 0.5); },
              "magnitude_prune needs a floating tensor, got int64");

  sparse::PruneSpec spec;
  std::string error;
  REQUIRE(sparse::parse_prune_spec("magnitude:0.9", &spec, &error) == Status::Ok);
  CHECK(spec.fraction == 0.9);
  CHECK(spec.op_types == std::vector<std::string>{"Gemm", "MatMul"});
  REQUIRE(sparse::parse_prune_spec("magnitude:0.5:Gemm,Conv", &spec, &error) == Status::Ok);
  CHECK(spec.op_types == std::vector<std::string>{"Gemm", "Conv"});
  CHECK(sparse::parse_prune_spec("magnitude", &spec, &error) == Status::InvalidArgument);
  CHECK(error == "bad prune spec 'magnitude': expected magnitude:FRACTION[:OP_TYPES], e.g. magnitude:0.9:Gemm,MatMul");
  CHECK(sparse::parse_prune_spec("random:0.5", &spec, &error) == Status::InvalidArgument);
  CHECK(error == "bad prune spec 'random:0.5': unknown method 'random' (only magnitude)");
  CHECK(sparse::parse_prune_spec("magnitude:1.2", &spec, &error) == Status::InvalidArgument);
  CHECK(error == "bad prune spec 'magnitude:1.2': fraction '1.2' is not a number in [0, 1]");
  CHECK(sparse::parse_prune_spec("magnitude:0.5:Gemm,", &spec, &error) == Status::InvalidArgument);
  CHECK(error == "bad prune spec 'magnitude:0.5:Gemm,': empty op type");
}
