// nn::Module and the layers against torch.nn (PyTorch 1.13): default init
// with the same seed, forwards, BatchNorm2d statistics, names, state_dict and
// load_state_dict's checks and messages.
#include <sstream>

#include "runtime/nn/module.h"
#include "tests/harness/gradcheck.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;
using ember::testing::golden_text;
namespace nn = ember::nn;

namespace {

std::string joined_names(const nn::NamedTensors& named) {
  std::string out;
  for (const auto& [name, t] : named) out += (out.empty() ? "" : ",") + name;
  return out;
}

std::shared_ptr<nn::Sequential> make_net(uint64_t seed) {
  manual_seed(seed);
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(3, 4, 3, 1, 1), std::make_shared<nn::BatchNorm2d>(4),
      std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
          std::make_shared<nn::Conv2d>(4, 4, 1), std::make_shared<nn::BatchNorm2d>(4), std::make_shared<nn::GELU>()}),
      std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(4 * 3 * 3, 5, false), std::make_shared<nn::Dropout>(0.0),
      std::make_shared<nn::Sequential>(
          std::initializer_list<std::shared_ptr<nn::Module>>{std::make_shared<nn::Linear>(5, 2)})});
}

// A user-defined module: registration through the protected API.
class Net : public nn::Module {
 public:
  Net() : Module("Net") {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 3));
    scale = register_parameter("scale", ones({1}));
    register_buffer("steps", zeros({}, DType::Int64));
    register_buffer("cache", zeros({2}), /*persistent=*/false);
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(3, 2));
  }
  Tensor forward(const Tensor& x) override { return fc2->forward(relu(fc1->forward(x)) * scale); }
  void add_param(const std::string& name) { register_parameter(name, ones({1})); }
  void add_buffer(const std::string& name) { register_buffer(name, ones({1})); }
  void add_module(const std::string& name) { register_module(name, std::make_shared<nn::ReLU>()); }
  std::shared_ptr<nn::Linear> fc1, fc2;
  Tensor scale;
};

}  // namespace

TEST_CASE("Linear: PyTorch's default init with the same seed, forward") {
  manual_seed(100);
  nn::Linear lin(5, 3);
  check_equal(lin.weight.detach(), golden("nnm.linear.weight"));
  check_equal(lin.bias.detach(), golden("nnm.linear.bias"));
  check_close(lin(golden("nnm.linear.x")), golden("nnm.linear.y"), 1e-5, 1e-6);
  CHECK(lin.weight.requires_grad());
  CHECK(lin.weight.is_leaf());
  manual_seed(101);
  nn::Linear nobias(4, 6, false);
  check_equal(nobias.weight.detach(), golden("nnm.linear_nobias.weight"));
  CHECK(!nobias.bias.defined());
  CHECK(joined_names(nobias.named_parameters()) == "weight");
  CHECK(joined_names(nobias.state_dict()) == "weight");
  nn::Linear f64(2, 3, true, DType::Float64);
  CHECK(f64.weight.dtype() == DType::Float64);
}

TEST_CASE("Conv2d: default init and forward (stride, padding, dilation, groups)") {
  manual_seed(102);
  nn::Conv2d conv(3, 4, {3, 2}, 2, 1);
  check_equal(conv.weight.detach(), golden("nnm.conv.weight"));
  check_equal(conv.bias.detach(), golden("nnm.conv.bias"));
  check_close(conv(golden("nnm.conv.x")), golden("nnm.conv.y"), 1e-5, 1e-5);
  manual_seed(103);
  nn::Conv2d grouped(4, 6, 3, 1, 2, 2, 2);
  CHECK(grouped.weight.sizes() == Shape{6, 2, 3, 3});
  check_equal(grouped.weight.detach(), golden("nnm.conv_groups.weight"));
  check_equal(grouped.bias.detach(), golden("nnm.conv_groups.bias"));
  check_close(grouped(golden("nnm.conv_groups.x")), golden("nnm.conv_groups.y"), 1e-5, 1e-5);
  check_error([] { nn::Conv2d(3, 4, 3, 1, 0, 1, 2); }, "in_channels must be divisible by groups");
  check_error([] { nn::Conv2d(4, 3, 3, 1, 0, 1, 2); }, "out_channels must be divisible by groups");
  check_error([] { nn::Conv2d(4, 4, 3, 1, 0, 1, 0); }, "groups must be a positive integer");
}

TEST_CASE("BatchNorm2d: batch statistics in training, running stats after 2 steps, eval") {
  for (const char* tag : {"m01", "cma"}) {
    CAPTURE(tag);
    const std::string p = std::string("nnm.bn.") + tag + ".";
    nn::BatchNorm2d bn(3, 1e-5, std::string(tag) == "m01" ? std::optional<double>(0.1) : std::nullopt);
    CHECK(bn.is_training());
    check_close(bn(golden(p + "x1")), golden(p + "y1"), 1e-5, 1e-5);
    check_close(bn(golden(p + "x2")), golden(p + "y2"), 1e-5, 1e-5);
    check_close(bn.running_mean, golden(p + "running_mean"), 1e-5, 1e-6);
    check_close(bn.running_var, golden(p + "running_var"), 1e-5, 1e-6);
    check_equal(bn.num_batches_tracked, golden(p + "num_batches_tracked"));
    bn.eval();
    check_close(bn(golden(p + "x1")), golden(p + "eval_y"), 1e-5, 1e-5);
    check_equal(bn.num_batches_tracked, golden(p + "num_batches_tracked"));  // eval does not count
  }
  nn::BatchNorm2d plain(3, 1e-5, 0.1, false, false);
  CHECK(plain.parameters().empty());
  CHECK(plain.state_dict().empty());
  plain.eval();  // no running stats: batch statistics even in eval
  check_close(plain(golden("nnm.bn_plain.x")), golden("nnm.bn_plain.y"), 1e-5, 1e-5);

  nn::BatchNorm2d bn(3);
  check_error([&] { bn(zeros({2, 3, 4})); }, "expected 4D input (got 3D input)");
  check_error([&] { bn(zeros({1, 3, 1, 1})); },
              "Expected more than 1 value per channel when training, got input size torch.Size([1, 3, 1, 1])");
}

TEST_CASE("BatchNorm2d training forward is differentiable") {
  nn::BatchNorm2d bn(2, 1e-5, 0.1, true, true, DType::Float64);
  manual_seed(3);
  Tensor x = testing::leaf(randn({3, 2, 2, 2}, DType::Float64));
  testing::gradcheck([&](const std::vector<Tensor>& v) { return bn(v[0]); }, {x});
  bn.zero_grad();
  (bn(x) * randn({3, 2, 2, 2}, DType::Float64)).sum().backward();
  CHECK(bn.weight.grad().defined());
  CHECK(bn.bias.grad().defined());
  CHECK(!bn.running_mean.requires_grad());
  bn.zero_grad(/*set_to_none=*/true);
  CHECK(!bn.weight.grad().defined());
}

TEST_CASE("LayerNorm, Embedding") {
  nn::LayerNorm ln({4, 5}, 1e-3);
  check_equal(ln.weight.detach(), ones({4, 5}));
  check_equal(ln.bias.detach(), zeros({4, 5}));
  ln.load_state_dict({{"weight", golden("nnm.ln.weight")}, {"bias", golden("nnm.ln.bias")}});
  check_close(ln(golden("nnm.ln.x")), golden("nnm.ln.y"), 1e-5, 1e-5);
  nn::LayerNorm bare({5}, 1e-5, false);
  CHECK(bare.parameters().empty());

  manual_seed(107);
  nn::Embedding emb(10, 4);
  // 40 values: PyTorch's vectorized normal_fill may differ in the last bit.
  check_close(emb.weight.detach(), golden("nnm.emb.weight"), 0, 1e-6);
  check_close(emb(golden("nnm.emb.idx")), golden("nnm.emb.y"), 0, 1e-6);
  manual_seed(108);
  nn::Embedding pad(6, 3, -2);
  CHECK(*pad.padding_idx == 4);
  check_close(pad.weight.detach(), golden("nnm.emb_pad.weight"), 0, 1e-6);
  check_equal(pad.weight.detach()[4], zeros({3}));
  check_error([] { nn::Embedding(6, 3, 6); }, "Padding_idx must be within num_embeddings");
  check_error([] { nn::Embedding(6, 3, -7); }, "Padding_idx must be within num_embeddings");
}

TEST_CASE("Embedding's padding row gets no gradient (torch 1.13 F.embedding)") {
  nn::Embedding emb(4, 3, 2);
  {
    NoGradGuard no_grad;
    emb.weight.copy_(arange(12.0).view({4, 3}));
  }
  const Tensor idx = tensor({{0, 2, 2}, {1, 0, 3}});
  (emb(idx) * arange(18.0).view({2, 3, 3})).sum().backward();
  check_equal(emb.weight.grad(), tensor({{12.0, 14.0, 16.0}, {9.0, 10.0, 11.0}, {0.0, 0.0, 0.0}, {15.0, 16.0, 17.0}}));
  // The functional form: a negative padding_idx counts from the end.
  const Tensor w = arange(12.0).view({4, 3}).detach().requires_grad_();
  const Tensor out = embedding(w, idx, -4);
  CHECK(out.grad_fn()->name() == "EmbeddingBackward0");
  (out * arange(18.0).view({2, 3, 3})).sum().backward();
  check_equal(w.grad(), tensor({{0.0, 0.0, 0.0}, {9.0, 10.0, 11.0}, {9.0, 11.0, 13.0}, {15.0, 16.0, 17.0}}));
  check_error([&] { (void)embedding(w, idx, 4); }, "Padding_idx must be within num_embeddings");
}

TEST_CASE("Dropout: PyTorch's mask with the same seed; eval and p = 0 are the identity") {
  nn::Dropout drop(0.3);
  const Tensor x = golden("nnm.dropout.x");
  manual_seed(110);
  check_equal(drop(x), golden("nnm.dropout.y"));
  nn::Dropout drop64(0.6);
  manual_seed(111);
  check_equal(drop64(golden("nnm.dropout.x64")), golden("nnm.dropout.y64"));
  drop.eval();
  CHECK(drop(x).is_same(x));
  nn::Dropout none(0.0);
  CHECK(none(x).is_same(x));
  nn::Dropout all(1.0);
  check_equal(all(x), zeros({4, 5}));
  check_error([] { nn::Dropout(1.5); }, "dropout probability has to be between 0 and 1, but got 1.5");
  check_error([] { nn::Dropout(-1); }, "dropout probability has to be between 0 and 1, but got -1.0");
}

TEST_CASE("ReLU, GELU, Flatten, MaxPool2d") {
  const Tensor x = golden("nnm.act.x");
  check_equal(nn::ReLU()(x), golden("nnm.act.relu"));
  check_close(nn::GELU()(x), golden("nnm.act.gelu"), 1e-5, 1e-6);
  check_close(nn::GELU("tanh")(x), golden("nnm.act.gelu_tanh"), 1e-5, 1e-6);
  check_equal(nn::Flatten()(x), golden("nnm.act.flatten"));
  check_equal(nn::Flatten(1, 2)(x), golden("nnm.act.flatten_1_2"));
  check_equal(nn::MaxPool2d(2)(x), golden("nnm.act.maxpool2"));
  check_equal(nn::MaxPool2d(3, 2, 1)(x), golden("nnm.act.maxpool3"));
  nn::ReLU relu;
  CHECK(relu.parameters().empty());
  CHECK(relu.name() == "ReLU");
}

TEST_CASE("nested Sequential: names, state_dict keys and forward as PyTorch") {
  auto net = make_net(112);
  CHECK(joined_names(net->named_parameters()) == golden_text("nnm.net.named_parameters"));
  CHECK(joined_names(net->named_buffers()) == golden_text("nnm.net.named_buffers"));
  CHECK(joined_names(net->state_dict()) == golden_text("nnm.net.state_dict"));
  CHECK(net->parameters().size() == 11);
  CHECK(net->size() == 9);
  CHECK(net->children().size() == 9);
  CHECK((*net)[6]->name() == "Linear");
  CHECK((*net)[-1]->name() == "Sequential");
  check_error([&] { (*net)[9]; }, "index 9 is out of range");
  check_close((*net)(golden("nnm.net.x")), golden("nnm.net.y_train"), 1e-4, 1e-5);
  auto inner_bn = std::dynamic_pointer_cast<nn::BatchNorm2d>(
      (*std::dynamic_pointer_cast<nn::Sequential>((*net)[3]))[1]);
  REQUIRE(inner_bn != nullptr);
  check_close(inner_bn->running_var, golden("nnm.net.after.3.1.running_var"), 1e-5, 1e-6);
  net->eval();
  CHECK(!inner_bn->is_training());
  check_close((*net)(golden("nnm.net.x")), golden("nnm.net.y_eval"), 1e-4, 1e-5);
  net->train();
  CHECK(inner_bn->is_training());

  // Building with push_back gives the same names.
  auto seq = std::make_shared<nn::Sequential>();
  seq->push_back(std::make_shared<nn::Linear>(64, 32));
  seq->push_back(std::make_shared<nn::ReLU>());
  seq->push_back(std::make_shared<nn::Linear>(32, 10));
  CHECK(joined_names(seq->named_parameters()) == "0.weight,0.bias,2.weight,2.bias");
  CHECK((*seq)(zeros({3, 64})).sizes() == Shape{3, 10});
  const Tensor x = golden("nnm.act.x");
  CHECK(nn::Sequential()(x).is_same(x));
}

TEST_CASE("user modules: registration order, buffers, shared parameters, name errors") {
  Net net;
  CHECK(joined_names(net.named_parameters()) == "scale,fc1.weight,fc1.bias,fc2.weight,fc2.bias");
  CHECK(joined_names(net.named_parameters(false)) == "scale");
  CHECK(joined_names(net.named_buffers()) == "steps,cache");
  CHECK(joined_names(net.state_dict()) == "scale,steps,fc1.weight,fc1.bias,fc2.weight,fc2.bias");
  const auto sd = net.state_dict();
  CHECK(nn::find_tensor(sd, "steps").dtype() == DType::Int64);
  CHECK(!nn::find_tensor(sd, "scale").requires_grad());  // detached
  CHECK(nn::find_tensor(sd, "scale").data_ptr() == net.scale.data_ptr());  // alias
  check_error([&] { net.add_param("a.b"); }, "parameter name can't contain \".\"");
  check_error([&] { net.add_param(""); }, "parameter name can't be empty string \"\"");
  check_error([&] { net.add_buffer("x.y"); }, "buffer name can't contain \".\"");
  check_error([&] { net.add_module("m.n"); }, "module name can't contain \".\", got: m.n");
  check_error([&] { net.add_param("steps"); }, "attribute 'steps' already exists");
  check_error([&] { net.add_buffer("fc1"); }, "attribute 'fc1' already exists");
  check_error([&] { net.add_module("scale"); }, "attribute 'scale' already exists");
  // A module used twice: its parameters are listed once, state_dict names both.
  auto shared = std::make_shared<nn::Linear>(2, 2);
  nn::Sequential twice{shared, shared};
  CHECK(joined_names(twice.named_parameters()) == "0.weight,0.bias");
  CHECK(joined_names(twice.state_dict()) == "0.weight,0.bias,1.weight,1.bias");
}

TEST_CASE("load_state_dict: round trip, module. prefix, strict and non-strict") {
  auto a = make_net(112);
  manual_seed(9);
  (*a)(randn({2, 3, 6, 6}));  // moves the running stats and counts
  auto b = make_net(5);
  const Tensor b_weight = b->named_parameters()[0].second;
  b->load_state_dict(a->state_dict());
  const auto sa = a->state_dict(), sb = b->state_dict();
  REQUIRE(sa.size() == sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    CAPTURE(sa[i].first);
    check_equal(sb[i].second, sa[i].second);
  }
  CHECK(b->named_parameters()[0].second.is_same(b_weight));  // copied in place
  CHECK(b_weight.is_leaf());
  CHECK(b_weight.requires_grad());

  // DataParallel checkpoints: every key under "module.".
  auto c = make_net(6);
  nn::StateDict prefixed;
  for (const auto& [k, v] : sa) prefixed.emplace_back("module." + k, v);
  c->load_state_dict(prefixed);
  check_equal(c->state_dict()[0].second, sa[0].second);
}

TEST_CASE("load_state_dict: PyTorch's messages; nothing copied on error") {
  manual_seed(0);
  nn::Linear lin(4, 3);
  const Tensor before = lin.weight.detach().clone();
  check_error([&] { lin.load_state_dict({{"weight", zeros({4, 4})}, {"foo", zeros({1})}}); },
              "Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: \"bias\". \n\t"
              "Unexpected key(s) in state_dict: \"foo\". \n\tsize mismatch for weight: copying a param with shape "
              "torch.Size([4, 4]) from checkpoint, the shape in current model is torch.Size([3, 4]).");
  check_error([&] { lin.load_state_dict({{"weight", zeros({3, 4})}, {"bias", zeros({3}, DType::Float64)}}); },
              "Error(s) in loading state_dict for Linear:\n\tdtype mismatch for bias: copying a param with dtype "
              "torch.float64 from checkpoint, the dtype in current model is torch.float32.");
  check_equal(lin.weight.detach(), before);  // the valid weight was not copied either
  // Non-strict: missing and unexpected keys are ignored, the rest is loaded.
  lin.load_state_dict({{"weight", ones({3, 4})}, {"foo", zeros({1})}}, /*strict=*/false);
  check_equal(lin.weight.detach(), ones({3, 4}));
  check_error([&] { lin.load_state_dict({{"weight", ones({3, 5})}}, false); },
              "Error(s) in loading state_dict for Linear:\n\tsize mismatch for weight: copying a param with shape "
              "torch.Size([3, 5]) from checkpoint, the shape in current model is torch.Size([3, 4]).");

  auto net = make_net(112);
  nn::StateDict sd = net->state_dict();
  sd.erase(sd.begin() + 14);  // "6.weight"
  sd.emplace_back("3.9.weight", zeros({1}));
  sd.emplace(sd.begin(), "foo", zeros({1}));
  check_error([&] { net->load_state_dict(sd); },
              "Error(s) in loading state_dict for Sequential:\n\tMissing key(s) in state_dict: \"6.weight\". \n\t"
              "Unexpected key(s) in state_dict: \"foo\", \"3.9.weight\". ");
  // A checkpoint without num_batches_tracked (old format) loads it as 0.
  nn::BatchNorm2d bn(2);
  bn(randn({2, 2, 2, 2}));
  CHECK(bn.num_batches_tracked.item<int64_t>() == 1);
  bn.load_state_dict({{"weight", ones({2})},
                      {"bias", zeros({2})},
                      {"running_mean", zeros({2})},
                      {"running_var", ones({2})}});
  CHECK(bn.num_batches_tracked.item<int64_t>() == 0);
  check_error([&] { bn.load_state_dict({{"weight", ones({2})}, {"bias", zeros({2})}}); },
              "Error(s) in loading state_dict for BatchNorm2d:\n\tMissing key(s) in state_dict: \"running_mean\", "
              "\"running_var\". ");
}
