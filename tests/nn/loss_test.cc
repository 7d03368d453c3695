// Losses vs PyTorch 1.13 (tests/golden/golden_optim.py): values and gradients
// for every reduction, class weights, ignore_index, label smoothing,
// pos_weight, spatial and 1-D inputs, and PyTorch's error messages.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "runtime/nn/loss.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::nn::Reduction;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;

namespace {

using LossFn = std::function<Tensor(const std::vector<Tensor>&)>;

const std::pair<const char*, Reduction> kReductions[] = {
    {"none", Reduction::None}, {"mean", Reduction::Mean}, {"sum", Reduction::Sum}};

// Runs fn on leaves cloned from inputs (those in grads_of require grad), checks
// the output against "<name>.out", then out.sum().backward() and the gradients
// against "<name>.g<i>".
void check_loss(const std::string& name, const LossFn& fn, const std::vector<Tensor>& inputs,
                const std::vector<size_t>& grads_of, double rtol = 1e-5, double atol = 1e-6) {
  INFO(name);
  std::vector<Tensor> leaves;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor leaf = inputs[i].clone();
    for (size_t g : grads_of) {
      if (g == i) leaf.requires_grad_();
    }
    leaves.push_back(leaf);
  }
  const Tensor out = fn(leaves);
  check_close(out, golden(name + ".out"), rtol, atol);
  REQUIRE(out.requires_grad());
  out.sum().backward();
  for (size_t g : grads_of) {
    REQUIRE(leaves[g].grad().defined());
    check_close(leaves[g].grad(), golden(name + ".g" + std::to_string(g)), rtol, atol);
  }
}

std::string ls_name(double ls) { return ls == 0.0 ? "ls0.0" : "ls0.2"; }

}  // namespace

TEST_CASE("mse_loss and l1_loss: reductions, broadcasting, gradients of both inputs") {
  const Tensor x = golden("loss.x"), t = golden("loss.t");
  for (const auto& [rname, r] : kReductions) {
    const Reduction red = r;
    check_loss(std::string("loss.mse.") + rname, [&](auto& v) { return nn::mse_loss(v[0], v[1], red); }, {x, t},
               {0, 1});
    check_loss(std::string("loss.l1.") + rname, [&](auto& v) { return nn::l1_loss(v[0], v[1], red); }, {x, t},
               {0, 1});
    check_loss(std::string("loss.mse_b.") + rname, [&](auto& v) { return nn::mse_loss(v[0], v[1], red); },
               {x, golden("loss.t4")}, {0, 1});
  }
  check_loss("loss.mse.f64", [](auto& v) { return nn::mse_loss(v[0], v[1]); },
             {x.to(DType::Float64), t.to(DType::Float64)}, {0}, 1e-12, 1e-14);
  // Non-contiguous input and hand-computed values.
  const Tensor a = tensor({{1.0, 2.0}, {3.0, 4.0}}).t();  // [[1, 3], [2, 4]]
  const Tensor b = tensor({{0.0, 1.0}, {4.0, 4.0}});
  check_equal(nn::mse_loss(a, b, Reduction::None), tensor({{1.0, 4.0}, {4.0, 0.0}}));
  check_equal(nn::mse_loss(a, b), scalar_tensor(2.25));
  check_equal(nn::l1_loss(a, b, Reduction::Sum), scalar_tensor(5.0));
  CHECK(nn::mse_loss(a, b).grad_fn() == nullptr);
  // Mixed float dtypes promote; empty inputs give NaN means.
  CHECK(nn::mse_loss(ones({3}), zeros({3}, DType::Float64)).dtype() == DType::Float64);
  CHECK(std::isnan(nn::mse_loss(ones({0}), ones({0})).item<double>()));
  CHECK(nn::mse_loss(ones({0}), ones({0}), Reduction::Sum).item<double>() == 0.0);
  // l1 of integers works without a mean.
  check_equal(nn::l1_loss(ones({3}, DType::Int64), zeros({3}, DType::Int64), Reduction::Sum),
              scalar_tensor(3, DType::Int64));
}

TEST_CASE("mse_loss and l1_loss errors") {
  check_error([] { nn::mse_loss(randn({3, 4}), randn({5, 4})); },
              "The size of tensor a (3) must match the size of tensor b (5) at non-singleton dimension 0");
  check_error([] { nn::l1_loss(randn({3, 4}), randn({5, 4})); },
              "The size of tensor a (3) must match the size of tensor b (5) at non-singleton dimension 0");
  check_error([] { nn::mse_loss(ones({3}, DType::Int64), ones({3}, DType::Int64)); },
              "\"mse_cpu\" not implemented for 'Long'");
  check_error([] { nn::mse_loss(ones({3}, DType::Bool), ones({3}, DType::Bool), Reduction::None); },
              "\"mse_cpu\" not implemented for 'Bool'");
  check_error([] { nn::l1_loss(ones({3}, DType::Int64), ones({3}, DType::Int64)); },
              "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
              "Got: Long");
  check_error([] { nn::l1_loss(ones({2}, DType::Bool), ones({2}, DType::Bool)); },
              "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
              "`logical_xor()` operator instead.");
}

TEST_CASE("nll_loss: reductions, class weights, ignore_index, 1-D, spatial and float64") {
  const Tensor lp = golden("loss.logp"), target = golden("loss.target"), weight = golden("loss.weight");
  const Tensor clamped = clamp(target, Scalar(0), std::nullopt);
  for (const auto& [rname, r] : kReductions) {
    const Reduction red = r;
    const std::string s = rname;
    check_loss("loss.nll." + s, [&](auto& v) { return nn::nll_loss(v[0], target, Tensor(), -100, red); }, {lp},
               {0});
    check_loss("loss.nll.w." + s, [&](auto& v) { return nn::nll_loss(v[0], target, weight, -100, red); }, {lp},
               {0});
    check_loss("loss.nll.ii3." + s, [&](auto& v) { return nn::nll_loss(v[0], clamped, weight, 3, red); }, {lp},
               {0});
    check_loss("loss.nll3." + s,
               [&](auto& v) { return nn::nll_loss(v[0], golden("loss.t3"), tensor({1.0f, 3.0f, 0.5f}), -100, red); },
               {golden("loss.lp3")}, {0});
  }
  check_loss("loss.nll.1d", [](auto& v) { return nn::nll_loss(v[0], scalar_tensor(2, DType::Int64)); }, {lp[0]},
             {0});
  check_loss("loss.nll.1d.none",
             [](auto& v) { return nn::nll_loss(v[0], scalar_tensor(1, DType::Int64), Tensor(), -100, Reduction::None); },
             {lp[1]}, {0});
  check_loss("loss.nll4.mean", [](auto& v) { return nn::nll_loss(v[0], golden("loss.t4d")); }, {golden("loss.lp4")},
             {0});
  check_loss("loss.nll4.none",
             [](auto& v) { return nn::nll_loss(v[0], golden("loss.t4d"), Tensor(), -100, Reduction::None); },
             {golden("loss.lp4")}, {0});
  check_loss("loss.nll.f64", [&](auto& v) { return nn::nll_loss(v[0], target, weight.to(DType::Float64)); },
             {lp.to(DType::Float64)}, {0}, 1e-12, 1e-14);

  // Hand-computed: the weighted mean divides by the counted weights.
  const Tensor x = tensor({{-1.0f, -2.0f}, {-3.0f, -4.0f}, {-5.0f, -6.0f}});
  const Tensor t = tensor({1, 0, -100});
  check_equal(nn::nll_loss(x, t, Tensor(), -100, Reduction::None), tensor({2.0f, 3.0f, 0.0f}));
  check_equal(nn::nll_loss(x, t), scalar_tensor(2.5f));
  check_equal(nn::nll_loss(x, t, tensor({1.0f, 3.0f})), scalar_tensor((6.0f + 3.0f) / 4.0f));
  // Non-contiguous input; uint8 targets on the 2-D path.
  check_equal(nn::nll_loss(x.t().contiguous().t(), tensor({1, 1, 0}, DType::UInt8)),
              nn::nll_loss(x, tensor({1, 1, 0})));
  // A 1-D input with a 1-D target reads its first element, as torch's kernel does.
  check_equal(nn::nll_loss(x[0], tensor({1, 0})), scalar_tensor(2.0f));
  // Every target ignored or an empty batch: 0/0 means NaN; sums are 0.
  CHECK(std::isnan(nn::nll_loss(x, tensor({-100, -100, -100})).item<double>()));
  CHECK(std::isnan(nn::nll_loss(zeros({0, 5}), zeros({0}, DType::Int64)).item<double>()));
  CHECK(nn::nll_loss(zeros({0, 5}), zeros({0}, DType::Int64), Tensor(), -100, Reduction::Sum).item<double>() == 0.0);
}

TEST_CASE("nll_loss errors in PyTorch's order") {
  const Tensor x = randn({3, 5});
  check_error([&] { nn::nll_loss(x, tensor({1, 5, 2})); }, "Target 5 is out of bounds.");
  check_error([&] { nn::nll_loss(x, tensor({1, -3, 2}), Tensor(), -100, Reduction::None); },
              "Target -3 is out of bounds.");
  check_error([&] { nn::nll_loss(randn({2, 3}), tensor({-100, 1}), Tensor(), 5); }, "Target -100 is out of bounds.");
  check_error([] { nn::nll_loss(randn({2, 3, 4}), full({2, 4}, 3, DType::Int64)); }, "Target 3 is out of bounds.");
  check_error([&] { nn::nll_loss(x, tensor({1.0f, 0.0f, 2.0f})); }, "expected scalar type Long but found Float");
  check_error([&] { nn::nll_loss(x, tensor({1, 0, 2}, DType::Int32)); }, "expected scalar type Long but found Int");
  check_error([&] { nn::nll_loss(x, tensor({1, 0})); },
              "Expected input batch_size (3) to match target batch_size (2).");
  check_error([&] { nn::nll_loss(x, tensor({{1, 0, 2}})); },
              "Expected input batch_size (3) to match target batch_size (1).");
  check_error([] { nn::nll_loss(randn({2, 3}), scalar_tensor(1, DType::Int64)); },
              "Expected input batch_size (2) to match target batch_size (0).");
  check_error([] { nn::nll_loss(ones({2, 3}), zeros({2, 1}, DType::Int64)); },
              "0D or 1D target tensor expected, multi-target not supported");
  check_error([&] { nn::nll_loss(x, tensor({1, 0, 4}), ones({4})); },
              "weight tensor should be defined either for all 5 classes or no classes but got weight tensor of "
              "shape: [4]");
  check_error([&] { nn::nll_loss(x, tensor({1, 0, 4}), ones({1, 5})); },
              "weight tensor should be defined either for all 5 classes or no classes but got weight tensor of "
              "shape: [1, 5]");
  check_error([&] { nn::nll_loss(x[0], tensor({2})); }, "size mismatch (got input: [5], target: [1])");
  check_error([] { nn::nll_loss(scalar_tensor(1.0), scalar_tensor(0, DType::Int64)); },
              "Expected 1 or more dimensions (got 0)");
  check_error([] { nn::nll_loss(randn({2, 3, 4, 5}), zeros({2, 4, 4}, DType::Int64)); },
              "size mismatch (got input: [2, 3, 4, 5] , target: [2, 4, 4]");
  check_error([] { nn::nll_loss(randn({2, 3, 4, 5}), zeros({2, 4}, DType::Int64)); },
              "only batches of spatial targets supported (3D tensors) but got targets of dimension: 2");
  check_error([] { nn::nll_loss(randn({2, 3, 4}), zeros({2, 5}, DType::Int64)); },
              "Expected target size [2, 4], got [2, 5]");
  check_error([] { nn::nll_loss(randn({2, 3, 4, 1, 2}), zeros({2, 4, 2}, DType::Int64)); },
              "Expected target size [2, 4, 1, 2], got [2, 4, 2]");
  check_error([] { nn::nll_loss(randn({2, 3, 4}), zeros({3, 4}, DType::Int64)); },
              "Expected input batch_size (2) to match target batch_size (3).");
  check_error([] { nn::nll_loss(randn({2, 3, 4}), zeros({2, 4}, DType::Int64), ones({4})); },
              "weight tensor should be defined either for all or no classes");
  check_error([] { nn::nll_loss(ones({2, 3}, DType::Int64), zeros({2})); },
              "\"nll_loss_out_frame\" not implemented for 'Long'");
  check_error([] { nn::nll_loss(ones({2, 3}, DType::Float16), zeros({2}, DType::Int64)); },
              "\"nll_loss_out_frame\" not implemented for 'Half'");
  check_error([] { nn::nll_loss(ones({2, 3, 2, 2}, DType::Int64), zeros({2, 2, 2}, DType::Int64)); },
              "\"nll_loss2d_forward_out_frame\" not implemented for 'Long'");
  check_error([] { nn::nll_loss(randn({2, 3}), tensor({1, 7}, DType::Int32), ones({3}, DType::Float64)); },
              "expected scalar type Float but found Double");
  check_error([] { nn::nll_loss(randn({2, 3, 2, 2}), zeros({2, 2, 2}, DType::UInt8)); },
              "expected scalar type Long but found Byte");
  check_error([] { nn::nll_loss(randn({2, 3, 2, 2}), zeros({2, 2, 2})); }, "expected scalar type Long but found Float");
}

TEST_CASE("cross_entropy: weights, ignore_index, label smoothing, spatial, 1-D, probabilities") {
  const Tensor logits = golden("loss.logits"), target = golden("loss.target"), weight = golden("loss.weight");
  const Tensor clamped = clamp(target, Scalar(0), std::nullopt);
  for (const auto& [rname, r] : kReductions) {
    const Reduction red = r;
    const std::string s = rname;
    for (double ls : {0.0, 0.2}) {
      const std::string suffix = s + "." + ls_name(ls);
      check_loss("loss.ce." + suffix,
                 [&](auto& v) { return nn::cross_entropy(v[0], target, Tensor(), -100, red, ls); }, {logits}, {0});
      check_loss("loss.ce.w." + suffix,
                 [&](auto& v) { return nn::cross_entropy(v[0], target, weight, -100, red, ls); }, {logits}, {0});
      check_loss("loss.ce.ii1." + suffix,
                 [&](auto& v) { return nn::cross_entropy(v[0], clamped, weight, 1, red, ls); }, {logits}, {0});
    }
    check_loss("loss.ce3." + s,
               [&](auto& v) {
                 return nn::cross_entropy(v[0], golden("loss.t3"), tensor({1.0f, 3.0f, 0.5f}), -100, red, 0.1);
               },
               {golden("loss.x3")}, {0});
    check_loss("loss.ce_p." + s, [&](auto& v) { return nn::cross_entropy(v[0], v[1], Tensor(), -100, red); },
               {logits, golden("loss.probs")}, {0, 1});
    check_loss("loss.ce_p.w." + s,
               [&](auto& v) { return nn::cross_entropy(v[0], golden("loss.probs"), weight, -100, red, 0.25); },
               {logits}, {0});
  }
  check_loss("loss.ce.ls1",
             [&](auto& v) { return nn::cross_entropy(v[0], target, Tensor(), -100, Reduction::Mean, 1.0); }, {logits},
             {0});
  check_loss("loss.ce.1d", [](auto& v) { return nn::cross_entropy(v[0], scalar_tensor(3, DType::Int64)); },
             {logits[0]}, {0});
  check_loss("loss.ce.1d.ls",
             [](auto& v) {
               return nn::cross_entropy(v[0], scalar_tensor(3, DType::Int64), Tensor(), -100, Reduction::Mean, 0.3);
             },
             {logits[0]}, {0});
  check_loss("loss.ce.f64",
             [&](auto& v) {
               return nn::cross_entropy(v[0], target, weight.to(DType::Float64), -100, Reduction::Mean, 0.1);
             },
             {logits.to(DType::Float64)}, {0}, 1e-12, 1e-14);
  check_loss("loss.ce.big", [](auto& v) { return nn::cross_entropy(v[0], tensor({0, 1})); },
             {tensor({{1000.0f, -1000.0f, 0.0f}, {-500.0f, 20.0f, 700.0f}})}, {0});
  // Transposed logits give the same loss; a negative smoothing is ignored as in torch.
  check_close(nn::cross_entropy(logits.t().contiguous().t(), target), golden("loss.ce.mean.ls0.0.out"));
  check_close(nn::cross_entropy(logits, target, Tensor(), -100, Reduction::Mean, -0.1),
              golden("loss.ce.mean.ls0.0.out"));
  CHECK(std::isnan(nn::cross_entropy(logits.narrow(0, 0, 2), tensor({-100, -100}), Tensor(), -100,
                                     Reduction::Mean, 0.2)
                       .item<double>()));
}

TEST_CASE("cross_entropy errors") {
  const Tensor x = randn({3, 5});
  check_error([&] { nn::cross_entropy(x, tensor({1, 5, 2})); }, "Target 5 is out of bounds.");
  check_error([&] { nn::cross_entropy(x, tensor({1, 5, 2}), Tensor(), -100, Reduction::Mean, 0.1); },
              "Target 5 is out of bounds.");
  check_error([] { nn::nll_loss(randn({2, 3, 2, 2}), tensor({{{0, 1}, {2, 3}}, {{0, 1}, {2, -1}}})); },
              "Target 3 is out of bounds.");
  check_error([&] { nn::cross_entropy(x, tensor({1.0f, 0.0f, 2.0f})); }, "expected scalar type Long but found Float");
  check_error([&] { nn::cross_entropy(x, tensor({1, 0, 2}, DType::Int32), Tensor(), -100, Reduction::Mean, 0.1); },
              "expected scalar type Long but found Int");
  check_error([&] { nn::cross_entropy(x, tensor({1, 0, 4}), Tensor(), -100, Reduction::Mean, 1.5); },
              "label_smoothing must be between 0.0 and 1.0. Got: 1.5");
  check_error([&] { nn::cross_entropy(x, tensor({1, 0})); },
              "Expected input batch_size (3) to match target batch_size (2).");
  check_error([&] { nn::cross_entropy(x, tensor({1, 0, 4}), ones({4})); },
              "weight tensor should be defined either for all 5 classes or no classes but got weight tensor of "
              "shape: [4]");
  check_error([] { nn::cross_entropy(scalar_tensor(1.0f), scalar_tensor(0, DType::Int64)); },
              "Expected floating point type for target with class probabilities, got Long");
  check_error([] { nn::cross_entropy(randn({2, 3}), ones({2, 3}, DType::Int64)); },
              "Expected floating point type for target with class probabilities, got Long");
  check_error([] { nn::cross_entropy(randn({2, 3}), rand({2, 3}), Tensor(), 1); },
              "ignore_index is not supported for floating point target");
  check_error([] { nn::cross_entropy(randn({2, 3}), rand({2, 3}), ones({2})); },
              "cross_entropy: weight tensor should be defined either for all 3 classes or no classes but got weight "
              "tensor of shape: [2]");
  check_error([] { nn::cross_entropy(ones({2, 3}, DType::Int64), zeros({2}, DType::Int64)); },
              "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Long'");
  check_error([] { nn::cross_entropy(ones({2, 3}, DType::Float16), zeros({2}, DType::Int64)); },
              "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Half'");
  check_error([] { nn::cross_entropy(ones({2, 3, 4}, DType::Float16), zeros({2, 4}, DType::Int64)); },
              "\"softmax_kernel_impl\" not implemented for 'Half'");
}

TEST_CASE("binary_cross_entropy_with_logits: weight, pos_weight, large logits, target gradient") {
  const Tensor x = golden("loss.bx"), t = golden("loss.bt"), w = golden("loss.bw"), pw = golden("loss.bpw");
  for (const auto& [rname, r] : kReductions) {
    const Reduction red = r;
    const std::string s = rname;
    check_loss("loss.bce." + s,
               [&](auto& v) { return nn::binary_cross_entropy_with_logits(v[0], v[1], Tensor(), Tensor(), red); },
               {x, t}, {0, 1});
    check_loss("loss.bce.w." + s,
               [&](auto& v) { return nn::binary_cross_entropy_with_logits(v[0], t, w, Tensor(), red); }, {x}, {0});
    check_loss("loss.bce.pw." + s,
               [&](auto& v) { return nn::binary_cross_entropy_with_logits(v[0], v[1], Tensor(), pw, red); }, {x, t},
               {0, 1});
    check_loss("loss.bce.wpw." + s,
               [&](auto& v) { return nn::binary_cross_entropy_with_logits(v[0], t, w, pw, red); }, {x}, {0});
  }
  check_loss("loss.bce.f64",
             [&](auto& v) {
               return nn::binary_cross_entropy_with_logits(v[0], t.to(DType::Float64), Tensor(),
                                                           pw.to(DType::Float64));
             },
             {x.to(DType::Float64)}, {0}, 1e-12, 1e-14);
  // The output takes the target's dtype when the float dtypes differ, as torch's in-place steps do.
  CHECK(nn::binary_cross_entropy_with_logits(ones({3}), zeros({3}, DType::Float64)).dtype() == DType::Float64);
  CHECK(nn::binary_cross_entropy_with_logits(ones({3}, DType::Float64), zeros({3})).dtype() == DType::Float32);
  check_close(nn::binary_cross_entropy_with_logits(tensor({0.0f}), tensor({1.0f}), Tensor(), Tensor(),
                                                   Reduction::None),
              tensor({static_cast<float>(std::log(2.0))}));
}

TEST_CASE("binary_cross_entropy_with_logits errors") {
  check_error([] { nn::binary_cross_entropy_with_logits(randn({3, 4}), randn({4})); },
              "Target size (torch.Size([4])) must be the same as input size (torch.Size([3, 4]))");
  check_error([] { nn::binary_cross_entropy_with_logits(randn({3, 4}), randn({5, 4})); },
              "Target size (torch.Size([5, 4])) must be the same as input size (torch.Size([3, 4]))");
  check_error([] { nn::binary_cross_entropy_with_logits(randn({3}), ones({3}, DType::Int64)); },
              "result type Float can't be cast to the desired output type Long");
  check_error([] { nn::binary_cross_entropy_with_logits(ones({3}, DType::Int64), zeros({3})); },
              "result type Float can't be cast to the desired output type Long");
  check_error([] { nn::binary_cross_entropy_with_logits(ones({3}, DType::Int64), zeros({3}, DType::Int64)); },
              "result type Float can't be cast to the desired output type Long");
  check_error([] { nn::binary_cross_entropy_with_logits(randn({3, 4}), rand({3, 4}), ones({5})); },
              "The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1");
  check_error([] { nn::binary_cross_entropy_with_logits(randn({3, 4}), rand({3, 4}), Tensor(), ones({5})); },
              "The size of tensor a (5) must match the size of tensor b (4) at non-singleton dimension 1");
  check_error([] { nn::binary_cross_entropy_with_logits(ones({3}), zeros({3}), ones({2, 3})); },
              "output with shape [3] doesn't match the broadcast shape [2, 3]");
  check_error([] { nn::binary_cross_entropy_with_logits(ones({3}), zeros({3}), Tensor(), ones({2, 3})); },
              "output with shape [3] doesn't match the broadcast shape [2, 3]");
}

TEST_CASE("class weights and pos_weight take no gradient: torch refuses them") {
  const Tensor x = rand({2, 3}).requires_grad_();
  check_error([&] { nn::binary_cross_entropy_with_logits(x, rand({2, 3}), rand({2, 3}).requires_grad_()); },
              "The function 'binary_cross_entropy_with_logits' is not differentiable with respect to argument "
              "'weight'. This input cannot have requires_grad True.");
  check_error([&] { nn::binary_cross_entropy_with_logits(x, rand({2, 3}), Tensor(), rand({3}).requires_grad_()); },
              "The function 'binary_cross_entropy_with_logits' is not differentiable with respect to argument "
              "'pos_weight'. This input cannot have requires_grad True.");
  check_error([&] { nn::nll_loss(x, tensor({0, 1}), rand({3}).requires_grad_()); },
              "The function 'nll_loss_forward' is not differentiable with respect to argument 'weight'. This "
              "input cannot have requires_grad True.");
  NoGradGuard no_grad;  // allowed where nothing is recorded
  (void)nn::nll_loss(x, tensor({0, 1}), rand({3}).requires_grad_());
}
