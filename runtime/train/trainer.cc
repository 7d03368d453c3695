#include "runtime/train/trainer.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/autograd/grad_mode.h"
#include "runtime/core/error.h"
#include "runtime/core/file.h"
#include "runtime/model/model_access.h"
#include "runtime/model/placement.h"
#include "runtime/model/writer.h"
#include "runtime/nn/init.h"
#include "runtime/ops/ops.h"

namespace ember {
namespace {

bool matches(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

bool matches_any(const std::vector<std::string>& patterns, const std::string& name) {
  for (const std::string& p : patterns) {
    if (matches(p, name)) return true;
  }
  return false;
}

// Why weight t (read by ops as data) cannot be trained; "" when it can.
std::string why_not_trainable(const Model& m, int t, bool read_on_host) {
  const fb::Tensor& ft = m.tensor(t);
  if (ft.quant() != nullptr || m.tensor_dtype(t) == DType::Int8)
    return "an int8 (quantized) weight (train a LoRA adapter on it, --lora, or convert without --quantize)";
  if (read_on_host) return "read on the host as shape or index data";
  if (m.tensor_dtype(t) == DType::Float16) return "stored as float16 (convert with --weights fp32 to train it)";
  if (m.tensor_dtype(t) != DType::Float32) return str_cat("a ", dtype_name(m.tensor_dtype(t)), " constant");
  if (!ft.trainable()) return "not a parameter (running statistics or a value the converter computed)";
  return "";
}

std::string names_of(const std::vector<WeightInfo>& weights) {
  std::string s;
  for (const WeightInfo& w : weights) {
    if (!w.why_not.empty()) continue;
    s += (s.empty() ? "" : ", ") + w.name;
  }
  return s.empty() ? "(none)" : s;
}

}  // namespace

Status patch_weight(std::vector<std::byte>& bytes, const Model& m, int t, const Tensor& value, std::string* error) {
  const Tensor& w = m.weight(t);
  const size_t offset = static_cast<size_t>(static_cast<const std::byte*>(w.data_ptr()) - m.data());
  const Tensor v = value.contiguous();
  if (v.dtype() != w.dtype() || offset + v.nbytes() > bytes.size() || v.nbytes() != w.nbytes())
    return report_error(error, Status::Internal, "weight '", m.tensor_name(t), "' does not fit its place in the file");
  std::memcpy(bytes.data() + offset, v.data_ptr(), v.nbytes());
  return Status::Ok;
}

std::vector<WeightInfo> list_weights(const Executor& ex) {
  const Model& m = ex.model();
  std::vector<WeightInfo> out;
  std::vector<int> index(static_cast<size_t>(m.num_tensors()), -1);
  for (int k = 0; k < m.num_ops(); ++k) {
    const OpKind kind = m.op_kind(k);
    const auto* in = m.op(k).inputs();
    for (uint32_t j = 0; j < vlen(in); ++j) {
      const int32_t t = in->Get(j);
      if (t < 0 || !m.weight(t).defined()) continue;
      int& i = index[static_cast<size_t>(t)];
      if (i < 0) {
        i = static_cast<int>(out.size());
        WeightInfo w;
        w.tensor = t;
        w.name = std::string(m.tensor_name(t));
        w.shape = m.tensor_shape(t);
        w.dtype = m.tensor_dtype(t);
        out.push_back(w);
      }
      WeightInfo& w = out[static_cast<size_t>(i)];
      w.last_op = k;
      const std::string why = why_not_trainable(m, t, reads_on_host(kind, j));
      if (!why.empty() && w.why_not.empty()) w.why_not = why;
    }
  }
  std::sort(out.begin(), out.end(), [](const WeightInfo& a, const WeightInfo& b) { return a.tensor < b.tensor; });
  return out;
}

std::vector<int> lora_ops(const Model& m, int t) {
  std::vector<int> ops;
  for (int k = 0; k < m.num_ops(); ++k) {
    if (m.op_kind(k) == OpKind::Linear && vlen(m.op(k).inputs()) >= 2 && m.op(k).inputs()->Get(1) == t)
      ops.push_back(k);
  }
  return ops;
}

Result<std::unique_ptr<Trainer>> Trainer::create(std::shared_ptr<const Model> model, const TrainerOptions& options,
                                                 std::string* error) {
  ExecutorOptions eo;
  eo.device = options.device;
  Result<std::shared_ptr<const Executor>> ex = Executor::create(std::move(model), eo, error);
  if (!ex.ok()) return ex.status();
  const std::vector<WeightInfo> weights = list_weights(*ex.get());
  std::vector<const WeightInfo*> chosen;
  if (options.train.empty() && options.lora_rank > 0) {
    // only the adapters
  } else if (options.train.empty()) {
    int last = -1;
    for (const WeightInfo& w : weights) {
      if (w.why_not.empty() && w.last_op > last) last = w.last_op;
    }
    for (const WeightInfo& w : weights) {
      if (w.why_not.empty() && w.last_op == last) chosen.push_back(&w);
    }
  } else {
    for (const std::string& p : options.train) {
      bool any = false;
      for (const WeightInfo& w : weights) {
        if (!matches(p, w.name)) continue;
        any = true;
        if (!w.why_not.empty() && p.find_first_of("*?[") == std::string::npos)
          return report_error(error, Status::InvalidArgument, "weight '", w.name, "' cannot be trained: ", w.why_not);
      }
      if (!any)
        return report_error(error, Status::InvalidArgument, "--train '", p, "' matches no weight; trainable weights: ",
                            names_of(weights));
    }
    for (const WeightInfo& w : weights) {
      if (w.why_not.empty() && matches_any(options.train, w.name)) chosen.push_back(&w);
    }
  }
  for (const std::string& p : options.freeze) {
    if (!std::any_of(weights.begin(), weights.end(), [&](const WeightInfo& w) { return matches(p, w.name); }))
      return report_error(error, Status::InvalidArgument, "--freeze '", p, "' matches no weight; trainable weights: ",
                          names_of(weights));
  }
  chosen.erase(std::remove_if(chosen.begin(), chosen.end(),
                              [&](const WeightInfo* w) { return matches_any(options.freeze, w->name); }),
               chosen.end());
  if (chosen.empty() && options.lora_rank <= 0)
    return report_error(error, Status::InvalidArgument, "no weight selected for training; trainable weights: ",
                        names_of(weights));

  auto trainer = std::make_unique<Trainer>(ex.get());
  const Model& m = trainer->executor_->model();
  for (const WeightInfo* w : chosen) {
    Tensor p;
    {
      NoGradGuard no_grad;
      p = m.weight(w->tensor).clone();  // a writable float32 copy; the rest stays in the mapping
    }
    p.requires_grad_(true);
    trainer->tensors_.push_back(w->tensor);
    trainer->names_.push_back(w->name);
    trainer->params_.push_back(p);
  }
  if (options.lora_rank > 0) EMBER_TRY(trainer->add_adapters(options, error));
  return trainer;
}

Status Trainer::add_adapters(const TrainerOptions& options, std::string* error) {
  const Model& m = executor_->model();
  if (options.lora_targets.empty())
    return report_error(error, Status::InvalidArgument, "LoRA needs target patterns (--lora-targets)");
  const int64_t r = options.lora_rank;
  const double scale = (options.lora_alpha > 0 ? options.lora_alpha : static_cast<double>(r)) / static_cast<double>(r);
  std::vector<bool> used(options.lora_targets.size(), false);
  for (int k = 0; k < m.num_ops(); ++k) {
    if (m.op_kind(k) != OpKind::Linear || vlen(m.op(k).inputs()) < 2) continue;
    const int32_t t = m.op(k).inputs()->Get(1);
    if (t < 0 || !m.weight(t).defined()) continue;
    const std::string name(m.tensor_name(t));
    bool hit = false;
    for (size_t i = 0; i < options.lora_targets.size(); ++i) {
      if (matches(options.lora_targets[i], name)) used[i] = hit = true;
    }
    if (!hit) continue;
    if (m.tensor(t).sparse() != nullptr)
      return report_error(error, Status::NotSupported, "LoRA on '", name, "': a sparse COO weight (not supported)");
    const std::vector<int64_t> shape = m.tensor_shape(t);  // [out, in]
    if (r > std::min(shape[0], shape[1]))
      return report_error(error, Status::InvalidArgument, "LoRA rank ", r, " exceeds '", name, "' ", shape_str(shape));
    LoraAdapter a;
    {
      NoGradGuard no_grad;
      a.a = nn::init::kaiming_uniform_(empty({r, shape[1]}), std::sqrt(5.0));
      a.b = zeros({shape[0], r});
    }
    a.a.requires_grad_(true);
    a.b.requires_grad_(true);
    a.scale = scale;
    for (const auto& [suffix, p] : {std::make_pair(".lora_A", a.a), std::make_pair(".lora_B", a.b)}) {
      tensors_.push_back(t);
      names_.push_back(name + suffix);
      params_.push_back(p);
    }
    adapters_.emplace_back(k, a);
  }
  for (size_t i = 0; i < used.size(); ++i) {
    if (!used[i])
      return report_error(error, Status::InvalidArgument, "--lora-targets '", options.lora_targets[i],
                          "' matches no Linear weight");
  }
  return Status::Ok;
}

Result<std::vector<Tensor>> Trainer::forward(Span<const Tensor> inputs, std::string* error) {
  std::vector<std::pair<int, Tensor>> weights;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!is_adapter(i)) weights.emplace_back(tensors_[i], params_[i]);
  }
  return run_recording(*executor_, inputs, weights, adapters_, error);
}

int64_t Trainer::trainable_elements() const {
  int64_t n = 0;
  for (const Tensor& p : params_) n += p.numel();
  return n;
}

Status Trainer::save(const std::string& path, const SaveOptions& options, std::string* error) const {
  const Model& m = executor_->model();
  std::vector<std::byte> bytes(m.data(), m.data() + m.size());
  NoGradGuard no_grad;
  // The value of each written weight: trained, then with its adapter merged.
  std::vector<std::pair<int, Tensor>> values, widened;  // widened: int8 weights merged into float32
  const auto value_of = [&](int t) -> Tensor& {
    for (auto& [u, v] : values) {
      if (u == t) return v;
    }
    values.emplace_back(t, m.weight(t));
    return values.back().second;
  };
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!is_adapter(i)) value_of(tensors_[i]) = params_[i].detach();
  }
  for (const auto& [k, a] : adapters_) {
    const int t = m.op(k).inputs()->Get(1);
    if (m.tensor_dtype(t) == DType::Float32) {
      Tensor& w = value_of(t);
      w = w + matmul(a.b, a.a) * a.scale;
      continue;
    }
    const std::string name(m.tensor_name(t));
    if (m.tensor(t).quant() == nullptr || m.tensor(t).sparse() != nullptr)
      return report_error(error, Status::NotSupported, "LoRA adapters on the ", dtype_name(m.tensor_dtype(t)),
                          " weight '", name, "' cannot be merged into it");
    if (!options.merge_int8_lora)
      return report_error(error, Status::NotSupported, "LoRA adapters on the int8 weight '", name,
                          "' cannot be merged into it: save them as a delta (--save-delta), or merge them into a "
                          "float32 weight (--merge-lora)");
    for (int other = 0; other < m.num_ops(); ++other) {
      if (other == k) continue;
      for (uint32_t j = 0; j < vlen(m.op(other).inputs()); ++j) {
        if (m.op(other).inputs()->Get(j) == t)
          return report_error(error, Status::NotSupported, "LoRA adapters on the int8 weight '", name,
                              "': ", op_ref(m, other), " reads it too, so it cannot become float32 (save a delta)");
      }
    }
    widened.emplace_back(t, (unwrap(dequantize_weight(m, t)) + matmul(a.b, a.a) * a.scale).contiguous());
  }
  for (const auto& [t, v] : values) EMBER_TRY(patch_weight(bytes, m, t, v, error));
  if (widened.empty()) return write_file_atomic(path, bytes.data(), bytes.size(), error);
  // A weight changes dtype and size: the file is rewritten from its ModelDef.
  Result<Model> patched = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Minimal, error);
  if (!patched.ok()) return patched.status();
  Result<ModelDef> def = model_def_of(patched.get(), error);
  if (!def.ok()) return def.status();
  for (const auto& [t, v] : widened) {
    TensorDef& td = def->tensors[static_cast<size_t>(t)];
    td.dtype = DType::Float32;
    td.tensor = v;
    td.data.clear();
    td.quant.reset();
    td.trainable = true;  // a float32 parameter now: a later fine-tuning may train it
  }
  return write_model(def.get(), path, error);
}

bool Trainer::is_adapter(size_t i) const {
  const std::string& n = names_[i];
  return n.size() > 7 && (n.compare(n.size() - 7, 7, ".lora_A") == 0 || n.compare(n.size() - 7, 7, ".lora_B") == 0);
}

}  // namespace ember
