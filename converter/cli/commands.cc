#include "converter/cli/commands.h"

#include "runtime/backend/backend.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>

#include "converter/cli/model_io.h"
#include "runtime/backend/backend.h"
#include "runtime/core/error.h"
#include "runtime/core/rng.h"
#include "runtime/core/thread_pool.h"
#include "runtime/model/npy.h"

namespace ember::cli {
namespace {

template <typename... Args>
Diag diag(Status status, const Args&... args) {
  return Diag{status, str_cat(args...)};
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

std::string pad_right(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}
std::string pad_left(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// "for batch 1" / "for batch 1, seq 1" / "for the fixed input shapes".
std::string plan_shapes_phrase(const Executor& executor) {
  const std::vector<std::string> syms = symbolic_dims(executor);
  if (syms.empty()) return "for the fixed input shapes";
  std::string s = "for ";
  for (size_t i = 0; i < syms.size(); ++i) s += str_cat(i > 0 ? ", " : "", syms[i], " 1");
  return s;
}

std::string shapes_str(const std::vector<Shape>& shapes) {
  std::string s = "[";
  for (size_t i = 0; i < shapes.size(); ++i) s += str_cat(i > 0 ? ", " : "", shape_str(shapes[i]));
  return s + "]";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Unprofiled runs before the profiled one (ember run --profile).
constexpr int kProfileWarmup = 3;

// One line per op of a profiled run, in op order (ember run --profile-ops):
// its index, type, node name and time, to set beside ORT's per-node profile
// (bench/models/profile.py).
void print_op_profile(const std::vector<OpProfile>& profile, std::ostream& out) {
  out << "per op: index, type, node, ms\n";
  for (const OpProfile& p : profile) {
    out << "op " << p.op << " " << p.type << " " << (p.name.empty() ? "-" : p.name) << " " << fixed(p.ms, 4) << "\n";
  }
}

// The per-op-type table of a profiled run, like torch.profiler's
// key_averages().table(): sorted by total time.
void print_profile(const std::vector<OpProfile>& profile, double run_ms, const std::string& device,
                   std::ostream& out) {
  struct Row {
    std::string type;
    std::string devices;  // "vulkan", "cpu (fallback)", "vulkan+cpu (fallback)"
    int calls = 0;
    double total_ms = 0;
    std::map<std::string, int> shapes;
    std::vector<std::string> shape_order;  // first seen first (ties)
  };
  std::vector<Row> rows;
  std::map<std::string, size_t> index;
  double ops_ms = 0;
  for (const OpProfile& p : profile) {
    auto it = index.find(p.type);
    if (it == index.end()) {
      it = index.emplace(p.type, rows.size()).first;
      rows.emplace_back();
      rows.back().type = p.type;
    }
    Row& r = rows[it->second];
    if (("+" + r.devices + "+").find("+" + p.device + "+") == std::string::npos)
      r.devices += (r.devices.empty() ? "" : "+") + p.device;
    ++r.calls;
    r.total_ms += p.ms;
    ops_ms += p.ms;
    const std::string s = shapes_str(p.input_shapes);
    if (r.shapes[s]++ == 0) r.shape_order.push_back(s);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.total_ms > b.total_ms; });
  size_t name_w = 4, dev_w = 6;
  for (const Row& r : rows) {
    name_w = std::max(name_w, r.type.size());
    dev_w = std::max(dev_w, r.devices.size());
  }
  const std::string rule = std::string(name_w, '-') + "  " + std::string(dev_w, '-') + "  " + std::string(6, '-') +
                           "  " + std::string(10, '-') + "  " + std::string(9, '-') + "  " + std::string(7, '-') + "  " +
                           std::string(28, '-');
  if (device != "cpu") {
    out << "profile on " << device << ": each op is submitted and waited for before its time is taken (a flush "
        << "per op), so the times are the ops' own; an unprofiled run submits once and is faster\n";
  }
  out << rule << "\n"
      << pad_right("Name", name_w) << "  " << pad_right("Device", dev_w) << "  " << pad_left("Calls", 6) << "  "
      << pad_left("Total ms", 10) << "  " << pad_left("Mean ms", 9) << "  " << pad_left("% run", 7)
      << "  Input shapes (most common)\n"
      << rule << "\n";
  for (const Row& r : rows) {
    std::string common;
    int best = 0;
    for (const std::string& s : r.shape_order) {
      if (r.shapes.at(s) > best) {
        best = r.shapes.at(s);
        common = s;
      }
    }
    const double pct = run_ms > 0 ? 100.0 * r.total_ms / run_ms : 0.0;
    out << pad_right(r.type, name_w) << "  " << pad_right(r.devices, dev_w) << "  "
        << pad_left(std::to_string(r.calls), 6) << "  "
        << pad_left(fixed(r.total_ms, 3), 10) << "  " << pad_left(fixed(r.total_ms / r.calls, 3), 9) << "  "
        << pad_left(fixed(pct, 1) + "%", 7) << "  " << common << "\n";
  }
  out << rule << "\n"
      << "ops total: " << fixed(ops_ms, 3) << " ms of a " << fixed(run_ms, 3) << " ms run (" << profile.size()
      << " ops; profiled after the planning run and " << kProfileWarmup << " warm-up runs)\n";
}

// "placement on vulkan: all 12 nodes run on vulkan" or the nodes that fall back.
void print_placement(const Executor& executor, std::ostream& out) {
  const std::string device(device_type_name(executor.options().device));
  const int n = executor.model().num_ops();
  int host = 0;
  for (int k = 0; k < n; ++k) host += executor.placement(k) == Placement::Host ? 1 : 0;
  const std::vector<int> fallback = executor.fallback_ops();
  const std::string host_note =
      host > 0 ? str_cat(" (", host, " of them int64 shape ops on the host)") : std::string();
  if (fallback.empty()) {
    out << "placement on " << device << ": all " << n << " nodes run on " << device << host_note << "\n";
    return;
  }
  out << "placement on " << device << ": " << fallback.size() << " of " << n
      << " nodes would fall back to the CPU (--allow-fallback)" << host_note << ":\n";
  for (int k : fallback) out << "  " << executor.describe_op(k) << ": " << executor.fallback_reason(k) << "\n";
}

// The layers whose weight is int8 with quantization parameters (dynamic int8):
// one line each (the first kMax), with the weight's scheme and how the runtime
// quantizes the layer's input.
void quantized_layers(const Model& model, std::ostream& out) {
  constexpr int kMax = 10;
  struct Row {
    std::string name, op, weight, activations;
  };
  std::vector<Row> rows;
  int per_row = 0, per_tensor = 0;
  for (int k = 0; k < model.num_ops(); ++k) {
    const OpKind kind = model.op_kind(k);
    const auto* in = model.op(k).inputs();
    if ((kind != OpKind::Linear && kind != OpKind::Conv2d) || in == nullptr || in->size() < 2) continue;
    const int32_t wi = in->Get(1);
    if (wi < 0 || model.tensor_dtype(wi) != DType::Int8 || model.tensor(wi).quant() == nullptr) continue;
    const fb::Tensor& t = model.tensor(wi);
    const fb::QuantParams& q = *t.quant();
    Row r;
    r.name = model.op(k).name() != nullptr && model.op(k).name()->size() > 0 ? model.op(k).name()->str()
                                                                              : "#" + std::to_string(k);
    r.op = std::string(op_name(kind));
    r.weight = std::string(t.sparse() != nullptr ? "int8 COO" : "int8") +
               (q.scales() != nullptr && q.scales()->size() > 1 ? " per channel" : " per tensor");
    if (t.sparse() != nullptr) {
      r.activations = "float32 (SpMM)";
    } else if (q.activations() == fb::ActivationQuant::PerRow) {
      r.activations = "uint8 per row";
      ++per_row;
    } else {
      r.activations = "uint8 per tensor";
      ++per_tensor;
    }
    rows.push_back(std::move(r));
  }
  if (rows.empty()) return;
  out << "quantized layers: " << rows.size() << " (activations: " << per_tensor << " per tensor, " << per_row
      << " per row)\n";
  size_t nw = 0, ow = 0, ww = 0;
  for (size_t i = 0; i < rows.size() && i < kMax; ++i) {
    nw = std::max(nw, rows[i].name.size());
    ow = std::max(ow, rows[i].op.size());
    ww = std::max(ww, rows[i].weight.size());
  }
  for (size_t i = 0; i < rows.size() && i < kMax; ++i) {
    out << "  " << pad_right(rows[i].name, nw) << "  " << pad_right(rows[i].op, ow) << "  weight "
        << pad_right(rows[i].weight, ww) << "  activations " << rows[i].activations << "\n";
  }
  if (rows.size() > kMax) out << "  ... " << rows.size() - kMax << " more\n";
}

}  // namespace

// --- inspect -------------------------------------------------------------------

Diag inspect(const InspectArgs& args, std::ostream& out) {
  Expected<LoadedModel> loaded = load_model(args.model);
  if (!loaded.ok()) return loaded.diag();
  const Model& model = *loaded->model;
  const Executor& executor = *loaded->executor;

  out << "model: " << args.model << " (" << with_commas(static_cast<int64_t>(model.size()))
      << " bytes, format version " << model.version() << ")\n";
  auto io_table = [&](const char* title, const std::vector<IOInfo>& ios) {
    out << title << ":\n";
    size_t w = 0;
    for (const IOInfo& io : ios) w = std::max(w, io.name.size());
    for (const IOInfo& io : ios) {
      out << "  " << pad_right(io.name, w) << "  " << pad_right(std::string(dtype_name(io.dtype)), 7) << "  "
          << io_shape_str(io) << "\n";
    }
  };
  io_table("inputs", executor.inputs());
  io_table("outputs", executor.outputs());

  // Op histogram, most frequent first (ties by name).
  std::map<std::string, int> ops;
  for (int i = 0; i < model.num_ops(); ++i) ++ops[std::string(op_name(model.op_kind(i)))];
  std::vector<std::pair<std::string, int>> hist(ops.begin(), ops.end());
  std::stable_sort(hist.begin(), hist.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  out << "ops: " << model.num_ops() << "\n";
  size_t ow = 0;
  for (const auto& h : hist) ow = std::max(ow, h.first.size());
  for (const auto& h : hist) out << "  " << pad_right(h.first, ow) << "  " << pad_left(std::to_string(h.second), 5) << "\n";
  // The If / Loop / Scan bodies: their ops, and their weights in the counts below.
  std::vector<Model> graphs;
  int sub_ops = 0;
  for (int k = 0; k < model.num_subgraphs(); ++k) {
    std::string error;
    Result<Model> sg = model.subgraph(k, &error);
    if (!sg.ok()) return diag(sg.status(), "'", args.model, "': subgraph ", k, ": ", error);
    sub_ops += sg.get().num_ops();
    graphs.push_back(std::move(sg.get()));
  }
  if (!graphs.empty())
    out << "subgraphs: " << graphs.size() << " (If/Loop/Scan bodies, " << sub_ops
        << " ops; their weights count as parameters, not as trainable)\n";

  // Parameters: every tensor with data, the subgraphs' included.
  struct Count {
    int64_t tensors = 0, elements = 0, bytes = 0;
  };
  std::map<std::string, Count> by_dtype;
  Count total, trainable;
  std::vector<std::string> quantized, sparse;
  auto count = [&](const Model& g, int i, bool top) {
    const fb::Tensor& t = g.tensor(i);
    if (t.data() == nullptr) return;
    const Tensor& w = g.weight(i);
    const int64_t n = w.defined() ? w.numel() : 0;
    const int64_t b = w.defined() ? static_cast<int64_t>(w.nbytes()) : 0;
    Count& c = by_dtype[std::string(dtype_name(g.tensor_dtype(i)))];
    for (Count* k : {&c, &total}) {
      ++k->tensors;
      k->elements += n;
      k->bytes += b;
    }
    if (t.trainable() && top) {
      ++trainable.tensors;
      trainable.elements += n;
      trainable.bytes += b;
    }
    if (t.quant() != nullptr) quantized.emplace_back(g.tensor_name(i));
    if (t.sparse() != nullptr) sparse.emplace_back(g.tensor_name(i));
  };
  for (int i = 0; i < model.num_tensors(); ++i) count(model, i, true);
  for (const Model& g : graphs)
    for (int i = 0; i < g.num_tensors(); ++i) count(g, i, false);
  out << "parameters: " << with_commas(total.elements) << " in " << total.tensors << " tensors ("
      << with_commas(total.bytes) << " bytes)\n";
  for (const auto& [name, c] : by_dtype) {
    out << "  " << pad_right(name, 7) << "  " << with_commas(c.elements) << " (" << with_commas(c.bytes)
        << " bytes)\n";
  }
  out << "trainable: " << with_commas(trainable.elements) << " in " << trainable.tensors << " tensors\n";
  auto name_list = [&](const char* title, const std::vector<std::string>& names) {
    out << title << ": ";
    if (names.empty()) {
      out << "none\n";
      return;
    }
    out << names.size() << " (";
    for (size_t i = 0; i < names.size() && i < 5; ++i) out << (i > 0 ? ", " : "") << names[i];
    out << (names.size() > 5 ? ", ...)\n" : ")\n");
  };
  name_list("quantized tensors", quantized);
  name_list("sparse tensors", sparse);
  quantized_layers(model, out);
  if (args.trainable) print_trainable(executor, out);

  const ModelMetadata meta = model.metadata();
  out << "metadata:\n"
      << "  producer: " << (meta.producer.empty() ? "(none)" : meta.producer)
      << (meta.producer_version.empty() ? "" : " " + meta.producer_version) << "\n"
      << "  source: " << (meta.source_hash.empty() ? "(none)" : meta.source_hash) << "\n";
  if (!meta.converter_options.empty()) {
    out << "  converter options:";
    for (const auto& [k, v] : meta.converter_options) out << " " << k << "=" << v;
    out << "\n";
  }

  if (args.device != "cpu") {
    Expected<ExecutorOptions> options = executor_options(args.device, /*allow_fallback=*/true, args.precision);
    if (!options.ok()) return options.diag();
    options->log_fallback = false;  // listed here
    options->warm_up = false;       // nothing runs
    std::string why;
    Result<std::shared_ptr<const Executor>> placed = Executor::create(loaded->model, *options, &why);
    if (!placed.ok()) return Diag{placed.status(), why};
    print_placement(*placed.get(), out);
  }

  // The memory plan of one run on zero inputs.
  std::vector<Tensor> inputs;
  for (const IOInfo& io : executor.inputs()) inputs.push_back(default_input(io, /*random=*/false));
  ExecutionContext ctx(loaded->executor);
  std::string error;
  Result<std::vector<Tensor>> r = ctx.run(Span<const Tensor>(inputs.data(), inputs.size()), RunOptions{}, &error);
  if (!r.ok()) return Diag{r.status(), str_cat("'", args.model, "': planning run failed: ", error)};
  const MemoryPlan& plan = ctx.memory_plan();
  out << "memory plan " << plan_shapes_phrase(executor) << ": arena " << with_commas(static_cast<int64_t>(plan.arena_bytes))
      << " bytes, naive " << with_commas(static_cast<int64_t>(plan.naive_bytes)) << " bytes ("
      << plan.allocations << " allocations";
  if (plan.naive_bytes > 0) {
    out << ", " << fixed(100.0 * (1.0 - static_cast<double>(plan.arena_bytes) / static_cast<double>(plan.naive_bytes)), 1)
        << "% saved";
  }
  out << ")";
  if (const size_t packed = executor.prepared_bytes(); packed > 0)
    out << ", packed weights " << with_commas(static_cast<int64_t>(packed)) << " bytes";
  out << "\n";
  return Diag::success();
}

// --- devices -------------------------------------------------------------------

// Every backend's devices (Vulkan, CUDA): a backend built in but without a
// driver or device says why; the command fails only when none has a device.
Diag devices(std::ostream& out) {
  Diag result{Status::NotSupported, "ember is not built with support for vulkan or cuda devices"};
  bool any = false;
  for (DeviceType type : {DeviceType::Vulkan, DeviceType::CUDA}) {
    Backend* backend = get_backend(type);
    if (backend == nullptr) continue;
    const std::string name(device_type_name(type));
    Result<std::vector<std::string>> names = backend->devices();
    if (!names.ok()) {
      out << name << " devices: none (" << backend->last_error() << ")\n";
      if (!any) result = Diag{names.status(), backend->last_error()};
      continue;
    }
    any = true;
    out << name << " devices (in selection order; --device " << name << ":N picks one):\n";
    for (size_t i = 0; i < names->size(); ++i) out << "  " << i << ": " << names.get()[i] << "\n";
  }
  return any ? Diag::success() : result;
}

// --- run -----------------------------------------------------------------------

Diag run(const RunArgs& args, std::ostream& out) {
  Expected<ExecutorOptions> exec_options = executor_options(args.device, args.allow_fallback, args.precision, args.conv_layout);
  if (!exec_options.ok()) return exec_options.diag();
  exec_options->warm_up = false;  // one run: it creates the pipelines itself
  Expected<LoadedModel> loaded = load_model(args.model, *exec_options, args.weights);
  if (!loaded.ok()) return loaded.diag();
  const Executor& executor = *loaded->executor;
  Expected<std::vector<Tensor>> inputs = read_inputs(executor, args.inputs);
  if (!inputs.ok()) return inputs.diag();

  ExecutionContext ctx(loaded->executor);
  RunOptions options;
  options.num_threads = args.threads;
  const Span<const Tensor> in(inputs->data(), inputs->size());
  std::string error;
  auto t0 = std::chrono::steady_clock::now();
  Result<std::vector<Tensor>> r = ctx.run(in, options, &error);
  const double first_ms = ms_since(t0);
  if (!r.ok()) return Diag{r.status(), error};
  std::vector<Tensor> outputs = r.get();
  out << "ran '" << args.model << "' in " << fixed(first_ms, 3) << " ms (first run, plans memory)\n";
  if (args.profile || args.profile_ops) {
    // Warm-up runs first: the run after planning still touched its memory for
    // the first time (page faults), which made the first layers' times 2-7x
    // their steady state (MobileNetV2's stem: 1.57 ms, 0.40 after warm-up).
    for (int i = 0; i < kProfileWarmup; ++i) {
      Result<std::vector<Tensor>> w = ctx.run(in, options, &error);
      if (!w.ok()) return Diag{w.status(), error};
    }
    options.profile = true;
    t0 = std::chrono::steady_clock::now();
    Result<std::vector<Tensor>> p = ctx.run(in, options, &error);
    const double run_ms = ms_since(t0);
    if (!p.ok()) return Diag{p.status(), error};
    outputs = p.get();
    print_profile(ctx.profile(), run_ms, args.device, out);
    if (args.profile_ops) print_op_profile(ctx.profile(), out);
  }

  std::error_code ec;
  std::filesystem::create_directories(args.output_dir, ec);
  if (ec) return diag(Status::IoError, "cannot create '", args.output_dir, "': ", ec.message());
  std::set<std::string> used;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string base = sanitize_file_name(executor.outputs()[i].name);
    std::string file = base;
    for (int k = 1; used.count(file) != 0; ++k) file = str_cat(base, "_", k);
    used.insert(file);
    const std::string path = (std::filesystem::path(args.output_dir) / (file + ".npy")).string();
    if (write_npy(path, outputs[i], &error) != Status::Ok) return diag(Status::IoError, error);
    out << "wrote " << path << " (" << executor.outputs()[i].name << ": " << dtype_name(outputs[i].dtype()) << " "
        << shape_str(outputs[i].sizes()) << ")\n";
  }
  return Diag::success();
}

// --- bench ---------------------------------------------------------------------

Diag bench(const BenchArgs& args, std::ostream& out) {
  Expected<ExecutorOptions> exec_options = executor_options(args.device, args.allow_fallback, args.precision, args.conv_layout);
  if (!exec_options.ok()) return exec_options.diag();
  if (args.iterations < 1) return diag(Status::InvalidArgument, "--iterations must be at least 1");
  if (args.warmup < 0) return diag(Status::InvalidArgument, "--warmup must not be negative");
  const auto load_t0 = std::chrono::steady_clock::now();
  Expected<LoadedModel> loaded = load_model(args.model, *exec_options);
  const double load_ms = ms_since(load_t0);  // mmap, full verification, executor
  if (!loaded.ok()) return loaded.diag();
  manual_seed(0);
  Expected<std::vector<Tensor>> inputs =
      read_inputs(*loaded->executor, args.inputs, /*fill_missing=*/true, /*random=*/true);
  if (!inputs.ok()) return inputs.diag();

  ExecutionContext ctx(loaded->executor);
  RunOptions options;
  options.num_threads = args.threads;
  const Span<const Tensor> in(inputs->data(), inputs->size());
  std::string error;
  std::vector<double> ms;
  int64_t steals_before = 0;
  for (int i = 0; i < args.warmup + args.iterations; ++i) {
    if (i == args.warmup) steals_before = parallel_steals();
    const auto t0 = std::chrono::steady_clock::now();
    Result<std::vector<Tensor>> r = ctx.run(in, options, &error);
    const double t = ms_since(t0);
    if (!r.ok()) return Diag{r.status(), error};
    if (i >= args.warmup) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  const double median = n % 2 == 1 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  const size_t p90_rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n)));
  const double p90 = ms[std::max<size_t>(p90_rank, 1) - 1];
  double sum = 0;
  for (double t : ms) sum += t;
  const double mean = sum / static_cast<double>(n);
  const double throughput = mean > 0 ? 1000.0 / mean : 0.0;
  const int64_t rss = peak_rss_bytes();
  const size_t arena = ctx.memory_plan().arena_bytes;
  const int threads = args.threads > 0 ? args.threads : get_num_threads();
  // Items a run's parallel regions moved from a slower thread's share to another (work stealing).
  const double stolen = static_cast<double>(parallel_steals() - steals_before) / static_cast<double>(n);

  if (args.json) {
    out << "{\"model\": " << json_string(args.model) << ", \"device\": " << json_string(args.device)
        << ", \"threads\": " << threads << ", \"warmup\": " << args.warmup << ", \"iterations\": " << args.iterations
        << ", \"load_ms\": " << fixed(load_ms, 3) << ", \"latency_ms\": {\"min\": " << fixed(ms.front(), 6) << ", \"median\": " << fixed(median, 6)
        << ", \"p90\": " << fixed(p90, 6) << ", \"mean\": " << fixed(mean, 6) << "}"
        << ", \"throughput_per_s\": " << fixed(throughput, 3) << ", \"peak_rss_bytes\": " << rss
        << ", \"arena_bytes\": " << arena << ", \"stolen_items_per_run\": " << fixed(stolen, 2)
        << ", \"precision\": " << json_string(args.precision)
        << ", \"fallback_nodes\": " << loaded->executor->fallback_ops().size()
        << ", \"nodes\": " << loaded->model->num_ops() << "}\n";
    return Diag::success();
  }
  out << "model: " << args.model << " (device " << args.device << ", " << threads << " threads, " << args.warmup
      << " warmup + " << args.iterations << " timed runs)\n";
  if (args.device != "cpu") {
    out << "precision: " << args.precision << "; " << loaded->executor->fallback_ops().size() << " of "
        << loaded->model->num_ops() << " nodes fall back to the CPU\n";
  }
  out << "inputs:";
  for (size_t i = 0; i < inputs->size(); ++i) {
    out << (i > 0 ? "," : "") << " " << loaded->executor->inputs()[i].name << " "
        << dtype_name((*inputs)[i].dtype()) << " " << shape_str((*inputs)[i].sizes());
  }
  out << "\n"
      << "latency ms: min " << fixed(ms.front(), 3) << "  median " << fixed(median, 3) << "  p90 " << fixed(p90, 3)
      << "  mean " << fixed(mean, 3) << "\n"
      << "throughput: " << fixed(throughput, 1) << " runs/s\n"
      << "load: " << fixed(load_ms, 3) << " ms (map, verify, build the executor)\n"
      << "peak RSS: " << fixed(static_cast<double>(rss) / (1024.0 * 1024.0), 1) << " MiB\n"
      << "arena: " << with_commas(static_cast<int64_t>(arena)) << " bytes\n";
  if (threads > 1) out << "work stealing: " << fixed(stolen, 2) << " items a run taken from another thread's share\n";
  return Diag::success();
}

}  // namespace ember::cli
