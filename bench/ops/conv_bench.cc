// MobileNetV2-like convolutions (depthwise 3x3 at strides 1 and 2, pointwise
// 1x1) and ResNet-18's 3x3 (plus two with fewer channels), through the eager
// conv2d (the float32 CPU kernel: Winograd where winograd_profitable says so),
// at 1 and 2 threads: min and median ms over `repeats` runs. The 3x3 stride-1
// shapes are timed again through the Winograd kernel itself, with the weight
// transformed per call and pre-transformed, whatever the dispatch; groups-1
// cases also with the weight packed once (as Executor::create packs it).
//   bazel run -c opt //bench/ops:conv_bench -- [repeats=30] [name filter: cases whose name contains it]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cpu/winograd.h"
#include "runtime/backend/backend.h"
#include "runtime/ember.h"
#include "runtime/ops/qlinear.h"

using namespace ember;

namespace {

struct Shape4 {
  const char* name;
  int64_t c, hw, cout, k, stride, groups;
  bool channels_last = false;  // input (and so output) in channels_last memory
  int64_t dilation = 1;        // (padding k / 2 * dilation: the plane's size kept)
};

const Shape4 kCases[] = {
    {"dw 32x112x112 s1", 32, 112, 32, 3, 1, 32},    {"dw 96x112x112 s2", 96, 112, 96, 3, 2, 96},
    {"dw 144x56x56 s1", 144, 56, 144, 3, 1, 144},   {"dw 144x56x56 s2", 144, 56, 144, 3, 2, 144},
    {"dw 384x14x14 s1", 384, 14, 384, 3, 1, 384},   {"dw 960x7x7 s1", 960, 7, 960, 3, 1, 960},
    {"dw 192x28x28 s2", 192, 28, 192, 3, 2, 192},   {"dw 576x14x14 s2", 576, 14, 576, 3, 2, 576},
    {"dw 192x28x28 s1", 192, 28, 192, 3, 1, 192},   {"dw5 120x28x28 s1", 120, 28, 120, 5, 1, 120},
    {"dw5 72x56x56 s2", 72, 56, 72, 5, 2, 72},
    // MobileNetV3-Large's other depthwise shapes
    {"dw 16x112x112 s1", 16, 112, 16, 3, 1, 16},    {"dw 64x112x112 s2", 64, 112, 64, 3, 2, 64},
    {"dw 72x56x56 s1", 72, 56, 72, 3, 1, 72},       {"dw 240x28x28 s2", 240, 28, 240, 3, 2, 240},
    {"dw5 672x14x14 s2", 672, 14, 672, 5, 2, 672},  {"dw5 960x7x7 s1", 960, 7, 960, 5, 1, 960},
    // the depthwise shapes again on channels_last tensors
    {"dwcl 32x112x112 s1", 32, 112, 32, 3, 1, 32, true},    {"dwcl 96x112x112 s2", 96, 112, 96, 3, 2, 96, true},
    {"dwcl 144x56x56 s1", 144, 56, 144, 3, 1, 144, true},   {"dwcl 144x56x56 s2", 144, 56, 144, 3, 2, 144, true},
    {"dwcl 384x14x14 s1", 384, 14, 384, 3, 1, 384, true},   {"dwcl 960x7x7 s1", 960, 7, 960, 3, 1, 960, true},
    {"dwcl 192x28x28 s2", 192, 28, 192, 3, 2, 192, true},   {"dwcl 576x14x14 s2", 576, 14, 576, 3, 2, 576, true},
    {"dwcl 192x28x28 s1", 192, 28, 192, 3, 1, 192, true},   {"dwcl5 120x28x28 s1", 120, 28, 120, 5, 1, 120, true},
    {"dwcl5 72x56x56 s2", 72, 56, 72, 5, 2, 72, true},      {"dwcl 16x112x112 s1", 16, 112, 16, 3, 1, 16, true},
    {"dwcl 64x112x112 s2", 64, 112, 64, 3, 2, 64, true},    {"dwcl 72x56x56 s1", 72, 56, 72, 3, 1, 72, true},
    {"dwcl 240x28x28 s2", 240, 28, 240, 3, 2, 240, true},   {"dwcl5 672x14x14 s2", 672, 14, 672, 5, 2, 672, true},
    {"dwcl5 960x7x7 s1", 960, 7, 960, 5, 1, 960, true},
    // LR-ASPP's dilated last stage (MobileNetV3-Large at output stride 16): dilation 2
    {"dw5 960x28x28 d2", 960, 28, 960, 5, 1, 960, false, 2},   {"dwcl5 960x28x28 d2", 960, 28, 960, 5, 1, 960, true, 2},
    {"dw 480x14x14 d2", 480, 14, 480, 3, 1, 480, false, 2},    {"dwcl 480x14x14 d2", 480, 14, 480, 3, 1, 480, true, 2},
    // the same layer at a 224x224 input (14x14: 8 of a row's 14 outputs read the padding)
    {"dw5 960x14x14 d2", 960, 14, 960, 5, 1, 960, false, 2},   {"dwcl5 960x14x14 d2", 960, 14, 960, 5, 1, 960, true, 2},
    {"stem 3->32 224 s2", 3, 224, 32, 3, 2, 1},
    {"stem7 3->64 224 s2", 3, 224, 64, 7, 2, 1},
    {"pw 64->384 14x14", 64, 14, 384, 1, 1, 1},     {"pw 384->64 14x14", 384, 14, 64, 1, 1, 1},     {"pw 16->96 112x112", 16, 112, 96, 1, 1, 1},
    {"pw 960->160 7x7", 960, 7, 160, 1, 1, 1},      {"3x3 64->64 56x56", 64, 56, 64, 3, 1, 1},
    {"3x3 128->128 28x28", 128, 28, 128, 3, 1, 1},  {"3x3 256->256 14x14", 256, 14, 256, 3, 1, 1},
    {"3x3 512->512 7x7", 512, 7, 512, 3, 1, 1},     {"3x3 16->16 56x56", 16, 56, 16, 3, 1, 1},
    {"3x3 32->32 28x28", 32, 28, 32, 3, 1, 1},      {"3x3 s2 64->128 56x56", 64, 56, 128, 3, 2, 1},
    {"3x3 s2 128->256 28x28", 128, 28, 256, 3, 2, 1}, {"3x3 s2 256->512 14x14", 256, 14, 512, 3, 2, 1},
};

template <typename F>
void report(int threads, const char* name, const char* what, int repeats, const F& fn) {
  std::vector<double> ms;
  for (int r = 0; r < repeats + 3; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = std::chrono::steady_clock::now();
    if (r >= 3) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("threads %d  %-20s %-22s min %8.3f ms  median %8.3f ms\n", threads, name, what, ms.front(),
              ms[ms.size() / 2]);
}

// The Winograd kernel on a 3x3 stride-1 case, weight per call or pre-transformed.
void winograd_case(const Shape4& s, int threads, int repeats) {
  const Tensor x = randn({1, s.c, s.hw, s.hw}), w = randn({s.cout, s.c, 3, 3}), b = randn({s.cout});
  const Tensor y = empty({1, s.cout, s.hw, s.hw});
  Conv2dParams prm;
  prm.padding[0] = prm.padding[1] = 1;
  const TensorView xv = x.kernel_view(), wv = w.kernel_view(), bv = b.kernel_view(), yv = y.kernel_view();
  const std::vector<cpu::PackedOperand> u = cpu::winograd_pack_weight(w.data_ptr<float>(), s.cout, s.c, threads);
  for (const cpu::PackedOperand* pre : {static_cast<const cpu::PackedOperand*>(nullptr), u.data()}) {
    std::vector<char> ws(cpu::winograd_workspace(xv, yv, pre != nullptr, threads));
    report(threads, s.name, pre != nullptr ? "winograd pretransformed" : "winograd per call", repeats, [&] {
      if (!cpu::winograd_conv2d(xv, wv, bv, yv, prm, pre, ws.data(), ws.size(), threads)) std::abort();
    });
  }
  // A residual added before the activation (a ResNet block's second convolution).
  const Tensor r = randn({1, s.cout, s.hw, s.hw});
  std::vector<char> ws(cpu::winograd_workspace(xv, yv, true, threads));
  prm.activation.kind = ActivationKind::Relu;
  report(threads, s.name, "winograd + relu", repeats, [&] {
    if (!cpu::winograd_conv2d(xv, wv, bv, yv, prm, u.data(), ws.data(), ws.size(), threads)) std::abort();
  });
  report(threads, s.name, "winograd + residual", repeats, [&] {
    if (!cpu::winograd_conv2d(xv, wv, bv, yv, prm, u.data(), ws.data(), ws.size(), threads, r.data_ptr<float>()))
      std::abort();
  });
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 30;
  const std::string filter = argc > 2 ? argv[2] : "";
  Backend* cpu = get_backend(DeviceType::CPU);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Shape4& s : kCases) {
      if (std::string(s.name).find(filter) == std::string::npos) continue;
      const Tensor x = randn({1, s.c, s.hw, s.hw}).contiguous(s.channels_last ? MemoryFormat::ChannelsLast
                                                                                 : MemoryFormat::Contiguous);
      const Tensor w = randn({s.cout, s.c / s.groups, s.k, s.k});
      const Tensor b = randn({s.cout});
      const int64_t pad = s.k / 2 * s.dilation;
      report(threads, s.name, "conv2d", repeats, [&] {
        (void)conv2d(x, w, b, {s.stride, s.stride}, {pad, pad}, {s.dilation, s.dilation}, s.groups);
      });
      if (s.groups == 1) {  // the weight packed once (Backend::prepare_weight, read through Conv2dParams::weight)
        WeightDesc desc;
        desc.weight = w.kernel_view();
        Result<std::shared_ptr<const PreparedWeight>> packed = cpu->prepare_weight(OpKind::Conv2d, desc);
        if (!packed.ok()) return 1;
        Conv2dParams p;
        p.stride[0] = p.stride[1] = s.stride;
        p.padding[0] = p.padding[1] = pad;
        p.weight = packed.get().get();
        bool fused = false;
        report(threads, s.name, "conv2d packed weight", repeats, [&] { (void)conv2d_activated(x, w, b, p, &fused); });
      }
      if (s.k == 3 && s.stride == 1 && s.groups == 1) winograd_case(s, threads, repeats);
    }
  }
  return 0;
}
