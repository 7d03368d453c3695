// Joining, splitting and padding: cat, stack, split, chunk, pad.
#include "runtime/ops/dispatch.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;
using ember::testing::golden_text;
using ember::testing::has_golden;

namespace {
// The same values with transposed strides in the last two dims (non-contiguous).
Tensor non_contiguous(const Tensor& x) {
  if (x.dim() < 2) return x;
  return x.transpose(-1, -2).contiguous().transpose(-1, -2);
}
std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }
}  // namespace

TEST_CASE("cat promotes dtypes, skips legacy empty tensors and matches PyTorch") {
  const Tensor a = golden("shape.cat.a"), b = golden("shape.cat.b"), c = golden("shape.cat.c");
  check_equal(cat({a, b, c}, 1), golden("shape.cat.abc_dim1"));
  check_equal(cat({c, a}, -1), golden("shape.cat.ca_dim1"));
  check_equal(cat({a, zeros({0}, DType::Float64)}, 0), golden("shape.cat.a_legacy_f64"));
  check_equal(cat({golden("shape.cat.bool"), golden("shape.cat.u8")}), golden("shape.cat.bool_u8"));
  check_equal(cat({golden("shape.cat.h"), golden("shape.cat.bf")}), golden("shape.cat.h_bf"));
  check_equal(cat({a.t(), zeros({0, 2}), non_contiguous(a.t())}), golden("shape.cat.at_a"));
  // Only legacy empty tensors: an empty result of the promoted dtype, dim unchecked.
  const Tensor e = cat({zeros({0}), zeros({0}, DType::Int64)}, 1);
  CHECK(e.sizes() == Shape{0});
  CHECK(e.dtype() == DType::Float32);
  CHECK(cat({zeros({0}), a}, 1).sizes() == Shape{2, 3});
  // A single input is copied, not aliased.
  Tensor one = cat({a});
  CHECK(!one.is_alias_of(a));
  check_equal(one, a);
}

TEST_CASE("cat keeps channels_last when every input is channels_last") {
  const Tensor x = golden("shape.cat.x4").contiguous(MemoryFormat::ChannelsLast);
  const Tensor y = golden("shape.cat.y4").contiguous(MemoryFormat::ChannelsLast);
  Tensor out = cat({x, y}, 1);
  check_equal(out, golden("shape.cat.x4y4"));
  CHECK(out.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(!out.is_contiguous());
  Tensor mixed = cat({x, golden("shape.cat.y4")}, 1);
  check_equal(mixed, golden("shape.cat.x4y4"));
  CHECK(mixed.is_contiguous());
}

TEST_CASE("cat errors carry PyTorch's messages") {
  const Tensor a = zeros({2, 3});
  check_error([&] { cat({a, zeros({3, 3})}, 1); },
              "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 "
              "in the list.");
  check_error([&] { cat({a, zeros({0}), zeros({2, 4})}, 0); },
              "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 2 "
              "in the list.");
  check_error([&] { cat(Span<const Tensor>{}, 0); }, "torch.cat(): expected a non-empty list of Tensors");
  check_error([&] { cat({a, zeros({2})}, 0); }, "Tensors must have same number of dimensions: got 2 and 1");
  check_error([&] { cat({zeros({2}), a}, 0); }, "Tensors must have same number of dimensions: got 1 and 2");
  check_error([&] { cat({a, a}, 2); }, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  check_error([&] { cat({zeros({0}), a}, 2); },
              "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  check_error([&] { cat({a, scalar_tensor(1.0)}, 0); }, "zero-dimensional tensor (at position 1) cannot be concatenated");
  check_error([&] { cat({scalar_tensor(1.0), zeros({0})}, 0); },
              "zero-dimensional tensor (at position 0) cannot be concatenated");
}

TEST_CASE("stack inserts a dim at every position and promotes") {
  const Tensor s0 = golden("shape.stack.s0"), s1 = golden("shape.stack.s1");
  for (int64_t d : {0, 1, 2, -1, -3}) {
    check_equal(stack({s0, s1, s0}, d), golden("shape.stack.dim" + std::to_string(d)));
    check_equal(stack({non_contiguous(s0), s1, s0}, d), golden("shape.stack.dim" + std::to_string(d)));
  }
  check_equal(stack({scalar_tensor(1.5), scalar_tensor(2, DType::Int64)}), golden("shape.stack.scalars"));
  CHECK(stack({zeros({0, 2}), zeros({0, 2})}, 1).sizes() == Shape{0, 2, 2});
  check_error([] { stack({zeros({2, 3}), zeros({2, 4})}, 0); },
              "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 4] at entry 1");
  check_error([] { stack({zeros({2, 3}), zeros({2, 3}), zeros({2, 3, 1})}, 0); },
              "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 3, 1] at entry 2");
  check_error([] { stack(Span<const Tensor>{}, 0); }, "stack expects a non-empty TensorList");
  check_error([] { stack({zeros({2, 3}), zeros({2, 3})}, 3); },
              "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  check_error([] { stack({zeros({2, 3}), zeros({2, 3})}, -4); },
              "Dimension out of range (expected to be in range of [-3, 2], but got -4)");
}

TEST_CASE("split and chunk return views as PyTorch does") {
  const Tensor x = arange(10).reshape({2, 5});
  auto parts = split(x, 2, 1);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].sizes() == Shape{2, 2});
  CHECK(parts[2].sizes() == Shape{2, 1});
  CHECK(parts[1].is_alias_of(x));
  CHECK(parts[1].storage_offset() == 2);
  CHECK(parts[1].strides() == Shape{5, 1});
  check_equal(parts[2], tensor({{4}, {9}}));
  CHECK(split(x, 7, 1).size() == 1);  // larger than the dim: one piece
  CHECK(split(zeros({0}), 0).size() == 1);
  CHECK(split(zeros({0, 2}), 3).at(0).sizes() == Shape{0, 2});

  auto sized = split(x, IntArrayRef{1, 0, 4}, -1);
  REQUIRE(sized.size() == 3);
  check_equal(sized[0], tensor({{0}, {5}}));
  CHECK(sized[1].sizes() == Shape{2, 0});
  check_equal(sized[2], tensor({{1, 2, 3, 4}, {6, 7, 8, 9}}));

  auto ch = chunk(zeros({6}), 4);  // ceil(6/4) = 2: only 3 chunks
  REQUIRE(ch.size() == 3);
  for (const Tensor& t : ch) CHECK(t.sizes() == Shape{2});
  auto ch5 = chunk(arange(5), 10);
  REQUIRE(ch5.size() == 5);
  check_equal(ch5[4], tensor({4}));
  auto ch0 = chunk(zeros({0}), 3);  // an empty dim gives `chunks` empty pieces
  REQUIRE(ch0.size() == 3);
  CHECK(ch0[2].sizes() == Shape{0});
  auto rows = chunk(x.t(), 2, 0);  // non-contiguous input
  REQUIRE(rows.size() == 2);
  check_equal(rows[1], tensor({{3, 8}, {4, 9}}));
}

TEST_CASE("split and chunk errors carry PyTorch's messages") {
  const Tensor x = arange(4.0);
  check_error([&] { split(x, IntArrayRef{1, 2}); },
              "split_with_sizes expects split_sizes to sum exactly to 4 (input tensor's size at dimension 0), but got "
              "split_sizes=[1, 2]");
  check_error([&] { split(x, IntArrayRef{1, -1, 4}); },
              "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=[1, -1, 4]");
  check_error([&] { split(x, IntArrayRef{3, 3}); }, "start (3) + length (3) exceeds dimension size (4).");
  check_error([&] { split(x, 0); }, "split_size can only be 0 if dimension size is 0, but got dimension size of 4");
  check_error([&] { split(x, -1); }, "split expects split_size be non-negative, but got split_size=-1");
  check_error([&] { split(x, -1, 1); }, "split expects split_size be non-negative, but got split_size=-1");
  check_error([&] { split(x, 2, 1); }, "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  check_error([&] { split(scalar_tensor(1.0), 1); }, "split expects at least a 1-dimensional tensor");
  check_error([&] { split(scalar_tensor(1.0), IntArrayRef{1}); }, "split expects at least a 1-dimensional tensor");
  check_error([&] { chunk(x, 0); }, "chunk expects `chunks` to be greater than 0, got: 0");
  check_error([&] { chunk(x, -1, 1); }, "chunk expects `chunks` to be greater than 0, got: -1");
  check_error([&] { chunk(scalar_tensor(1.0), 1); }, "chunk expects at least a 1-dimensional tensor");
  check_error([&] { chunk(x, 2, 1); }, "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}

TEST_CASE("pad matches torch.nn.functional.pad in every mode") {
  int cases = 0;
  for (int i = 0; has_golden("shape.pad." + std::to_string(i) + ".x"); ++i, ++cases) {
    const std::string name = "shape.pad." + std::to_string(i);
    CAPTURE(name);
    const Tensor x = golden(name + ".x");
    const std::vector<int64_t> p = ints(golden(name + ".pad"));
    const std::string mode = golden_text(name + ".mode");
    const double value = golden(name + ".value").item<double>();
    const IntArrayRef pads(p.data(), p.size());
    const Tensor expected = golden(name + ".out");
    check_equal(pad(x, pads, mode, value), expected);
    check_equal(pad(non_contiguous(x), pads, mode, value), expected);
    if (x.dim() == 4) {
      Tensor out = pad(x.contiguous(MemoryFormat::ChannelsLast), pads, mode, value);
      check_equal(out, expected);
      // constant padding keeps channels_last (PyTorch's suggest_memory_format); the others do not.
      if (expected.numel() > 0 && x.size(1) > 1) {
        CHECK(out.is_contiguous(mode == "constant" ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous));
      }
    }
  }
  CHECK(cases == 38);
}

TEST_CASE("pad: hand-computed values, cropping and aliasing") {
  const Tensor x = tensor({{{1.0, 2.0, 3.0}}});
  check_equal(pad(x, IntArrayRef{2, 1}, "reflect"), tensor({{{3.0, 2.0, 1.0, 2.0, 3.0, 2.0}}}));
  check_equal(pad(x, IntArrayRef{2, 1}, "replicate"), tensor({{{1.0, 1.0, 1.0, 2.0, 3.0, 3.0}}}));
  check_equal(pad(x, IntArrayRef{2, 1}, "circular"), tensor({{{2.0, 3.0, 1.0, 2.0, 3.0, 1.0}}}));
  check_equal(pad(x, IntArrayRef{2, 1}, "constant", 9.0), tensor({{{9.0, 9.0, 1.0, 2.0, 3.0, 9.0}}}));
  // Circular crops first, then wraps what is left (PyTorch: [2, 3, 2, 3]).
  check_equal(pad(x, IntArrayRef{-1, 2}, "circular"), tensor({{{2.0, 3.0, 2.0, 3.0}}}));
  // Reflect reflects about the original edges even when the other side crops.
  check_equal(pad(tensor({{{1.0, 2.0, 3.0, 4.0}}}), IntArrayRef{-2, 2}, "reflect"),
              tensor({{{3.0, 4.0, 3.0, 2.0}}}));
  // Only negative pads: a copy of the narrowed input.
  Tensor cropped = pad(x, IntArrayRef{-1, -1});
  check_equal(cropped, tensor({{{2.0}}}));
  CHECK(!cropped.is_alias_of(x));
  Tensor empty_out = pad(zeros({1, 2, 3}), IntArrayRef{0, -3});
  CHECK(empty_out.sizes() == Shape{1, 2, 0});
  // A zero-size batch.
  CHECK(pad(zeros({0, 2, 3}), IntArrayRef{1, 1}, "replicate").sizes() == Shape{0, 2, 5});
  CHECK(pad(zeros({1, 0, 3}), IntArrayRef{1, 1}, "circular").sizes() == Shape{1, 0, 5});
  // Rows wider than 64 Ki: the kernel maps each element rather than the row once; the same values.
  const Tensor half = arange(0, 70000, 1, DType::Float32).reshape({2, 35000});
  const Tensor wide = cat({half, half}, 1);
  const Tensor padded = pad(wide, IntArrayRef{3, 2}, "reflect");
  REQUIRE(padded.sizes() == Shape{2, 70005});
  check_equal(padded.narrow(1, 3, 70000), wide);
  check_equal(padded.narrow(1, 0, 3), tensor({{3.0f, 2.0f, 1.0f}, {35003.0f, 35002.0f, 35001.0f}}));
  check_equal(padded.narrow(1, 70003, 2), tensor({{34998.0f, 34997.0f}, {69998.0f, 69997.0f}}));
}

TEST_CASE("the Pad kernel handles constant mode and rejects bad geometry") {
  Tensor x = tensor({{1, 2}, {3, 4}}, DType::Int32);
  Tensor out = empty({3, 4}, DType::Int32);
  PadParams p;
  p.mode = PadMode::Constant;
  p.value = 7;
  p.before[0] = 1;
  p.before[1] = 1;
  p.after[1] = 1;
  unwrap(run_kernel(OpKind::Pad, {x}, {out}, p));
  check_equal(out, tensor({{7, 7, 7, 7}, {7, 1, 2, 7}, {7, 3, 4, 7}}, DType::Int32));
  p.mode = PadMode::Reflect;
  p.before[1] = 2;  // reflect pad must be smaller than the dim
  p.after[1] = 0;
  Tensor bad = empty({3, 4}, DType::Int32);
  check_error([&] { unwrap(run_kernel(OpKind::Pad, {x}, {bad}, p)); }, "kernel \"pad\" on cpu failed: InvalidArgument");
}

TEST_CASE("pad errors carry PyTorch 1.13's messages") {
  const Tensor x = zeros({1, 2, 3});
  check_error([&] { pad(x, IntArrayRef{1}); }, "Padding length must be divisible by 2");
  check_error([&] { pad(x, IntArrayRef{1, 1, 1, 1, 1, 1, 1, 1}, "reflect"); }, "Padding length too large");
  check_error([&] { pad(x, IntArrayRef{1, 1}, "foo"); }, "Unrecognised padding mode foo");
  check_error([&] { pad(x, IntArrayRef{1, 1}, "reflect", 1.0); },
              "Padding mode \"reflect\" doesn't take in value argument");
  // constant: negative pads narrow the input with narrow()'s messages.
  check_error([&] { pad(x, IntArrayRef{-4, 1}); },
              "Dimension out of range (expected to be in range of [-3, 2], but got 4)");
  check_error([&] { pad(x, IntArrayRef{-2, -2}); }, "start (0) + length (-1) exceeds dimension size (1).");
  check_error([&] { pad(x, IntArrayRef{1, -5}); }, "start (0) + length (-2) exceeds dimension size (3).");
  CHECK(pad(x, IntArrayRef{-3, 1}).sizes() == Shape{1, 2, 1});
  // Non-constant modes: which ranks.
  const char* not_impl = "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now";
  for (const char* mode : {"reflect", "replicate", "circular"}) {
    CAPTURE(mode);
    check_error([&] { pad(x, IntArrayRef{1, 1, 1, 1, 1, 1}, mode); }, not_impl);
    check_error([&] { pad(zeros({3}), IntArrayRef{1, 1}, mode); }, not_impl);
    check_error([&] { pad(zeros({1, 2, 3, 4}), IntArrayRef{1, 1}, mode); }, not_impl);
    check_error([&] { pad(zeros({1, 2, 3, 4, 5}), IntArrayRef{1, 1, 1, 1}, mode); }, not_impl);
    check_error([&] { pad(x, IntArrayRef{}, mode); }, not_impl);
  }
  // reflect
  check_error([&] { pad(x, IntArrayRef{3, 3}, "reflect"); },
              "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding "
              "(3, 3) at dimension 2 of input [1, 2, 3]");
  check_error([&] { pad(zeros({2, 3}), IntArrayRef{0, 3}, "reflect"); },
              "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding "
              "(0, 3) at dimension 1 of input [2, 3]");
  check_error([&] { pad(x, IntArrayRef{-2, 3}, "reflect"); },
              "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding "
              "(-2, 3) at dimension 2 of input [1, 2, 3]");
  check_error([&] { pad(x, IntArrayRef{1, 1, 2, 2}, "reflect"); },
              "Argument #6: Padding size should be less than the corresponding input dimension, but got: padding "
              "(2, 2) at dimension 1 of input 3");
  check_error([&] { pad(zeros({1, 3, 4}), IntArrayRef{4, 0, 1, 1}, "reflect"); },
              "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding "
              "(4, 0) at dimension 2 of input 3");
  check_error([&] { pad(zeros({1, 2, 3, 4}), IntArrayRef{1, 1, 1, 1, 2, 2}, "reflect"); },
              "Argument #8: Padding size should be less than the corresponding input dimension, but got: padding "
              "(2, 2) at dimension 1 of input [1, 2, 3, 4]");
  check_error([&] { pad(zeros({1, 2, 3, 4}), IntArrayRef{0, 0, 3, 0, 0, 0}, "reflect"); },
              "Argument #6: Padding size should be less than the corresponding input dimension, but got: padding "
              "(3, 0) at dimension 2 of input [1, 2, 3, 4]");
  check_error([&] { pad(zeros({2, 3}), IntArrayRef{-3, 0}, "reflect"); },
              "2input (W: 3)is too small. Calculated output W: 0");
  check_error([&] { pad(zeros({1, 3, 4}), IntArrayRef{-4, 0, -3, 0}, "reflect"); },
              "input (H: 3, W: 4)is too small. Calculated output H: 0 W: 0");
  check_error([&] { pad(zeros({1, 2, 3, 4}), IntArrayRef{-4, 0, -3, 0, -2, 0}, "reflect"); },
              "input (D: 2 H: 3, W: 4) is too small. Calculated output D: 0 H: 0 W: 0");
  check_error([&] { pad(zeros({1, 2, 3, 4}), IntArrayRef{-5, 0, 0, 0, 0, 0}, "reflect"); },
              "Trying to create tensor with negative dimension -1: [1, 2, 3, -1]");
  check_error([&] { pad(zeros({2, 0}), IntArrayRef{1, 1}, "reflect"); },
              "2D or 3D (batch mode) tensor expected for input, but got: [ torch.FloatTensor{2,0} ]");
  check_error([&] { pad(zeros({1, 3, 0}), IntArrayRef{1, 1, 1, 1}, "reflect"); },
              "3D or 4D (batch mode) tensor expected for input, but got: [ torch.FloatTensor{1,3,0} ]");
  check_error([&] { pad(zeros({1, 0, 3, 4}), IntArrayRef{1, 1, 1, 1, 1, 1}, "reflect"); },
              "Expected 4D or 5D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
              "input, but got: [1, 0, 3, 4]");
  check_error([&] { pad(zeros({1, 2, 3}, DType::Int64), IntArrayRef{1, 1}, "reflect"); },
              "\"reflection_pad1d\" not implemented for 'Long'");
  check_error([&] { pad(zeros({1, 3, 4}, DType::Float16), IntArrayRef{1, 1, 1, 1}, "reflect"); },
              "\"reflection_pad2d\" not implemented for 'Half'");
  // replicate
  check_error([&] { pad(zeros({2, 3}), IntArrayRef{-3, 0}, "replicate"); },
              "input (W: 3) is too small. Calculated output W: 0");
  check_error([&] { pad(zeros({1, 3, 4}), IntArrayRef{-4, 0, -3, 0}, "replicate"); },
              "input (H: 3, W: 4 ) is too small. Calculated output H: 0 W: 0");
  check_error([&] { pad(zeros({1, 3, 4}), IntArrayRef{0, 0, -4, 0}, "replicate"); },
              "Trying to create tensor with negative dimension -1: [1, -1, 4]");
  check_error([&] { pad(zeros({0, 3}), IntArrayRef{1, 1}, "replicate"); },
              "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
              "input, but got: [0, 3]");
  check_error([&] { pad(zeros({2, 1, 0, 4}), IntArrayRef{1, 1, 1, 1}, "replicate"); },
              "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
              "input, but got: [2, 1, 0, 4]");
  check_error([&] { pad(zeros({1, 2, 3}, DType::BFloat16), IntArrayRef{1, 1}, "replicate"); },
              "\"replication_pad1d_cpu\" not implemented for 'BFloat16'");
  check_error([&] { pad(zeros({1, 1, 3, 4}, DType::Int64), IntArrayRef{1, 1, 1, 1, 1, 1}, "replicate"); },
              "\"replication_pad3d_cpu\" not implemented for 'Long'");
  // circular
  check_error([&] { pad(zeros({2, 3}), IntArrayRef{1, 1}, "circular"); },
              "Invalid padding size, expected 0 but got 2");
  check_error([&] { pad(x, IntArrayRef{1, 1, 1, 1}, "circular"); }, "Invalid padding size, expected 2 but got 4");
  check_error([&] { pad(zeros({1, 2, 0}), IntArrayRef{1, 1}, "circular"); },
              "Padding value causes wrapping around more than once.");
  check_error([&] { pad(zeros({1, 1, 3, 2}), IntArrayRef{3, 0, 0, 4}, "circular"); },
              "Padding value causes wrapping around more than once.");
  check_error([&] { pad(zeros({1, 1, 3}), IntArrayRef{-2, -2}, "circular"); },
              "Negative padding value is resulting in an empty dimension");
  check_error([&] { pad(x, IntArrayRef{-2, 3}, "circular"); },
              "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
              "memory location. Please clone() the tensor before performing the operation.");
  check_error([&] { pad(x, IntArrayRef{3, -1}, "circular"); },
              "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
              "memory location. Please clone() the tensor before performing the operation.");
  check_error([&] { pad(x, IntArrayRef{-3, 3}, "circular"); },
              "circular padding of a dimension that negative padding left empty is undefined");
}
