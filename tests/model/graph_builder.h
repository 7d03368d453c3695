// Hand-built models for the executor suites (CPU and Vulkan): a ModelDef under
// construction, serialized and loaded back through the verifier, and a run
// that must succeed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/model/executor.h"
#include "runtime/model/writer.h"
#include "tests/harness/testing.h"

namespace ember::testing {

struct Graph {
  ModelDef def;

  int act(const std::string& name, std::vector<int64_t> shape, DType dtype = DType::Float32,
          std::vector<std::string> dim_names = {}) {
    TensorDef t;
    t.name = name;
    t.shape = std::move(shape);
    t.dtype = dtype;
    t.dim_names = std::move(dim_names);
    return def.add_tensor(std::move(t));
  }
  int input(const std::string& name, std::vector<int64_t> shape, DType dtype = DType::Float32,
            std::vector<std::string> dim_names = {}) {
    const int t = act(name, std::move(shape), dtype, std::move(dim_names));
    def.inputs.push_back(t);
    return t;
  }
  int weight(const std::string& name, const Tensor& value) {
    TensorDef t;
    t.name = name;
    t.shape = value.sizes();
    t.dtype = value.dtype();
    t.tensor = value.contiguous();
    t.has_data = true;
    return def.add_tensor(std::move(t));
  }
  int ints(const std::string& name, const std::vector<int64_t>& v) {
    return weight(name, tensor(v, {static_cast<int64_t>(v.size())}));
  }
  void op(OpKind kind, std::vector<int32_t> in, std::vector<int32_t> out, const std::string& name,
          OpParams params = NoParams{}) {
    OpDef o;
    o.op = kind;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    o.name = name;
    o.params = params;
    def.ops.push_back(std::move(o));
  }
  void output(int t) { def.outputs.push_back(t); }

  std::shared_ptr<const Model> model() const {
    std::vector<std::byte> bytes;
    std::string error;
    REQUIRE_MESSAGE(serialize_model(def, &bytes, &error) == Status::Ok, error);
    Result<Model> m = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Full, &error);
    REQUIRE_MESSAGE(m.ok(), error);
    return std::make_shared<const Model>(std::move(m.get()));
  }
  Result<std::shared_ptr<const Executor>> create(const ExecutorOptions& options, std::string* error) const {
    return Executor::create(model(), options, error);
  }
  std::shared_ptr<const Executor> build(const ExecutorOptions& options = {}) const {
    std::string error;
    Result<std::shared_ptr<const Executor>> ex = create(options, &error);
    REQUIRE_MESSAGE(ex.ok(), error);
    return ex.get();
  }
};

inline std::vector<Tensor> run_ok(ExecutionContext& ctx, std::vector<Tensor> inputs, const RunOptions& options = {}) {
  std::string error;
  Result<std::vector<Tensor>> r = ctx.run(inputs, options, &error);
  REQUIRE_MESSAGE(r.ok(), error);
  return r.get();
}

}  // namespace ember::testing
