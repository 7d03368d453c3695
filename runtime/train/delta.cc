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
    if (!trainer.adapters().empty()) {
      char scale[32];  // every digit: the run-time adapter computes what the trainer did
      std::snprintf(scale, sizeof(scale), "%.17g", trainer.adapters().front().second.scale);
      meta["lora_scale"] = scale;
    }
    nn::save_safetensors(path, tensors, meta);
  } catch (const Error& e) {
    return report_error(error, e.status(), "writing delta '", path, "': ", e.what());
  }
  return Status::Ok;
}

Result<TunedModel> load_delta(const Model& base, const std::string& path, std::string* error) {
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
  std::vector<std::pair<int, LoraAdapter>> unmerged;
  for (const auto& [name, ab] : adapters) {
    if (!ab.first.defined() || !ab.second.defined())
      return report_error(error, Status::InvalidArgument, "delta '", path, "': adapter '", name, "' lacks its ",
                          ab.first.defined() ? "lora_B" : "lora_A");
    const int t = base.find_tensor(name);
    if (t < 0 || !base.weight(t).defined())
      return report_error(error, Status::InvalidArgument, "delta '", path, "': adapter '", name,
                          "' is not on a weight of the model");
    const std::vector<int> ops = lora_ops(base, t);
    if (ops.empty())
      return report_error(error, Status::InvalidArgument, "delta '", path, "': adapter '", name,
                          "': no Linear layer reads it as its weight");
    const std::vector<int64_t> w = base.tensor_shape(t);
    if (w.size() != 2 || ab.second.dim() != 2 || ab.first.dim() != 2 || ab.second.size(0) != w[0] ||
        ab.first.size(1) != w[1] || ab.second.size(1) != ab.first.size(0) || ab.first.dtype() != DType::Float32 ||
        ab.second.dtype() != DType::Float32)
      return report_error(error, Status::ShapeMismatch, "delta '", path, "': adapter '", name, "' (A ",
                          dtype_name(ab.first.dtype()), " ", shape_str(ab.first.sizes()), ", B ",
                          dtype_name(ab.second.dtype()), " ", shape_str(ab.second.sizes()), ") does not fit ",
                          dtype_name(base.tensor_dtype(t)), " ", shape_str(w), " (A float32 [rank, ", w.size() == 2 ? w[1] : -1,
                          "], B float32 [", w.empty() ? -1 : w[0], ", rank])");
    if (base.tensor_dtype(t) == DType::Float32 && base.tensor(t).sparse() == nullptr) {
      // Merged: W += scale * B A.
      Tensor& merged = weights[name];
      if (!merged.defined()) merged = base.weight(t);
      if (merged.sizes() != base.weight(t).sizes()) continue;  // reported below
      merged = merged + matmul(ab.second, ab.first) * scale;
    } else if (base.tensor(t).quant() != nullptr && base.tensor(t).sparse() == nullptr) {
      // Unmerged: the int8 kernel plus the adapter at run time (on every Linear reading the weight).
      for (int k : ops) unmerged.emplace_back(k, LoraAdapter{ab.first, ab.second, scale});
    } else {
      return report_error(error, Status::NotSupported, "delta '", path, "': LoRA adapters on the ",
                          base.tensor(t).sparse() != nullptr ? "sparse COO" : dtype_name(base.tensor_dtype(t)),
                          " weight '", name, "' (float32 or int8 weights only)");
    }
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
    EMBER_TRY(patch_weight(bytes, base, t, value, error));
  }
  Result<Model> m = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Minimal, error);
  if (!m.ok()) return m.status();
  return TunedModel{std::move(m.get()), std::move(unmerged)};
}

Result<Model> apply_delta(const Model& base, const std::string& path, std::string* error) {
  Result<TunedModel> tuned = load_delta(base, path, error);
  if (!tuned.ok()) return tuned.status();
  if (!tuned->adapters.empty()) {
    const int k = tuned->adapters.front().first;
    return report_error(error, Status::NotSupported, "delta '", path, "': LoRA adapters on the int8 weight '",
                        base.tensor_name(base.op(k).inputs()->Get(1)),
                        "' stay unmerged: load the delta with load_delta and run its adapters "
                        "(ExecutorOptions::adapters), as ember run --weights does");
  }
  return std::move(tuned->model);
}

}  // namespace ember
