// Built only with --config=noautograd (--define autograd=0; see .ci/run): the inference-only build
// runs ops, records nothing, and refuses gradients with a clear message.
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_equal;
using ember::testing::check_error;

TEST_CASE("without autograd, ops run and gradients are refused") {
  Tensor x = tensor({1.0, 2.0});
  check_equal(relu(x * 2 - 3), tensor({0.0, 1.0}));
  CHECK(!x.requires_grad());
  CHECK((x * 2).grad_fn() == nullptr);
  check_error([&] { x.requires_grad_(); }, "ember was built without autograd (--define autograd=0)");
  check_error([&] { x.sum().backward(); }, "ember was built without autograd (--define autograd=0)");
}
