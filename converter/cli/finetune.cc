// `ember finetune` and `ember inspect --trainable` (runtime/train).
#include <sys/resource.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "converter/cli/commands.h"
#include "converter/cli/model_io.h"
#include "runtime/core/file.h"
#include "runtime/core/thread_pool.h"
#include "runtime/model/npz.h"
#include "runtime/train/delta.h"
#include "runtime/train/finetune.h"
#include "runtime/train/trainer.h"

namespace ember::cli {
namespace {

std::string num(double v, int decimals) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(decimals) << v;
  return s.str();
}

std::vector<std::string> split_commas(const std::vector<std::string>& specs) {
  std::vector<std::string> out;
  for (const std::string& s : specs) {
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ',')) {
      if (!item.empty()) out.push_back(item);
    }
  }
  return out;
}

// An ASCII curve of the per-epoch losses: `rows` lines, one column per epoch
// (at most 60 columns: epochs are averaged into columns).
void loss_curve(const std::vector<double>& losses, std::ostream& out, int rows = 8) {
  if (losses.size() < 2) return;
  const size_t cols = std::min<size_t>(losses.size(), 60);
  std::vector<double> v(cols, 0.0);
  for (size_t c = 0; c < cols; ++c) {
    const size_t a = c * losses.size() / cols, b = (c + 1) * losses.size() / cols;
    for (size_t i = a; i < b; ++i) v[c] += losses[i] / static_cast<double>(b - a);
  }
  const double hi = *std::max_element(v.begin(), v.end()), lo = *std::min_element(v.begin(), v.end());
  const double span = hi > lo ? hi - lo : 1.0;
  out << "loss per epoch:\n";
  for (int r = rows - 1; r >= 0; --r) {
    const double level = lo + span * r / (rows - 1);
    out << std::setw(10) << num(level, 4) << " |";
    for (double x : v) out << (std::lround((x - lo) / span * (rows - 1)) == r ? '*' : ' ');
    out << "\n";
  }
  out << std::string(11, ' ') << '+' << std::string(cols, '-') << "\n";
}

Diag check_args(const FinetuneArgs& a) {
  std::string error;
  if (check_config(a.config, &error) != Status::Ok) return {Status::InvalidArgument, error};
  if (a.device == "cpu") return {};
  Diag d = check_device(a.device);
  if (!d.ok()) return d;
  if (Device(a.device).type() != DeviceType::Vulkan)
    return {Status::NotSupported, "--device " + a.device + ": fine-tuning runs on the cpu or vulkan"};
  if (!a.lora.empty())
    return {Status::NotSupported, "--lora with --device " + a.device + ": LoRA adapters train on the cpu only"};
  return {};
}

// "NAME=KEY" pairs; a bare KEY names the model's only input.
Expected<std::vector<std::pair<std::string, std::string>>> input_pairs(const Executor& ex,
                                                                         const std::vector<std::string>& specs) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& s : specs) {
    const size_t eq = s.find('=');
    if (eq != std::string::npos) {
      out.emplace_back(s.substr(0, eq), s.substr(eq + 1));
    } else if (ex.inputs().size() == 1) {
      out.emplace_back(ex.inputs()[0].name, s);
    } else {
      return Diag{Status::InvalidArgument, "--input '" + s + "': expected NAME=KEY (the model has " +
                                               std::to_string(ex.inputs().size()) + " inputs)"};
    }
  }
  if (specs.empty() && ex.inputs().size() == 1) out.emplace_back(ex.inputs()[0].name, ex.inputs()[0].name);
  return out;
}

}  // namespace

void print_trainable(const Executor& executor, std::ostream& out) {
  const std::vector<WeightInfo> weights = list_weights(executor);
  size_t w = 4, ws = 2;
  for (const WeightInfo& info : weights) {
    w = std::max(w, info.name.size());
    ws = std::max(ws, shape_str(info.shape).size());
  }
  out << "weights (--train / --freeze patterns match these names):\n";
  for (const WeightInfo& info : weights) {
    out << "  " << info.name << std::string(w - info.name.size(), ' ') << "  " << std::setw(7) << std::left
        << dtype_name(info.dtype) << std::right << "  " << std::setw(static_cast<int>(ws)) << std::left << shape_str(info.shape) << std::right
        << "  "
        << (info.why_not.empty() ? "trainable" : "frozen: " + info.why_not) << "\n";
  }
}

namespace {

// Each training step frees and allocates the same large tensors (activations,
// gradients). glibc maps blocks of its (dynamic) mmap threshold and up with
// mmap and returns heap tops past its trim threshold, so every step faulted
// its pages in again: a third of a step of the 256-1024-1024-10 MLP
// (bench/train). Kept in the heap instead, they are reused; the peak RSS is
// the same (46 -> 47 MiB there).
void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

}  // namespace

Diag finetune(const FinetuneArgs& args, std::ostream& json_out) {
  keep_freed_memory_for_reuse();
  std::ostringstream sink;  // --json: only the JSON object is printed
  std::ostream& out = args.json ? sink : json_out;
  Diag d = check_args(args);
  if (!d.ok()) return d;
  Expected<ExecutorOptions> device = executor_options(args.device, false, "fp32");  // selects vulkan:N
  if (!device.ok()) return device.diag();
  Expected<LoadedModel> loaded = load_model(args.model);
  if (!loaded.ok()) return loaded.diag();
  std::string error;
  TrainerOptions topts;
  topts.train = split_commas(args.train);
  topts.freeze = split_commas(args.freeze);
  topts.device = device->device;
  if (!args.lora.empty()) {
    char* end = nullptr;
    topts.lora_rank = std::strtoll(args.lora.c_str(), &end, 10);
    if (*end == ':') topts.lora_alpha = std::strtod(end + 1, &end);
    if (topts.lora_rank <= 0 || *end != '\0' || topts.lora_alpha < 0)
      return {Status::InvalidArgument, "--lora '" + args.lora + "': expected RANK or RANK:ALPHA (e.g. 8 or 8:16)"};
    topts.lora_targets = split_commas(args.lora_targets);
  } else if (!args.lora_targets.empty()) {
    return {Status::InvalidArgument, "--lora-targets needs --lora RANK"};
  }
  if (args.merge_lora && (args.lora.empty() || args.output.empty()))
    return {Status::InvalidArgument, "--merge-lora needs --lora RANK and -o OUT.ember (it merges the adapters into the "
                                     "written model)"};
  Result<std::unique_ptr<Trainer>> made = Trainer::create(loaded->model, topts, &error);
  if (!made.ok()) return {made.status(), error};
  Trainer& trainer = *made.get();
  FinetuneConfig config = args.config;
  auto pairs = input_pairs(trainer.executor(), args.inputs);
  if (!pairs.ok()) return pairs.diag();
  config.inputs = *pairs;
  Result<std::vector<NpzEntry>> data = read_npz(args.data, &error);
  if (!data.ok()) return {data.status(), "--data: " + error};
  std::vector<NpzEntry> eval;
  if (!args.eval_data.empty()) {
    Result<std::vector<NpzEntry>> e = read_npz(args.eval_data, &error);
    if (!e.ok()) return {e.status(), "--eval-data: " + error};
    eval = std::move(e.get());
  }
  if (args.threads > 0) set_num_threads(args.threads);

  out << "fine-tuning " << args.model << ": " << trainer.parameters().size() << " tensors, "
      << with_commas(trainer.trainable_elements()) << " trainable elements (";
  for (size_t i = 0; i < trainer.parameter_names().size(); ++i) out << (i ? ", " : "") << trainer.parameter_names()[i];
  out << ")\n";
  const auto report_eval = [&](const char* when) -> Diag {
    if (eval.empty()) return {};
    double acc = 0;
    Result<double> l = evaluate(trainer, eval, args.eval_data, config, &acc, &error);
    if (!l.ok()) return {l.status(), error};
    out << when << " eval loss " << num(l.get(), 6);
    if (config.loss == "cross-entropy") out << ", accuracy " << num(100.0 * acc, 2) << " %";
    out << "\n";
    return {};
  };
  d = report_eval("before:");
  if (!d.ok()) return d;

  std::ofstream log;
  if (!args.log.empty()) {
    log.open(args.log);
    if (!log) return {Status::IoError, "cannot write --log '" + args.log + "'"};
    log << "epoch,step,loss,lr\n" << std::setprecision(9);
  }
  const int64_t n = data->front().value.dim() > 0 ? data->front().value.size(0) : 0;
  const int64_t steps_per_epoch = (n + config.batch_size - 1) / std::max<int64_t>(config.batch_size, 1);
  const bool tty = !args.json && ::isatty(STDOUT_FILENO) && &json_out == &std::cout;
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const auto on_step = [&](const StepLog& s) {
    if (log.is_open()) log << s.epoch << "," << s.step << "," << s.loss << "," << s.lr << "\n";
    if (tty) {
      const int64_t in_epoch = (s.step - 1) % std::max<int64_t>(steps_per_epoch, 1) + 1;
      const int width = 30, done = static_cast<int>(width * in_epoch / std::max<int64_t>(steps_per_epoch, 1));
      out << "\repoch " << s.epoch << "/" << config.epochs << " [" << std::string(done, '#')
          << std::string(width - done, '.') << "] step " << s.step << " loss " << num(s.loss, 4) << " lr "
          << s.lr << " " << num(s.step / std::max(seconds(), 1e-9), 1) << " steps/s" << std::flush;
    }
  };
  Result<FinetuneResult> r = finetune(trainer, data.get(), args.data, config, on_step, &error);
  if (tty) out << "\n";
  if (!r.ok()) return {r.status(), error};
  const double elapsed = seconds();
  if (!args.json) {
    for (size_t e = 0; e < r->epoch_loss.size(); ++e)
      out << "epoch " << e + 1 << "/" << config.epochs << ": mean loss " << num(r->epoch_loss[e], 6) << "\n";
  }
  d = report_eval("after:");
  if (!d.ok()) return d;
  if (!args.output.empty()) {
    SaveOptions save;
    save.merge_int8_lora = args.merge_lora;
    const Status st = trainer.save(args.output, save, &error);
    if (st != Status::Ok) return {st == Status::NotSupported ? st : Status::IoError, error};
  }
  if (!args.delta.empty()) {
    if (save_delta(trainer, args.delta, &error) != Status::Ok) return {Status::IoError, error};
  }
  const int64_t rss = peak_rss_bytes();
  if (args.json) {
    json_out << "{\"steps\": " << r->steps.size() << ", \"seconds\": " << num(elapsed, 3)
        << ", \"first_loss\": " << num(r->steps.front().loss, 8) << ", \"last_loss\": " << num(r->steps.back().loss, 8)
        << ", \"trainable_elements\": " << trainer.trainable_elements() << ", \"peak_rss_bytes\": " << rss
        << ", \"output\": \"" << args.output << "\"}\n";
    return {};
  }
  loss_curve(r->epoch_loss, out);
  out << "steps: " << r->steps.size() << " in " << num(elapsed, 2) << " s ("
      << num(static_cast<double>(r->steps.size()) / std::max(elapsed, 1e-9), 1) << " steps/s), peak RSS "
      << num(static_cast<double>(rss) / (1024.0 * 1024.0), 1) << " MiB\n";
  if (!args.output.empty()) out << "wrote " << args.output << "\n";
  if (!args.delta.empty()) out << "wrote " << args.delta << " (the trained tensors; ember run --weights)\n";
  return {};
}

}  // namespace ember::cli
