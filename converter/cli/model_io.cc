#include "converter/cli/model_io.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "runtime/backend/backend.h"
#include "runtime/core/error.h"
#include "runtime/model/npy.h"
#include "runtime/ops/ops.h"
#include "runtime/train/delta.h"

namespace ember::cli {
namespace {

template <typename... Args>
Diag diag(Status status, const Args&... args) {
  return Diag{status, str_cat(args...)};
}

std::string describe(const IOInfo& io) {
  return str_cat(dtype_name(io.dtype), " ", io_shape_str(io));
}

std::string input_list(const Executor& executor) {
  std::string s;
  for (const IOInfo& io : executor.inputs()) {
    if (!s.empty()) s += ", ";
    s += str_cat(io.name, " (", describe(io), ")");
  }
  return s.empty() ? "none" : s;
}

std::string dim_name(const IOInfo& io, size_t d) {
  return d < io.dim_names.size() && !io.dim_names[d].empty() ? io.dim_names[d] : str_cat("?", d);
}

}  // namespace

Expected<LoadedModel> load_model(const std::string& path, const ExecutorOptions& options, const std::string& delta) {
  std::string error;
  Result<Model> m = Model::load(path, Verification::Full, &error);
  if (!m.ok()) return Diag{m.status(), error};
  LoadedModel loaded;
  ExecutorOptions with_adapters = options;
  if (delta.empty()) {
    loaded.model = std::make_shared<const Model>(std::move(m.get()));
  } else {
    Result<TunedModel> tuned = load_delta(m.get(), delta, &error);
    if (!tuned.ok()) return Diag{tuned.status(), error};
    loaded.model = std::make_shared<const Model>(std::move(tuned->model));
    with_adapters.adapters = std::move(tuned->adapters);  // on int8 Linears: run unmerged
  }
  Result<std::shared_ptr<const Executor>> e = Executor::create(loaded.model, with_adapters, &error);
  if (!e.ok()) return Diag{e.status(), str_cat("'", path, "': ", error)};
  loaded.executor = e.get();
  return loaded;
}

Diag check_device(const std::string& spec) {
  try {
    const Device device(spec);
    if (get_backend(device.type()) == nullptr) {
      return diag(Status::UnsupportedHardware, "device '", spec, "' is not available in this build (",
                  device.type() == DeviceType::CUDA ? "build with --config=cuda" : "no backend", ")");
    }
  } catch (const Error& e) {
    return Diag{Status::InvalidArgument, e.what()};
  }
  return Diag::success();
}

Expected<ExecutorOptions> executor_options(const std::string& device, bool allow_fallback,
                                           const std::string& precision, const std::string& conv_layout) {
  Diag d = check_device(device);
  if (!d.ok()) return d;
  const Device dev(device);
  ExecutorOptions options;
  options.device = dev.type();
  options.allow_fallback = allow_fallback;
  if (precision == "fp16") {
    options.precision = Precision::Float16;
  } else if (precision == "bf16") {
    options.precision = Precision::BFloat16;
  } else if (precision != "fp32") {
    return diag(Status::InvalidArgument, "--precision: unknown precision '", precision,
                "' (supported: fp32, fp16, bf16)");
  }
  if (conv_layout == "nchw") {
    options.conv_layout = ConvLayout::Contiguous;
  } else if (conv_layout == "channels_last") {
    options.conv_layout = ConvLayout::ChannelsLast;
  } else if (conv_layout != "auto") {
    return diag(Status::InvalidArgument, "--conv-layout: unknown layout '", conv_layout,
                "' (supported: auto, nchw, channels_last)");
  }
  if (dev.is_cpu() && options.precision == Precision::Float16)
    return diag(Status::InvalidArgument, "--precision fp16 needs --device vulkan or cuda (the CPU executor "
                "runs fp32 or bf16; convert with --weights fp16 for fp16 weights)");
  if (dev.is_cpu() && allow_fallback)
    return diag(Status::InvalidArgument, "--allow-fallback needs a device other than cpu");
  if (!dev.is_cpu() && dev.has_index()) {
    Backend* backend = get_backend(dev.type());
    if (backend == nullptr || backend->select_device(std::to_string(dev.index())) != Status::Ok)
      return diag(Status::InvalidArgument, "--device ", device, ": ",
                  backend == nullptr ? "not available in this build" : backend->last_error());
  }
  return options;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += str_cat(i > 0 ? ", " : "", shape[i]);
  return s + "]";
}

std::string io_shape_str(const IOInfo& io) {
  std::string s = "[";
  for (size_t i = 0; i < io.shape.size(); ++i) {
    if (i > 0) s += ", ";
    if (io.shape[i] >= 0) s += std::to_string(io.shape[i]);
    else s += i < io.dim_names.size() && !io.dim_names[i].empty() ? io.dim_names[i] : "?";
  }
  return s + "]";
}

std::vector<std::string> symbolic_dims(const Executor& executor) {
  std::vector<std::string> names;
  for (const IOInfo& io : executor.inputs()) {
    for (size_t d = 0; d < io.shape.size(); ++d) {
      if (io.shape[d] >= 0) continue;
      const std::string n = d < io.dim_names.size() && !io.dim_names[d].empty() ? io.dim_names[d] : "?";
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    }
  }
  return names;
}

Tensor default_input(const IOInfo& io, bool random) {
  Shape shape = io.shape;
  for (int64_t& d : shape) {
    if (d < 0) d = 1;
  }
  if (random && is_floating(io.dtype)) return randn(shape).to(io.dtype);
  return zeros(shape, io.dtype);
}

Expected<std::vector<Tensor>> read_inputs(const Executor& executor, const std::vector<std::string>& specs,
                                          bool fill_missing, bool random) {
  const std::vector<IOInfo>& ios = executor.inputs();
  std::vector<Tensor> tensors(ios.size());
  std::vector<std::string> files(ios.size());
  // symbol -> (value, the input that bound it)
  std::map<std::string, std::pair<int64_t, std::string>> bound;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return diag(Status::InvalidArgument, "--input '", spec, "': expected NAME=FILE.npy");
    }
    const std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    size_t k = 0;
    while (k < ios.size() && ios[k].name != name) ++k;
    if (k == ios.size()) {
      return diag(Status::NotFound, "unknown input '", name, "'; the model's inputs: ", input_list(executor));
    }
    if (tensors[k].defined()) return diag(Status::InvalidArgument, "input '", name, "' is given twice");
    std::string error;
    Result<Tensor> t = read_npy(file, &error, ios[k].dtype);
    if (!t.ok()) return diag(t.status(), "input '", name, "': ", error);
    const IOInfo& io = ios[k];
    const Tensor& x = t.get();
    if (x.dtype() != io.dtype) {
      return diag(Status::DTypeMismatch, "input '", name, "' ('", file, "'): dtype ", dtype_name(x.dtype()),
                  ", the model expects ", dtype_name(io.dtype));
    }
    bool shape_ok = x.dim() == static_cast<int64_t>(io.shape.size());
    for (size_t d = 0; shape_ok && d < io.shape.size(); ++d) {
      if (io.shape[d] >= 0 && io.shape[d] != x.sizes()[d]) shape_ok = false;
    }
    if (!shape_ok) {
      return diag(Status::ShapeMismatch, "input '", name, "' ('", file, "'): shape ", shape_str(x.sizes()),
                  ", the model expects ", io_shape_str(io));
    }
    for (size_t d = 0; d < io.shape.size(); ++d) {
      if (io.shape[d] >= 0) continue;
      const std::string sym = dim_name(io, d);
      auto it = bound.find(sym);
      if (it == bound.end()) {
        bound[sym] = {x.sizes()[d], name};
      } else if (it->second.first != x.sizes()[d]) {
        return diag(Status::ShapeMismatch, "input '", name, "' ('", file, "'): dim ", d, " ('", sym, "') is ",
                    x.sizes()[d], " but input '", it->second.second, "' has ", sym, " = ", it->second.first);
      }
    }
    tensors[k] = t.get();
    files[k] = file;
  }
  for (size_t k = 0; k < ios.size(); ++k) {
    if (tensors[k].defined()) continue;
    if (!fill_missing) {
      return diag(Status::InvalidArgument, "missing input '", ios[k].name, "' (", describe(ios[k]),
                  "): give it with --input ", ios[k].name, "=FILE.npy");
    }
    Shape shape = ios[k].shape;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] >= 0) continue;
      auto it = bound.find(dim_name(ios[k], d));
      shape[d] = it != bound.end() ? it->second.first : 1;
    }
    tensors[k] = random && is_floating(ios[k].dtype) ? randn(shape).to(ios[k].dtype) : zeros(shape, ios[k].dtype);
  }
  return tensors;
}

std::string sanitize_file_name(const std::string& name) {
  std::string s;
  for (char c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '-' || c == '.';
    s += keep ? c : '_';
  }
  if (s.empty() || s[0] == '.') s = "_" + s;
  return s;
}

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;  // "VmHWM:   11600 kB"
  }
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux: kilobytes
}

}  // namespace ember::cli
