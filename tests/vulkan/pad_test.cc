// Vulkan Pad (reflect, replicate, circular) against the CPU reference of the
// same front-end call: the kernel copies values, so float32 and float16 results
// are bit-exact; float16 is also checked against the float32 CPU result
// rounded to float16 (within 2e-3).
#include <string>
#include <vector>

#include "kernels/vulkan/vk_kernels.h"
#include "tests/vulkan/vulkan_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

struct Case {
  Shape shape;
  std::vector<int64_t> pad;
};

// 3-D (1-D padding), 4-D (2-D padding), 5-D (3-D padding), odd sizes, negative
// pads (which crop), asymmetric pads.
const std::vector<Case> kCases = {
    {{1, 1, 1}, {0, 0}},
    {{2, 3, 7}, {3, 2}},
    {{1, 2, 257}, {5, 1}},
    {{3, 7}, {2, 6}},                       // unbatched 1-D
    {{2, 3, 7, 9}, {1, 2, 3, 0}},
    {{1, 2, 5, 4}, {-1, 2, 2, -2}},        // negative pads crop
    {{1, 1, 6, 5}, {4, 4, 5, 5}},
    {{3, 5, 6}, {1, 1, 1, 1}},              // unbatched 2-D
    {{1, 2, 3, 4, 5}, {1, 2, 2, 1, 0, 2}},  // 3-D padding
    {{2, 3, 4, 5}, {1, 0, 2, 3, 1, 1}},     // unbatched 3-D
};

// Whether the front-end accepts the case for this mode (reflect: pads below
// the size; circular: no wrapping more than once).
bool accepted(const std::string& mode, const Case& c) {
  const int64_t k = static_cast<int64_t>(c.pad.size()) / 2;
  if (mode == "circular" && static_cast<int64_t>(c.shape.size()) != k + 2) return false;  // (N, C, ...) only
  for (int64_t i = 0; i < k; ++i) {
    const int64_t size = c.shape[c.shape.size() - 1 - i];
    const int64_t b = c.pad[2 * i], a = c.pad[2 * i + 1];
    if (mode == "reflect" && (b >= size || a >= size)) return false;
    if (mode == "circular") {
      const int64_t kept = size - std::max<int64_t>(-b, 0) - std::max<int64_t>(-a, 0);
      if (kept <= 0 || b > kept || a > kept) return false;
    }
  }
  return true;
}

const std::vector<std::string> kModes = {"reflect", "replicate", "circular"};

}  // namespace

TEST_CASE("pad float32: every mode, 3-D/4-D/5-D, odd shapes, negative pads") {
  manual_seed(31);
  int run = 0;
  for (const std::string& mode : kModes) {
    for (const Case& c : kCases) {
      if (!accepted(mode, c)) continue;
      CAPTURE(mode);
      CAPTURE(shape_str(c.shape));
      const Tensor x = randn(c.shape);
      const Tensor cpu = pad(x, c.pad, mode);
      const Tensor vk = pad(to_vk(x), c.pad, mode);
      REQUIRE(vk.device() == kVulkan);
      check_equal(to_cpu(vk), cpu);
      ++run;
    }
  }
  CHECK(run >= 20);
}

TEST_CASE("pad float32: non-contiguous inputs (transposed, channels last, strided slice)") {
  manual_seed(32);
  for (const std::string& mode : kModes) {
    CAPTURE(mode);
    const Tensor x = randn({2, 3, 6, 7});
    const std::vector<int64_t> p = {2, 1, 3, 2};
    check_equal(to_cpu(pad(vk_transposed_view(x), p, mode)), pad(x, p, mode));
    const Tensor nhwc = randn({2, 5, 6, 3});
    check_equal(to_cpu(pad(to_vk(nhwc).permute({0, 3, 1, 2}), p, mode)), pad(nhwc.permute({0, 3, 1, 2}), p, mode));
    const Tensor wide = randn({1, 2, 9, 16});
    const Tensor vs = to_vk(wide).slice(3, 1, 16, 2);  // every second column: [1, 2, 9, 8]
    CHECK(!vs.is_contiguous());
    check_equal(to_cpu(pad(vs, p, mode)), pad(wide.slice(3, 1, 16, 2), p, mode));
  }
}

TEST_CASE("pad float16: bit-exact vs the CPU, and the float32 result rounded within 2e-3") {
  REQUIRE(vk::Context::get().ok());
  if (!vk::Context::get().get()->caps().float16) {
    MESSAGE("device without shaderFloat16: skipped");
    return;
  }
  manual_seed(33);
  for (const std::string& mode : kModes) {
    for (const Case& c : kCases) {
      if (!accepted(mode, c)) continue;
      CAPTURE(mode);
      CAPTURE(shape_str(c.shape));
      const Tensor x = randn(c.shape);
      const Tensor h = x.to(DType::Float16);
      const Tensor vk = to_cpu(pad(to_vk(h), c.pad, mode));
      REQUIRE(vk.dtype() == DType::Float16);
      // The CPU refuses Half reflect/replicate padding (as PyTorch 1.13): pad the
      // float16 values in float32 and round back (exact: padding copies).
      check_equal(vk, pad(h.to(DType::Float32), c.pad, mode).to(DType::Float16));
      check_close(vk, pad(x, c.pad, mode).to(DType::Float16), 2e-3, 2e-3);
    }
    const Tensor x = randn({1, 3, 5, 6}).to(DType::Float16);
    check_equal(to_cpu(pad(vk_transposed_view(x), {1, 2, 2, 1}, mode)),
                pad(x.to(DType::Float32), {1, 2, 2, 1}, mode).to(DType::Float16));
  }
}

TEST_CASE("pad: empty tensors, and the front-end's errors on vulkan tensors") {
  const Tensor e = zeros({0, 2, 3});
  const Tensor ve = pad(to_vk(e), {1, 1}, "replicate");
  CHECK(ve.sizes() == Shape{0, 2, 5});
  check_equal(to_cpu(ve), pad(e, {1, 1}, "replicate"));
  const Tensor x = to_vk(randn({1, 2, 3}));
  CHECK_THROWS_WITH_AS(pad(x, {3, 0}, "reflect"),
                       doctest::Contains("Padding size should be less than the corresponding input dimension"),
                       ember::Error);
  CHECK_THROWS_WITH_AS(pad(x, {1, 1}, "reflect", 2.0),
                       "Padding mode \"reflect\" doesn't take in value argument", ember::Error);
  CHECK_THROWS_WITH_AS(pad(to_vk(randn({1, 1, 2})), {3, 0}, "circular"),
                       "Padding value causes wrapping around more than once.", ember::Error);
  const Tensor i = to_vk(arange(6, DType::Int32).reshape({1, 2, 3}));
  CHECK_THROWS_WITH_AS(pad(i, {1, 1}, "reflect"), "\"reflection_pad1d\" not implemented for 'Int'", ember::Error);
  CHECK_THROWS_WITH_AS(pad(i, {1, 1}, "circular"), "\"pad\" not implemented for 'Int' on vulkan", ember::Error);
  // Half reflect/replicate padding: refused on the CPU (PyTorch 1.13), allowed on vulkan.
  CHECK_THROWS_WITH_AS(pad(randn({1, 2, 3}).to(DType::Float16), {1, 1}, "replicate"),
                       "\"replication_pad1d_cpu\" not implemented for 'Half'", ember::Error);
}

EMBER_VULKAN_NO_VALIDATION_ERRORS()
