// Every function of the dlopen table (kernels/cuda/cublas_api.h) resolves in
// the cuBLAS installed here (the CUDA toolkit under /usr/local/cuda; no GPU
// needed to load it), so the GPU build finds what it asks for by name.
#include <dlfcn.h>

#include <string>

#include "kernels/cuda/cublas_api.h"
#include "tests/harness/testing.h"

TEST_CASE("the cuBLAS table's symbols resolve in the toolkit's libcublas") {
  const std::string path = "/usr/local/cuda/lib64/libcublas.so.13";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  INFO("dlopen(" << path << "): " << (lib == nullptr ? dlerror() : "ok"));
  REQUIRE(lib != nullptr);
  int resolved = 0;
#define EMBER_CHECK_SYMBOL(name)                  \
  {                                               \
    INFO("symbol " #name);                        \
    CHECK(dlsym(lib, #name) != nullptr);          \
    ++resolved;                                   \
  }
  EMBER_CUBLAS_FUNCTIONS(EMBER_CHECK_SYMBOL)
#undef EMBER_CHECK_SYMBOL
  CHECK(resolved == 7);
  // The names dlopen tries start with the toolkit's soname.
  const char* const* names = ember::cuda::cublas_library_names();
  CHECK(std::string(names[0]) == "libcublas.so.13");
  dlclose(lib);
}
