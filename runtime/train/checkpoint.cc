#include "runtime/train/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "runtime/autograd/grad_mode.h"
#include "runtime/core/error.h"
#include "runtime/nn/safetensors.h"
#include "runtime/train/delta.h"

namespace ember {
namespace {

using optim::StateDict;
using optim::StateValue;

std::string fmt_double(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

template <typename T, typename F>
std::string join(const std::vector<T>& v, F f) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + f(v[i]);
  return s;
}

// A non-tensor state value as text: "none", "b:1", "i:5", "f:0.001", "fl:0.9,0.999", "il:0,1".
std::string encode(const StateValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "none";
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "b:1" : "b:0";
  if (const int64_t* i = std::get_if<int64_t>(&v)) return "i:" + std::to_string(*i);
  if (const double* d = std::get_if<double>(&v)) return "f:" + fmt_double(*d);
  if (const auto* fl = std::get_if<std::vector<double>>(&v)) return "fl:" + join(*fl, fmt_double);
  const auto& il = std::get<std::vector<int64_t>>(v);
  return "il:" + join(il, [](int64_t x) { return std::to_string(x); });
}

StateValue decode(const std::string& key, const std::string& s) {
  const auto list = [&](const std::string& body, auto parse) {
    std::vector<decltype(parse(std::string()))> out;
    std::stringstream in(body);
    std::string item;
    while (std::getline(in, item, ',')) out.push_back(parse(item));
    return out;
  };
  const auto f = [](const std::string& x) { return std::strtod(x.c_str(), nullptr); };
  const auto i = [](const std::string& x) { return static_cast<int64_t>(std::strtoll(x.c_str(), nullptr, 10)); };
  if (s == "none") return std::monostate{};
  if (s.rfind("b:", 0) == 0) return s == "b:1";
  if (s.rfind("i:", 0) == 0) return i(s.substr(2));
  if (s.rfind("f:", 0) == 0) return f(s.substr(2));
  if (s.rfind("fl:", 0) == 0) return list(s.substr(3), f);
  if (s.rfind("il:", 0) == 0) return list(s.substr(3), i);
  raise_error(Status::InvalidModel, str_cat("checkpoint value '", key, "' is malformed: '", s, "'"));
}

void put(const std::string& prefix, const StateDict& d, nn::NamedTensors& tensors, nn::Metadata& meta) {
  for (const auto& [k, v] : d) {
    if (const Tensor* t = std::get_if<Tensor>(&v)) {
      tensors.emplace_back(prefix + k, t->detach().contiguous());
    } else {
      meta[prefix + k] = encode(v);
    }
  }
}

// The entries under `prefix` ("optim.3.") of the file, tensors and values.
StateDict take(const std::string& prefix, const nn::NamedTensors& tensors, const nn::Metadata& meta) {
  StateDict d;
  for (const auto& [k, t] : tensors) {
    if (k.rfind(prefix, 0) == 0 && k.find('.', prefix.size()) == std::string::npos) d[k.substr(prefix.size())] = t;
  }
  for (const auto& [k, v] : meta) {
    if (k.rfind(prefix, 0) == 0 && k.find('.', prefix.size()) == std::string::npos)
      d[k.substr(prefix.size())] = decode(k, v);
  }
  return d;
}

int64_t meta_int(const nn::Metadata& meta, const char* key) {
  auto it = meta.find(key);
  EMBER_ENFORCE(it != meta.end(), Status::InvalidModel, "checkpoint metadata lacks '", key, "'");
  return std::strtoll(it->second.c_str(), nullptr, 10);
}

}  // namespace

Status save_checkpoint(const std::string& path, const Trainer& trainer, const optim::Optimizer& opt,
                       const optim::LRScheduler* sched, const LoopPosition& at, std::string* error) {
  try {
    NoGradGuard no_grad;
    nn::NamedTensors tensors;
    nn::Metadata meta{{"format", "ember-checkpoint"},
                      {"base", model_fingerprint(trainer.executor().model())},
                      {"epoch", std::to_string(at.epoch)},
                      {"step", std::to_string(at.step)},
                      {"batch", std::to_string(at.batch)},
                      {"epoch_sum", fmt_double(at.epoch_sum)},
                      {"epoch_count", std::to_string(at.epoch_count)}};
    for (size_t i = 0; i < trainer.parameters().size(); ++i)
      tensors.emplace_back("param." + trainer.parameter_names()[i], trainer.parameters()[i].detach());
    const optim::OptimizerState s = opt.state_dict();
    for (const auto& [index, d] : s.state) put("optim." + std::to_string(index) + ".", d, tensors, meta);
    for (size_t g = 0; g < s.param_groups.size(); ++g) put("group." + std::to_string(g) + ".", s.param_groups[g], tensors, meta);
    if (sched != nullptr) put("sched.", sched->state_dict(), tensors, meta);
    nn::save_safetensors(path, tensors, meta);
  } catch (const Error& e) {
    return report_error(error, e.status(), "writing checkpoint '", path, "': ", e.what());
  }
  return Status::Ok;
}

Status load_checkpoint(const std::string& path, Trainer& trainer, optim::Optimizer& opt, optim::LRScheduler* sched,
                       LoopPosition* at, std::string* error) {
  try {
    NoGradGuard no_grad;
    nn::Metadata meta;
    const nn::NamedTensors tensors = nn::load_safetensors(path, &meta);
    if (meta["format"] != "ember-checkpoint")
      return report_error(error, Status::InvalidArgument, "'", path, "' is not an ember fine-tuning checkpoint");
    const std::string mine = model_fingerprint(trainer.executor().model());
    if (meta["base"] != mine)
      return report_error(error, Status::InvalidArgument, "checkpoint '", path, "' was made for another model (its base ",
                          meta["base"], ", this model ", mine, ")");
    std::vector<std::string> theirs, ours = trainer.parameter_names();
    for (const auto& [k, t] : tensors) {
      if (k.rfind("param.", 0) == 0) theirs.push_back(k.substr(6));
    }
    std::sort(theirs.begin(), theirs.end());
    std::sort(ours.begin(), ours.end());
    const auto str = [](const std::string& n) { return " " + n; };
    if (theirs != ours)
      return report_error(error, Status::InvalidArgument, "checkpoint '", path, "' trains", join(theirs, str),
                          "; this run trains", join(ours, str), " (use the same --train / --freeze / --lora)");
    for (size_t i = 0; i < trainer.parameters().size(); ++i) {
      const std::string key = "param." + trainer.parameter_names()[i];
      const Tensor* found = nullptr;
      for (const auto& [k, t] : tensors) {
        if (k == key) found = &t;
      }
      Tensor p = trainer.parameters()[i];
      if (found == nullptr || found->sizes() != p.sizes())
        return report_error(error, Status::InvalidArgument, "checkpoint '", path, "' has no tensor '",
                            trainer.parameter_names()[i], "' of shape ", shape_str(p.sizes()),
                            " (another --train / --lora selection?)");
      p.copy_(*found);
    }
    optim::OptimizerState s;
    for (size_t i = 0; i < trainer.parameters().size(); ++i) {
      StateDict d = take("optim." + std::to_string(i) + ".", tensors, meta);
      if (!d.empty()) s.state[static_cast<int64_t>(i)] = std::move(d);
    }
    for (int g = 0;; ++g) {
      StateDict d = take("group." + std::to_string(g) + ".", tensors, meta);
      if (d.empty()) break;
      s.param_groups.push_back(std::move(d));
    }
    opt.load_state_dict(s);
    const StateDict sd = take("sched.", tensors, meta);
    if ((sched != nullptr) != !sd.empty())
      return report_error(error, Status::InvalidArgument, "checkpoint '", path, "' was made ",
                          sd.empty() ? "without" : "with", " a scheduler; this run has ", sched ? "one" : "none");
    if (sched != nullptr) sched->load_state_dict(sd);
    at->epoch = static_cast<int>(meta_int(meta, "epoch"));
    at->step = meta_int(meta, "step");
    at->batch = meta_int(meta, "batch");
    at->epoch_sum = std::strtod(meta["epoch_sum"].c_str(), nullptr);
    at->epoch_count = meta_int(meta, "epoch_count");
  } catch (const Error& e) {
    return report_error(error, e.status(), "checkpoint '", path, "': ", e.what());
  }
  return Status::Ok;
}

}  // namespace ember
