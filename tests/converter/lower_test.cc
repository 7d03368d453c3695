#include <iostream>
#include "converter/convert.h"
#include "converter/onnx_import.h"
#include "converter/passes.h"
#include "tests/harness/testing.h"

namespace ember::converter {
TEST_CASE("dump") {
  for (const char* m : {"mlp_opset11", "mlp_opset13", "cnn_opset13", "view_static_opset13", "view_dynamic_opset11",
                        "view_dynamic_opset13", "transformer_opset13", "transformer_opset17", "typed_fields"}) {
    auto g = import_onnx(std::string("tests/golden/onnx/") + m + ".onnx");
    REQUIRE(g.ok());
    auto r = run_passes(*g);
    REQUIRE(r.ok());
    auto d = lower(*g);
    std::cout << "== " << m << "\n";
    if (!d.ok()) { std::cout << d.diag().message << "\n"; continue; }
    for (size_t i = 0; i < d->tensors.size(); ++i) {
      const auto& t = d->tensors[i];
      std::cout << " t" << i << " " << t.name << " " << dtype_name(t.dtype) << " [";
      for (size_t k = 0; k < t.shape.size(); ++k) std::cout << (k ? "," : "") << t.shape[k] << (t.dim_names.empty() || t.dim_names[k].empty() ? "" : ":" + t.dim_names[k]);
      std::cout << "]" << (t.has_data ? " data" : "") << (t.trainable ? " trainable" : "") << "\n";
    }
    for (const auto& o : d->ops) {
      std::cout << " op " << op_name(o.op) << " '" << o.name << "' (";
      for (auto i : o.inputs) std::cout << i << " ";
      std::cout << ") -> (";
      for (auto i : o.outputs) std::cout << i << " ";
      std::cout << ") params " << o.params.index() << "\n";
    }
    std::cout << " in "; for (auto i : d->inputs) std::cout << i << " "; std::cout << " out "; for (auto i : d->outputs) std::cout << i << " "; std::cout << "\n";
  }
}
}
