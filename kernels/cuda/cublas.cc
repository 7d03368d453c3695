// Opening cuBLAS at first use (cublas_api.h).
#include "kernels/cuda/cublas_api.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "kernels/cuda/context.h"
#include "runtime/core/error.h"

namespace ember::cuda {

#if defined(EMBER_CUDA_EMU)
void fill_emulated_cublas(CublasApi* api);  // emu/cublas_emu.cc
#endif

namespace {

std::atomic<bool> g_allow_tf32{false};
constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // PyTorch's default for sm_90 is 32 MiB

Status load(CublasApi* api) {
#if defined(EMBER_CUDA_EMU)
  fill_emulated_cublas(api);
#else
  void* lib = nullptr;
  std::string tried;
  for (const char* const* n = cublas_library_names(); *n != nullptr && lib == nullptr; ++n) {
    lib = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) tried += str_cat(tried.empty() ? "" : "; ", dlerror());
  }
  if (lib == nullptr) {
    Context::set_why(str_cat("cuBLAS not found (", tried, "): install the CUDA toolkit's libcublas or set ",
                             "LD_LIBRARY_PATH / EMBER_CUBLAS_LIBRARY"));
    return Status::UnsupportedHardware;
  }
#define EMBER_CUBLAS_LOAD(name)                                                                  \
  api->name = reinterpret_cast<PFN_##name>(dlsym(lib, #name));                                   \
  if (api->name == nullptr) {                                                                    \
    Context::set_why(str_cat("cuBLAS: symbol " #name " not found in the library (too old?)"));   \
    return Status::UnsupportedHardware;                                                          \
  }
  EMBER_CUBLAS_FUNCTIONS(EMBER_CUBLAS_LOAD)
#undef EMBER_CUBLAS_LOAD
#endif
  EMBER_ASSIGN_OR_RETURN(Context * c, Context::get());
  cublasStatus_t s = api->cublasCreate_v2(&api->handle);
  if (s == CUBLAS_STATUS_SUCCESS) s = api->cublasSetStream_v2(api->handle, c->stream());
  if (s == CUBLAS_STATUS_SUCCESS) {
    // A workspace of our own, so GEMMs can be captured into CUDA graphs.
    EMBER_ASSIGN_OR_RETURN(void* workspace, c->allocate(kWorkspaceBytes));
    s = api->cublasSetWorkspace_v2(api->handle, workspace, kWorkspaceBytes);
  }
  if (s != CUBLAS_STATUS_SUCCESS) {
    Context::set_why(str_cat("cuBLAS initialization failed: ", api->cublasGetStatusString(s)));
    return Status::Internal;
  }
  return Status::Ok;
}

}  // namespace

const char* const* cublas_library_names() {
  static const char* names[] = {std::getenv("EMBER_CUBLAS_LIBRARY"), "libcublas.so.13", "libcublas.so.12",
                                "libcublas.so", nullptr};
  return names[0] != nullptr ? names : names + 1;
}

Result<const CublasApi*> cublas() {
  static CublasApi api;
  static Status status = Status::Ok;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    status = load(&api);
    if (status != Status::Ok) failure = Context::why();
  });
  if (status != Status::Ok) {
    Context::set_why(failure);
    return status;
  }
  return &api;
}

void set_allow_tf32(bool allow) { g_allow_tf32 = allow; }
bool allow_tf32() { return g_allow_tf32; }

}  // namespace ember::cuda
