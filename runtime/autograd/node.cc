// Nodes and saved tensors (compiled with or without the autograd engine).
#include "runtime/autograd/node.h"

#include <atomic>


namespace ember {

std::string_view grad_rule_name(GradRule rule) {
  switch (rule) {
#define RT_GRAD(r, name) \
  case GradRule::r:      \
    return name;
#include "runtime/autograd/grad_rules.def"
#undef RT_GRAD
  }
  return "UnknownBackward";
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
  EMBER_CHECK(!released_, Status::InvalidState,
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

Node::Node(GradRule r) : rule(r), sequence_nr(next_sequence_nr.fetch_add(1)) {}

Node& Node::save(const Tensor& t) {
  const AutogradMeta* m = autograd_meta(t);
  const std::string producer = m && m->grad_fn ? std::string(m->grad_fn->name()) : std::string();
  saved.emplace_back(t, producer);
  return *this;
}

void Node::release_saved() {
  for (SavedTensor& s : saved) s.release();
}

}  // namespace ember
