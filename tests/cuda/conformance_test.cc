// The model zoo (tests/golden/model_zoo.py) on CUDA: every case converted,
// placed on CUDA from the kernel tables alone (no device needed to decide),
// run by the executor with device=cuda and compared with torch's outputs
// within the manifest's tolerances. Here the device is the host emulation
// (kernels/cuda/emu), which runs each GPU thread as a fiber: the large
// networks (kLargeCases) are placed but not run here; the GPU check
// (tools/cuda_device_check.sh) runs every case on a GPU.
#include <iomanip>
#include <set>
#include <sstream>

#include "runtime/model/executor.h"
#include "tests/model/model_zoo.h"

namespace ember {
namespace {

using namespace zoo;

// Tens of millions of emulated GPU threads each: minutes here, milliseconds on a GPU.
const std::set<std::string> kLargeCases = {"mobilenet_v2", "mobilenet_v2_b2", "resnet18"};

TEST_CASE("cuda conformance: every zoo case places on CUDA and matches torch") {
  const std::vector<Case> cases = manifest();
  REQUIRE(cases.size() > 80);
  std::ostringstream table, missing;
  std::set<std::string> lacking;  // "op (dtype): reason"
  int placed = 0, ran = 0, matched = 0;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    std::string error;
    auto model = load_model(c.file, &error);
    REQUIRE_MESSAGE(model != nullptr, error);
    ExecutorOptions options;
    options.device = DeviceType::CUDA;
    options.allow_fallback = true;
    options.log_fallback = false;
    Result<std::shared_ptr<const Executor>> ex = Executor::create(model, options, &error);
    REQUIRE_MESSAGE(ex.ok(), error);
    const std::vector<int> fallback = ex.get()->fallback_ops();
    for (int k : fallback) {
      const std::string why = ex.get()->fallback_reason(k);
      lacking.insert(ex.get()->describe_op(k) + ": " + why);
      // Only MatMulInteger / ConvInteger's exact int32 products may run on the
      // CPU: CUDA has no integer GEMM kernel (neither has PyTorch's CUDA).
      CHECK_MESSAGE((c.name == "op_integer_ops" && why.find("(no int32 kernel") != std::string::npos),
                    ex.get()->describe_op(k) << " falls back: " << why);
    }
    placed += fallback.empty() ? 1 : 0;
    table << std::left << std::setw(32) << c.name
          << (fallback.empty() ? std::string("all on cuda") : str_cat(fallback.size(), " fall back"));
    if (kLargeCases.count(c.name) != 0) {
      table << "; not run here (GPU check)\n";
      continue;
    }
    const std::vector<Tensor> inputs = load_tensors(c.name, "in", c.inputs.size());
    const std::vector<Tensor> expected = load_tensors(c.name, "out", c.outputs.size());
    ExecutionContext ctx(ex.get());
    Result<std::vector<Tensor>> out = ctx.run(Span<const Tensor>(inputs.data(), inputs.size()), {}, &error);
    CHECK_MESSAGE(out.ok(), error);
    ++ran;
    if (!out.ok()) {
      table << "; FAILED run: " << error << "\n";
      continue;
    }
    REQUIRE(out.get().size() == expected.size());
    bool ok = true;
    double worst = 0;
    for (size_t k = 0; k < expected.size(); ++k) {
      CAPTURE(c.outputs[k]);
      const Comparison cmp = compare(out.get()[k], expected[k], c.rtol, c.atol);
      CHECK_MESSAGE(cmp.ok, cmp.detail);
      ok = ok && cmp.ok;
      worst = std::max(worst, cmp.max_abs);
    }
    matched += ok ? 1 : 0;
    table << "; max abs diff " << std::scientific << std::setprecision(2) << worst << std::defaultfloat
          << (ok ? "" : " MISMATCH") << "\n";
  }
  for (const std::string& l : lacking) missing << "  " << l << "\n";
  MESSAGE("cuda conformance: " << placed << "/" << cases.size() << " cases place every node on cuda; " << matched
                               << "/" << ran << " run here match torch\n"
                               << table.str() << "nodes without a CUDA kernel:\n"
                               << (lacking.empty() ? std::string("  none\n") : missing.str()));
  CHECK(matched == ran);
}

}  // namespace
}  // namespace ember
