// ember side of the op benchmark: the same ops and shapes as torch_ops.py.
// Run both through bench/compare.py, which prints the ember/PyTorch time ratios.
#include <benchmark/benchmark.h>

#include <functional>
#include <string>
#include <vector>

#include "quant/qscheme.h"
#include "runtime/ember.h"
#include "runtime/ops/qlinear.h"

using namespace ember;

namespace {

struct Case {
  const char* name;
  std::function<std::function<Tensor()>()> make;  // builds inputs, returns the op to time
};

std::vector<Case> cases() {
  return {
      {"add_1M", [] { Tensor a = randn({1 << 20}), b = randn({1 << 20}); return [=] { return a + b; }; }},
      {"mul_scalar_1M", [] { Tensor a = randn({1 << 20}); return [=] { return a * 1.5; }; }},
      {"relu_1M", [] { Tensor a = randn({1 << 20}); return [=] { return relu(a); }; }},
      {"exp_1M", [] { Tensor a = randn({1 << 20}); return [=] { return exp(a); }; }},
      {"add_bcast_1000x1000", [] { Tensor a = randn({1000, 1000}), b = randn({1000}); return [=] { return a + b; }; }},
      {"transpose_copy_1000x1000", [] { Tensor a = randn({1000, 1000}); return [=] { return a.t().contiguous(); }; }},
      {"sum_dim1_1000x1000", [] { Tensor a = randn({1000, 1000}); return [=] { return a.sum({1}); }; }},
      {"softmax_256x1000", [] { Tensor a = randn({256, 1000}); return [=] { return softmax(a, 1); }; }},
      {"softmax_masked_12x128x128", [] { Tensor a = randn({12, 128, 128}); a.narrow(2, 100, 28).fill_(-10000.0); return [=] { return softmax(a, 2); }; }},
      {"softmax_12x128x128", [] { Tensor a = randn({12, 128, 128}); return [=] { return softmax(a, 2); }; }},
      {"layer_norm_256x768", [] {
         Tensor a = randn({256, 768}), w = randn({768}), b = randn({768});
         return [=] { return layer_norm(a, {768}, w, b); };
       }},
      {"gelu_128x1536", [] { Tensor a = randn({128, 1536}) * 3.0; return [=] { return gelu(a); }; }},  // BERT's FFN
      {"matmul_256", [] { Tensor a = randn({256, 256}), b = randn({256, 256}); return [=] { return matmul(a, b); }; }},
      // Attention's two products on permuted heads ([batch, seq, heads, dim] views), as a BERT runs them.
      {"matmul_attn_qk_8x12x128x32", [] {
         Tensor q = randn({8, 128, 12, 32}).permute({0, 2, 1, 3}), k = randn({8, 128, 12, 32}).permute({0, 2, 3, 1});
         return [=] { return matmul(q, k); };
       }},
      {"matmul_attn_pv_8x12x128x128", [] {
         Tensor p = randn({8, 12, 128, 128}), v = randn({8, 128, 12, 32}).permute({0, 2, 1, 3});
         return [=] { return matmul(p, v); };
       }},
      // The fused attention on BERT b8's heads: q, k, v as views of [batch, seq, heads, dim], a padding mask.
      {"sdpa_8x12x128x32_mask", [] {
         Tensor q = randn({8, 128, 12, 32}).permute({0, 2, 1, 3}), k = randn({8, 128, 12, 32}).permute({0, 2, 1, 3});
         Tensor v = randn({8, 128, 12, 32}).permute({0, 2, 1, 3}), m = zeros({8, 1, 1, 128});
         m.narrow(3, 100, 28).fill_(-10000.0);
         return [=] { return scaled_dot_product_attention(q, k, v, m, 1.0); };
       }},
      {"conv2d_64x56x56_3x3", [] {
         Tensor x = randn({1, 64, 56, 56}), w = randn({64, 64, 3, 3});
         return [=] { return conv2d(x, w, Tensor(), {1, 1}, {1, 1}); };
       }},
      // MobileNetV3's first depthwise (16 channels at 112x112) and MobileNetV2's (32), channels_last.
      {"dw3x3_16x112x112_cl", [] {
         Tensor x = randn({1, 16, 112, 112}).contiguous(MemoryFormat::ChannelsLast), w = randn({16, 1, 3, 3});
         return [=] { return conv2d(x, w, Tensor(), {1, 1}, {1, 1}, {1, 1}, 16); };
       }},
      {"dw3x3_32x112x112_cl", [] {
         Tensor x = randn({1, 32, 112, 112}).contiguous(MemoryFormat::ChannelsLast), w = randn({32, 1, 3, 3});
         return [=] { return conv2d(x, w, Tensor(), {1, 1}, {1, 1}, {1, 1}, 32); };
       }},
      // MobileNetV2's first stride-2 depthwise (96 channels at 112x112) in float32, beside the dynamic
      // quantization of its input to uint8 (one scale; what an int8 depthwise kernel would run first).
      {"dw3x3_96x112x112_s2_cl", [] {
         Tensor x = randn({1, 96, 112, 112}).contiguous(MemoryFormat::ChannelsLast), w = randn({96, 1, 3, 3});
         return [=] { return conv2d(x, w, Tensor(), {2, 2}, {1, 1}, {1, 1}, 96); };
       }},
      {"quantize_u8_96x112x112", [] {
         Tensor x = randn({1, 96, 112, 112}), q = empty({1, 96, 112, 112}, TensorOptions(DType::UInt8));
         return [=] {
           float scale;
           int32_t zero_point;
           quant::quantize_activations_u8(x.data_ptr<float>(), 112 * 112, 96, 96, false, false,
                                          q.data_ptr<uint8_t>(), 96, &scale, &zero_point);
           return q;
         };
       }},
      // MobileNetV3's 1x1 convolutions at 112x112 (16 -> 16, 16 -> 64), channels_last.
      {"pw1x1_16to16x112x112_cl", [] {
         Tensor x = randn({1, 16, 112, 112}).contiguous(MemoryFormat::ChannelsLast), w = randn({16, 16, 1, 1});
         return [=] { return conv2d(x, w); };
       }},
      {"pw1x1_16to64x112x112_cl", [] {
         Tensor x = randn({1, 16, 112, 112}).contiguous(MemoryFormat::ChannelsLast), w = randn({64, 16, 1, 1});
         return [=] { return conv2d(x, w); };
       }},
      // MobileNetV3's first expansion and depthwise convolution (16 -> 64 at 112x112, 3x3 stride 2, ReLU each):
      // as the executor pairs them (conv2d_pair: no 64 x 112 x 112 tensor) and as two convolutions.
      {"pair_16to64x112x112_dw_s2_cl", [] {
         Tensor x = randn({1, 16, 112, 112}).contiguous(MemoryFormat::ChannelsLast), w1 = randn({64, 16, 1, 1});
         Tensor w2 = randn({64, 1, 3, 3}), b1 = randn({64}), b2 = randn({64});
         Conv2dPairParams p;
         p.pointwise.activation.kind = ActivationKind::Relu;
         p.depthwise = Conv2dParams{{2, 2}, {1, 1}, {1, 1}, 64, {ActivationKind::Relu}};
         return [=] { return conv2d_pair(x, w1, b1, w2, b2, p); };
       }},
      {"unpaired_16to64x112x112_dw_s2_cl", [] {
         Tensor x = randn({1, 16, 112, 112}).contiguous(MemoryFormat::ChannelsLast), w1 = randn({64, 16, 1, 1});
         Tensor w2 = randn({64, 1, 3, 3}), b1 = randn({64}), b2 = randn({64});
         Conv2dParams first, second{{2, 2}, {1, 1}, {1, 1}, 64, {ActivationKind::Relu}};
         first.activation.kind = ActivationKind::Relu;
         return [=] {
           bool fused = false;
           return conv2d_activated(conv2d_activated(x, w1, b1, first, &fused), w2, b2, second, &fused);
         };
       }},
      {"max_pool2d_64x56x56", [] {
         Tensor x = randn({1, 64, 56, 56});
         return [=] { return max_pool2d(x, {3, 3}, {2, 2}, {1, 1}); };
       }},
      // MobileNetV3's ops between convolutions, on channels_last activations (_cl) beside their contiguous twins.
      {"add_40x28x28", [] { Tensor a = randn({1, 40, 28, 28}), b = randn({1, 40, 28, 28}); return [=] { return a + b; }; }},
      {"add_40x28x28_cl", [] {
         Tensor a = randn({1, 40, 28, 28}).contiguous(MemoryFormat::ChannelsLast);
         Tensor b = randn({1, 40, 28, 28}).contiguous(MemoryFormat::ChannelsLast);
         return [=] { return a + b; };
       }},
      {"mul_se_120x28x28", [] { Tensor x = randn({1, 120, 28, 28}), s = randn({1, 120, 1, 1}); return [=] { return x * s; }; }},
      {"mul_se_120x28x28_cl", [] {
         Tensor x = randn({1, 120, 28, 28}).contiguous(MemoryFormat::ChannelsLast), s = randn({1, 120, 1, 1});
         return [=] { return x * s; };
       }},
      {"hardswish_72x56x56", [] { Tensor x = randn({1, 72, 56, 56}); return [=] { return hardswish(x); }; }},
      {"hardswish_72x56x56_cl", [] {
         Tensor x = randn({1, 72, 56, 56}).contiguous(MemoryFormat::ChannelsLast);
         return [=] { return hardswish(x); };
       }},
      {"adaptive_avg_pool_960x7x7", [] { Tensor x = randn({1, 960, 7, 7}); return [=] { return adaptive_avg_pool2d(x, {1, 1}); }; }},
      {"adaptive_avg_pool_960x7x7_cl", [] {
         Tensor x = randn({1, 960, 7, 7}).contiguous(MemoryFormat::ChannelsLast);
         return [=] { return adaptive_avg_pool2d(x, {1, 1}); };
       }},
      {"adaptive_avg_pool_72x56x56", [] { Tensor x = randn({1, 72, 56, 56}); return [=] { return adaptive_avg_pool2d(x, {1, 1}); }; }},
      {"adaptive_avg_pool_72x56x56_cl", [] {
         Tensor x = randn({1, 72, 56, 56}).contiguous(MemoryFormat::ChannelsLast);
         return [=] { return adaptive_avg_pool2d(x, {1, 1}); };
       }},
      // NCHW -> channels_last (the executor's first convolution), beside a plain copy of the same bytes.
      {"clone_3x224x224", [] { Tensor x = randn({1, 3, 224, 224}); return [=] { return x.clone(); }; }},
      {"to_channels_last_3x224x224", [] {
         Tensor x = randn({1, 3, 224, 224});
         return [=] { return x.contiguous(MemoryFormat::ChannelsLast); };
       }},
      {"to_channels_last_32x112x112", [] {
         Tensor x = randn({1, 32, 112, 112});
         return [=] { return x.contiguous(MemoryFormat::ChannelsLast); };
       }},
      {"clone_96x56x56", [] { Tensor x = randn({1, 96, 56, 56}); return [=] { return x.clone(); }; }},
      {"to_channels_last_96x56x56", [] {
         Tensor x = randn({1, 96, 56, 56});
         return [=] { return x.contiguous(MemoryFormat::ChannelsLast); };
       }},
      {"from_channels_last_96x56x56", [] {
         Tensor x = randn({1, 96, 56, 56}).contiguous(MemoryFormat::ChannelsLast);
         return [=] { return x.contiguous(); };
       }},
      // LR-ASPP's last op: 21 class maps bilinearly upsampled 28x28 -> 224x224.
      {"upsample_bilinear_21x28x28_x8", [] {
         Tensor x = randn({1, 21, 28, 28});
         return [=] { return interpolate(x, {224, 224}, {}, "bilinear", false); };
       }},
  };
}

}  // namespace

int main(int argc, char** argv) {
  manual_seed(0);
  for (int threads : {1, 2}) {
    for (const Case& c : cases()) {
      std::function<Tensor()> op = c.make();
      benchmark::RegisterBenchmark((std::string(c.name) + "/threads:" + std::to_string(threads)).c_str(),
                                   [op, threads](benchmark::State& state) {
                                     set_num_threads(threads);
                                     for (auto _ : state) benchmark::DoNotOptimize(op());
                                   })
          ->Unit(benchmark::kMicrosecond)
          ->MinTime(0.2);
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
