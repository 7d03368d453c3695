// libFuzzer target for the safetensors reader (runtime/nn/safetensors.h: state
// dicts, fine-tuning deltas and checkpoints): any bytes give either tensors
// whose data can be read end to end or an ember::Error with a reason, never a
// crash. Built with clang by tools/fuzz.sh safetensors.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/core/error.h"
#include "runtime/nn/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ember::nn::Metadata meta;
    const ember::nn::NamedTensors tensors =
        ember::nn::deserialize_safetensors(std::string_view(reinterpret_cast<const char*>(data), size), &meta);
    for (const auto& [name, t] : tensors) {
      if (t.nbytes() > 0) {
        const auto* p = static_cast<const volatile uint8_t*>(t.data_ptr());
        (void)p[0];
        (void)p[t.nbytes() - 1];
      }
    }
  } catch (const ember::Error& e) {
    if (e.what()[0] == '\0') __builtin_trap();  // every failure has a reason
  }
  return 0;
}
