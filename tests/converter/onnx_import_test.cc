#include "converter/onnx_import.h"
#include "converter/passes.h"
#include "tests/harness/testing.h"

using namespace ember;
using namespace ember::converter;

TEST_CASE("smoke") {
  auto g = import_onnx("tests/golden/onnx/mlp_opset13.onnx");
  REQUIRE_MESSAGE(g.ok(), g.diag().message);
}
