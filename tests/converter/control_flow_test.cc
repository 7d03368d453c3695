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
  CHECK(check_control_flow(*g, "m").ok());
}

TEST_CASE("control flow: an If whose condition is not a constant names the node and the inputs to fix") {
  CHECK(convert_error(kIf, {}) ==
        "'" + kIf + "' uses ops the converter does not support (control flow it cannot resolve at conversion, "
        "1 node): If 'outer_if': its condition 'c' is not a constant; bind the inputs it depends on with "
        "--fix-input (sr)");
  // --no-optimize: nothing is folded, so nothing is inlined.
  ConvertOptions o = fixed({{"sr", {8000}}});
  o.optimize = false;
  CHECK(convert_error(kIf, o).find("If 'outer_if': its condition 'c' is not a constant") != std::string::npos);
}

TEST_CASE("control flow: --fix-input errors") {
  CHECK(convert_error(kIf, fixed({{"rate", {1}}})) == "--fix-input: the model has no input 'rate' (its inputs: x, sr)");
  CHECK(convert_error(kIf, fixed({{"sr", {1, 2}}})) ==
        "--fix-input sr: the input has 1 element (shape []), 2 values given");
  CHECK(convert_error(kIf, fixed({{"sr", {1.5}}})) == "--fix-input sr: the input is int64; 1.500000 is not an integer");
  CHECK(convert_error(kIf, fixed({{"x", {1, 2}}})) == "--fix-input x: the input has 3 elements (shape [3]), 2 values given");
  // A float input: fixed to float32 values; the If still depends on sr.
  CHECK(convert_error(kIf, fixed({{"x", {1, 2, 3}}})).find("(sr)") != std::string::npos);
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

TEST_CASE("control flow: a Loop is imported (its body parsed) and refused by name") {
  auto g = import_onnx(kLoop);
  REQUIRE_MESSAGE(g.ok(), g.diag().message);
  REQUIRE(g->nodes.size() == 1);
  const Node& loop = g->nodes[0];
  REQUIRE(loop.graphs.size() == 1);
  CHECK(loop.graph_attrs[0] == "body");
  CHECK(loop.captured == 1);  // "one", an outer initializer
  CHECK(loop.graphs[0].inputs.size() == 4);  // i, cond_in, acc, then the capture
  CHECK(convert_error(kLoop, {}) ==
        "'" + kLoop + "' uses ops the converter does not support (control flow it cannot resolve at conversion, "
        "1 node): Loop 'loop_0': run-time loops are not supported (ember has no Loop op; its body cannot be "
        "unrolled at conversion)");
}

TEST_CASE("control flow: an unsupported op or an undefined name inside a branch is reported at import") {
  auto model_with = [](const std::string& branch_op, const std::string& branch_input) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(13);
    onnx::GraphProto* g = m.mutable_graph();
    for (const char* name : {"c", "x", "y"}) {
      onnx::ValueInfoProto* v = std::string(name) == "y" ? g->add_output() : g->add_input();
      v->set_name(name);
      auto* tt = v->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(std::string(name) == "c" ? onnx::TensorProto::BOOL : onnx::TensorProto::FLOAT);
      tt->mutable_shape();
    }
    onnx::NodeProto* n = g->add_node();
    n->set_op_type("If");
    n->set_name("if_0");
    n->add_input("c");
    n->add_output("y");
    for (const char* attr : {"then_branch", "else_branch"}) {
      onnx::AttributeProto* a = n->add_attribute();
      a->set_name(attr);
      a->set_type(onnx::AttributeProto::GRAPH);
      onnx::NodeProto* b = a->mutable_g()->add_node();
      b->set_op_type(branch_op);
      b->set_name(std::string("inner_") + attr);
      b->add_input(branch_input);
      b->add_output(std::string("out_") + attr);
      a->mutable_g()->add_output()->set_name(std::string("out_") + attr);
    }
    std::string bytes;
    REQUIRE(m.SerializeToString(&bytes));
    return bytes;
  };
  auto bad_op = import_onnx_bytes(model_with("Bernoulli", "x"), "m.onnx");
  REQUIRE(!bad_op.ok());
  CHECK(bad_op.diag().message ==
        "'m.onnx' uses ops the converter does not support (2 nodes of 1 type): Bernoulli x2 (inner_then_branch, "
        "inner_else_branch)");
  auto bad_name = import_onnx_bytes(model_with("Relu", "nowhere"), "m.onnx");
  REQUIRE(!bad_name.ok());
  CHECK(bad_name.diag().message ==
        "Relu 'inner_then_branch' reads 'nowhere', which is no initializer (missing initializer), graph input or "
        "earlier node's output (in If 'if_0' then_branch)");
  auto ok = import_onnx_bytes(model_with("Relu", "x"), "m.onnx");
  REQUIRE_MESSAGE(ok.ok(), ok.diag().message);
  CHECK(ok->nodes[0].captured == 1);
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
  CHECK(check_control_flow(dynamic, "m").message ==
        "'m' uses ops the converter does not support (control flow it cannot resolve at conversion, 1 node): "
        "If 'squeeze_if': its condition 'c' is not a constant; bind the inputs it depends on with --fix-input (x)");
  CHECK(fix_input_shapes(g, {{"x", {1, 3, 1}}}).message == "--input-shape x: the input has rank 2, 3 dims given");
  CHECK(fix_input_shapes(g, {{"x", {1, 4}}}).message == "--input-shape x: dim 1 of the input is 3, not 4");
  CHECK(fix_input_shapes(g, {{"z", {1}}}).message == "--input-shape: the model has no input 'z' (its inputs: x)");
  REQUIRE(fix_input_shapes(g, {{"x", {1, 3}}}).ok());
  auto rep = run_passes(g);
  REQUIRE_MESSAGE(rep.ok(), rep.diag().message);
  CHECK(rep->ifs_inlined == 1);
  CHECK(check_control_flow(g, "m").ok());
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
