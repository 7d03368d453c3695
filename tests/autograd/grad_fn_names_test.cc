// grad_fn names as PyTorch 1.13 shows them for 142 ops (generated once with
// torch 1.13 from the same calls; torch prints CopySlices as
// torch::autograd::CopySlices).
#include <functional>
#include <string>
#include <vector>

#include "runtime/nn/loss.h"
#include "tests/harness/testing.h"

using namespace ember;

namespace {
struct Case {
  std::string op;
  std::string torch_name;
  std::function<Tensor()> make;
};
}  // namespace

TEST_CASE("grad_fn names match PyTorch 1.13") {
  manual_seed(0);
  const Tensor x = rand({2, 3}).requires_grad_(), y = rand({2, 3}).requires_grad_();
  const Tensor v = rand({3}).requires_grad_(), m = rand({3, 4}).requires_grad_();
  const Tensor b3 = rand({2, 3, 4}).requires_grad_(), b3b = rand({2, 4, 5}).requires_grad_();
  const Tensor img = rand({1, 2, 5, 5}).requires_grad_(), wconv = rand({3, 2, 3, 3}).requires_grad_();
  const Tensor idx = tensor({{0, 1, 0}, {1, 0, 1}});
  const std::vector<Case> cases = {
      {"add", "AddBackward0", [&] { return x + y; }},
      {"add_scalar", "AddBackward0", [&] { return x + 1; }},
      {"sub", "SubBackward0", [&] { return x - y; }},
      {"sub_scalar", "SubBackward0", [&] { return x - 1; }},
      {"rsub_scalar", "RsubBackward1", [&] { return 1 - x; }},
      {"mul", "MulBackward0", [&] { return x * y; }},
      {"mul_scalar", "MulBackward0", [&] { return x * 2; }},
      {"div", "DivBackward0", [&] { return x / y; }},
      {"div_scalar", "DivBackward0", [&] { return x / 2; }},
      {"neg", "NegBackward0", [&] { return -x; }},
      {"pow_scalar", "PowBackward0", [&] { return x.pow(2); }},
      {"pow_tensor", "PowBackward1", [&] { return x.pow(y); }},
      {"pow_scalar_base", "PowBackward2", [&] { return pow(2, x); }},
      {"maximum", "MaximumBackward0", [&] { return maximum(x, y); }},
      {"minimum", "MinimumBackward0", [&] { return minimum(x, y); }},
      {"where", "WhereBackward0", [&] { return where(x > 0.5, x, y); }},
      {"clamp", "ClampBackward1", [&] { return clamp(x, 0.2, 0.8); }},
      {"clamp_min", "ClampBackward1", [&] { return clamp(x, 0.2, std::nullopt); }},
      {"gelu", "GeluBackward0", [&] { return gelu(x); }},
      {"gelu_tanh", "GeluBackward0", [&] { return gelu(x, "tanh"); }},
      {"abs", "AbsBackward0", [&] { return abs(x); }},
      {"exp", "ExpBackward0", [&] { return exp(x); }},
      {"log", "LogBackward0", [&] { return log(x); }},
      {"sqrt", "SqrtBackward0", [&] { return sqrt(x); }},
      {"rsqrt", "RsqrtBackward0", [&] { return rsqrt(x); }},
      {"sin", "SinBackward0", [&] { return sin(x); }},
      {"cos", "CosBackward0", [&] { return cos(x); }},
      {"tanh", "TanhBackward0", [&] { return tanh(x); }},
      {"sigmoid", "SigmoidBackward0", [&] { return sigmoid(x); }},
      {"relu", "ReluBackward0", [&] { return relu(x); }},
      {"silu", "SiluBackward0", [&] { return silu(x); }},
      {"erf", "ErfBackward0", [&] { return erf(x); }},
      {"reciprocal", "ReciprocalBackward0", [&] { return reciprocal(x); }},
      {"floor", "FloorBackward0", [&] { return floor(x); }},
      {"ceil", "CeilBackward0", [&] { return ceil(x); }},
      {"round", "RoundBackward0", [&] { return round(x); }},
      {"sign", "SignBackward0", [&] { return sign(x); }},
      {"tan", "TanBackward0", [&] { return tan(x); }},
      {"asin", "AsinBackward0", [&] { return asin(x); }},
      {"acos", "AcosBackward0", [&] { return acos(x); }},
      {"atan", "AtanBackward0", [&] { return atan(x); }},
      {"sinh", "SinhBackward0", [&] { return sinh(x); }},
      {"cosh", "CoshBackward0", [&] { return cosh(x); }},
      {"asinh", "AsinhBackward0", [&] { return asinh(x); }},
      {"acosh", "AcoshBackward0", [&] { return acosh(x + 1); }},
      {"atanh", "AtanhBackward0", [&] { return atanh(x); }},
      {"softsign", "DivBackward0", [&] { return softsign(x); }},
      {"mish", "MishBackward0", [&] { return mish(x); }},
      {"softplus", "SoftplusBackward0", [&] { return softplus(x); }},
      {"expm1", "Expm1Backward0", [&] { return expm1(x); }},
      {"log1p", "Log1PBackward0", [&] { return log1p(x); }},
      {"hardswish", "HardswishBackward0", [&] { return hardswish(x); }},
      {"hardsigmoid", "HardsigmoidBackward0", [&] { return hardsigmoid(x); }},
      {"leaky_relu", "LeakyReluBackward0", [&] { return leaky_relu(x); }},
      {"elu", "EluBackward0", [&] { return elu(x); }},
      {"selu", "EluBackward0", [&] { return selu(x); }},
      {"celu", "CeluBackward0", [&] { return celu(x); }},
      {"remainder", "RemainderBackward1", [&] { return remainder(x, y); }},
      {"fmod", "FmodBackward1", [&] { return fmod(x, y); }},
      {"to_double", "ToCopyBackward0", [&] { return x.to(DType::Float64); }},
      {"clone", "CloneBackward0", [&] { return x.clone(); }},
      {"contiguous", "CloneBackward0", [&] { return x.t().contiguous(); }},
      {"view", "ViewBackward0", [&] { return x.view({3, 2}); }},
      {"reshape", "ReshapeAliasBackward0", [&] { return x.reshape({6}); }},
      {"reshape_copy", "UnsafeViewBackward0", [&] { return x.t().reshape({6}); }},
      {"flatten", "ReshapeAliasBackward0", [&] { return b3.flatten(); }},
      {"expand", "ExpandBackward0", [&] { return v.expand({2, 3}); }},
      {"transpose", "TransposeBackward0", [&] { return x.transpose(0, 1); }},
      {"t", "TBackward0", [&] { return x.t(); }},
      {"permute", "PermuteBackward0", [&] { return b3.permute({2, 0, 1}); }},
      {"squeeze", "SqueezeBackward0", [&] { return x.view({2, 1, 3}).squeeze(); }},
      {"squeeze_dim", "SqueezeBackward1", [&] { return x.view({2, 1, 3}).squeeze(1); }},
      {"unsqueeze", "UnsqueezeBackward0", [&] { return x.unsqueeze(0); }},
      {"narrow", "SliceBackward0", [&] { return x.narrow(1, 0, 2); }},
      {"slice", "SliceBackward0", [&] { return x.slice(1, 1); }},
      {"select", "SelectBackward0", [&] { return x[1]; }},
      {"unfold", "UnfoldBackward0", [&] { return v.unfold(0, 2, 1); }},
      {"as_strided", "AsStridedBackward0", [&] { return x.as_strided({2, 2}, {1, 2}); }},
      {"sum", "SumBackward0", [&] { return x.sum(); }},
      {"sum_dim", "SumBackward1", [&] { return x.sum({1}); }},
      {"mean", "MeanBackward0", [&] { return x.mean(); }},
      {"mean_dim", "MeanBackward1", [&] { return x.mean({0}); }},
      {"prod", "ProdBackward0", [&] { return prod(x); }},
      {"prod_dim", "ProdBackward1", [&] { return prod(x, 1); }},
      {"var", "VarBackward0", [&] { return var(x); }},
      {"var_dim", "VarBackward0", [&] { return var(x, {{1}}); }},
      {"std", "StdBackward0", [&] { return ember::std(x); }},
      {"norm", "NormBackward1", [&] { return norm(x); }},
      {"norm_dim", "NormBackward1", [&] { return norm(x, 2, {1}); }},
      {"max", "MaxBackward1", [&] { return x.max(); }},
      {"min", "MinBackward1", [&] { return x.min(); }},
      {"max_dim", "MaxBackward0", [&] { return max(x, 1).first; }},
      {"min_dim", "MinBackward0", [&] { return min(x, 1).first; }},
      {"mm", "MmBackward0", [&] { return x.matmul(m); }},
      {"dot", "DotBackward0", [&] { return v.matmul(v); }},
      {"mv", "MvBackward0", [&] { return x.matmul(v); }},
      {"bmm", "BmmBackward0", [&] { return bmm(b3, b3b); }},
      {"matmul_3d", "UnsafeViewBackward0", [&] { return b3.matmul(b3b); }},
      {"matmul_3d_2d", "UnsafeViewBackward0", [&] { return b3.matmul(rand({4, 2})); }},
      {"linear", "MmBackward0", [&] { return linear(x, m.t()); }},
      {"linear_bias", "AddmmBackward0", [&] { return linear(x, m.t(), rand({4})); }},
      {"softmax", "SoftmaxBackward0", [&] { return x.softmax(1); }},
      {"log_softmax", "LogSoftmaxBackward0", [&] { return log_softmax(x, 1); }},
      {"layer_norm", "NativeLayerNormBackward0", [&] { return layer_norm(x, {3}); }},
      {"batch_norm", "NativeBatchNormBackward0", [&] { return batch_norm(img, zeros({2}), ones({2})); }},
      {"conv2d", "ConvolutionBackward0", [&] { return conv2d(img, wconv); }},
      {"max_pool2d", "MaxPool2DWithIndicesBackward0", [&] { return max_pool2d(img, {2, 2}); }},
      {"avg_pool2d", "AvgPool2DBackward0", [&] { return avg_pool2d(img, {2, 2}); }},
      {"adaptive_avg_pool2d", "AdaptiveAvgPool2DBackward0", [&] { return adaptive_avg_pool2d(img, {2, 2}); }},
      {"embedding", "EmbeddingBackward0", [&] { return embedding(m, idx); }},
      {"cat", "CatBackward0", [&] { return cat({x, y}); }},
      {"stack", "StackBackward0", [&] { return stack({x, y}); }},
      {"split", "SplitBackward0", [&] { return split(x, 1, 1)[0]; }},
      {"chunk", "SplitBackward0", [&] { return chunk(x, 3, 1)[1]; }},
      {"pad", "ConstantPadNdBackward0", [&] { return pad(x, {1, 1}); }},
      {"pad_reflect", "ReflectionPad2DBackward0", [&] { return pad(img, {1, 1, 1, 1}, "reflect"); }},
      {"pad_replicate", "ReplicationPad2DBackward0", [&] { return pad(img, {1, 1, 1, 1}, "replicate"); }},
      {"pad_circular", "CopySlices", [&] { return pad(img, {1, 1, 1, 1}, "circular"); }},
      {"gather", "GatherBackward0", [&] { return gather(x, 1, idx); }},
      {"scatter", "ScatterBackward0", [&] { return scatter(x, 1, idx, y); }},
      {"scatter_value", "ScatterBackward1", [&] { return scatter(x, 1, idx, 2.0); }},
      {"scatter_add", "ScatterAddBackward0", [&] { return scatter_add(x, 1, idx, y); }},
      {"index_select", "IndexSelectBackward0", [&] { return index_select(x, 1, tensor({0, 2})); }},
      {"masked_fill", "MaskedFillBackward0", [&] { return masked_fill(x, x > 0.5, 0.0); }},
      {"take_along_dim", "GatherBackward0", [&] { return take_along_dim(x, idx, 1); }},
      {"topk", "TopkBackward0", [&] { return topk(x, 2).first; }},
      {"sort", "SortBackward0", [&] { return sort(x).first; }},
      {"cumsum", "CumsumBackward0", [&] { return cumsum(x, 1); }},
      {"cumprod", "CumprodBackward0", [&] { return cumprod(x, 1); }},
      {"flip", "FlipBackward0", [&] { return flip(x, {1}); }},
      {"roll", "RollBackward0", [&] { return roll(x, {1}, {1}); }},
      {"repeat", "RepeatBackward0", [&] { return repeat(x, {2, 1}); }},
      {"tile", "RepeatBackward0", [&] { return tile(x, {2}); }},
      {"tril", "TrilBackward0", [&] { return tril(x); }},
      {"triu", "TriuBackward0", [&] { return triu(x); }},
      {"mse_loss", "MseLossBackward0", [&] { return nn::mse_loss(x, y); }},
      {"l1_loss", "MeanBackward0", [&] { return nn::l1_loss(x, y); }},
      {"nll_loss", "NllLossBackward0", [&] { return nn::nll_loss(x, tensor({0, 2})); }},
      {"cross_entropy", "NllLossBackward0", [&] { return nn::cross_entropy(x, tensor({0, 2})); }},
      {"cross_entropy_probs", "DivBackward1", [&] { return nn::cross_entropy(x, rand({2, 3})); }},
      {"bce_with_logits", "BinaryCrossEntropyWithLogitsBackward0", [&] { return nn::binary_cross_entropy_with_logits(x, rand({2, 3})); }},
  };
  for (const Case& c : cases) {
    CAPTURE(c.op);
    const Tensor out = c.make();
    REQUIRE(out.grad_fn() != nullptr);
    CHECK(std::string(out.grad_fn()->name()) == c.torch_name);
  }
}
