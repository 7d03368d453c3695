#include "runtime/train/finetune.h"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <numeric>

#include "runtime/autograd/grad_mode.h"
#include "runtime/core/error.h"
#include "runtime/core/rng.h"
#include "runtime/nn/loss.h"
#include "runtime/ops/ops.h"
#include "runtime/optim/clip_grad.h"
#include "runtime/optim/lr_scheduler.h"
#include "runtime/optim/optimizer.h"
#include "runtime/train/checkpoint.h"

namespace ember {
namespace {

// The data set after its checks: the inputs in model order, the targets, N.
struct Batches {
  std::vector<Tensor> inputs;
  Tensor target;
  int64_t n = 0;
};

const Tensor* find_key(const std::vector<NpzEntry>& data, const std::string& key) {
  for (const NpzEntry& e : data) {
    if (e.name == key) return &e.value;
  }
  return nullptr;
}

std::string keys_of(const std::vector<NpzEntry>& data) {
  std::string s;
  for (const NpzEntry& e : data) s += (s.empty() ? "" : ", ") + e.name;
  return s;
}

bool is_classification(const std::string& loss) { return loss == "cross-entropy"; }

Status check_data(const Executor& ex, const std::vector<NpzEntry>& data, const std::string& where,
                  const FinetuneConfig& c, Batches* b, std::string* error) {
  const std::vector<IOInfo>& declared = ex.inputs();
  if (c.inputs.size() != declared.size()) {
    std::string names;
    for (const IOInfo& io : declared) names += (names.empty() ? "" : ", ") + io.name;
    return report_error(error, Status::InvalidArgument, "the model has ", declared.size(), " inputs (", names,
                        "); --input gives ", c.inputs.size());
  }
  const auto get = [&](const std::string& key, const Tensor** t) {
    *t = find_key(data, key);
    if (*t == nullptr)
      return report_error(error, Status::InvalidArgument, "'", where, "' has no array '", key, "' (it has ",
                          keys_of(data), ")");
    if ((*t)->dim() == 0)
      return report_error(error, Status::ShapeMismatch, "'", where, "': array '", key,
                          "' is a scalar; its first dim must index the samples");
    if (b->n == 0) b->n = (*t)->size(0);
    if ((*t)->size(0) != b->n)
      return report_error(error, Status::ShapeMismatch, "'", where, "': array '", key, "' has ", (*t)->size(0),
                          " samples, the others ", b->n);
    return Status::Ok;
  };
  b->inputs.assign(declared.size(), Tensor());
  for (const auto& [name, key] : c.inputs) {
    size_t i = 0;
    while (i < declared.size() && declared[i].name != name) ++i;
    if (i == declared.size()) return report_error(error, Status::InvalidArgument, "the model has no input '", name, "'");
    const IOInfo& io = declared[i];
    const Tensor* t = nullptr;
    EMBER_TRY(get(key, &t));
    Tensor x = *t;
    if (x.dtype() == DType::Float64 && io.dtype == DType::Float32) x = x.to(DType::Float32);  // np's default
    if (x.dtype() != io.dtype)
      return report_error(error, Status::DTypeMismatch, "'", where, "': array '", key, "' is ", dtype_name(x.dtype()),
                          ", model input '", name, "' takes ", dtype_name(io.dtype));
    if (x.dim() != static_cast<int64_t>(io.shape.size()))
      return report_error(error, Status::ShapeMismatch, "'", where, "': array '", key, "' has rank ", x.dim(),
                          ", model input '", name, "' rank ", io.shape.size(), " (the first dim is the batch)");
    if (io.shape[0] >= 0 && io.shape[0] != c.batch_size)
      return report_error(error, Status::ShapeMismatch, "model input '", name, "' has a static batch dimension of ",
                          io.shape[0], ": re-export the model with a dynamic batch axis, or use --batch-size ",
                          io.shape[0]);
    for (size_t d = 1; d < io.shape.size(); ++d) {
      if (io.shape[d] >= 0 && io.shape[d] != x.size(static_cast<int64_t>(d)))
        return report_error(error, Status::ShapeMismatch, "'", where, "': array '", key, "' has shape ",
                            shape_str(x.sizes()), ", model input '", name, "' dim ", d, " is ", io.shape[d]);
    }
    b->inputs[i] = x;
  }
  const Tensor* t = nullptr;
  EMBER_TRY(get(c.target, &t));
  b->target = *t;
  if (is_classification(c.loss)) {
    if (b->target.dtype() != DType::Int64 && b->target.dtype() != DType::Int32)
      return report_error(error, Status::DTypeMismatch, "'", where, "': target '", c.target, "' is ",
                          dtype_name(b->target.dtype()), "; cross-entropy takes integer class labels");
    b->target = b->target.to(DType::Int64);
    const std::vector<int64_t>& out = ex.outputs().at(0).shape;
    const int64_t classes = out.size() >= 2 ? out[1] : -1;
    const int64_t* p = b->target.contiguous().data_ptr<int64_t>();
    for (int64_t i = 0; i < b->target.numel(); ++i) {
      if (p[i] < 0 || (classes >= 0 && p[i] >= classes))
        return report_error(error, Status::InvalidArgument, "'", where, "': target '", c.target, "' holds label ",
                            p[i], " at ", i, ", outside [0, ", classes, ")");
    }
  } else {
    if (b->target.dtype() == DType::Float64) b->target = b->target.to(DType::Float32);
    if (b->target.dtype() != DType::Float32)
      return report_error(error, Status::DTypeMismatch, "'", where, "': target '", c.target, "' is ",
                          dtype_name(b->target.dtype()), "; ", c.loss, " takes float targets");
  }
  if (b->n == 0) return report_error(error, Status::InvalidArgument, "'", where, "' holds no samples");
  return Status::Ok;
}

Tensor loss_of(const std::string& loss, const Tensor& out, const Tensor& target) {
  if (loss == "cross-entropy") return nn::cross_entropy(out, target);
  EMBER_ENFORCE(out.sizes() == target.sizes(), Status::ShapeMismatch, loss, ": the output has shape ",
              shape_str(out.sizes()), ", the target ", shape_str(target.sizes()));
  if (loss == "mse") return nn::mse_loss(out, target);
  if (loss == "l1") return nn::l1_loss(out, target);
  if (loss == "bce-logits") return nn::binary_cross_entropy_with_logits(out, target);
  raise_error(Status::Internal, str_cat("unknown loss '", loss, "' (check_config lets none through)"));
}

std::unique_ptr<optim::Optimizer> make_optimizer(const std::vector<Tensor>& params, const FinetuneConfig& c) {
  if (c.optimizer == "sgd") return std::make_unique<optim::SGD>(params, optim::SGDOptions{c.lr, c.momentum, 0.0, c.weight_decay});
  if (c.optimizer == "adam") {
    optim::AdamOptions o;
    o.lr = c.lr;
    o.weight_decay = c.weight_decay;
    return std::make_unique<optim::Adam>(params, o);
  }
  if (c.optimizer == "adamw") {
    optim::AdamWOptions o;
    o.lr = c.lr;
    o.weight_decay = c.weight_decay;
    return std::make_unique<optim::AdamW>(params, o);
  }
  raise_error(Status::Internal, str_cat("unknown optimizer '", c.optimizer, "' (check_config lets none through)"));
}

// "step:SIZE:GAMMA" or "cosine:TMAX".
std::unique_ptr<optim::LRScheduler> make_scheduler(optim::Optimizer& opt, const std::string& spec) {
  if (spec.empty()) return nullptr;
  const auto bad = [&] {
    raise_error(Status::InvalidArgument,
                str_cat("--scheduler '", spec, "': expected step:SIZE:GAMMA or cosine:TMAX (e.g. step:10:0.5)"));
  };
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) bad();
  const std::string kind = spec.substr(0, colon), rest = spec.substr(colon + 1);
  char* end = nullptr;
  const long long first = std::strtoll(rest.c_str(), &end, 10);
  if (end == rest.c_str() || first <= 0) bad();
  if (kind == "cosine" && *end == '\0') return std::make_unique<optim::CosineAnnealingLR>(opt, first);
  if (kind != "step" || *end != ':') bad();
  const char* g = end + 1;
  const double gamma = std::strtod(g, &end);
  if (end == g || *end != '\0' || !(gamma > 0)) bad();
  return std::make_unique<optim::StepLR>(opt, first, gamma);
}

// Rows [begin, end) of `order` (or of file order when empty) of x.
Tensor rows(const Tensor& x, const Tensor& order, int64_t begin, int64_t end) {
  if (!order.defined()) return x.slice(0, begin, end);
  return index_select(x, 0, order.slice(0, begin, end));
}

// A permutation of [0, n) by Fisher-Yates over `gen`.
Tensor permutation(int64_t n, Generator& gen) {
  Tensor p = empty({n}, DType::Int64);
  int64_t* v = p.data_ptr<int64_t>();
  std::iota(v, v + n, int64_t{0});
  for (int64_t i = n - 1; i > 0; --i) std::swap(v[i], v[static_cast<int64_t>(gen.random64() % static_cast<uint64_t>(i + 1))]);
  return p;
}

std::vector<Tensor> batch_inputs(const Batches& b, const Tensor& order, int64_t i, int64_t end) {
  std::vector<Tensor> in;
  for (const Tensor& x : b.inputs) in.push_back(rows(x, order, i, end).contiguous());
  return in;
}

}  // namespace

Status check_config(const FinetuneConfig& c, std::string* error) {
  const std::string& loss = c.loss;
  if (loss != "cross-entropy" && loss != "mse" && loss != "bce-logits" && loss != "l1")
    return report_error(error, Status::InvalidArgument, "--loss '", loss,
                        "': expected cross-entropy, mse, bce-logits or l1");
  if (c.optimizer != "sgd" && c.optimizer != "adam" && c.optimizer != "adamw")
    return report_error(error, Status::InvalidArgument, "--optimizer '", c.optimizer, "': expected sgd, adam or adamw");
  if (!(c.lr > 0)) return report_error(error, Status::InvalidArgument, "--lr must be positive");
  if (c.epochs < 1 || c.batch_size < 1)
    return report_error(error, Status::InvalidArgument, "epochs and batch size must be at least 1 (got ", c.epochs,
                        " and ", c.batch_size, ")");
  if (c.checkpoint_every > 0 && c.checkpoint.empty())
    return report_error(error, Status::InvalidArgument, "--checkpoint-every needs --checkpoint FILE");
  if (!c.checkpoint.empty() && c.checkpoint_every == 0)
    return report_error(error, Status::InvalidArgument, "--checkpoint needs --checkpoint-every N (steps)");
  return Status::Ok;
}

Result<FinetuneResult> finetune(Trainer& trainer, const std::vector<NpzEntry>& data, const std::string& data_name,
                                const FinetuneConfig& c, const std::function<void(const StepLog&)>& on_step,
                                std::string* error) {
  EMBER_TRY(check_config(c, error));
  Batches b;
  EMBER_TRY(check_data(trainer.executor(), data, data_name, c, &b, error));
  FinetuneResult result;
  try {
    std::unique_ptr<optim::Optimizer> opt = make_optimizer(trainer.parameters(), c);
    std::unique_ptr<optim::LRScheduler> sched = make_scheduler(*opt, c.scheduler);
    LoopPosition at;
    if (!c.resume.empty()) EMBER_TRY(load_checkpoint(c.resume, trainer, *opt, sched.get(), &at, error));
    Generator gen(c.seed);
    for (int epoch = 1; epoch <= c.epochs; ++epoch) {
      const Tensor order = c.shuffle ? permutation(b.n, gen) : Tensor();  // drawn for skipped epochs too
      if (epoch < at.epoch) continue;
      if (epoch > at.epoch) at = {epoch, at.step, 0, 0.0, 0};
      for (int64_t i = at.batch * c.batch_size; i < b.n; i += c.batch_size) {
        const int64_t end = std::min(b.n, i + c.batch_size);
        opt->zero_grad(true);
        std::string why;
        const std::vector<Tensor> in = batch_inputs(b, order, i, end);
        Result<std::vector<Tensor>> out = trainer.forward(Span<const Tensor>(in.data(), in.size()), &why);
        if (!out.ok()) return report_error(error, out.status(), "step ", at.step + 1, ": ", why);
        Tensor loss = loss_of(c.loss, out.get()[0], rows(b.target, order, i, end).contiguous());
        loss.backward();
        if (c.clip_grad_norm > 0) optim::clip_grad_norm_(trainer.parameters(), c.clip_grad_norm);
        StepLog log{epoch, ++at.step, loss.item<double>(), opt->lr()};
        opt->step();
        ++at.batch;
        at.epoch_sum += log.loss;
        ++at.epoch_count;
        result.steps.push_back(log);
        if (on_step) on_step(log);
        if (c.checkpoint_every > 0 && at.step % c.checkpoint_every == 0)
          EMBER_TRY(save_checkpoint(c.checkpoint, trainer, *opt, sched.get(), at, error));
      }
      result.epoch_loss.push_back(at.epoch_sum / static_cast<double>(std::max<int64_t>(at.epoch_count, 1)));
      if (sched != nullptr) sched->step();
    }
  } catch (const Error& e) {
    return report_error(error, e.status(), e.what());
  }
  return result;
}

Result<double> evaluate(Trainer& trainer, const std::vector<NpzEntry>& data, const std::string& data_name,
                        const FinetuneConfig& c, double* accuracy, std::string* error) {
  Batches b;
  EMBER_TRY(check_data(trainer.executor(), data, data_name, c, &b, error));
  double sum = 0;
  int64_t correct = 0;
  try {
    NoGradGuard no_grad;
    for (int64_t i = 0; i < b.n; i += c.batch_size) {
      const int64_t end = std::min(b.n, i + c.batch_size);
      std::string why;
      const std::vector<Tensor> in = batch_inputs(b, Tensor(), i, end);
      Result<std::vector<Tensor>> out = trainer.forward(Span<const Tensor>(in.data(), in.size()), &why);
      if (!out.ok()) return report_error(error, out.status(), why);
      const Tensor target = b.target.slice(0, i, end).contiguous();
      sum += loss_of(c.loss, out.get()[0], target).item<double>() * static_cast<double>(end - i);
      if (is_classification(c.loss)) {
        const Tensor pred = out.get()[0].argmax(1).contiguous();
        for (int64_t r = 0; r < end - i; ++r) correct += pred.data_ptr<int64_t>()[r] == target.data_ptr<int64_t>()[r];
      }
    }
  } catch (const Error& e) {
    return report_error(error, e.status(), e.what());
  }
  if (accuracy != nullptr) *accuracy = is_classification(c.loss) ? static_cast<double>(correct) / b.n : 0.0;
  return sum / static_cast<double>(b.n);
}

}  // namespace ember
