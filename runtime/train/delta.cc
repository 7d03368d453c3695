#include "runtime/train/delta.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <cstring>
#include <vector>

#include "runtime/autograd/grad_mode.h"
#include "runtime/core/error.h"
#include "runtime/nn/safetensors.h"
#include "runtime/ops/ops.h"

namespace ember {
namespace {

constexpr const char* kFormat = "ember-delta";

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() > n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

std::string model_fingerprint(const Model& model) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a, 64 bit
  const auto* p = reinterpret_cast<const unsigned char*>(model.data());
  for (size_t i = 0; i < model.size(); ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return std::string("fnv1a64:") + hex;
}

Status save_delta(const Trainer& trainer, const std::string& path, std::string* error) {
  nn::NamedTensors tensors;
  {
    NoGradGuard no_grad;
    for (size_t i = 0; i < trainer.parameters().size(); ++i)
      tensors.emplace_back(trainer.parameter_names()[i], trainer.parameters()[i].detach());
  }
  try {
    nn::Metadata meta{{"format", kFormat}, {"base", model_fingerprint(trainer.executor().model())}};
    if (!trainer.adapters().empty()) meta["lora_scale"] = std::to_string(trainer.adapters().front().second.scale);
    nn::save_safetensors(path, tensors, meta);
  } catch (const Error& e) {
    return report_error(error, e.status(), "writing delta '", path, "': ", e.what());
  }
  return Status::Ok;
}

Result<Model> apply_delta(const Model& base, const std::string& path, std::string* error) {
  nn::Metadata meta;
  nn::NamedTensors tensors;
  NoGradGuard no_grad;
  try {
    tensors = nn::load_safetensors(path, &meta);
  } catch (const Error& e) {
    return report_error(error, e.status(), "delta '", path, "': ", e.what());
  }
  if (meta["format"] != kFormat)
    return report_error(error, Status::InvalidArgument, "'", path,
                        "' is not an ember delta (no \"format\": \"ember-delta\" in its metadata)");
  const std::string mine = model_fingerprint(base);
  if (meta["base"] != mine)
    return report_error(error, Status::InvalidArgument, "delta '", path, "' was trained from another model (its base ",
                        meta["base"], ", this model ", mine, ")");
  // Adapters first become weight deltas: W += scale * B A (float32 weights only).
  const double scale = meta.count("lora_scale") ? std::atof(meta["lora_scale"].c_str()) : 1.0;
  std::map<std::string, Tensor> weights;
  std::map<std::string, std::pair<Tensor, Tensor>> adapters;
  for (const auto& [name, value] : tensors) {
    const bool a = ends_with(name, ".lora_A"), b = ends_with(name, ".lora_B");
    if (!a && !b) {
      weights[name] = value;
      continue;
    }
    auto& ab = adapters[name.substr(0, name.size() - 7)];
    (a ? ab.first : ab.second) = value;
  }
  for (const auto& [name, ab] : adapters) {
    const int t = base.find_tensor(name);
    if (t >= 0 && base.tensor_dtype(t) != DType::Float32)
      return report_error(error, Status::NotSupported, "delta '", path, "': LoRA adapters on the ",
                          dtype_name(base.tensor_dtype(t)), " weight '", name,
                          "' cannot be merged into it (run them through the trainer)");
    if (!ab.first.defined() || !ab.second.defined())
      return report_error(error, Status::InvalidArgument, "delta '", path, "': adapter '", name, "' lacks its ",
                          ab.first.defined() ? "lora_B" : "lora_A");
    Tensor& w = weights[name];
    if (!w.defined() && t >= 0) w = base.weight(t);
    if (!w.defined()) continue;  // reported below
    if (w.dim() != 2 || ab.second.dim() != 2 || ab.first.dim() != 2 || ab.second.size(0) != w.size(0) ||
        ab.first.size(1) != w.size(1) || ab.second.size(1) != ab.first.size(0))
      return report_error(error, Status::ShapeMismatch, "delta '", path, "': adapter '", name, "' (A ",
                          shape_str(ab.first.sizes()), ", B ", shape_str(ab.second.sizes()), ") does not fit ",
                          shape_str(w.sizes()));
    w = w + matmul(ab.second, ab.first) * scale;
  }
  std::vector<std::byte> bytes(base.data(), base.data() + base.size());
  for (const auto& [name, value] : weights) {
    const int t = base.find_tensor(name);
    if (t < 0 || !base.weight(t).defined())
      return report_error(error, Status::InvalidArgument, "delta '", path, "': '", name, "' is not a weight of the model");
    const Tensor& w = base.weight(t);
    if (base.tensor(t).sparse() != nullptr || base.tensor(t).quant() != nullptr || w.dtype() != value.dtype() ||
        w.sizes() != value.sizes())
      return report_error(error, Status::ShapeMismatch, "delta '", path, "': '", name, "' is ", dtype_name(value.dtype()),
                          " ", shape_str(value.sizes()), ", the model's weight ", dtype_name(w.dtype()), " ",
                          shape_str(w.sizes()), (base.tensor(t).quant() != nullptr ? " (int8)" : ""));
    RT_RETURN_IF_ERROR(patch_weight(bytes, base, t, value, error));
  }
  return Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Minimal, error);
}

}  // namespace ember
