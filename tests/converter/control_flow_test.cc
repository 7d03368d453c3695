// Control flow: If/Loop/Scan subgraphs imported into the IR, If of constant
// condition inlined (--fix-input binds the inputs a condition depends on),
// the errors for what cannot be resolved at conversion. Models:
// tests/golden/onnx_models.py (control_if, control_loop).
#include <memory>

#include <onnx/onnx_pb.h>

#include "converter/convert.h"
#include "converter/onnx_import.h"
#include "converter/passes.h"
#include "runtime/model/executor.h"
#include "runtime/model/loader.h"
#include "runtime/model/writer.h"
#include "tests/harness/testing.h"

namespace ember::converter {

using ember::testing::check_equal;
using ember::testing::tmp_path;

namespace {

const std::string kIf = "tests/golden/onnx/control_if.onnx";
const std::string kLoop = "tests/golden/onnx/control_loop.onnx";

ConvertOptions fixed(FixedInputs f) {
  ConvertOptions o;
  o.fixed_inputs = std::move(f);
  return o;
}

// kIf converted with `options` and run on x = [1, 2, 3]: y, z.
std::vector<Tensor> convert_and_run(const ConvertOptions& options, const std::string& name) {
  const std::string out = tmp_path(name + ".ember");
  const Diag d = convert_file(kIf, out, options);
  REQUIRE_MESSAGE(d.ok(), d.message);
  std::string error;
  Result<Model> model = Model::load(out, Verification::Full, &error);
  REQUIRE_MESSAGE(model.ok(), error);
  REQUIRE(model.get().inputs().size() == 1);  // sr is a constant now
  auto ex = Executor::create(std::make_shared<const Model>(std::move(model.get())), &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  ExecutionContext ctx(ex.get());
  Result<std::vector<Tensor>> r = ctx.run({tensor({1.f, 2.f, 3.f})}, {}, &error);
  REQUIRE_MESSAGE(r.ok(), error);
  std::vector<Tensor> kept;
  for (const Tensor& t : r.get()) kept.push_back(t.clone());
  REQUIRE(kept.size() == 2);
  return kept;
}

std::string convert_error(const std::string& onnx, const ConvertOptions& options) {
  const Diag d = convert_file(onnx, tmp_path("control_error.ember"), options);
  REQUIRE(!d.ok());
  return d.message;
}

}  // namespace

TEST_CASE("control flow: the If's branches are imported as subgraphs with their captures") {
  auto g = import_onnx(kIf);
  REQUIRE_MESSAGE(g.ok(), g.diag().message);
  const Node* outer = nullptr;
  for (const Node& n : g->nodes) {
    if (n.op_type == "If") outer = &n;
  }
  REQUIRE(outer != nullptr);
  // In the file's attribute order (onnx.helper sorts them: else_branch first).
  CHECK(outer->graph_attrs == std::vector<std::string>{"else_branch", "then_branch"});
  REQUIRE(outer->graphs.size() == 2);
  // Captured: a, x (the else branch's), then sr (the then branch's; it reads x
  // in its nested If, two scopes in): the node's last inputs.
  REQUIRE(outer->captured == 3);
  REQUIRE(outer->inputs.size() == 4);
  CHECK(g->value(outer->inputs[1]).name == "a");
  CHECK(g->value(outer->inputs[2]).name == "x");
  CHECK(g->value(outer->inputs[3]).name == "sr");
  const Graph& then_b = outer->graphs[1];
  REQUIRE(then_b.inputs.size() == 3);  // the same captures, in the same order
  CHECK(then_b.value(then_b.inputs[0]).name == "a");
  CHECK(then_b.value(then_b.inputs[1]).name == "x");
  CHECK(then_b.value(then_b.inputs[2]).name == "sr");
  // The branch's initializers are its constants; the nested If is a node of the branch.
  const int tb = then_b.find_value("tb");
  REQUIRE(tb >= 0);
  check_equal(then_b.value(tb).constant, tensor({10.f, 20.f, 30.f}));
  CHECK(then_b.op_histogram().at("If") == 1);
  const Graph& else_b = outer->graphs[0];
  REQUIRE(else_b.inputs.size() == 3);  // sr: unused here
  CHECK(else_b.value(else_b.inputs[2]).name == "sr");
  CHECK(else_b.value(else_b.outputs[1]).name == "eb");
  CHECK(else_b.is_constant(else_b.outputs[1]));
}

TEST_CASE("control flow: an If on a fixed input is inlined, nested Ifs too (then, else, outer values)") {
  // sr > 20000: y = (x*w + tb) * 2, z = x*w (a captured value as the branch's output).
  auto r = convert_and_run(fixed({{"sr", {24000}}}), "if_24000");
  check_equal(r[0], tensor({22.f, 48.f, 78.f}));
  check_equal(r[1], tensor({1.f, 4.f, 9.f}));
  // 10000 < sr <= 20000: the nested If takes its else branch, which reads x two scopes out.
  r = convert_and_run(fixed({{"sr", {16000}}}), "if_16000");
  check_equal(r[0], tensor({10.f, 22.f, 36.f}));
  check_equal(r[1], tensor({1.f, 4.f, 9.f}));
  // sr <= 10000: the else branch; z is its own initializer.
  r = convert_and_run(fixed({{"sr", {8000}}}), "if_8000");
  check_equal(r[0], tensor({0.f, 2.f, 6.f}));
  check_equal(r[1], tensor({7.f, 8.f, 9.f}));
}

TEST_CASE("control flow: inlining keeps the If's output names and leaves no If") {
  auto g = import_onnx(kIf);
  REQUIRE(g.ok());
  Diag d = fix_inputs(*g, {{"sr", {16000}}});
  REQUIRE_MESSAGE(d.ok(), d.message);
  REQUIRE(g->inputs.size() == 1);
  CHECK(g->value(g->inputs[0]).name == "x");
  auto rep = run_passes(*g);
  REQUIRE_MESSAGE(rep.ok(), rep.diag().message);
  CHECK(rep->ifs_inlined == 2);
  CHECK(g->op_histogram().count("If") == 0);
  CHECK(g->value(g->outputs[0]).name == "y");
  CHECK(g->value(g->outputs[1]).name == "z");
}

TEST_CASE("control flow: an If whose condition is not a constant runs at run time (nested If, captures)") {
  const std::string out = tmp_path("if_runtime.ember");
  ConvertReport report;
  const Diag d = convert_file(kIf, out, {}, &report);
  REQUIRE_MESSAGE(d.ok(), d.message);
  std::string error;
  Result<Model> model = Model::load(out, Verification::Full, &error);
  REQUIRE_MESSAGE(model.ok(), error);
  CHECK(model.get().num_subgraphs() == 4);  // the nested If's two branches, then the outer If's
  // The report's weight bytes count the branches' weights too.
  int64_t weight_bytes = 0, branch_bytes = 0;
  auto add = [](const Model& g, int64_t& bytes) {
    for (int i = 0; i < g.num_tensors(); ++i)
      if (g.weight(i).defined()) bytes += static_cast<int64_t>(g.weight(i).nbytes());
  };
  add(model.get(), weight_bytes);
  for (int k = 0; k < model.get().num_subgraphs(); ++k) {
    Result<Model> g = model.get().subgraph(k, &error);
    REQUIRE_MESSAGE(g.ok(), error);
    add(g.get(), branch_bytes);
  }
  CHECK(branch_bytes > 0);
  weight_bytes += branch_bytes;
  CHECK(report.weight_bytes == weight_bytes);
  auto ex = Executor::create(std::make_shared<const Model>(std::move(model.get())), &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  ExecutionContext ctx(ex.get());
  auto run = [&](int64_t sr) {
    Result<std::vector<Tensor>> r =
        ctx.run({tensor({1.f, 2.f, 3.f}), scalar_tensor(Scalar(sr), TensorOptions(DType::Int64))}, {}, &error);
    REQUIRE_MESSAGE(r.ok(), error);
    REQUIRE(r.get().size() == 2);
    return std::vector<Tensor>{r.get()[0].clone(), r.get()[1].clone()};
  };
  for (int pass = 0; pass < 2; ++pass) {  // the second pass runs from the arena plan
    auto r = run(24000);
    check_equal(r[0], tensor({22.f, 48.f, 78.f}));
    check_equal(r[1], tensor({1.f, 4.f, 9.f}));
    r = run(16000);
    check_equal(r[0], tensor({10.f, 22.f, 36.f}));
    check_equal(r[1], tensor({1.f, 4.f, 9.f}));
    r = run(8000);
    check_equal(r[0], tensor({0.f, 2.f, 6.f}));
    check_equal(r[1], tensor({7.f, 8.f, 9.f}));
  }
}

TEST_CASE("control flow: --fix-input errors") {
  CHECK(convert_error(kIf, fixed({{"rate", {1}}})) == "--fix-input: the model has no input 'rate' (its inputs: x, sr)");
  CHECK(convert_error(kIf, fixed({{"sr", {1, 2}}})) ==
        "--fix-input sr: the input has 1 element (shape []), 2 values given");
  CHECK(convert_error(kIf, fixed({{"sr", {1.5}}})) == "--fix-input sr: the input is int64; 1.500000 is not an integer");
  CHECK(convert_error(kIf, fixed({{"x", {1, 2}}})) == "--fix-input x: the input has 3 elements (shape [3]), 2 values given");
  // A float input: fixed to float32 values; the If still depends on sr (a run-time If).
  CHECK(convert_file(kIf, tmp_path("control_x_fixed.ember"), fixed({{"x", {1, 2, 3}}})).ok());
}

TEST_CASE("control flow: fix_inputs infers one dynamic dim from the count, refuses two") {
  Graph g;
  Value v;
  v.name = "v";
  v.dtype = DType::Float32;
  v.shape = std::vector<Dim>{Dim::named("batch"), Dim::fixed(2)};
  g.inputs.push_back(g.add_value(v));
  Diag d = fix_inputs(g, {{"v", {1, 2, 3, 4, 5, 6}}});
  REQUIRE_MESSAGE(d.ok(), d.message);
  CHECK(g.inputs.empty());
  check_equal(g.value(0).constant, tensor({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}}));
  Graph h;
  v.shape = std::vector<Dim>{Dim::named("batch"), Dim{}};
  h.inputs.push_back(h.add_value(v));
  CHECK(fix_inputs(h, {{"v", {1, 2}}}).message ==
        "--fix-input v: the input's shape has more than one dim that is not fixed; its values cannot be given a shape");
  v.shape = std::vector<Dim>{Dim::named("batch"), Dim::fixed(4)};
  Graph k;
  k.inputs.push_back(k.add_value(v));
  CHECK(fix_inputs(k, {{"v", {1, 2, 3}}}).message ==
        "--fix-input v: 3 values do not fill a whole number of the input's other dims (4)");
}

TEST_CASE("control flow: fix_input_shapes makes an If on a dim foldable (torch's squeeze(dim) pattern)") {
  // y = If(Shape(x)[0] == 1, Squeeze(x, 0), Identity(x)) on x [n, 3].
  Graph g;
  g.opset = 13;
  Value x;
  x.name = "x";
  x.dtype = DType::Float32;
  x.shape = std::vector<Dim>{Dim::named("n"), Dim::fixed(3)};
  const int xi = g.add_value(x);
  g.inputs.push_back(xi);
  auto node = [&](const std::string& op, std::vector<int> in, const std::string& out) {
    Node n;
    n.name = op + "_0";
    n.op_type = op;
    n.kind = map_onnx_op(op);
    n.inputs = std::move(in);
    Value v;
    v.name = out;
    n.outputs = {g.add_value(v)};
    g.nodes.push_back(n);
    return n.outputs[0];
  };
  const int s = node("Shape", {xi}, "s");
  const int d0 = node("Gather", {s, g.add_constant("zero", scalar_tensor(int64_t{0}, DType::Int64))}, "d0");
  const int c = node("Equal", {d0, g.add_constant("one", scalar_tensor(int64_t{1}, DType::Int64))}, "c");
  Node iff;
  iff.name = "squeeze_if";
  iff.op_type = "If";
  iff.inputs = {c, xi};
  iff.captured = 1;
  Value y;
  y.name = "y";
  iff.outputs = {g.add_value(y)};
  for (const char* attr : {"then_branch", "else_branch"}) {
    Graph b;
    const int bx = b.add_value(x);
    b.inputs = {bx};
    Node n;
    n.name = attr;
    n.op_type = std::string(attr) == "then_branch" ? "Squeeze" : "Identity";
    n.inputs = {bx};
    if (n.op_type == "Squeeze") n.inputs.push_back(b.add_constant("axes", tensor(std::vector<int64_t>{0}, {1})));
    Value o;
    o.name = std::string(attr) + "_out";
    n.outputs = {b.add_value(o)};
    b.outputs = n.outputs;
    b.nodes.push_back(n);
    iff.graphs.push_back(std::move(b));
    iff.graph_attrs.push_back(attr);
  }
  g.nodes.push_back(std::move(iff));
  g.outputs = {g.nodes.back().outputs[0]};
  REQUIRE_MESSAGE(g.validate().ok(), g.validate().message);

  Graph dynamic = g;
  REQUIRE(run_passes(dynamic).ok());
  CHECK(dynamic.op_histogram().at("If") == 1);  // left to run time
  // Left so, its output has rank 1 or 2: the refusal says why and what folds it.
  const auto lowered = lower(dynamic);
  REQUIRE(!lowered.ok());
  CHECK(lowered.diag().message.find("value 'y': rank unknown (If 'squeeze_if' gives it rank 1 in then_branch and 2 "
                                    "in else_branch, and its condition (computed from 'x') is known only at run "
                                    "time: fixing the inputs it is computed from (--fix-input NAME=VALUE, "
                                    "--input-shape NAME=DIMS) can fold it)") != std::string::npos);
  CHECK(fix_input_shapes(g, {{"x", {1, 3, 1}}}).message == "--input-shape x: the input has rank 2, 3 dims given");
  CHECK(fix_input_shapes(g, {{"x", {1, 4}}}).message == "--input-shape x: dim 1 of the input is 3, not 4");
  CHECK(fix_input_shapes(g, {{"z", {1}}}).message == "--input-shape: the model has no input 'z' (its inputs: x)");
  REQUIRE(fix_input_shapes(g, {{"x", {1, 3}}}).ok());
  auto rep = run_passes(g);
  REQUIRE_MESSAGE(rep.ok(), rep.diag().message);
  CHECK(rep->ifs_inlined == 1);
  REQUIRE(g.nodes.size() == 1);
  CHECK(g.nodes[0].op_type == "Squeeze");
  CHECK(g.value(g.outputs[0]).name == "y");
  CHECK(g.value(g.outputs[0]).static_shape() == Shape{3});
}

TEST_CASE("control flow: shapes inferred for Conv (spatial sizes), Pad (constant pads) and LSTM") {
  Graph g;
  Value x;
  x.name = "x";
  x.dtype = DType::Float32;
  x.shape = std::vector<Dim>{Dim::fixed(1), Dim::fixed(4), Dim::fixed(10)};
  g.inputs.push_back(g.add_value(x));
  auto add = [&](const std::string& op, std::vector<int> in, int n_out) {
    Node n;
    n.name = op;
    n.op_type = op;
    n.inputs = std::move(in);
    for (int k = 0; k < n_out; ++k) n.outputs.push_back(g.add_value(Value{op + std::to_string(k), {}, {}, {}}));
    g.nodes.push_back(n);
    return &g.nodes.back();
  };
  const int pads = g.add_constant("pads", tensor(std::vector<int64_t>{0, 0, 1, 0, 0, 2}, {6}));
  add("Pad", {0, pads}, 1)->attrs["mode"] = std::string("reflect");
  const int w = g.add_constant("w", zeros({6, 4, 3}));
  Node* conv = add("Conv", {g.nodes[0].outputs[0], w}, 1);
  conv->attrs["strides"] = std::vector<int64_t>{2};
  conv->attrs["pads"] = std::vector<int64_t>{1, 0};
  const int seq = g.add_constant("seq", zeros({5, 2, 4}));
  add("LSTM", {seq, g.add_constant("W", zeros({1, 32, 4})), g.add_constant("R", zeros({1, 32, 8}))}, 3)
      ->attrs["hidden_size"] = int64_t{8};
  infer_missing_shapes(g);
  CHECK(g.value(g.nodes[0].outputs[0]).static_shape() == Shape{1, 4, 13});
  CHECK(g.value(g.nodes[1].outputs[0]).static_shape() == Shape{1, 6, 6});  // (13 + 1 - 3) / 2 + 1
  CHECK(g.value(g.nodes[2].outputs[0]).static_shape() == Shape{5, 1, 2, 8});
  CHECK(g.value(g.nodes[2].outputs[1]).static_shape() == Shape{1, 2, 8});
  CHECK(g.value(g.nodes[2].outputs[2]).static_shape() == Shape{1, 2, 8});
}

}  // namespace ember::converter

namespace ember::converter {
namespace {

// `onnx` converted and loaded into an executor.
std::shared_ptr<const Executor> convert_to_executor(const std::string& onnx, const std::string& name) {
  const std::string out = tmp_path(name + ".ember");
  const Diag d = convert_file(onnx, out, {});
  REQUIRE_MESSAGE(d.ok(), d.message);
  std::string error;
  Result<Model> model = Model::load(out, Verification::Full, &error);
  REQUIRE_MESSAGE(model.ok(), error);
  auto ex = Executor::create(std::make_shared<const Model>(std::move(model.get())), &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  return ex.get();
}

}  // namespace

TEST_CASE("control flow: Scan with a reversed scan input (onnxruntime's values)") {
  ExecutionContext ctx(convert_to_executor("tests/golden/onnx/control_scan.onnx", "scan"));
  std::string error;
  Result<std::vector<Tensor>> r =
      ctx.run({tensor({0.f, 0.f}), tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).reshape({3, 2})}, {}, &error);
  REQUIRE_MESSAGE(r.ok(), error);
  check_equal(r.get()[0], tensor({9.f, 12.f}));
  check_equal(r.get()[1], tensor({5.f, 6.f, 8.f, 10.f, 9.f, 12.f}).reshape({3, 2}));
}

TEST_CASE("control flow: a while Loop (condition from the body, no trip count) with a scan output") {
  ExecutionContext ctx(convert_to_executor("tests/golden/onnx/control_while.onnx", "while"));
  std::string error;
  for (int pass = 0; pass < 2; ++pass) {  // trip counts 6 then 1, twice: the plan is not fooled
    Result<std::vector<Tensor>> r = ctx.run({tensor({3.f}), tensor({100.f})}, {}, &error);
    REQUIRE_MESSAGE(r.ok(), error);
    check_equal(r.get()[0], tensor({192.f}));
    check_equal(r.get()[1], tensor({6.f, 12.f, 24.f, 48.f, 96.f, 192.f}).reshape({6, 1}));
    Result<std::vector<Tensor>> once = ctx.run({tensor({3.f}), tensor({5.f})}, {}, &error);
    REQUIRE_MESSAGE(once.ok(), error);
    check_equal(once.get()[0], tensor({6.f}));
    check_equal(once.get()[1], tensor({6.f}).reshape({1, 1}));
  }
}

TEST_CASE("control flow: torch.jit.script's for and if (Loop with a run-time trip count, If on the data)") {
  ExecutionContext ctx(convert_to_executor("tests/golden/onnx/control_script.onnx", "script"));
  std::string error;
  auto run = [&](const Tensor& x, int64_t n) {
    Result<std::vector<Tensor>> r = ctx.run({x, scalar_tensor(Scalar(n), TensorOptions(DType::Int64))}, {}, &error);
    REQUIRE_MESSAGE(r.ok(), error);
    return r.get()[0].clone();
  };
  check_equal(run(tensor({1.f, 2.f}), 3), tensor({11.f, 19.f}));  // PyTorch's values
  check_equal(run(tensor({0.f, 0.f}), 1), tensor({1.f, 1.f}));
  check_equal(run(tensor({1.f, 2.f}), 0), tensor({2.f, 3.f}));    // no iteration: x + 1
}

TEST_CASE("control flow: a Loop whose body declares no shapes (ONNX's Range function) is lowered") {
  // The carried scalar and the body's values have no declared shape: they come
  // from the Loop's inputs, and the outer constant `axes` the body's Unsqueeze
  // reads is inlined into the body (its rank is known at conversion).
  ExecutionContext ctx(convert_to_executor("tests/golden/onnx/control_range.onnx", "range"));
  std::string error;
  Result<std::vector<Tensor>> r = ctx.run({scalar_tensor(Scalar(int64_t{3}), TensorOptions(DType::Int64)),
                                           scalar_tensor(1.0, DType::Float32), scalar_tensor(0.5, DType::Float32)},
                                          {}, &error);
  REQUIRE_MESSAGE(r.ok(), error);
  check_equal(r.get()[0], scalar_tensor(2.5, DType::Float32));  // numpy: 1 + 3 * 0.5
  check_equal(r.get()[1], tensor({1.f, 1.5f, 2.f}).reshape({3, 1}));
}

TEST_CASE("control flow: a file whose If names a subgraph it does not have is refused at load") {
  ModelDef def;
  TensorDef c;
  c.name = "c";
  c.dtype = DType::Bool;
  TensorDef y = c;
  y.name = "y";
  def.tensors = {c, y};
  def.inputs = {0};
  def.outputs = {1};
  OpDef op;
  op.op = OpKind::If;
  op.name = "if_0";
  op.inputs = {0};
  op.outputs = {1};
  IfParams p;
  p.then_graph = 0;
  p.else_graph = 5;
  op.params = p;
  def.ops = {op};
  ModelDef branch;  // no inputs, one output: a constant
  TensorDef k = y;
  k.name = "k";
  k.tensor = scalar_tensor(Scalar(true), TensorOptions(DType::Bool));
  k.has_data = true;
  branch.tensors = {k};
  branch.outputs = {0};
  def.subgraphs = {branch};
  std::vector<std::byte> bytes;
  std::string error;
  REQUIRE(detail::serialize_model_unverified(def, &bytes, &error) == Status::Ok);
  Result<Model> m = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Full, &error);
  REQUIRE(!m.ok());
  CHECK(error == "operator 0 'if_0' (if_then_else): else subgraph index 5 out of range (1 subgraphs)");
  // The right index loads, and runs.
  def.ops[0].params = IfParams{0, 0};
  REQUIRE(detail::serialize_model_unverified(def, &bytes, &error) == Status::Ok);
  Result<Model> good = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Full, &error);
  REQUIRE_MESSAGE(good.ok(), error);
  auto ex = Executor::create(std::make_shared<const Model>(std::move(good.get())), &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  ExecutionContext ctx(ex.get());
  Result<std::vector<Tensor>> r = ctx.run({scalar_tensor(Scalar(true), TensorOptions(DType::Bool))}, {}, &error);
  REQUIRE_MESSAGE(r.ok(), error);
  CHECK(r.get()[0].item().to_double() == 1.0);
  // A subgraph's If may only name subgraphs of lower index (no cycles).
  ModelDef cycle = def;  // subgraph 1 runs itself
  cycle.subgraphs.clear();
  cycle.ops[0].params = IfParams{1, 1};
  def.subgraphs.push_back(cycle);
  REQUIRE(detail::serialize_model_unverified(def, &bytes, &error) == Status::Ok);
  Result<Model> cyclic = Model::load_from_bytes(bytes.data(), bytes.size(), Verification::Full, &error);
  REQUIRE(!cyclic.ok());
  CHECK(error == "subgraph 1: operator 0 'if_0' (if_then_else): then subgraph index 1 out of range (2 subgraphs, "
                 "and a subgraph may only run subgraphs of lower index than its own, 1)");
}

}  // namespace ember::converter
