// torch.nn.Module and the common layers. Modules are held by shared_ptr
// (std::make_shared<nn::Linear>(64, 32)); a module's parameters, buffers and
// children are registered by name in order, which gives named_parameters()
// and state_dict() PyTorch's names ("0.weight", "fc1.bias") and order.
// Members such as Linear::weight share their TensorImpl with the registered
// entry, so in-place updates (optimizers, load_state_dict) are seen by both;
// assigning a new tensor to a member needs register_parameter again.
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/nn/named_tensors.h"
#include "runtime/tensor/tensor.h"

namespace ember::nn {

class Module;
using NamedModules = std::vector<std::pair<std::string, std::shared_ptr<Module>>>;

class Module {
 public:
  // `name` is the class name that error messages show ("Linear").
  explicit Module(std::string name = "Module") : name_(std::move(name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  virtual Tensor forward(const Tensor& input) = 0;
  Tensor operator()(const Tensor& input) { return forward(input); }
  const std::string& name() const { return name_; }

  // Own parameters first, then the children's, depth first; each tensor once.
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  const NamedModules& named_children() const { return children_; }

  // Sets training mode here and in every descendant.
  void train(bool mode = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Each module's parameters, then its persistent buffers, then its children's
  // entries (prefixed "child."), as PyTorch orders them. Tensors are detached
  // aliases of the module's.
  StateDict state_dict() const;
  // Copies matching entries into the parameters and buffers (in place, no
  // autograd). Every key may carry a "module." prefix (DataParallel
  // checkpoints): it is stripped. Raises, before copying anything,
  //   Error(s) in loading state_dict for Linear:
  //   	Missing key(s) in state_dict: "bias". (strict only)
  //   	Unexpected key(s) in state_dict: "foo". (strict only)
  //   	size mismatch for weight: copying a param with shape torch.Size([4, 4]) from
  //   checkpoint, the shape in current model is torch.Size([3, 4]).
  //   	dtype mismatch for weight: copying a param with dtype torch.float64 from checkpoint,
  //   the dtype in current model is torch.float32.
  void load_state_dict(const StateDict& state_dict, bool strict = true);

  // Zeroes every parameter's gradient (set_to_none drops it instead).
  void zero_grad(bool set_to_none = false);

  // Moves every parameter and buffer (recursively) to `device` in place, as
  // torch's module.to(device): each tensor keeps its identity (the layer's
  // `weight` member, an optimizer built before the move, see the new data), its
  // gradient moves with it, and tensors already there are left as they are.
  Module& to(Device device);

 protected:
  // An undefined tensor registers the name without a value (PyTorch's None):
  // it is left out of parameters() and state_dict(). Registering an existing
  // parameter name replaces it. Parameters are made leaves that require grad.
  Tensor register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  // persistent=false keeps the buffer out of state_dict().
  Tensor register_buffer(const std::string& name, Tensor tensor, bool persistent = true);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }
  // The value load_state_dict uses when `local_name` (a buffer of this
  // module) is absent from a checkpoint; undefined means "missing key".
  virtual Tensor missing_state_default(const std::string& local_name) const;

 private:
  struct Entry {
    std::string name;
    Tensor tensor;
    bool persistent = true;
  };
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name, const char* kind) const;
  template <typename F>
  void visit(const std::string& prefix, bool recurse, F&& f) const;

  std::string name_;
  bool training_ = true;
  std::vector<Entry> params_;
  std::vector<Entry> buffers_;
  NamedModules children_;
};

// Two sizes (height, width) from one number or a {h, w} list.
struct Size2 {
  int64_t h = 0, w = 0;
  Size2(int64_t v) : h(v), w(v) {}  // NOLINT
  Size2(std::initializer_list<int64_t> v);
  std::vector<int64_t> vec() const { return {h, w}; }
};

// y = x W^T + b. weight [out, in]: kaiming_uniform_(a = sqrt(5)); bias [out]:
// U(-1/sqrt(in), 1/sqrt(in)), drawn in that order as PyTorch does.
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, DType dtype = kDefaultFloat);
  Tensor forward(const Tensor& input) override;
  void reset_parameters();
  int64_t in_features, out_features;
  Tensor weight, bias;
};

// weight [out, in / groups, kh, kw], bias [out]; initialized as Linear with
// fan_in = in / groups * kh * kw.
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size, Size2 stride = 1, Size2 padding = 0,
         Size2 dilation = 1, int64_t groups = 1, bool bias = true, DType dtype = kDefaultFloat);
  Tensor forward(const Tensor& input) override;
  void reset_parameters();
  int64_t in_channels, out_channels;
  Size2 kernel_size, stride, padding, dilation;
  int64_t groups;
  Tensor weight, bias;
};

// Over NCHW inputs. Training: normalizes with the batch's mean and biased
// variance and, when tracking, updates running_mean/running_var (unbiased
// variance) with `momentum` (nullopt: cumulative average) and counts
// num_batches_tracked (int64, 0-dim). Eval: uses the running statistics.
class BatchNorm2d : public Module {
 public:
  BatchNorm2d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1, bool affine = true,
              bool track_running_stats = true, DType dtype = kDefaultFloat);
  Tensor forward(const Tensor& input) override;
  void reset_running_stats();
  void reset_parameters();
  int64_t num_features;
  double eps;
  std::optional<double> momentum;
  bool affine, track_running_stats;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 protected:
  Tensor missing_state_default(const std::string& local_name) const override;
};

// Normalizes over the trailing `normalized_shape` dims; weight ones, bias zeros.
class LayerNorm : public Module {
 public:
  LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
            DType dtype = kDefaultFloat);
  Tensor forward(const Tensor& input) override;
  Shape normalized_shape;
  double eps;
  bool elementwise_affine;
  Tensor weight, bias;
};

// A lookup table [num_embeddings, embedding_dim] initialized N(0, 1); the row
// padding_idx (negative counts from the end) is zeroed.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt,
            DType dtype = kDefaultFloat);
  Tensor forward(const Tensor& indices) override;
  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;
  Tensor weight;
};

// Training: zeroes each element with probability p (keeps it where a float64
// uniform draw is < 1 - p, PyTorch's bernoulli_) and scales by 1 / (1 - p).
// Eval, or p = 0: the input itself.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& input) override;
  double p;
};

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& input) override;
};

class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& input) override;
  std::string approximate;
};

class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : Module("Flatten"), start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& input) override;
  int64_t start_dim, end_dim;
};

// stride defaults to kernel_size.
class MaxPool2d : public Module {
 public:
  MaxPool2d(Size2 kernel_size, std::optional<Size2> stride = std::nullopt, Size2 padding = 0, Size2 dilation = 1,
            bool ceil_mode = false);
  Tensor forward(const Tensor& input) override;
  Size2 kernel_size, stride, padding, dilation;
  bool ceil_mode;
};

// Runs its modules in order; they are children "0", "1", ...
class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);
  std::shared_ptr<Module> operator[](int64_t index) const;
  size_t size() const { return named_children().size(); }
  Tensor forward(const Tensor& input) override;
};

}  // namespace ember::nn
