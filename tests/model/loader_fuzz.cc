// libFuzzer target for the model loader: any bytes must give either a verified
// Model or an error, never a crash. Built with clang by tools/fuzz_loader.sh.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/model/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (ember::Verification v : {ember::Verification::Full, ember::Verification::Minimal}) {
    std::string error;
    auto model = ember::Model::load_from_bytes(data, size, v, &error);
    if (!model.ok()) {
      if (error.empty()) __builtin_trap();  // every failure has a reason
      continue;
    }
    for (int i = 0; i < model->num_ops(); ++i) (void)model->op_params(i);
    for (int i = 0; i < model->num_tensors(); ++i) {
      const ember::Tensor& w = model->weight(i);
      if (w.defined() && w.nbytes() > 0) {
        const auto* p = static_cast<const volatile uint8_t*>(w.data_ptr());
        (void)p[0];
        (void)p[w.nbytes() - 1];
      }
    }
    (void)model->metadata();
  }
  return 0;
}
