// Nodes and saved tensors (compiled with or without the autograd engine).
#include "runtime/autograd/node.h"

#include <algorithm>
#include <atomic>

namespace ember {

std::string_view grad_rule_name(GradRule rule) {
  switch (rule) {
#define RT_GRAD(r, name) \
  case GradRule::r:      \
    return name;
#define RT_GRAD_ALIAS(rule, name, base) RT_GRAD(rule, name)
#include "runtime/autograd/grad_rules.def"
#undef RT_GRAD_ALIAS
#undef RT_GRAD
  }
  return "UnknownBackward";
}

GradRule base_rule(GradRule rule) {
  switch (rule) {
#define RT_GRAD(r, name) \
  case GradRule::r:      \
    return rule;
#define RT_GRAD_ALIAS(r, name, base) \
  case GradRule::r:                  \
    return GradRule::base;
#include "runtime/autograd/grad_rules.def"
#undef RT_GRAD_ALIAS
#undef RT_GRAD
  }
  return rule;
}

namespace {

std::atomic<uint64_t> next_sequence_nr{0};

std::string type_str(const Tensor& t) {
  return str_cat("torch.", dtype_legacy_name(t.dtype()), "Tensor");
}

}  // namespace


SavedTensor::SavedTensor(const Tensor& t, std::string producer)
    : data_(t.defined() ? t.detach() : Tensor()),
      version_(t.defined() ? t.version() : 0),
      producer_(std::move(producer)) {}

Tensor SavedTensor::unpack() const {
  EMBER_ENFORCE(!released_, Status::InvalidState,
              "Trying to backward through the graph a second time (or directly access saved tensors after "
              "they have already been freed). Saved intermediate values of the graph are freed when you call "
              ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
              "graph a second time or if you need to access saved tensors after calling backward.");
  if (data_.defined() && data_.version() != version_) {
    const std::string what = str_cat("[", type_str(data_), " ", shape_str(data_.sizes()), "]");
    const std::string origin = producer_.empty() ? "" : str_cat(", which is output 0 of ", producer_, ",");
    raise_error(Status::InvalidState,
                str_cat("one of the variables needed for gradient computation has been modified by an "
                        "inplace operation: ",
                        what, origin, " is at version ", data_.version(), "; expected version ", version_,
                        " instead. Hint: enable anomaly detection to find the operation that failed to "
                        "compute its gradient, with torch.autograd.set_detect_anomaly(True)."));
  }
  return data_;
}

void SavedTensor::unshare(const Storage& storage) {
  if (!data_.defined() || data_.storage() != storage || data_.version() != version_) return;
  data_ = data_.clone();
  version_ = data_.version();
}

AutogradMeta& ensure_autograd_meta(const Tensor& t) {
  if (!t.impl()->autograd) t.impl()->autograd = std::make_shared<AutogradMeta>();
  return *t.impl()->autograd;
}

std::vector<int64_t> as_strided_geometry(const Tensor& base, IntArrayRef sizes, IntArrayRef strides,
                                         int64_t offset) {
  // The last element a geometry reaches (its offset when it has no elements).
  const auto last = [](IntArrayRef sz, IntArrayRef st, int64_t off) {
    int64_t end = off;
    for (size_t d = 0; d < sz.size(); ++d) {
      if (sz[d] == 0) return off;
      end += (sz[d] - 1) * st[d];
    }
    return end;
  };
  const int64_t lo = std::min(base.storage_offset(), offset);
  const int64_t hi = std::max(last(base.sizes(), base.strides(), base.storage_offset()), last(sizes, strides, offset));
  std::vector<int64_t> ints(sizes.begin(), sizes.end());
  ints.insert(ints.end(), strides.begin(), strides.end());
  ints.push_back(offset - lo);
  ints.push_back(base.storage_offset() - lo);
  ints.push_back(hi - lo + 1);
  ints.insert(ints.end(), base.strides().begin(), base.strides().end());
  return ints;
}

Node::Node(GradRule r) : rule(r), sequence_nr(next_sequence_nr.fetch_add(1)) {}

Node& Node::save(const Tensor& t) {
  const AutogradMeta* m = autograd_meta(t);
  const std::shared_ptr<Node> fn = m ? t.grad_fn() : nullptr;
  const std::string producer = fn ? std::string(fn->name()) : std::string();
  saved.emplace_back(t, producer);
  return *this;
}

namespace autograd {
void rename_grad_fn(const Tensor& out, GradRule alias) {
  AutogradMeta* m = autograd_meta(out);
  if (m != nullptr && m->grad_fn && base_rule(m->grad_fn->rule) == base_rule(alias)) m->grad_fn->rule = alias;
}
}  // namespace autograd

void Node::release_saved() {
  for (SavedTensor& s : saved) s.release();
  if (wrapped) wrapped->release_saved();
}

}  // namespace ember
