// libFuzzer target for the .npz/.npy readers (runtime/model/npz.h, npy.h):
// any bytes give either arrays whose data can be read end to end or an error
// with a reason, never a crash. Built with clang by tools/fuzz.sh npz.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/model/npz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string error;
  auto entries = ember::parse_npz(data, size, "fuzz.npz", &error);
  if (!entries.ok()) {
    if (error.empty()) __builtin_trap();  // every failure has a reason
    return 0;
  }
  for (const ember::NpzEntry& e : entries.get()) {
    if (e.value.nbytes() > 0) {
      const auto* p = static_cast<const volatile uint8_t*>(e.value.data_ptr());
      (void)p[0];
      (void)p[e.value.nbytes() - 1];
    }
  }
  return 0;
}
