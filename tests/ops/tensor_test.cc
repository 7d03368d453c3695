// Tensor core: dtypes, devices, creation, RNG streams, views, copies, printing.
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;
using ember::testing::golden_text;

TEST_CASE("dtype: sizes, names and PyTorch's promotion table") {
  CHECK(element_size(DType::Float16) == 2);
  CHECK(element_size(DType::BFloat16) == 2);
  CHECK(element_size(DType::Int64) == 8);
  CHECK(element_size(DType::Bool) == 1);
  CHECK(dtype_name(DType::BFloat16) == "bfloat16");
  CHECK(promote_types(DType::UInt8, DType::Int8) == DType::Int16);
  CHECK(promote_types(DType::Int32, DType::Float16) == DType::Float16);
  CHECK(promote_types(DType::Float16, DType::BFloat16) == DType::Float32);
  CHECK(promote_types(DType::Bool, DType::UInt8) == DType::UInt8);
  CHECK(promote_types(DType::Int64, DType::Float32) == DType::Float32);
  CHECK(promote_types(DType::BFloat16, DType::Float64) == DType::Float64);
  CHECK(promote_types(DType::Int16, DType::UInt8) == DType::Int16);
}

TEST_CASE("half and bfloat16 round to nearest even") {
  CHECK(Half(1.0f).bits == 0x3c00);
  CHECK(Half(65504.0f).bits == 0x7bff);
  CHECK(Half(65520.0f).bits == 0x7c00);  // rounds to inf
  CHECK(Half(5.9604644775390625e-08f).bits == 0x0001);  // smallest subnormal
  CHECK(static_cast<float>(Half(0.1f)) == 0.0999755859375f);
  CHECK(BFloat16(1.0f).bits == 0x3f80);
  CHECK(static_cast<float>(BFloat16(3.14159f)) == 3.140625f);
  CHECK(std::isnan(static_cast<float>(Half(NAN))));
}

TEST_CASE("device strings parse like torch.device") {
  CHECK(Device("cpu").is_cpu());
  CHECK(Device("vulkan:0").type() == DeviceType::Vulkan);
  CHECK(Device("vulkan:0").index() == 0);
  CHECK(Device("cuda:1").str() == "cuda:1");
  CHECK(Device("cuda").str() == "cuda");
  check_error([] { Device("tpu"); }, "Expected one of cpu, vulkan, cuda device type at start of device string: tpu");
  check_error([] { Device("cuda:x"); }, "Invalid device string: 'cuda:x'");
  check_error([] { (void)empty({2}, Device("cuda:0")); }, "ember is not built with support for cuda devices");
}

TEST_CASE("sizes whose bytes or element count overflow are refused before allocating") {
  const int64_t big = int64_t{1} << 31;
  check_error([&] { empty({big, big}); },
              "Storage size calculation overflowed with sizes=[2147483648, 2147483648] and strides=[2147483648, 1]");
  check_error([&] { zeros({big, big}, DType::Float64); },
              "Storage size calculation overflowed with sizes=[2147483648, 2147483648] and strides=[2147483648, 1]");
  check_error([&] { empty_strided({2, 2}, {int64_t{1} << 62, 1}); },
              "Storage size calculation overflowed with sizes=[2, 2] and strides=[4611686018427387904, 1]");
  check_error([&] { ones({1, 1}).expand({big * 2, big * 2}); },
              "numel: integer multiplication overflow (sizes [4294967296, 4294967296])");
  float data[4] = {};
  check_error([&] { from_blob(data, {big, big}, {big, 1}); },
              "Storage size calculation overflowed with sizes=[2147483648, 2147483648] and strides=[2147483648, 1]");
  // 2^61 bytes fit in the count: the allocator refuses them cleanly.
  std::string oom;
  try {
    empty({big, big / 2}, DType::UInt8);
  } catch (const Error& e) {
    oom = e.what();
    CHECK(e.status() == Status::OutOfMemory);
  }
  CHECK(oom.rfind("failed to allocate 2305843009213693952 bytes on cpu", 0) == 0);
  // A zero dim makes any other size harmless.
  CHECK(empty({0, big, big}).numel() == 0);
}

TEST_CASE("a 3x4 float32 tensor has strides (4, 1)") {
  Tensor t = zeros({3, 4});
  CHECK(t.dtype() == DType::Float32);
  CHECK(t.sizes() == Shape{3, 4});
  CHECK(t.strides() == Shape{4, 1});
  CHECK(t.numel() == 12);
  CHECK(t.is_contiguous());
  CHECK(t.device() == Device("cpu"));
  check_error([&] { t.size(2); }, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

TEST_CASE("tensor literals infer dtypes as torch.tensor does") {
  CHECK(tensor({1, 2, 3}).dtype() == DType::Int64);
  CHECK(tensor({1.0, 2.0}).dtype() == DType::Float32);
  CHECK(tensor({true, false}).dtype() == DType::Bool);
  CHECK(tensor({{1, 2}, {3, 4}}, DType::Float16).dtype() == DType::Float16);
  CHECK(tensor({{1, 2}, {3, 4}}).sizes() == Shape{2, 2});
  CHECK(tensor({int64_t{1} << 60}).item<int64_t>() == (int64_t{1} << 60));
  check_error([] { tensor({{1, 2}, {3}}); }, "expected sequence of length 2 at dim 1 (got 1)");
}

TEST_CASE("creation functions") {
  check_equal(ones({2}, DType::Int32), tensor({1, 1}, DType::Int32));
  check_equal(full({2, 2}, 7), tensor({{7, 7}, {7, 7}}));
  CHECK(full({1}, 2.5).dtype() == DType::Float32);
  CHECK(full({1}, true).dtype() == DType::Bool);
  check_equal(eye(2, 3), tensor({{1., 0., 0.}, {0., 1., 0.}}));
  check_equal(arange(5), tensor({0, 1, 2, 3, 4}));
  check_equal(arange(1, 2, 0.25), tensor({1.0, 1.25, 1.5, 1.75}));
  check_equal(arange(0.5, 3.0, 0.3), golden("creation.arange_f"));
  check_equal(linspace(-1, 2.5, 7), golden("creation.linspace"));
  check_equal(linspace(3, 7, 1), golden("creation.linspace_1"));  // PyTorch: [start], not [end]
  check_equal(linspace(3, 7, 1, DType::Int64), golden("creation.linspace_1_i64"));
  check_equal(linspace(3, 7, 2), golden("creation.linspace_2"));
  CHECK(linspace(3, 7, 0).numel() == 0);
  Tensor like = zeros_like(ones({2, 3}, DType::Int16));
  CHECK(like.dtype() == DType::Int16);
  CHECK(like.sizes() == Shape{2, 3});
  CHECK(ones_like(ones({2}), DType::Float64).dtype() == DType::Float64);
  check_error([] { arange(0, 5, 0); }, "step must be nonzero");
  check_error([] { empty({2, -1}); }, "Trying to create tensor with negative dimension -1: [2, -1]");
}

TEST_CASE("manual_seed reproduces PyTorch's rand, randn and randint streams") {
  manual_seed(0);
  check_equal(rand({5}), golden("rng.rand_5"));
  manual_seed(42);
  check_equal(rand({7}, DType::Float64), golden("rng.rand_f64"));
  manual_seed(0);
  check_close(randn({5}), golden("rng.randn_5"), 1e-6, 1e-7);
  manual_seed(0);
  // From 16 elements PyTorch transforms blocks of 16 with vectorized Cephes
  // log/sincos: the same bits here (rng.h), not just close values.
  check_equal(randn({37}), golden("rng.randn_37"));
  manual_seed(7);
  check_equal(randn({4099}), golden("rng.randn_4099"));
  manual_seed(3);
  check_close(randn({20}, DType::Float64), golden("rng.randn_f64_20"), 1e-12, 1e-12);
  manual_seed(0);
  check_equal(randint(-5, 17, {10}), golden("rng.randint_10"));
  // Same seed, same stream.
  manual_seed(7);
  Tensor a = randn({3, 3});
  manual_seed(7);
  check_equal(randn({3, 3}), a);
  check_error([] { randint(3, 3, {2}); }, "random_ expects 'from' to be less than 'to', but got from=3 >= to=3");
}

TEST_CASE("from_blob shares memory both ways and runs the deleter") {
  float data[6] = {0, 1, 2, 3, 4, 5};
  bool deleted = false;
  {
    Tensor t = from_blob(data, {2, 3}, DType::Float32, [&](void*) { deleted = true; });
    t[1][2].fill_(50);
    CHECK(data[5] == 50);
    data[0] = -1;
    CHECK(t[0][0].item<float>() == -1);
    Tensor v = t.t();  // a view keeps the blob alive
    t = Tensor();
    CHECK(!deleted);
    CHECK(v[2][1].item<float>() == 50);
  }
  CHECK(deleted);
  int64_t strided[6] = {1, 2, 3, 4, 5, 6};
  check_equal(from_blob(strided, {3}, {2}, DType::Int64), tensor({1, 3, 5}));
}

TEST_CASE("view shares storage; it fails where strides forbid it, reshape copies only then") {
  Tensor a = arange(12).view({3, 4});
  Tensor v = a.view({4, 3});
  CHECK(v.storage() == a.storage());
  Tensor tr = a.t();
  CHECK(!tr.is_contiguous());
  check_error([&] { tr.view({12}); },
              "view size is not compatible with input tensor's size and stride (at least one dimension "
              "spans across two contiguous subspaces). Use .reshape(...) instead.");
  Tensor r = tr.reshape({12});
  CHECK(r.storage() != a.storage());
  check_equal(r, tensor({0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  CHECK(a.reshape({2, -1}).storage() == a.storage());
  CHECK(a.reshape({2, -1}).sizes() == Shape{2, 6});
  check_error([&] { a.view({5, -1}); }, "shape '[5, -1]' is invalid for input of size 12");
  check_error([&] { a.view({-1, -1}); }, "only one dimension can be inferred");
  CHECK(scalar_tensor(5).view({1, 1}).sizes() == Shape{1, 1});  // 0-dim to all-ones shapes
  const Tensor five = scalar_tensor(5);
  CHECK(five.reshape({1}).storage() == five.storage());
  CHECK(ones({1, 1}).view({}).dim() == 0);
  // A view of a transposed tensor works when it only splits a dimension.
  CHECK(tr.view({2, 2, 3}).strides() == Shape{2, 1, 4});
}

TEST_CASE("view ops: transpose, permute, squeeze, unsqueeze, expand, narrow, select, slice") {
  Tensor a = arange(24).view({2, 3, 4});
  CHECK(a.transpose(0, 2).sizes() == Shape{4, 3, 2});
  CHECK(a.transpose(0, 2).strides() == Shape{1, 4, 12});
  CHECK(a.permute({2, 0, 1}).strides() == Shape{1, 12, 4});
  check_error([&] { a.permute({0, 0, 1}); }, "permute(): duplicate dims are not allowed.");
  CHECK(a.unsqueeze(1).sizes() == Shape{2, 1, 3, 4});
  CHECK(a.unsqueeze(-1).strides() == Shape{12, 4, 1, 1});
  CHECK(a.unsqueeze(1).squeeze().sizes() == Shape{2, 3, 4});
  CHECK(a.squeeze(0).sizes() == Shape{2, 3, 4});
  Tensor e = tensor({1, 2, 3}).expand({2, 3});
  CHECK(e.strides() == Shape{0, 1});
  check_equal(e, tensor({{1, 2, 3}, {1, 2, 3}}));
  check_error([] { tensor({1, 2, 3}).expand({2, 4}); },
              "The expanded size of the tensor (4) must match the existing size (3) at non-singleton "
              "dimension 1.  Target sizes: [2, 4].  Tensor sizes: [3]");
  check_error([] { ones({3, 2}).expand({2}); },
              "expand(torch.FloatTensor{[3, 2]}, size=[2]): the number of sizes provided (1) must be greater "
              "or equal to the number of dimensions in the tensor (2)");
  check_equal(a.narrow(2, 1, 2)[0][0], tensor({1, 2}));
  check_error([&] { a.narrow(2, 3, 2); }, "start (3) + length (2) exceeds dimension size (4).");
  check_equal(a.select(1, -1)[1], tensor({20, 21, 22, 23}));
  check_error([&] { a.select(0, 2); }, "select(): index 2 out of range for tensor of size [2, 3, 4] at dimension 0");
  check_equal(arange(10).slice(0, 1, 8, 3), tensor({1, 4, 7}));
  check_equal(arange(10).slice(0, -3), tensor({7, 8, 9}));
  check_error([] { arange(10).slice(0, 0, 5, 0); }, "slice step must be positive");
  CHECK(a.flatten(1).sizes() == Shape{2, 12});
  CHECK(a.flatten().sizes() == Shape{24});
  check_error([&] { a.t(); }, "t() expects a tensor with <= 2 dimensions, but self is 3D");
}

TEST_CASE("unfold and as_strided share storage") {
  Tensor x = arange(7.0);
  Tensor u = x.unfold(0, 3, 2);
  CHECK(u.sizes() == Shape{3, 3});
  CHECK(u.strides() == Shape{2, 1});
  CHECK(u.storage() == x.storage());
  check_equal(u, tensor({{0., 1., 2.}, {2., 3., 4.}, {4., 5., 6.}}));
  check_error([&] { x.unfold(0, 8, 1); }, "maximum size for tensor at dimension 0 is 7 but size is 8");
  check_error([&] { x.unfold(0, 2, 0); }, "step is 0 but must be > 0");
  check_equal(x.as_strided({2, 2}, {1, 2}), tensor({{0., 2.}, {1., 3.}}));
  check_error([&] { x.as_strided({4}, {3}); },
              "setStorage: sizes [4], strides [3], storage offset 0, and itemsize 4 requiring a storage "
              "size of 40 are out of bounds for storage of size 28");
}

TEST_CASE("contiguous, channels_last and clone") {
  Tensor x = arange(2 * 3 * 4 * 5.0).view({2, 3, 4, 5});
  Tensor cl = x.contiguous(MemoryFormat::ChannelsLast);
  CHECK(cl.strides() == Shape{60, 1, 15, 3});
  CHECK(cl.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(!cl.is_contiguous());
  check_equal(cl, x);
  CHECK(cl.clone().strides() == cl.strides());  // preserve
  CHECK(cl.contiguous().strides() == Shape{60, 20, 5, 1});
  Tensor p = x.permute({1, 0, 2, 3});
  CHECK(p.clone().strides() == p.strides());  // dense permutation is preserved
  check_error([] { zeros({2, 3}).contiguous(MemoryFormat::ChannelsLast); },
              "required rank 4 tensor to use channels_last format");
}

// A permute that keeps the last dim (attention's [B, H, S, D] heads merged
// back): the CPU copies whole rows; views into a slice, dtypes of every
// size, rows shorter than its 8-element minimum (the reference loop), 1 to 3
// threads; and a copy_ between overlapping views of one storage (the
// reference loop, as before).
TEST_CASE("contiguous() and copy_ of views that keep a contiguous last dim (the CPU's row copy)") {
  const int saved = get_num_threads();
  for (const int threads : {1, 2, 3}) {
    set_num_threads(threads);
    for (const DType dt : {DType::Float32, DType::Int64, DType::Int16, DType::UInt8}) {
      for (const Shape& s : {Shape{2, 7, 5, 32}, Shape{1, 3, 4, 9}, Shape{3, 2, 6, 4}}) {
        CAPTURE(threads);
        CAPTURE(dtype_name(dt));
        CAPTURE(shape_str(s));
        const int64_t n = s[0] * s[1] * s[2] * s[3];
        const Tensor x = arange(static_cast<double>(n)).view(s).to(dt);  // [B, S, H, D]
        const Tensor y = x.permute({0, 2, 1, 3}).contiguous().to(DType::Int64);  // [B, H, S, D]
        const int64_t* py = y.data_ptr<int64_t>();
        const int64_t wrap = dt == DType::UInt8 ? 256 : int64_t{1} << 40;
        bool ok = true;
        for (int64_t b = 0; b < s[0]; ++b)
          for (int64_t h = 0; h < s[2]; ++h)
            for (int64_t q = 0; q < s[1]; ++q)
              for (int64_t d = 0; d < s[3]; ++d)
                ok &= py[((b * s[2] + h) * s[1] + q) * s[3] + d] == (((b * s[1] + q) * s[2] + h) * s[3] + d) % wrap;
        CHECK(ok);
        // Into a strided destination: the odd rows of a wider tensor.
        Tensor wide = zeros({s[0], s[2], 2 * s[1], s[3]}, dt);
        wide.slice(2, 1, std::nullopt, 2).copy_(x.permute({0, 2, 1, 3}));
        check_equal(wide.slice(2, 1, std::nullopt, 2).to(DType::Int64), y);
        check_equal(wide.slice(2, 0, std::nullopt, 2).to(DType::Int64), zeros({s[0], s[2], s[1], s[3]}, DType::Int64));
      }
    }
  }
  set_num_threads(saved);
  // Overlapping permuted views (rows 1.. of a [5, 2, 16] tensor from its rows
  // ..3): the rows as they were, not rows already overwritten.
  Tensor o = arange(160.0).view({5, 2, 16});
  Tensor expected = o.clone();
  expected.slice(0, 1, std::nullopt).copy_(o.slice(0, 0, 4).clone());
  o.slice(0, 1, std::nullopt).permute({1, 0, 2}).copy_(o.slice(0, 0, 4).permute({1, 0, 2}));
  check_equal(o, expected);
}

TEST_CASE("contiguous() of views whose last two dims are transposed in memory (the CPU's tiled copy)") {
  // y = x.permute({1, 2, 0}).contiguous() for x = arange(A*B*C).view({A, B, C}):
  // y[b][c][a] = x[a][b][c] = (a*B + b)*C + c; sizes off the 32x32 tiles, 1 and 2 threads.
  const int saved = get_num_threads();
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    for (const DType dt : {DType::Float32, DType::Int64, DType::Int16, DType::UInt8, DType::Float64}) {
      for (const Shape& abc : {Shape{37, 3, 70}, Shape{64, 1, 32}, Shape{5, 4, 2}, Shape{33, 2, 65}}) {
        const int64_t a_n = abc[0], b_n = abc[1], c_n = abc[2];
        CAPTURE(dtype_name(dt));
        CAPTURE(shape_str(abc));
        const Tensor x = arange(static_cast<double>(a_n * b_n * c_n)).view(abc).to(dt);
        const Tensor y = x.permute({1, 2, 0}).contiguous().to(DType::Int64);
        const Tensor t = x[0].t().contiguous().to(DType::Int64);  // [C, B] from [B, C]
        REQUIRE(y.sizes() == Shape{b_n, c_n, a_n});
        const int64_t* py = y.data_ptr<int64_t>();
        const int64_t* pt = t.data_ptr<int64_t>();
        const int64_t wrap = dt == DType::UInt8 ? 256 : int64_t{1} << 40;
        bool ok = true;
        for (int64_t b = 0; b < b_n; ++b) {
          for (int64_t c = 0; c < c_n; ++c) {
            for (int64_t a = 0; a < a_n; ++a) ok &= py[(b * c_n + c) * a_n + a] == ((a * b_n + b) * c_n + c) % wrap;
            ok &= pt[c * b_n + b] == (b * c_n + c) % wrap;
          }
        }
        CHECK(ok);
      }
    }
  }
  set_num_threads(saved);
}

// NCHW <-> channels_last: per image a [C, H*W] <-> [H*W, C] transpose (the
// CPU's tiled copy on the views ordered by the output's strides); a
// channels_last clone: one memcpy. Odd sizes off the 32x32 tiles, C = 1..40,
// element sizes 1 to 8, 1 and 2 threads; values exact (arange).
TEST_CASE("NCHW <-> channels_last copies, both ways, exact") {
  const int saved = get_num_threads();
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    for (const DType dt : {DType::Float32, DType::Int64, DType::Int16, DType::UInt8}) {
      for (const Shape& s : {Shape{2, 3, 37, 29}, Shape{2, 40, 7, 9}, Shape{2, 17, 1, 33}, Shape{2, 1, 5, 5},
                             Shape{2, 33, 14, 14}, Shape{1, 96, 5, 3}, Shape{2, 5, 1, 1}}) {
        CAPTURE(threads);
        CAPTURE(dtype_name(dt));
        CAPTURE(shape_str(s));
        const int64_t n = s[0] * s[1] * s[2] * s[3];
        const Tensor x = arange(static_cast<double>(n)).view(s).to(dt);
        const Tensor cl = x.contiguous(MemoryFormat::ChannelsLast);
        CHECK(cl.is_contiguous(MemoryFormat::ChannelsLast));
        // (C == 1 or H * W == 1: already channels_last-contiguous, as in PyTorch x itself.)
        if (s[1] > 1 && s[2] * s[3] > 1) CHECK(cl.strides() == Shape{s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]});
        check_equal(cl, x);
        // In memory, NHWC: element (b, c, h, w), whose value is ((b*C + c)*H + h)*W + w, at ((b*H + h)*W + w)*C + c.
        const Tensor raw = from_blob(cl.data_ptr(), {n}, TensorOptions(dt)).to(DType::Int64);
        const int64_t* pr = raw.data_ptr<int64_t>();
        const int64_t wrap = dt == DType::UInt8 ? 256 : int64_t{1} << 40;
        bool ok = true;
        for (int64_t b = 0; b < s[0]; ++b)
          for (int64_t c = 0; c < s[1]; ++c)
            for (int64_t h = 0; h < s[2]; ++h)
              for (int64_t w = 0; w < s[3]; ++w)
                ok &= pr[((b * s[2] + h) * s[3] + w) * s[1] + c] == (((b * s[1] + c) * s[2] + h) * s[3] + w) % wrap;
        CHECK(ok);
        const Tensor back = cl.contiguous();
        CHECK(back.is_contiguous());
        check_equal(back, x);
        const Tensor again = cl.clone();
        CHECK(again.strides() == cl.strides());
        check_equal(again, x);
        // copy_ into an existing channels_last tensor from an NCHW source and back.
        Tensor into = zeros(s, dt).contiguous(MemoryFormat::ChannelsLast);
        into.copy_(x);
        check_equal(into, x);
        Tensor nchw = zeros(s, dt);
        nchw.copy_(into);
        check_equal(nchw, x);
      }
    }
  }
  set_num_threads(saved);
}

TEST_CASE("to(dtype) converts like PyTorch, to(device) checks availability") {
  check_equal(tensor({1.7, -1.7, 2.5}).to(DType::Int32), tensor({1, -1, 2}, DType::Int32));
  check_equal(tensor({0.0, 0.5}).to(DType::Bool), tensor({false, true}));
  check_equal(tensor({300}).to(DType::UInt8), tensor({44}, DType::UInt8));
  check_equal(tensor({0.1}).to(DType::Float16).to(DType::Float32), tensor({0.0999755859375}));
  Tensor x = ones({2});
  CHECK(x.to(DType::Float32).is_same(x));
  CHECK(!x.to(DType::Float32, /*copy=*/true).is_same(x));
  check_error([&] { x.to(Device("cuda:0")); }, "ember is not built with support for cuda devices");
}

TEST_CASE("in-place ops: copy_ broadcasts, fill_, zero_ and the version counter") {
  Tensor x = zeros({2, 3});
  x.copy_(tensor({1, 2, 3}));  // broadcasts and converts int64 -> float32
  check_equal(x, tensor({{1., 2., 3.}, {1., 2., 3.}}));
  const uint64_t v = x.storage()->version();
  x.select(0, 1).fill_(9);
  CHECK(x.storage()->version() > v);
  check_equal(x[1], tensor({9., 9., 9.}));
  x.zero_();
  check_equal(x, zeros({2, 3}));
  Tensor y = tensor({1, 2, 3}).expand({2, 3});
  check_error([&] { y.fill_(1); },
              "unsupported operation: more than one element of the written-to tensor refers to a single "
              "memory location. Please clone() the tensor before performing the operation.");
  check_error([&] { zeros({3}).copy_(ones({4})); },
              "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0");
  // Overlapping copy: shift a tensor by one within its own storage.
  Tensor s = arange(5.0);
  s.slice(0, 1).copy_(s.slice(0, 0, 4));
  check_equal(s, tensor({0., 0., 1., 2., 3.}));
}

TEST_CASE("printing matches PyTorch") {
  const char* names[] = {"f32_2x2",  "f32_frac", "f32_sci",  "f32_bigint", "f32_nan",    "f32_zeros",
                         "i64",      "i32",      "bool",     "f16",        "bf16",       "f64",
                         "u8",       "scalar_f", "scalar_i", "scalar_frac", "empty",     "empty_2d",
                         "empty_i64", "arange_30", "big_2000", "big_1d",   "three_d",    "wide",
                         "wide_f16"};
  const Tensor inputs[] = {
      tensor({{1., 2.}, {3., 4.}}),
      tensor({0.1, -2.25, 3.14159}),
      tensor({1e-5, 1.0, 250.0}),
      tensor({1.0, 2e9}),
      tensor({NAN, 1.5f, INFINITY, -INFINITY}),
      zeros({3}),
      tensor({1, -20, 300}),
      tensor({{1, 2}, {3, 4}}, DType::Int32),
      tensor({true, false, true}),
      tensor({0.5, 1.25}, DType::Float16),
      tensor({1.0, 2.0}, DType::BFloat16),
      tensor({1.5, 2.0}, DType::Float64),
      tensor({0, 255}, DType::UInt8),
      scalar_tensor(3.0),
      scalar_tensor(7),
      scalar_tensor(-0.5),
      zeros({0}),
      zeros({0, 3}),
      zeros({2, 0}, DType::Int64),
      arange(30.0),
      arange(2000).reshape({40, 50}),
      arange(1500.0) / 7,
      arange(24).reshape({2, 3, 4}),
      arange(100.0).reshape({4, 25}) * 1.5,
      arange(40.0, DType::Float16) / 3,
  };
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
    CAPTURE(names[i]);
    CHECK(to_string(inputs[i]) == golden_text(std::string("print.") + names[i]));
  }
}

TEST_CASE("a tensor made for cpu:0 reports cpu, as in PyTorch") {
  const Tensor t = empty({2}, TensorOptions(Device("cpu:0")));
  CHECK(t.device() == Device("cpu"));
  CHECK(t.to(Device("cpu:0")).data_ptr() == t.data_ptr());
}

TEST_CASE("tensors on two devices raise PyTorch's device message") {
  // A tensor that claims to live on vulkan:0 (from_blob needs no backend).
  float fake[3] = {1, 2, 3};
  const Tensor on_gpu = from_blob(fake, {3}, Device("vulkan:0"));
  CHECK(on_gpu.device().str() == "vulkan:0");
  check_error([&] { ones({3}) + on_gpu; },
              "Expected all tensors to be on the same device, but found at least two devices, cpu and vulkan:0!");
  check_error([&] { maximum(on_gpu, ones({3})); },
              "Expected all tensors to be on the same device, but found at least two devices, vulkan:0 and cpu!");
}
