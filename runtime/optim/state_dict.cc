// state_dict() / load_state_dict() of the optimizers and LR schedulers in
// torch 1.13's layout (one parameter group). Adam's "step" is a float32 0-d
// tensor, as torch keeps it; SGD's momentum_buffer is None until it exists.
#include <cmath>
#include <string>

#include "runtime/autograd/grad_mode.h"
#include "runtime/ops/ops.h"
#include "runtime/optim/lr_scheduler.h"
#include "runtime/optim/optimizer.h"

namespace ember::optim {
namespace {

const char* kind_name(const StateValue& v) {
  switch (v.index()) {
    case 0: return "None";
    case 1: return "a bool";
    case 2: return "an int";
    case 3: return "a float";
    case 4: return "a list of floats";
    case 5: return "a list of ints";
    default: return "a tensor";
  }
}

// Reads dict[key] for the messages' `where` ("param_groups[0]", "state[1]", ...).
class Reader {
 public:
  Reader(const StateDict& dict, std::string where) : dict_(dict), where_(std::move(where)) {}

  const StateValue& at(const std::string& key) const {
    const auto it = dict_.find(key);
    EMBER_ENFORCE(it != dict_.end(), Status::InvalidArgument, "load_state_dict: ", where_, " has no key '", key, "'");
    return it->second;
  }
  bool has(const std::string& key) const { return dict_.count(key) != 0; }

  double number(const std::string& key) const {
    const StateValue& v = at(key);
    if (const double* d = std::get_if<double>(&v)) return *d;
    if (const int64_t* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
    wrong(key, "a number", v);
  }
  int64_t integer(const std::string& key) const {
    const StateValue& v = at(key);
    if (const int64_t* i = std::get_if<int64_t>(&v)) return *i;
    if (const double* d = std::get_if<double>(&v); d && std::floor(*d) == *d) return static_cast<int64_t>(*d);
    wrong(key, "an int", v);
  }
  bool flag(const std::string& key) const {
    const StateValue& v = at(key);
    if (const bool* b = std::get_if<bool>(&v)) return *b;
    wrong(key, "a bool", v);
  }
  std::vector<double> numbers(const std::string& key, size_t count) const {
    const StateValue& v = at(key);
    const std::vector<double>* list = std::get_if<std::vector<double>>(&v);
    if (list == nullptr || list->size() != count) wrong(key, str_cat("a list of ", count, " floats").c_str(), v);
    return *list;
  }
  // A copy of a state tensor, cast to the parameter's dtype and device; None gives undefined.
  Tensor tensor_like(const std::string& key, const Tensor& param) const {
    const StateValue& v = at(key);
    if (std::holds_alternative<std::monostate>(v)) return Tensor();
    const Tensor* t = std::get_if<Tensor>(&v);
    if (t == nullptr || !t->defined()) wrong(key, "a tensor", v);
    EMBER_ENFORCE(t->sizes() == param.sizes(), Status::ShapeMismatch, "load_state_dict: ", where_, "['", key,
                "'] has shape ", shape_str(t->sizes()), " but its parameter has shape ", shape_str(param.sizes()));
    NoGradGuard no_grad;
    return t->to(param.dtype()).to(param.device()).clone();
  }
  // Adam's step: torch's float tensor, or a number.
  int64_t step(const std::string& key) const {
    const StateValue& v = at(key);
    if (const Tensor* t = std::get_if<Tensor>(&v); t && t->defined() && t->numel() == 1) {
      return static_cast<int64_t>(t->item<double>());
    }
    return integer(key);
  }

 private:
  [[noreturn]] void wrong(const std::string& key, const char* expected, const StateValue& got) const {
    raise_error(Status::InvalidArgument, str_cat("load_state_dict: ", where_, "['", key, "'] must be ", expected,
                                                 ", got ", kind_name(got)));
  }
  const StateDict& dict_;
  std::string where_;
};

std::string state_where(int64_t i) { return str_cat("state[", i, "]"); }

// The entries of state.state, each checked to name one of `n` parameters.
void check_state_indices(const OptimizerState& state, size_t n) {
  for (const auto& entry : state.state) {
    EMBER_ENFORCE(entry.first >= 0 && entry.first < static_cast<int64_t>(n), Status::OutOfRange,
                "load_state_dict: state for parameter ", entry.first, ", but the optimizer has ", n, " parameters");
  }
}

void check_no_maximize(const Reader& group) {
  EMBER_ENFORCE(!group.has("maximize") || !group.flag("maximize"), Status::NotSupported,
              "load_state_dict: maximize=True is not supported");
}

// Adam's and AdamW's per-parameter state.
std::map<int64_t, StateDict> adam_state(const std::vector<AdamState>& states, bool amsgrad) {
  std::map<int64_t, StateDict> out;
  for (size_t i = 0; i < states.size(); ++i) {
    const AdamState& s = states[i];
    if (s.step == 0) continue;
    StateDict d{{"step", scalar_tensor(static_cast<double>(s.step), DType::Float32)},
                {"exp_avg", s.exp_avg},
                {"exp_avg_sq", s.exp_avg_sq}};
    if (amsgrad) d["max_exp_avg_sq"] = s.max_exp_avg_sq;
    out[static_cast<int64_t>(i)] = std::move(d);
  }
  return out;
}

std::vector<AdamState> load_adam_state(const OptimizerState& state, const std::vector<Tensor>& params,
                                       bool amsgrad) {
  check_state_indices(state, params.size());
  std::vector<AdamState> out(params.size());
  for (const auto& [i, dict] : state.state) {
    const Reader r(dict, state_where(i));
    const Tensor& p = params[static_cast<size_t>(i)];
    AdamState& s = out[static_cast<size_t>(i)];
    s.step = r.step("step");
    EMBER_ENFORCE(s.step > 0, Status::InvalidArgument, "load_state_dict: ", state_where(i),
                "['step'] must be positive, got ", s.step);
    s.exp_avg = r.tensor_like("exp_avg", p);
    s.exp_avg_sq = r.tensor_like("exp_avg_sq", p);
    if (amsgrad) s.max_exp_avg_sq = r.tensor_like("max_exp_avg_sq", p);
    EMBER_ENFORCE(s.exp_avg.defined() && s.exp_avg_sq.defined() && (!amsgrad || s.max_exp_avg_sq.defined()),
                Status::InvalidArgument, "load_state_dict: ", state_where(i), " has None moments");
  }
  return out;
}

}  // namespace

StateDict Optimizer::group_dict() const {
  std::vector<int64_t> ids(params_.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  StateDict g{{"lr", lr_}, {"params", ids}, {"maximize", false}, {"foreach", std::monostate{}},
              {"differentiable", false}};
  if (initial_lr_) g["initial_lr"] = *initial_lr_;
  return g;
}

const StateDict& Optimizer::load_group(const OptimizerState& state) {
  EMBER_ENFORCE(state.param_groups.size() == 1, Status::InvalidArgument,
              "loaded state dict has a different number of parameter groups");
  const StateDict& group = state.param_groups[0];
  const Reader r(group, "param_groups[0]");
  const StateValue& ids = r.at("params");
  const auto* list = std::get_if<std::vector<int64_t>>(&ids);
  EMBER_ENFORCE(list != nullptr, Status::InvalidArgument, "load_state_dict: param_groups[0]['params'] must be a list of "
              "ints, got ", kind_name(ids));
  EMBER_ENFORCE(list->size() == params_.size(), Status::InvalidArgument,
              "loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
  check_no_maximize(r);
  (void)r.number("lr");
  if (r.has("initial_lr")) (void)r.number("initial_lr");
  return group;
}

void Optimizer::apply_group(const StateDict& group) {
  const Reader r(group, "param_groups[0]");
  lr_ = r.number("lr");
  if (r.has("initial_lr")) initial_lr_ = r.number("initial_lr");
}

OptimizerState SGD::state_dict() const {
  OptimizerState out;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (momentum_buffers_[i].defined()) out.state[static_cast<int64_t>(i)] = {{"momentum_buffer", momentum_buffers_[i]}};
  }
  StateDict g = group_dict();
  g["momentum"] = options_.momentum;
  g["dampening"] = options_.dampening;
  g["weight_decay"] = options_.weight_decay;
  g["nesterov"] = options_.nesterov;
  out.param_groups.push_back(std::move(g));
  return out;
}

void SGD::load_state_dict(const OptimizerState& state) {
  const StateDict& group = load_group(state);
  const Reader r(group, "param_groups[0]");
  SGDOptions o{r.number("lr"), r.number("momentum"), r.number("dampening"), r.number("weight_decay"), r.flag("nesterov")};
  check_state_indices(state, params_.size());
  std::vector<Tensor> buffers(params_.size());
  for (const auto& [i, dict] : state.state) {
    buffers[static_cast<size_t>(i)] = Reader(dict, state_where(i)).tensor_like("momentum_buffer", params_[i]);
  }
  options_ = o;
  momentum_buffers_ = std::move(buffers);
  apply_group(group);
}

OptimizerState Adam::state_dict() const {
  OptimizerState out;
  out.state = adam_state(state_, options_.amsgrad);
  StateDict g = group_dict();
  g["betas"] = std::vector<double>{options_.beta1, options_.beta2};
  g["eps"] = options_.eps;
  g["weight_decay"] = options_.weight_decay;
  g["amsgrad"] = options_.amsgrad;
  g["capturable"] = false;
  g["fused"] = false;
  out.param_groups.push_back(std::move(g));
  return out;
}

void Adam::load_state_dict(const OptimizerState& state) {
  const StateDict& group = load_group(state);
  const Reader r(group, "param_groups[0]");
  const std::vector<double> betas = r.numbers("betas", 2);
  AdamOptions o{r.number("lr"), betas[0], betas[1], r.number("eps"), r.number("weight_decay"), r.flag("amsgrad")};
  state_ = load_adam_state(state, params_, o.amsgrad);
  options_ = o;
  apply_group(group);
}

OptimizerState AdamW::state_dict() const {
  OptimizerState out;
  out.state = adam_state(state_, options_.amsgrad);
  StateDict g = group_dict();
  g.erase("differentiable");  // torch 1.13's AdamW group has no such key
  g["betas"] = std::vector<double>{options_.beta1, options_.beta2};
  g["eps"] = options_.eps;
  g["weight_decay"] = options_.weight_decay;
  g["amsgrad"] = options_.amsgrad;
  g["capturable"] = false;
  out.param_groups.push_back(std::move(g));
  return out;
}

void AdamW::load_state_dict(const OptimizerState& state) {
  const StateDict& group = load_group(state);
  const Reader r(group, "param_groups[0]");
  const std::vector<double> betas = r.numbers("betas", 2);
  AdamWOptions o{r.number("lr"), betas[0], betas[1], r.number("eps"), r.number("weight_decay"), r.flag("amsgrad")};
  state_ = load_adam_state(state, params_, o.amsgrad);
  options_ = o;
  apply_group(group);
}

// --- schedulers -------------------------------------------------------------------

StateDict LRScheduler::state_dict() const {
  return {{"base_lrs", std::vector<double>{base_lr_}},
          {"last_epoch", last_epoch_},
          {"_step_count", step_count_},
          {"_last_lr", std::vector<double>{last_lr_}},
          {"verbose", false},
          {"_get_lr_called_within_step", false}};
}

void LRScheduler::load_state_dict(const StateDict& state) {
  const Reader r(state, "the scheduler's state dict");
  const double base = r.numbers("base_lrs", 1)[0];
  const int64_t last_epoch = r.integer("last_epoch");
  const int64_t step_count = r.integer("_step_count");
  const double last_lr = r.numbers("_last_lr", 1)[0];
  base_lr_ = base;
  last_epoch_ = last_epoch;
  step_count_ = step_count;
  last_lr_ = last_lr;
}

StateDict StepLR::state_dict() const {
  StateDict d = LRScheduler::state_dict();
  d["step_size"] = step_size_;
  d["gamma"] = gamma_;
  return d;
}

void StepLR::load_state_dict(const StateDict& state) {
  const Reader r(state, "the scheduler's state dict");
  const int64_t step_size = r.integer("step_size");
  EMBER_ENFORCE(step_size > 0, Status::InvalidArgument, "StepLR: step_size must be positive, got ", step_size);
  const double gamma = r.number("gamma");
  LRScheduler::load_state_dict(state);
  step_size_ = step_size;
  gamma_ = gamma;
}

StateDict CosineAnnealingLR::state_dict() const {
  StateDict d = LRScheduler::state_dict();
  d["T_max"] = t_max_;
  d["eta_min"] = eta_min_;
  return d;
}

void CosineAnnealingLR::load_state_dict(const StateDict& state) {
  const Reader r(state, "the scheduler's state dict");
  const int64_t t_max = r.integer("T_max");
  EMBER_ENFORCE(t_max > 0, Status::InvalidArgument, "CosineAnnealingLR: T_max must be positive, got ", t_max);
  const double eta_min = r.number("eta_min");
  LRScheduler::load_state_dict(state);
  t_max_ = t_max;
  eta_min_ = eta_min;
}

}  // namespace ember::optim
