// Module bookkeeping (registration, traversal, state_dict) and the layers.
#include "runtime/nn/module.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "runtime/autograd/grad_mode.h"
#include "runtime/core/error.h"
#include "runtime/nn/init.h"
#include "runtime/ops/ops.h"

namespace ember::nn {
namespace {

// Python's repr of a float ("0.5", "1.5", "-1.0", "1e-05").
std::string py_float(double v) {
  char buf[64];
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e16) {
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string torch_size(IntArrayRef sizes) { return "torch.Size(" + shape_str(sizes) + ")"; }

std::string quoted_list(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? ", \"" : "\"") + keys[i] + "\"";
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

// --- registration ------------------------------------------------------------------

void Module::check_new_name(const std::string& name, const char* kind) const {
  EMBER_ENFORCE(name.find('.') == std::string::npos, Status::InvalidArgument, kind, " name can't contain \".\"");
  EMBER_ENFORCE(!name.empty(), Status::InvalidArgument, kind, " name can't be empty string \"\"");
}

Tensor Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  check_new_name(name, "parameter");
  for (const Entry& b : buffers_) {
    EMBER_ENFORCE(b.name != name, Status::InvalidArgument, "attribute '", name, "' already exists");
  }
  for (const auto& c : children_) {
    EMBER_ENFORCE(c.first != name, Status::InvalidArgument, "attribute '", name, "' already exists");
  }
  if (tensor.defined()) {
    if (!tensor.is_leaf()) tensor = tensor.detach();
    if (tensor.is_floating_point()) tensor.requires_grad_(requires_grad);
  }
  for (Entry& p : params_) {
    if (p.name == name) {
      p.tensor = tensor;
      return tensor;
    }
  }
  params_.push_back({name, tensor, true});
  return tensor;
}

Tensor Module::register_buffer(const std::string& name, Tensor tensor, bool persistent) {
  check_new_name(name, "buffer");
  for (const Entry& p : params_) {
    EMBER_ENFORCE(p.name != name, Status::InvalidArgument, "attribute '", name, "' already exists");
  }
  for (const auto& c : children_) {
    EMBER_ENFORCE(c.first != name, Status::InvalidArgument, "attribute '", name, "' already exists");
  }
  for (Entry& b : buffers_) {
    if (b.name == name) {
      b.tensor = tensor;
      b.persistent = persistent;
      return tensor;
    }
  }
  buffers_.push_back({name, tensor, persistent});
  return tensor;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  EMBER_ENFORCE(name.find('.') == std::string::npos, Status::InvalidArgument,
              "module name can't contain \".\", got: ", name);
  EMBER_ENFORCE(!name.empty(), Status::InvalidArgument, "module name can't be empty string \"\"");
  EMBER_ENFORCE(module != nullptr, Status::InvalidArgument, "cannot register a null module '", name, "'");
  for (const Entry& e : params_) {
    EMBER_ENFORCE(e.name != name, Status::InvalidArgument, "attribute '", name, "' already exists");
  }
  for (const Entry& e : buffers_) {
    EMBER_ENFORCE(e.name != name, Status::InvalidArgument, "attribute '", name, "' already exists");
  }
  for (auto& c : children_) {
    if (c.first == name) {
      c.second = std::move(module);
      return;
    }
  }
  children_.emplace_back(name, std::move(module));
}

Tensor Module::missing_state_default(const std::string&) const { return Tensor(); }

// --- device ------------------------------------------------------------------------

namespace {

// Points `t`'s TensorImpl at a copy of its data on `device` (torch's
// `param.data = param.data.to(device)`): the handle, requires_grad and the
// autograd metadata stay; the gradient is moved the same way.
void move_in_place(const Tensor& t, Device device) {
  if (!t.defined() || t.device() == device) return;
  const Tensor moved = t.detach().to(device);
  TensorImpl* impl = t.impl();
  const TensorImpl* src = moved.impl();
  impl->storage = src->storage;
  impl->offset = src->offset;
  impl->sizes = src->sizes;
  impl->strides = src->strides;
}

}  // namespace

Module& Module::to(Device device) {
  NoGradGuard no_grad;
  device = storage_device(device);
  visit("", true, [&](const std::string&, const Module& m) {
    for (const Entry& p : m.params_) {
      if (!p.tensor.defined()) continue;
      const Tensor g = p.tensor.grad();
      move_in_place(p.tensor, device);
      if (g.defined()) move_in_place(g, device);
    }
    for (const Entry& b : m.buffers_) move_in_place(b.tensor, device);
  });
  return *this;
}

// --- traversal -----------------------------------------------------------------------

// Calls f(prefix, module) for this module and (when recurse) every descendant,
// depth first in registration order, each module once.
template <typename F>
void Module::visit(const std::string& prefix, bool recurse, F&& f) const {
  std::set<const Module*> seen;
  struct Walker {
    std::set<const Module*>& seen;
    F& f;
    bool recurse;
    void operator()(const Module& m, const std::string& prefix) {
      if (!seen.insert(&m).second) return;
      f(prefix, m);
      if (!recurse) return;
      for (const auto& [name, child] : m.children_) (*this)(*child, prefix + name + ".");
    }
  };
  Walker{seen, f, recurse}(*this, prefix);
}

NamedTensors Module::named_parameters(bool recurse) const {
  NamedTensors out;
  std::set<const TensorImpl*> seen;
  visit("", recurse, [&](const std::string& prefix, const Module& m) {
    for (const Entry& p : m.params_) {
      if (p.tensor.defined() && seen.insert(p.tensor.impl()).second) out.emplace_back(prefix + p.name, p.tensor);
    }
  });
  return out;
}

NamedTensors Module::named_buffers(bool recurse) const {
  NamedTensors out;
  std::set<const TensorImpl*> seen;
  visit("", recurse, [&](const std::string& prefix, const Module& m) {
    for (const Entry& b : m.buffers_) {
      if (b.tensor.defined() && seen.insert(b.tensor.impl()).second) out.emplace_back(prefix + b.name, b.tensor);
    }
  });
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& c : children_) out.push_back(c.second);
  return out;
}

void Module::train(bool mode) {
  training_ = mode;
  for (auto& c : children_) c.second->train(mode);
}

void Module::zero_grad(bool set_to_none) {
  for (const Tensor& p : parameters()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      NoGradGuard no_grad;
      g.zero_();
    }
  }
}

// --- state_dict ----------------------------------------------------------------------

StateDict Module::state_dict() const {
  StateDict out;
  // Not deduplicated: a module reachable twice appears under both names, as in PyTorch.
  struct Walker {
    StateDict& out;
    void operator()(const Module& m, const std::string& prefix) {
      for (const Entry& p : m.params_) {
        if (p.tensor.defined()) out.emplace_back(prefix + p.name, p.tensor.detach());
      }
      for (const Entry& b : m.buffers_) {
        if (b.tensor.defined() && b.persistent) out.emplace_back(prefix + b.name, b.tensor.detach());
      }
      for (const auto& [name, child] : m.children_) (*this)(*child, prefix + name + ".");
    }
  };
  Walker{out}(*this, "");
  return out;
}

void Module::load_state_dict(const StateDict& input, bool strict) {
  // Every key under "module." (DataParallel) and none expected there: strip it.
  const StateDict own = state_dict();
  const std::string dp = "module.";
  bool strip = !input.empty();
  for (const auto& [key, value] : input) strip = strip && starts_with(key, dp);
  for (const auto& [key, value] : own) strip = strip && !starts_with(key, dp);
  StateDict dict;
  for (const auto& [key, value] : input) dict.emplace_back(strip ? key.substr(dp.size()) : key, value);

  std::vector<std::string> missing, unexpected, mismatches;
  std::vector<std::pair<Tensor, Tensor>> copies;  // (destination, source)
  struct Walker {
    const StateDict& dict;
    bool strict;
    std::vector<std::string>& missing;
    std::vector<std::string>& unexpected;
    std::vector<std::string>& mismatches;
    std::vector<std::pair<Tensor, Tensor>>& copies;
    void operator()(const Module& m, const std::string& prefix) {
      std::set<std::string> local;
      auto load = [&](const Entry& e, bool is_buffer) {
        if (!e.tensor.defined() || !e.persistent) return;
        local.insert(e.name);
        const std::string key = prefix + e.name;
        Tensor src = find_tensor(dict, key);
        bool present = false;
        for (const auto& kv : dict) present = present || kv.first == key;
        if (!present && is_buffer) src = m.missing_state_default(e.name);
        if (!present && !src.defined()) {
          if (strict) missing.push_back(key);
          return;
        }
        EMBER_ENFORCE(src.defined(), Status::InvalidArgument, "state_dict entry \"", key, "\" is an undefined tensor");
        if (src.sizes() != e.tensor.sizes()) {
          mismatches.push_back(str_cat("size mismatch for ", key, ": copying a param with shape ",
                                       torch_size(src.sizes()), " from checkpoint, the shape in current model is ",
                                       torch_size(e.tensor.sizes()), "."));
        } else if (src.dtype() != e.tensor.dtype()) {
          mismatches.push_back(str_cat("dtype mismatch for ", key, ": copying a param with dtype ", src.dtype(),
                                       " from checkpoint, the dtype in current model is ", e.tensor.dtype(), "."));
        } else {
          copies.emplace_back(e.tensor, src);
        }
      };
      for (const Entry& p : m.params_) load(p, false);
      for (const Entry& b : m.buffers_) load(b, true);
      if (strict) {  // PyTorch's rule: unknown first name component under this prefix
        for (const auto& [key, value] : dict) {
          if (!starts_with(key, prefix)) continue;
          const std::string rest = key.substr(prefix.size());
          const std::string first = rest.substr(0, rest.find('.'));
          bool is_child = false;
          for (const auto& c : m.children_) is_child = is_child || c.first == first;
          if (!is_child && !local.count(first)) unexpected.push_back(key);
        }
      }
      for (const auto& [name, child] : m.children_) (*this)(*child, prefix + name + ".");
    }
  };
  Walker{dict, strict, missing, unexpected, mismatches, copies}(*this, "");

  std::vector<std::string> errors;
  if (!missing.empty()) errors.push_back("Missing key(s) in state_dict: " + quoted_list(missing) + ". ");
  if (!unexpected.empty()) errors.push_back("Unexpected key(s) in state_dict: " + quoted_list(unexpected) + ". ");
  errors.insert(errors.end(), mismatches.begin(), mismatches.end());
  if (!errors.empty()) {
    std::string message = "Error(s) in loading state_dict for " + name_ + ":";
    for (const std::string& e : errors) message += "\n\t" + e;
    raise_error(Status::InvalidArgument, message);
  }
  NoGradGuard no_grad;
  for (auto& [dst, src] : copies) {
    if (!dst.is_same(src)) dst.copy_(src);
  }
}

// --- layers ----------------------------------------------------------------------------

Size2::Size2(std::initializer_list<int64_t> v) {
  EMBER_ENFORCE(v.size() == 1 || v.size() == 2, Status::InvalidArgument, "expected 1 or 2 sizes, got ", v.size());
  h = *v.begin();
  w = *(v.end() - 1);
}

namespace {
// PyTorch's default for Linear and Conv2d weights and biases.
void init_weight_and_bias(const Tensor& weight, const Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}
}  // namespace

Linear::Linear(int64_t in_features, int64_t out_features, bool with_bias, DType dtype)
    : Module("Linear"), in_features(in_features), out_features(out_features) {
  EMBER_ENFORCE(in_features >= 0 && out_features >= 0, Status::InvalidArgument,
              "Trying to create tensor with negative dimension ", std::min(in_features, out_features), ": [",
              out_features, ", ", in_features, "]");
  weight = register_parameter("weight", empty({out_features, in_features}, dtype));
  bias = register_parameter("bias", with_bias ? empty({out_features}, dtype) : Tensor());
  reset_parameters();
}

void Linear::reset_parameters() { init_weight_and_bias(weight, bias); }

Tensor Linear::forward(const Tensor& input) { return linear(input, weight, bias); }

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size, Size2 stride, Size2 padding,
               Size2 dilation, int64_t groups, bool with_bias, DType dtype)
    : Module("Conv2d"),
      in_channels(in_channels),
      out_channels(out_channels),
      kernel_size(kernel_size),
      stride(stride),
      padding(padding),
      dilation(dilation),
      groups(groups) {
  EMBER_ENFORCE(groups > 0, Status::InvalidArgument, "groups must be a positive integer");
  EMBER_ENFORCE(in_channels % groups == 0, Status::InvalidArgument, "in_channels must be divisible by groups");
  EMBER_ENFORCE(out_channels % groups == 0, Status::InvalidArgument, "out_channels must be divisible by groups");
  weight = register_parameter(
      "weight", empty({out_channels, in_channels / groups, kernel_size.h, kernel_size.w}, dtype));
  bias = register_parameter("bias", with_bias ? empty({out_channels}, dtype) : Tensor());
  reset_parameters();
}

void Conv2d::reset_parameters() { init_weight_and_bias(weight, bias); }

Tensor Conv2d::forward(const Tensor& input) {
  return conv2d(input, weight, bias, stride.vec(), padding.vec(), dilation.vec(), groups);
}

BatchNorm2d::BatchNorm2d(int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                         bool track_running_stats, DType dtype)
    : Module("BatchNorm2d"),
      num_features(num_features),
      eps(eps),
      momentum(momentum),
      affine(affine),
      track_running_stats(track_running_stats) {
  weight = register_parameter("weight", affine ? empty({num_features}, dtype) : Tensor());
  bias = register_parameter("bias", affine ? empty({num_features}, dtype) : Tensor());
  if (track_running_stats) {
    running_mean = register_buffer("running_mean", zeros({num_features}, dtype));
    running_var = register_buffer("running_var", ones({num_features}, dtype));
    num_batches_tracked = register_buffer("num_batches_tracked", scalar_tensor(0, DType::Int64));
  } else {
    register_buffer("running_mean", Tensor());
    register_buffer("running_var", Tensor());
    register_buffer("num_batches_tracked", Tensor());
  }
  reset_parameters();
}

void BatchNorm2d::reset_running_stats() {
  if (!track_running_stats) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void BatchNorm2d::reset_parameters() {
  reset_running_stats();
  if (affine) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

Tensor BatchNorm2d::missing_state_default(const std::string& local_name) const {
  // PyTorch fills a checkpoint's missing num_batches_tracked with 0 (old format).
  if (local_name == "num_batches_tracked") return scalar_tensor(0, DType::Int64);
  return Tensor();
}

Tensor BatchNorm2d::forward(const Tensor& input) {
  EMBER_ENFORCE(input.dim() == 4, Status::InvalidArgument, "expected 4D input (got ", input.dim(), "D input)");
  double factor = momentum.value_or(0.0);
  if (is_training() && track_running_stats) {
    {
      NoGradGuard no_grad;
      num_batches_tracked.add_(Scalar(1));
    }
    if (!momentum) factor = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
  }
  const bool use_batch_stats = is_training() || !running_mean.defined();
  if (!use_batch_stats) return batch_norm(input, running_mean, running_var, weight, bias, eps);

  EMBER_ENFORCE(input.size(1) == num_features, Status::ShapeMismatch, "running_mean should contain ", input.size(1),
              " elements not ", num_features);
  return batch_norm_train(input, running_mean, running_var, weight, bias, factor, eps);
}

LayerNorm::LayerNorm(Shape normalized_shape, double eps, bool elementwise_affine, DType dtype)
    : Module("LayerNorm"), normalized_shape(std::move(normalized_shape)), eps(eps),
      elementwise_affine(elementwise_affine) {
  if (elementwise_affine) {
    weight = register_parameter("weight", ones(this->normalized_shape, dtype));
    bias = register_parameter("bias", zeros(this->normalized_shape, dtype));
  } else {
    register_parameter("weight", Tensor());
    register_parameter("bias", Tensor());
  }
}

Tensor LayerNorm::forward(const Tensor& input) { return layer_norm(input, normalized_shape, weight, bias, eps); }

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx, DType dtype)
    : Module("Embedding"), num_embeddings(num_embeddings), embedding_dim(embedding_dim), padding_idx(padding_idx) {
  if (padding_idx) {
    EMBER_ENFORCE(*padding_idx < num_embeddings && *padding_idx >= -num_embeddings, Status::InvalidArgument,
                "Padding_idx must be within num_embeddings");
    if (*padding_idx < 0) this->padding_idx = *padding_idx + num_embeddings;
  }
  weight = register_parameter("weight", empty({num_embeddings, embedding_dim}, dtype));
  init::normal_(weight);
  if (this->padding_idx) {
    NoGradGuard no_grad;
    weight[*this->padding_idx].zero_();
  }
}

Tensor Embedding::forward(const Tensor& indices) { return embedding(weight, indices, padding_idx); }

Dropout::Dropout(double p) : Module("Dropout"), p(p) {
  EMBER_ENFORCE(p >= 0 && p <= 1, Status::InvalidArgument, "dropout probability has to be between 0 and 1, but got ",
              py_float(p));
}

Tensor Dropout::forward(const Tensor& input) {
  if (!is_training() || p == 0 || input.numel() == 0) return input;
  if (p == 1) return input * scalar_tensor(0, TensorOptions(input.dtype()).device(input.device()));
  // PyTorch: noise.bernoulli_(1 - p) (a float64 uniform per element, kept when
  // below 1 - p), noise.div_(1 - p), input * noise. The mask is drawn from the
  // CPU generator on every device (so a CUDA run drops what the CPU run drops).
  const Tensor u = rand(input.sizes(), DType::Float64);
  const double keep = 1 - p;
  Tensor noise = lt(u, keep).to(input.dtype()).to(input.device());
  {
    NoGradGuard no_grad;
    noise.div_(Scalar(keep));
  }
  return input * noise;
}

Tensor ReLU::forward(const Tensor& input) { return relu(input); }

GELU::GELU(std::string approximate) : Module("GELU"), approximate(std::move(approximate)) {}

Tensor GELU::forward(const Tensor& input) { return gelu(input, approximate); }

Tensor Flatten::forward(const Tensor& input) { return input.flatten(start_dim, end_dim); }

MaxPool2d::MaxPool2d(Size2 kernel_size, std::optional<Size2> stride, Size2 padding, Size2 dilation, bool ceil_mode)
    : Module("MaxPool2d"),
      kernel_size(kernel_size),
      stride(stride.value_or(kernel_size)),
      padding(padding),
      dilation(dilation),
      ceil_mode(ceil_mode) {}

Tensor MaxPool2d::forward(const Tensor& input) {
  return max_pool2d(input, kernel_size.vec(), stride.vec(), padding.vec(), dilation.vec(), ceil_mode);
}

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) : Module("Sequential") {
  for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(size()), std::move(module));
}

std::shared_ptr<Module> Sequential::operator[](int64_t index) const {
  const int64_t n = static_cast<int64_t>(size());
  EMBER_ENFORCE(index >= -n && index < n, Status::OutOfRange, "index ", index, " is out of range");
  return named_children()[static_cast<size_t>(index < 0 ? index + n : index)].second;
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& [name, m] : named_children()) x = m->forward(x);
  return x;
}

}  // namespace ember::nn
