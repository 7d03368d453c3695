// The executor: create() and the run loop. Nothing here raises: every op runs
// through the ops' Status-returning cores (op_runner.h), and run() turns a
// failing op's Status and the thread's message (error.h) into
// "node '<name>' (<op>): <message>".
//
// The rest lives beside it: weights.h (weight preparation at create),
// placement.h (which device each op runs on), op_runner.h (running one op:
// the dispatch generated from ops.def), graph_ops.h (ONNX graph-op semantics),
// planner.h (the arena plan) and profile.h (per-op times).
#include "runtime/model/executor.h"

#include <cstdio>
#include <map>
#include <new>
#include <set>
#include <utility>

#include "runtime/autograd/grad_mode.h"
#include "runtime/backend/backend.h"
#include "runtime/core/error.h"
#include "runtime/core/thread_pool.h"
#include "runtime/model/control_flow.h"
#include "runtime/model/model_access.h"
#include "runtime/model/op_runner.h"
#include "runtime/model/planner.h"
#include "runtime/model/profile.h"
#include "runtime/model/weights.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {
namespace {

// "[batch, 4]" (unnamed symbolic dims: "?").
std::string declared_str(const std::vector<int64_t>& shape, const std::vector<std::string>& names) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d > 0) s += ", ";
    if (shape[d] >= 0) {
      s += std::to_string(shape[d]);
    } else {
      s += d < names.size() && !names[d].empty() ? names[d] : "?";
    }
  }
  return s + "]";
}

IOInfo io_info(const Model& m, int t) {
  IOInfo info;
  info.tensor = t;
  info.name = std::string(m.tensor_name(t));
  info.dtype = m.tensor_dtype(t);
  info.shape = m.tensor_shape(t);
  const auto* names = m.tensor(t).dim_names();
  for (uint32_t d = 0; d < vlen(names); ++d) info.dim_names.push_back(fb_str(names->Get(d)));
  return info;
}

Status check_options(const ExecutorOptions& options, std::string* error) {
  if (options.device == DeviceType::CPU && options.precision == Precision::Float16)
    return report_error(error, Status::InvalidArgument, "fp16 precision needs a device (vulkan, cuda); the CPU executor "
                        "runs float32 or bf16 (convert with --weights fp16 for float16 weights)");
  if (options.device == DeviceType::CPU && options.precision == Precision::BFloat16) {
    Result<Backend::DeviceInfo> cpu = get_backend(DeviceType::CPU)->open();
    if (!cpu.ok() || !cpu->bfloat16)
      return report_error(error, Status::UnsupportedHardware, "bf16 precision on the cpu needs AVX-512 BF16 "
                          "(avx512_bf16), which this CPU lacks");
  }
  if (options.device != DeviceType::CPU) EMBER_TRY(check_device(options, error));
  if (!options.adapters.empty() && options.device != DeviceType::CPU)
    return report_error(error, Status::NotSupported, "LoRA adapters run on the cpu executor, not ",
                        device_type_name(options.device));
  return Status::Ok;
}

// A device run can be captured into a graph and replayed: no op falls back to
// the CPU, and no host op reads a value computed from an input's data (a
// replay would not see new values; ShapeOf reads only the sizes, which the
// input signature fixes).
bool capturable(const Model& m, const std::vector<OpState>& ops) {
  std::vector<uint8_t> from_data(static_cast<size_t>(m.num_tensors()), 0);
  for (int32_t t : m.inputs()) from_data[static_cast<size_t>(t)] = 1;
  for (int k = 0; k < m.num_ops(); ++k) {
    const OpState& op = ops[static_cast<size_t>(k)];
    if (op.placement == Placement::Fallback) return false;
    bool reads = false;
    const auto* in = m.op(k).inputs();
    for (uint32_t j = 0; j < vlen(in) && op.kind != OpKind::ShapeOf; ++j)
      reads = reads || (in->Get(j) >= 0 && from_data[static_cast<size_t>(in->Get(j))]);
    if (!reads) continue;
    if (op.placement == Placement::Host) return false;
    const auto* out = m.op(k).outputs();
    for (uint32_t j = 0; j < vlen(out); ++j)
      if (out->Get(j) >= 0) from_data[static_cast<size_t>(out->Get(j))] = 1;
  }
  return true;
}

// Every op: a known, forward op with valid parameters, reading only graph
// inputs, weights and earlier outputs, defining each output once; every graph
// output computed.
Status validate_graph(const Model& m, std::string* error) {
  const int nt = m.num_tensors();
  std::vector<uint8_t> defined(static_cast<size_t>(nt), 0);
  for (int t = 0; t < nt; ++t) defined[static_cast<size_t>(t)] = m.weight(t).defined();
  for (int32_t t : m.inputs()) {
    if (t < 0 || t >= nt) return report_error(error, Status::InvalidModel, "graph input: tensor index ", t, " out of range");
    defined[static_cast<size_t>(t)] = 1;
  }
  for (int k = 0; k < m.num_ops(); ++k) {
    const OpKind kind = m.op_kind(k);
    const std::string where = str_cat("operator ", k, " ", op_ref(m, k));
    if (static_cast<int>(kind) >= kNumOps)
      return report_error(error, Status::InvalidModel, "operator ", k, ": unknown op id ", static_cast<int>(kind));
    if (is_backward_op(kind))
      return report_error(error, Status::NotSupported, where, ": the executor does not run backward ops");
    std::string why;
    Result<OpParams> p = m.op_params(k, &why);
    if (!p.ok()) return report_error(error, p.status(), where, ": ", why);
    const auto* in = m.op(k).inputs();
    const auto* out = m.op(k).outputs();
    for (uint32_t j = 0; j < vlen(in); ++j) {
      const int32_t t = in->Get(j);
      if (t == -1) continue;
      if (t < 0 || t >= nt || !defined[static_cast<size_t>(t)])
        return report_error(error, Status::InvalidModel, where, ": input ", j, " (tensor ", t,
                    ") is not a graph input, a weight or an earlier operator's output");
    }
    for (uint32_t j = 0; j < vlen(out); ++j) {
      const int32_t t = out->Get(j);
      if (t == -1) continue;
      if (t < 0 || t >= nt || defined[static_cast<size_t>(t)])
        return report_error(error, Status::InvalidModel, where, ": output ", j, " (tensor ", t,
                    ") is out of range or already defined");
      defined[static_cast<size_t>(t)] = 1;
    }
  }
  for (int32_t t : m.outputs()) {
    if (t < 0 || t >= nt || !defined[static_cast<size_t>(t)])
      return report_error(error, Status::InvalidModel, "graph output: tensor ", t, " is never computed");
  }
  return Status::Ok;
}

// Runs the model once on zero inputs (symbolic dims 1): creates and caches
// every pipeline it uses. Failing is not an error (ExecutorOptions::warm_up).
void warm_up(const std::shared_ptr<const Executor>& ex) {
  std::vector<Tensor> inputs;
  for (const IOInfo& io : ex->inputs()) {
    Shape shape;
    for (int64_t d : io.shape) shape.push_back(d < 0 ? 1 : d);
    inputs.push_back(zeros(shape, io.dtype));
  }
  ExecutionContext warm(ex);
  std::string ignored;
  (void)warm.run(Span<const Tensor>(inputs.data(), inputs.size()), {}, &ignored);
}

}  // namespace

// --- Executor -------------------------------------------------------------------

Executor::Executor(std::shared_ptr<const Model> model) : model_(std::move(model)) {
  const Model& m = *model_;
  for (int32_t t : m.inputs()) inputs_.push_back(io_info(m, t));
  for (int32_t t : m.outputs()) outputs_.push_back(io_info(m, t));
  ops_.resize(static_cast<size_t>(m.num_ops()));
  for (int k = 0; k < m.num_ops(); ++k) {
    Result<OpParams> p = m.op_params(k);
    ops_[static_cast<size_t>(k)].kind = m.op_kind(k);
    if (p.ok()) ops_[static_cast<size_t>(k)].params = p.get();
  }
  tensors_ = tensor_states(m);
}

std::vector<int> Executor::fallback_ops() const {
  std::vector<int> ops;
  for (size_t k = 0; k < ops_.size(); ++k) {
    if (ops_[k].placement == Placement::Fallback) ops.push_back(static_cast<int>(k));
  }
  return ops;
}

size_t Executor::prepared_bytes() const {
  std::set<const PreparedWeight*> seen;
  size_t bytes = 0;
  auto add = [&](const std::shared_ptr<const PreparedWeight>& w) {
    if (w != nullptr && seen.insert(w.get()).second) bytes += w->bytes();
  };
  for (const OpState& op : ops_) add(op.prepared);
  for (const TensorState& t : tensors_) add(t.prepared_sparse);
  return bytes;
}

std::string Executor::describe_op(int k) const {
  return ember::describe_op(*model_, k, ops_[static_cast<size_t>(k)].key_dtype);
}

Result<std::shared_ptr<const Executor>> Executor::create(std::shared_ptr<const Model> model,
                                                         std::string* error) {
  return create(std::move(model), ExecutorOptions{}, error);
}

Result<std::shared_ptr<const Executor>> Executor::create(std::shared_ptr<const Model> model,
                                                         const ExecutorOptions& options, std::string* error) {
  EMBER_TRY(check_options(options, error));
  if (model == nullptr) return report_error(error, Status::InvalidArgument, "Executor::create: no model");
  // The subgraphs in index order (each runs only subgraphs of lower index,
  // which the loader checks), on the CPU.
  std::vector<std::shared_ptr<const Executor>> subgraphs;
  for (int i = 0; i < model->num_subgraphs(); ++i) {
    std::string why;
    Result<Model> sub = model->subgraph(i, &why);
    Result<std::shared_ptr<const Executor>> ex =
        sub.ok() ? create_graph(std::make_shared<const Model>(std::move(sub.get())), ExecutorOptions{}, subgraphs, &why)
                 : Result<std::shared_ptr<const Executor>>(sub.status());
    if (!ex.ok()) return report_error(error, ex.status(), "subgraph ", i, ": ", why);
    subgraphs.push_back(ex.get());
  }
  return create_graph(std::move(model), options, subgraphs, error);
}

Result<std::shared_ptr<const Executor>> Executor::create_graph(
    std::shared_ptr<const Model> model, const ExecutorOptions& options,
    const std::vector<std::shared_ptr<const Executor>>& subgraphs, std::string* error) {
  EMBER_TRY(validate_graph(*model, error));
  auto ex = std::make_shared<Executor>(std::move(model));
  const Model& m = *ex->model_;
  EMBER_TRY(attach_subgraphs(m, subgraphs, ex->ops_, error));
  EMBER_TRY(prepare_sparse(m, ex->ops_, ex->tensors_, error));
  EMBER_TRY(upcast_fp16_weights(m, ex->tensors_, error));
  EMBER_TRY(prepare_quantized(m, ex->ops_, error));
  choose_conv_layout(m, options, ex->ops_);
  if (options.device == DeviceType::CPU) {
    EMBER_TRY(prepare_packed(m, ex->ops_, ex->tensors_, options.precision == Precision::BFloat16, error));
    pair_ops(m, ex->ops_, ex->tensors_);
  }
  EMBER_TRY(check_adapters(m, ex->ops_, options.adapters, error));
  ex->options_ = options;
  if (options.device != DeviceType::CPU) {
    EMBER_TRY(place_ops(m, options.device, device_float_dtype(options.precision), options.allow_fallback,
                                 options.log_fallback, ex->ops_, ex->tensors_, error));
    EMBER_TRY(upload_weights(m, options, ex->ops_, ex->tensors_, error));
    ex->capturable_ = options.graphs && capturable(m, ex->ops_);
  }
  std::shared_ptr<const Executor> done(std::move(ex));
  if (options.device != DeviceType::CPU && options.warm_up) warm_up(done);
  return done;
}

// --- ExecutionContext --------------------------------------------------------------

namespace {

// Inputs: count, dtypes, ranks, fixed dims, and every symbolic dim name bound to one value.
Status check_inputs(const std::vector<IOInfo>& declared, Span<const Tensor> inputs, std::string* error) {
  if (inputs.size() != declared.size()) {
    std::string names;
    for (const IOInfo& io : declared) names += (names.empty() ? "" : ", ") + io.name;
    return report_error(error, Status::InvalidArgument, "expected ", declared.size(), " inputs (", names, "), got ",
                inputs.size());
  }
  std::map<std::string, std::pair<int64_t, std::string>> bound;  // dim name -> (value, input)
  for (size_t i = 0; i < inputs.size(); ++i) {
    const IOInfo& io = declared[i];
    const Tensor& x = inputs[i];
    if (!x.defined()) return report_error(error, Status::InvalidArgument, "input '", io.name, "' is undefined");
    if (x.device().type() != DeviceType::CPU)
      return report_error(error, Status::DeviceMismatch, "input '", io.name, "' is on ", x.device(), ", expected cpu");
    if (x.dtype() != io.dtype)
      return report_error(error, Status::DTypeMismatch, "input '", io.name, "': expected dtype ", dtype_name(io.dtype),
                  ", got ", dtype_name(x.dtype()));
    const auto shape_decl = [&io] { return declared_str(io.shape, io.dim_names); };  // for messages only
    if (x.dim() != static_cast<int64_t>(io.shape.size()))
      return report_error(error, Status::ShapeMismatch, "input '", io.name, "': expected rank ", io.shape.size(), " ",
                  shape_decl(), ", got rank ", x.dim(), " ", shape_str(x.sizes()));
    for (size_t d = 0; d < io.shape.size(); ++d) {
      const int64_t size = x.size(static_cast<int64_t>(d));
      if (io.shape[d] >= 0) {
        if (size != io.shape[d])
          return report_error(error, Status::ShapeMismatch, "input '", io.name, "': dim ", d, " is ", size, ", expected ",
                      io.shape[d], " (declared ", shape_decl(), ", got ", shape_str(x.sizes()), ")");
        continue;
      }
      const std::string name = d < io.dim_names.size() ? io.dim_names[d] : std::string();
      if (name.empty()) continue;
      auto it = bound.find(name);
      if (it == bound.end()) {
        bound.emplace(name, std::make_pair(size, io.name));
      } else if (it->second.first != size) {
        return report_error(error, Status::ShapeMismatch, "input '", io.name, "': dim ", d, " ('", name, "') is ", size,
                    ", but '", name, "' is ", it->second.first, " in input '", it->second.second, "'");
      }
    }
  }
  return Status::Ok;
}

std::vector<int64_t> input_signature(Span<const Tensor> inputs) {
  std::vector<int64_t> signature;
  for (const Tensor& x : inputs) {
    signature.push_back(static_cast<int64_t>(x.dtype()));
    signature.push_back(x.dim());
    signature.insert(signature.end(), x.sizes().begin(), x.sizes().end());
    signature.insert(signature.end(), x.strides().begin(), x.strides().end());
  }
  return signature;
}

// One run: the values by tensor index and the loop over the ops.
class Run {
 public:
  Run(const Model& m, const ExecutorOptions& options, const std::vector<OpState>& ops,
      const std::vector<TensorState>& tensors)
      : m_(m),
        ops_(ops),
        tensors_(tensors),
        on_cpu_(options.device == DeviceType::CPU),
        low_(on_cpu_ ? DType::Float32 : device_float_dtype(options.precision)),
        device_(storage_device(Device(options.device))),
        backend_(on_cpu_ ? nullptr : get_backend(options.device)),
        values_(static_cast<size_t>(m.num_tensors())),
        other_(on_cpu_ ? 0 : static_cast<size_t>(m.num_tensors())) {
    for (int t = 0; t < m.num_tensors(); ++t) {
      const size_t i = static_cast<size_t>(t);
      if (m.weight(t).defined() && tensors[i].last_use >= 0) {
        values_[i] = tensors[i].densified.defined() ? tensors[i].densified : m.weight(t);
        if (!on_cpu_) other_[i] = tensors[i].device_weight;
      }
    }
    for (const auto& [k, a] : options.adapters) bind_adapter(k, &a);  // the executor's: live as long as it
  }

  // A value read in place of tensor t (the trainer's parameters): on a device
  // executor it is copied there at its first read, not the uploaded weight.
  void bind_value(int32_t t, const Tensor& value) {
    values_[static_cast<size_t>(t)] = value;
    if (!on_cpu_) other_[static_cast<size_t>(t)] = Tensor();
  }
  void bind_adapter(int k, const LoraAdapter* adapter) {
    lora_.resize(static_cast<size_t>(m_.num_ops()), nullptr);
    lora_[static_cast<size_t>(k)] = adapter;
  }

  void bind_inputs(const std::vector<IOInfo>& declared, const std::vector<Tensor>& inputs) {
    for (size_t i = 0; i < inputs.size(); ++i) values_[static_cast<size_t>(declared[i].tensor)] = inputs[i];
  }

  // Graph capture (device executors): the inputs go to the device before the
  // capture (a copy would need the host mid-capture), and every device tensor
  // the captured ops touch is kept alive with this Run, so that no other
  // allocation takes its memory while the graph can replay.
  Status upload_inputs(const std::vector<IOInfo>& declared) {
    for (const IOInfo& io : declared) EMBER_TRY(value_on(io.tensor, device_));
    return Status::Ok;
  }
  void keep_everything() { keep_ = true; }
  // New input values copied into the device tensors the graph reads.
  Status refill_inputs(const std::vector<IOInfo>& declared, const std::vector<Tensor>& inputs) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const size_t t = static_cast<size_t>(declared[i].tensor);
      values_[t] = inputs[i];
      Tensor& on_device = other_[t];
      EMBER_ASSIGN_OR_RETURN(const Tensor x, core::to(inputs[i], on_device.dtype()));
      EMBER_TRY(copy_into(on_device, x));
    }
    return Status::Ok;
  }

  // Runs every op in order; on failure sets *message ("node 'fc1' (linear): ...").
  Status run_ops(bool profile, std::vector<OpProfile>* times, std::string* message) {
    for (int k = 0; k < m_.num_ops(); ++k) {
      const OpState& state = ops_[static_cast<size_t>(k)];
      if (state.paired > k) continue;  // the pair op at state.paired runs it
      OpTimer timer;
      if (profile) timer.begin(m_, k, on_cpu_, state.placement, device_.type(), values_);
      const Status status = run_one(k, profile, message);
      if (status != Status::Ok) return status;
      if (profile) times->push_back(timer.end());
      if (profile && state.paired >= 0) {  // a pair op: its name and its inputs' shapes
        times->back().type = std::string(op_name(state.kind));
        times->back().input_shapes.clear();
        for (uint32_t j = 0; j < static_cast<uint32_t>(op_num_inputs(state.kind)); ++j) {
          const int32_t t = pair_input(m_, state.kind, state.paired, k, j);
          if (t >= 0 && values_[static_cast<size_t>(t)].defined())
            times->back().input_shapes.push_back(values_[static_cast<size_t>(t)].sizes());
        }
      }
      drop_dead(k);
    }
    return Status::Ok;
  }

  // Outputs come back to the host once each (float32 in fp16/bf16 mode). Those
  // still on the device are made contiguous there and read back together:
  // one submit for the graph and every copy.
  Status read_outputs(const std::vector<IOInfo>& declared, std::vector<Tensor>* results, std::string* message) {
    const Status st = collect_outputs(declared, results);
    if (st != Status::Ok) {
      *message = str_cat("reading the outputs back from ", device_, ": ", failure_message(st));
      results->clear();
    }
    return st;
  }

  // Frees every intermediate (before the recording allocator finishes).
  void clear() {
    other_.clear();
    values_.clear();
  }

 private:
  Status collect_outputs(const std::vector<IOInfo>& declared, std::vector<Tensor>* results) {
    std::vector<Tensor> packed(on_cpu_ ? 0 : declared.size());
    std::vector<Backend::CopyOut> copies;
    for (size_t o = 0; o < declared.size(); ++o) {
      const int32_t t = declared[o].tensor;
      const Tensor& v = values_[static_cast<size_t>(t)];
      // A value with a gradient history (run_recording) comes back through a recorded copy.
      if (on_cpu_ || !v.defined() || v.device() == cpu_ || other_[static_cast<size_t>(t)].defined() ||
          v.requires_grad()) {
        EMBER_ASSIGN_OR_RETURN(Tensor r, value_on(t, cpu_));
        // A channels_last value (ExecutorOptions::conv_layout) comes back contiguous.
        if (r.dim() == 4 && !r.is_contiguous() && r.is_contiguous(MemoryFormat::ChannelsLast)) {
          EMBER_ASSIGN_OR_RETURN(r, core::contiguous(r));
        }
        results->push_back(std::move(r));
        continue;
      }
      const bool widen = low_ != DType::Float32 && v.dtype() == low_ && m_.tensor_dtype(t) == DType::Float32;
      EMBER_ASSIGN_OR_RETURN(const Tensor wide, core::to(v, widen ? DType::Float32 : v.dtype()));
      EMBER_ASSIGN_OR_RETURN(packed[o], core::contiguous(wide));
      EMBER_ASSIGN_OR_RETURN(Tensor r, core::empty(packed[o].sizes(), packed[o].dtype()));
      results->push_back(std::move(r));
      copies.push_back({Span<std::byte>(static_cast<std::byte*>(results->back().data_ptr()), results->back().nbytes()),
                        &packed[o].storage()->buffer(),
                        static_cast<size_t>(packed[o].storage_offset()) * packed[o].element_size()});
    }
    const Status st = copies.empty() ? Status::Ok : backend_->copy_out_batch(copies);
    EMBER_CHECK(st == Status::Ok, st, "copy to cpu", backend_error_detail(*backend_));
    return Status::Ok;
  }

  // Value t on `where`: moved (and converted for a 16-bit precision) once, then cached in
  // other_ (weights uploaded at create; a value crosses at most once per run).
  Result<Tensor> value_on(int32_t t, const Device& where) {
    const size_t i = static_cast<size_t>(t);
    const Tensor& v = values_[i];
    if (on_cpu_ || !v.defined() || v.device() == where) return v;
    if (!other_[i].defined()) {
      if (where.is_cpu()) {
        EMBER_ASSIGN_OR_RETURN(Tensor x, core::to(v, where));
        if (low_ != DType::Float32 && x.dtype() == low_ && m_.tensor_dtype(t) == DType::Float32) {
          EMBER_ASSIGN_OR_RETURN(x, core::to(x, DType::Float32));
        }
        other_[i] = x;
      } else {
        EMBER_ASSIGN_OR_RETURN(const Tensor x, core::to(v, v.dtype() == DType::Float32 ? low_ : v.dtype()));
        EMBER_ASSIGN_OR_RETURN(other_[i], core::to(x, where));
      }
    }
    return other_[i];
  }

  // Sets `in` to op k's inputs, on the device where it runs (host slots on the CPU).
  Status op_inputs(int k, bool on_device, std::vector<Tensor>& in) {
    const OpState& state = ops_[static_cast<size_t>(k)];
    if (state.paired >= 0) {  // a pair op (CPU executors)
      const uint32_t n = static_cast<uint32_t>(op_num_inputs(state.kind));
      in.assign(n, Tensor());
      for (uint32_t j = 0; j < n; ++j) {
        const int32_t t = pair_input(m_, state.kind, state.paired, k, j);
        if (t >= 0) in[j] = values_[static_cast<size_t>(t)];
      }
      return Status::Ok;
    }
    const fb::Operator& op = m_.op(k);
    const OpKind kind = m_.op_kind(k);
    in.assign(vlen(op.inputs()), Tensor());
    for (uint32_t j = 0; j < vlen(op.inputs()); ++j) {
      const int32_t t = op.inputs()->Get(j);
      if (t < 0) continue;
      if (kind == OpKind::ShapeOf) {
        in[j] = values_[static_cast<size_t>(t)];  // reads only the sizes
      } else {
        EMBER_ASSIGN_OR_RETURN(in[j], value_on(t, on_device && !reads_on_host(kind, j) ? device_ : cpu_));
      }
    }
    return Status::Ok;
  }

  Status run_one(int k, bool profile, std::string* message) {
    const Status st = run_op_at(k, profile);
    if (st != Status::Ok) *message = str_cat(op_ref(m_, k), ": ", failure_message(st));
    return st;
  }

  Status run_op_at(int k, bool profile) {
    const OpState& state = ops_[static_cast<size_t>(k)];
    const bool on_device = !on_cpu_ && state.placement == Placement::Device;
    // The input and output lists keep their capacity from op to op (taken,
    // not shared: a nested run allocates its own).
    std::vector<Tensor> in = std::move(in_buf_);
    EMBER_TRY(op_inputs(k, on_device, in));
    for (Tensor& x : in) {  // OpState::contiguous_inputs
      if (state.contiguous_inputs && x.defined() && x.dim() == 4 && !x.is_contiguous() &&
          x.is_contiguous(MemoryFormat::ChannelsLast)) {
        EMBER_ASSIGN_OR_RETURN(x, core::contiguous(x));
      }
    }
    OpContext ctx{m_, k, state.kind, state, tensors_, in, on_device ? device_ : cpu_, on_device,
                  on_device ? low_ : DType::Float32, std::move(out_buf_),
                  lora_.empty() ? nullptr : lora_[static_cast<size_t>(k)]};
    EMBER_TRY(run_op(ctx, values_));
    in.clear();
    ctx.out.clear();
    in_buf_ = std::move(in);
    out_buf_ = std::move(ctx.out);
    if (profile && on_device) {
      const Status st = backend_->synchronize();
      EMBER_CHECK(st == Status::Ok, st, "synchronize", backend_error_detail(*backend_));
    }
    return Status::Ok;
  }

  // Liveness: drop what no later op reads (graph outputs live to the end).
  void drop_dead(int k) {
    const fb::Operator& op = m_.op(k);
    auto drop = [&](int32_t t) {
      if (keep_) return;
      values_[static_cast<size_t>(t)] = Tensor();
      if (!on_cpu_) other_[static_cast<size_t>(t)] = Tensor();
    };
    const int first = ops_[static_cast<size_t>(k)].paired;  // a pair op reads its first op's inputs too
    for (int i : {k, first >= 0 && first < k ? first : k}) {
      for (uint32_t j = 0; j < vlen(m_.op(i).inputs()); ++j) {
        const int32_t t = m_.op(i).inputs()->Get(j);
        if (t >= 0 && tensors_[static_cast<size_t>(t)].last_use == k) drop(t);
      }
    }
    for (uint32_t j = 0; j < vlen(op.outputs()); ++j) {
      const int32_t t = op.outputs()->Get(j);
      if (t >= 0 && tensors_[static_cast<size_t>(t)].last_use < k) drop(t);
    }
  }

  const Model& m_;
  const std::vector<OpState>& ops_;
  const std::vector<TensorState>& tensors_;
  const bool on_cpu_;
  const DType low_;  // float32 values on the device: Float16 / BFloat16 (Precision), or Float32
  const Device cpu_{DeviceType::CPU};
  const Device device_;
  Backend* const backend_;
  std::vector<Tensor> values_;
  std::vector<Tensor> in_buf_, out_buf_;  // run_one's lists, reused
  std::vector<Tensor> other_;  // other_[t]: value t on the other device than values_[t]
  bool keep_ = false;           // a captured run: nothing is dropped
  std::vector<const LoraAdapter*> lora_;  // per op (ExecutorOptions::adapters, run_recording's), or empty
};

}  // namespace

// A run captured into a device graph: the Run keeps every tensor the graph
// reads or writes; the graph replays it for new inputs of the same signature.
struct CapturedRun {
  std::vector<int64_t> signature;
  std::unique_ptr<Run> run;
  std::unique_ptr<Backend::Graph> graph;  // declared last: destroyed before the memory it uses
  bool failed = false;                    // capture failed: this context runs op by op
  bool used = false;                      // the last run captured or replayed
};

namespace {

// What capture() and replay() read of the executor (its private parts, handed
// over by ExecutionContext::run, a friend).
struct ExecutorParts {
  const Model& model;
  const ExecutorOptions& options;
  const std::vector<OpState>& ops;
  const std::vector<TensorState>& tensors;
  const std::vector<IOInfo>& inputs;
  const std::vector<IOInfo>& outputs;
};

// New inputs into the captured tensors, the graph queued, the outputs read.
Result<std::vector<Tensor>> replay(const ExecutorParts& ex, CapturedRun& g, const std::vector<Tensor>& inputs,
                                   bool refill, std::string* error) {
  std::string message;
  std::vector<Tensor> results;
  Status status = Status::Ok;
  {
    NoGradGuard no_grad;
    if (refill) status = g.run->refill_inputs(ex.inputs, inputs);
    if (status != Status::Ok) {
      message = failure_message(status);
    } else {
      status = g.graph->replay();
      if (status != Status::Ok) message = get_backend(ex.options.device)->last_error();
    }
  }
  if (status == Status::Ok) status = g.run->read_outputs(ex.outputs, &results, &message);
  if (status != Status::Ok) return report_error(error, status, "graph replay: ", message);
  g.used = true;
  return results;
}

// Runs every op once with the device's queue recording; NotSupported (and
// g.failed) when the capture fails, e.g. an op needed the host mid-run.
Result<std::vector<Tensor>> capture(const ExecutorParts& ex, CapturedRun& g, const std::vector<int64_t>& signature,
                                   const std::vector<Tensor>& inputs, std::string* error) {
  Backend* backend = get_backend(ex.options.device);
  auto run = std::make_unique<Run>(ex.model, ex.options, ex.ops, ex.tensors);
  std::string message;
  Status status = Status::Ok;
  {
    NoGradGuard no_grad;
    run->bind_inputs(ex.inputs, inputs);
    status = run->upload_inputs(ex.inputs);
    run->keep_everything();
    if (status == Status::Ok) status = backend->begin_capture();
    if (status == Status::Ok) {
      status = run->run_ops(false, nullptr, &message);
      Result<std::unique_ptr<Backend::Graph>> graph = backend->end_capture();  // always ends it
      if (status == Status::Ok && graph.ok()) g.graph = std::move(graph.get());
    }
  }
  if (g.graph == nullptr) {
    g.failed = true;
    return Status::NotSupported;
  }
  g.run = std::move(run);
  g.signature = signature;
  return replay(ex, g, inputs, /*refill=*/false, error);
}

}  // namespace

struct ExecutionContext::Arena {
  std::vector<int64_t> signature;  // per input: dtype, rank, sizes, strides
  bool planned = false;
  ArenaPlan plan;
  std::shared_ptr<ArenaMemory> memory;
  int replans = 0;
  CapturedRun graph;  // the device graph of this signature, once captured
};

ExecutionContext::ExecutionContext(std::shared_ptr<const Executor> executor)
    : executor_(std::move(executor)), arena_(std::make_unique<Arena>()) {}

ExecutionContext::~ExecutionContext() = default;

bool ExecutionContext::graph_captured() const { return arena_->graph.used; }

Result<std::vector<Tensor>> ExecutionContext::run(Span<const Tensor> inputs, const RunOptions& options,
                                                  std::string* error) {
  const Executor& ex = *executor_;
  EMBER_TRY(check_inputs(ex.inputs_, inputs, error));

  // --- memory: plan (record) or serve from the arena ---
  std::vector<int64_t> signature = input_signature(inputs);
  Arena& arena = *arena_;
  if (!arena.planned || arena.signature != signature) {
    arena.planned = false;
    arena.memory.reset();
    arena.signature = signature;
  }
  std::unique_ptr<RecordingAllocator> recorder;
  std::unique_ptr<ArenaAllocator> served;
  StorageAllocator* allocator;
  if (arena.planned) {
    served = std::make_unique<ArenaAllocator>(arena.memory, arena.plan);
    allocator = served.get();
  } else {
    recorder = std::make_unique<RecordingAllocator>();
    allocator = recorder.get();
  }
  std::unique_ptr<CappedAllocator> capped;
  if (options.max_tensor_bytes > 0) {
    capped = std::make_unique<CappedAllocator>(allocator, options.max_tensor_bytes);
    allocator = capped.get();
  }

  // An input that lives in this context's arena (an output of an earlier run
  // fed back) would be overwritten by this run: copy it to the heap first.
  std::vector<Tensor> own_inputs(inputs.begin(), inputs.end());
  if (arena.memory != nullptr) {
    const std::byte* lo = arena.memory->data();
    const std::byte* hi = lo + arena.memory->size() + kTensorTailPadding;
    for (Tensor& x : own_inputs) {
      const auto* p = static_cast<const std::byte*>(x.storage()->data());
      if (p >= lo && p < hi) {
        NoGradGuard no_grad;
        x = x.clone();
      }
    }
  }

  // Device graphs: the second run of a signature is captured, later ones replay it.
  CapturedRun& g = arena.graph;
  g.used = false;
  if (g.graph != nullptr && g.signature != signature) {
    g.graph.reset();
    g.run.reset();
  }
  if (ex.capturable_ && !options.profile && !g.failed && (g.graph != nullptr || arena.planned)) {
    const ExecutorParts parts{*ex.model_, ex.options_, ex.ops_, ex.tensors_, ex.inputs_, ex.outputs_};
    Result<std::vector<Tensor>> r = g.graph != nullptr ? replay(parts, g, own_inputs, /*refill=*/true, error)
                                                       : capture(parts, g, signature, own_inputs, error);
    if (r.ok() || !g.failed) return r;  // a capture that failed: op by op below
  }

  std::vector<OpProfile> profile;
  std::vector<Tensor> results;
  std::string message;
  Status status = Status::Ok;
  {
    NoGradGuard no_grad;
    ThreadLimitGuard threads(options.num_threads);
    StorageAllocatorGuard hook(allocator);
    Run run(*ex.model_, ex.options_, ex.ops_, ex.tensors_);
    run.bind_inputs(ex.inputs_, own_inputs);
    status = run.run_ops(options.profile, &profile, &message);
    if (status == Status::Ok) status = run.read_outputs(ex.outputs_, &results, &message);
    run.clear();  // frees every intermediate before the recording ends
  }

  if (status != Status::Ok) {
    if (recorder != nullptr) recorder->finish();  // incomplete: plan again next run
    if (error != nullptr) *error = message;
    return status;
  }
  if (recorder != nullptr) {
    arena.plan = plan_arena(recorder->finish());
    arena.memory = std::make_shared<ArenaMemory>(arena.plan.arena_bytes);
    // An arena that cannot be allocated (a huge run-time shape, memory
    // nearly full): this run's results stand (they are on the heap) and the
    // next run records again, per tensor, until the block can be had.
    arena.planned = arena.memory->data() != nullptr;
    if (!arena.planned) {
      arena.memory.reset();
      plan_.plans = arena.replans;
      return results;
    }
    ++arena.replans;
    plan_.arena_bytes = arena.plan.arena_bytes;
    plan_.naive_bytes = arena.plan.naive_bytes;
    plan_.allocations = static_cast<int>(arena.plan.offsets.size());
    plan_.heap_fallbacks = 0;
  } else {
    plan_.heap_fallbacks = served->heap_fallbacks();
    if (!served->matched()) arena.planned = false;  // the sequence changed: plan again next run
  }
  plan_.plans = arena.replans;
  if (options.profile) profile_ = std::move(profile);
  return results;
}

Result<std::vector<Tensor>> run_subgraph(const Executor& ex, const std::vector<Tensor>& inputs) {
  std::string message;
  Status status = check_inputs(ex.inputs_, Span<const Tensor>(inputs.data(), inputs.size()), &message);
  EMBER_CHECK(status == Status::Ok, status, "subgraph: ", message);
  Run run(*ex.model_, ex.options_, ex.ops_, ex.tensors_);
  run.bind_inputs(ex.inputs_, inputs);
  std::vector<Tensor> results;
  status = run.run_ops(false, nullptr, &message);
  if (status == Status::Ok) status = run.read_outputs(ex.outputs_, &results, &message);
  EMBER_CHECK(status == Status::Ok, status, message);
  return results;
}

Result<std::vector<Tensor>> run_recording(const Executor& ex, Span<const Tensor> inputs,
                                          const std::vector<std::pair<int, Tensor>>& weights,
                                          const std::vector<std::pair<int, LoraAdapter>>& adapters, std::string* error) {
  EMBER_TRY(check_inputs(ex.inputs_, inputs, error));
  Run run(*ex.model_, ex.options_, ex.ops_, ex.tensors_);
  for (const auto& [t, w] : weights) run.bind_value(t, w);
  for (const auto& [k, a] : adapters) run.bind_adapter(k, &a);
  run.bind_inputs(ex.inputs_, std::vector<Tensor>(inputs.begin(), inputs.end()));
  std::vector<Tensor> results;
  std::string message;
  Status status = run.run_ops(false, nullptr, &message);
  if (status == Status::Ok) status = run.read_outputs(ex.outputs_, &results, &message);
  if (status != Status::Ok) return report_error(error, status, message);
  return results;
}

}  // namespace ember
