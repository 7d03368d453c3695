// MobileNetV2-like convolutions (depthwise 3x3 at strides 1 and 2, pointwise
// 1x1) and ResNet-18's 3x3, through the eager conv2d (the float32 CPU kernel),
// at 1 and 2 threads: min and median ms over `repeats` runs; groups-1 cases
// also with the weight packed once (as Executor::create packs it).
//   bazel run -c opt //bench/ops:conv_bench -- [repeats=30]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "runtime/backend/backend.h"
#include "runtime/ember.h"
#include "runtime/ops/qlinear.h"

using namespace ember;

namespace {

struct Shape4 {
  const char* name;
  int64_t c, hw, cout, k, stride, groups;
};

const Shape4 kCases[] = {
    {"dw 32x112x112 s1", 32, 112, 32, 3, 1, 32},    {"dw 96x112x112 s2", 96, 112, 96, 3, 2, 96},
    {"dw 144x56x56 s1", 144, 56, 144, 3, 1, 144},   {"dw 144x56x56 s2", 144, 56, 144, 3, 2, 144},
    {"dw 384x14x14 s1", 384, 14, 384, 3, 1, 384},   {"dw 960x7x7 s1", 960, 7, 960, 3, 1, 960},
    {"pw 64->384 14x14", 64, 14, 384, 1, 1, 1},     {"pw 16->96 112x112", 16, 112, 96, 1, 1, 1},
    {"pw 960->160 7x7", 960, 7, 160, 1, 1, 1},      {"3x3 64->64 56x56", 64, 56, 64, 3, 1, 1},
    {"3x3 256->256 14x14", 256, 14, 256, 3, 1, 1},
};

// min and median ms of `repeats` runs of f (after 3 warm-up runs).
template <typename F>
std::pair<double, double> time_ms(int repeats, F f) {
  std::vector<double> ms;
  for (int r = 0; r < repeats + 3; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const auto t1 = std::chrono::steady_clock::now();
    if (r >= 3) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms.front(), ms[ms.size() / 2]};
}

}  // namespace

// Each case as the eager conv2d runs it (weight packed per call) and, for
// groups 1, with the weight packed once as Executor::create does
// (Backend::prepare_weight, read through Conv2dParams::weight).
int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 30;
  Backend* cpu = get_backend(DeviceType::CPU);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Shape4& s : kCases) {
      const Tensor x = randn({1, s.c, s.hw, s.hw});
      const Tensor w = randn({s.cout, s.c / s.groups, s.k, s.k});
      const Tensor b = randn({s.cout});
      const int64_t pad = s.k / 2;
      const auto eager = time_ms(repeats, [&] { conv2d(x, w, b, {s.stride, s.stride}, {pad, pad}, {1, 1}, s.groups); });
      std::printf("threads %d  %-20s min %8.3f ms  median %8.3f ms", threads, s.name, eager.first, eager.second);
      if (s.groups == 1) {
        WeightDesc desc;
        desc.weight = w.kernel_view();
        Result<std::shared_ptr<const PreparedWeight>> packed = cpu->prepare_weight(OpKind::Conv2d, desc);
        if (!packed.ok()) return 1;
        Conv2dParams p;
        p.stride[0] = p.stride[1] = s.stride;
        p.padding[0] = p.padding[1] = pad;
        p.weight = packed.get().get();
        bool fused = false;
        const auto pre = time_ms(repeats, [&] { conv2d_activated(x, w, b, p, &fused); });
        std::printf("   packed: min %8.3f ms  median %8.3f ms", pre.first, pre.second);
      }
      std::printf("\n");
    }
  }
  return 0;
}
