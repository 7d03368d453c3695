// libFuzzer target for the ONNX importer and the rest of the conversion: any
// bytes must give either a converted, verified model or an error with a
// reason, never a crash, a hang or an unbounded allocation. Built with clang
// by tools/fuzz.sh onnx (seeds: the test and model-zoo ONNX files).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "converter/onnx_import.h"
#include "converter/passes.h"
#include "runtime/core/error.h"
#include "runtime/model/loader.h"
#include "runtime/model/writer.h"

namespace {

void require_reason(const ember::converter::Diag& d) {
  if (d.message.empty()) __builtin_trap();  // every failure has a reason
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember::converter;
  auto graph = import_onnx_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx");
  if (!graph.ok()) return require_reason(graph.diag()), 0;
  auto passes = run_passes(*graph);
  if (!passes.ok()) return require_reason(passes.diag()), 0;
  Expected<ember::ModelDef> def = [&]() -> Expected<ember::ModelDef> {
    try {
      return lower(*graph);
    } catch (const ember::Error& e) {  // convert_file reports these the same way
      return Diag{e.status(), e.what()};
    }
  }();
  if (!def.ok()) return require_reason(def.diag()), 0;
  std::vector<std::byte> bytes;
  std::string error;
  if (ember::serialize_model(*def, &bytes, &error) != ember::Status::Ok) {
    if (error.empty()) __builtin_trap();
    return 0;
  }
  // What the converter writes, the loader accepts.
  auto model = ember::Model::load_from_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                             ember::Verification::Full, &error);
  if (!model.ok()) __builtin_trap();
  return 0;
}
