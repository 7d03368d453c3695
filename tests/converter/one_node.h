// A one-node ONNX graph built in C++, lowered, serialized, loaded and run by
// the executor: the harness of the converter's lowering tests.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "converter/ir.h"
#include "converter/passes.h"
#include "runtime/model/executor.h"
#include "runtime/model/writer.h"
#include "tests/harness/testing.h"

namespace ember::converter::testing {

inline std::vector<Dim> dims_of(IntArrayRef s) {
  std::vector<Dim> d;
  for (int64_t x : s) d.push_back(Dim::fixed(x));
  return d;
}

inline Tensor f32(std::vector<float> v, std::vector<int64_t> shape) { return tensor(v, shape); }

// A converter Graph built by hand (the passes' tests): values of static shape,
// nodes of one output named after their op and position.
struct GraphBuilder {
  Graph g;
  int value(const std::string& name, std::vector<int64_t> shape, DType dt = DType::Float32) {
    Value v;
    v.name = name;
    v.dtype = dt;
    v.shape = dims_of(shape);
    return g.add_value(std::move(v));
  }
  Node& node(const std::string& op, std::vector<int> in, int out, std::map<std::string, Attr> attrs = {}) {
    Node n;
    n.op_type = op;
    n.name = op + std::to_string(g.nodes.size());
    n.kind = map_onnx_op(op);
    n.inputs = std::move(in);
    n.outputs = {out};
    n.attrs = std::move(attrs);
    g.nodes.push_back(std::move(n));
    return g.nodes.back();
  }
};

// A lowered model serialized, loaded with Full verification and made into an executor.
inline std::shared_ptr<const Executor> executor_of(const ModelDef& def) {
  std::vector<std::byte> bytes;
  std::string error;
  REQUIRE_MESSAGE(serialize_model(def, &bytes, &error) == Status::Ok, error);
  Result<Model> m = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Full, &error);
  REQUIRE_MESSAGE(m.ok(), error);
  auto ex = Executor::create(std::make_shared<const Model>(std::move(m.get())), &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  return ex.get();
}

// Lowers `g` and runs it on `feeds` (its graph inputs, in order): the outputs, cloned.
inline std::vector<Tensor> lower_and_run(const Graph& g, const std::vector<Tensor>& feeds) {
  auto def = lower(g);
  REQUIRE_MESSAGE(def.ok(), def.diag().message);
  ExecutionContext ctx(executor_of(*def));
  std::string error;
  Result<std::vector<Tensor>> out = ctx.run(feeds, {}, &error);
  REQUIRE_MESSAGE(out.ok(), error);
  std::vector<Tensor> kept;
  for (const Tensor& t : out.get()) kept.push_back(t.clone());
  return kept;
}

// One input of the node: a graph input (fed at run time), a constant, or omitted (undefined tensor).
struct In {
  Tensor t;
  bool constant = true;
};

// One ONNX node; its outputs are declared like `like` (undefined: omitted).
struct OneNode {
  std::string op;
  std::vector<In> inputs;
  std::map<std::string, Attr> attrs;
  std::optional<std::vector<Dim>> x_shape = std::nullopt;  // input 0's declared shape, if not its own
  bool optimize = false;  // run_passes() before lowering (as ember convert does)

  Graph graph(const std::vector<Tensor>& like) const {
    Graph g;
    Node n;
    n.op_type = op;
    n.name = "n";
    n.kind = map_onnx_op(op);
    n.attrs = attrs;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const In& in = inputs[k];
      const std::string name = "in" + std::to_string(k);
      if (!in.t.defined()) {
        n.inputs.push_back(-1);
      } else if (in.constant) {
        n.inputs.push_back(g.add_constant(name, in.t));
      } else {
        Value v;
        v.name = name;
        v.dtype = in.t.dtype();
        v.shape = k == 0 && x_shape ? *x_shape : dims_of(in.t.sizes());
        n.inputs.push_back(g.add_value(std::move(v)));
        g.inputs.push_back(n.inputs.back());
      }
    }
    for (size_t k = 0; k < like.size(); ++k) {
      if (!like[k].defined()) {
        n.outputs.push_back(-1);
        continue;
      }
      Value v;
      v.name = "y" + std::to_string(k);
      v.dtype = like[k].dtype();
      v.shape = dims_of(like[k].sizes());
      n.outputs.push_back(g.add_value(std::move(v)));
      g.outputs.push_back(n.outputs.back());
    }
    g.nodes.push_back(n);
    if (optimize) {
      auto passes = run_passes(g);
      REQUIRE_MESSAGE(passes.ok(), passes.diag().message);
    }
    return g;
  }

  std::vector<Tensor> run(const std::vector<Tensor>& like) const {
    std::vector<Tensor> feeds;
    for (const In& in : inputs) {
      if (in.t.defined() && !in.constant) feeds.push_back(in.t);
    }
    return lower_and_run(graph(like), feeds);
  }

  // Runs and compares every defined output of `expected` (floats within 1e-5, integers exactly).
  void check(const std::vector<Tensor>& expected) const {
    const std::vector<Tensor> got = run(expected);
    size_t j = 0;
    for (const Tensor& e : expected) {
      if (!e.defined()) continue;
      INFO("output " << j);
      if (is_floating(e.dtype())) ember::testing::check_close(got[j++], e, 1e-5, 1e-5);
      else ember::testing::check_equal(got[j++], e);  // integer results are exact
    }
  }

  std::string error(const std::vector<Tensor>& like) const {
    auto def = lower(graph(like));
    REQUIRE(!def.ok());
    CHECK(def.diag().status == Status::NotSupported);
    return def.diag().message;
  }
};

inline In input(Tensor t) { return In{std::move(t), false}; }
inline In constant(Tensor t) { return In{std::move(t), true}; }

}  // namespace ember::converter::testing
