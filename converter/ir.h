// The converter's graph IR: a host-side, mutable picture of a model between
// the ONNX importer and the .ember writer. Values are numbered; nodes refer to
// them by id. Nodes keep their ONNX op type and attributes (normalized by the
// importer so that "axes" and "split" are always inputs, see onnx_import.h),
// plus the ember OpKind they run as where one exists.
//
// Host-only code: it uses the STL and ember's eager Tensor for constant data.
// Functions that can fail return a Diag (a Status and its message) or an
// Expected<T>; only a CLI main turns them into exit codes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/core/diag.h"
#include "runtime/core/status.h"
#include "runtime/graph/op_kind.h"
#include "runtime/tensor/tensor.h"

namespace ember::converter {

using ::ember::Diag;
using ::ember::Expected;

// One dimension: a fixed size, or a symbol (ONNX dim_param, e.g. "batch"); a
// dim with neither is unknown (value -1, empty symbol).
struct Dim {
  int64_t value = -1;
  std::string symbol;

  static Dim fixed(int64_t v) { return {v, {}}; }
  static Dim named(std::string s) { return {-1, std::move(s)}; }
  bool is_static() const { return value >= 0; }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
};

// A tensor flowing through the graph: a graph input, an initializer or folded
// constant (`constant` defined), or a node output.
struct Value {
  std::string name;
  std::optional<DType> dtype;             // unset: not known
  std::optional<std::vector<Dim>> shape;  // unset: rank not known
  Tensor constant;                        // defined for initializers and folded constants

  bool is_constant() const { return constant.defined(); }
  // The shape as numbers when every dim is static.
  std::optional<Shape> static_shape() const;
};

// Attribute values: ONNX INT, FLOAT, STRING, INTS, FLOATS, TENSOR and STRINGS.
using Attr = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, Tensor,
                          std::vector<std::string>>;

struct Graph;

struct Node {
  std::string name;     // from the source model (may be empty)
  std::string op_type;  // ONNX op type, e.g. "Conv"
  std::optional<OpKind> kind;  // the ember op it maps to, where one exists
  std::vector<int> inputs;     // value ids; -1 marks an omitted optional input
  std::vector<int> outputs;    // value ids; -1 marks an omitted optional output
  std::map<std::string, Attr> attrs;
  // Control flow (If, Loop, Scan): the ONNX GRAPH attributes, imported as
  // graphs of their own ("then_branch", "else_branch", "body"), in
  // graph_attrs' order. What they read from enclosing scopes (ONNX's lexical
  // scoping) is explicit: the node's last `captured` inputs are those outer
  // values, and each subgraph's last `captured` graph inputs stand for them,
  // in the same order (a Loop or Scan body's own inputs come first). Passes
  // thus see a captured value as read by the node.
  std::vector<Graph> graphs;
  std::vector<std::string> graph_attrs;
  int captured = 0;

  bool has(const std::string& attr) const { return attrs.count(attr) != 0; }
  int64_t get_int(const std::string& attr, int64_t fallback) const;
  double get_float(const std::string& attr, double fallback) const;
  std::string get_string(const std::string& attr, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& attr, std::vector<int64_t> fallback = {}) const;
  std::vector<double> get_floats(const std::string& attr) const;
  std::vector<std::string> get_strings(const std::string& attr) const;  // empty when absent
  // "Conv '/conv1/Conv'" for messages.
  std::string label() const;
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;  // in execution (topological) order
  std::vector<int> inputs;  // value ids of the graph inputs (initializers excluded)
  std::vector<int> outputs;
  int64_t opset = 0;        // default-domain opset the model was written for (0: not given, the newest)
  std::string producer;     // "pytorch 1.13.1"

  // Adds a value and returns its id.
  int add_value(Value v);
  int add_constant(const std::string& name, Tensor t);
  // The id of the value called `name`, or -1.
  int find_value(const std::string& name) const;
  const Value& value(int id) const { return values.at(static_cast<size_t>(id)); }
  Value& value(int id) { return values.at(static_cast<size_t>(id)); }
  bool is_constant(int id) const { return id >= 0 && value(id).is_constant(); }
  bool is_graph_output(int id) const;
  bool is_graph_input(int id) const;
  // The index of the node producing value `id`, or -1.
  int producer_of(int id) const;
  // The indices of the nodes reading value `id` (a node reading it twice counts once).
  std::vector<int> users_of(int id) const;
  // Replaces every read of value `from` (node inputs and graph outputs) by `to`.
  void replace_uses(int from, int to);
  // Removes the nodes whose `dead` flag is set (indexed like nodes).
  void erase_nodes(const std::vector<bool>& dead);
  // Drops values no node, graph input or output refers to; renumbers ids.
  // Returns how many values were dropped.
  int compact();
  // Op type -> node count, e.g. {"Conv": 2, "Relu": 1}.
  std::map<std::string, int> op_histogram() const;
  // Checks the invariants: ids in range, every value read is a graph input, a
  // constant or produced by an earlier node, no value produced twice.
  Diag validate() const;
};

// The ember op an ONNX op type runs as, where one exists.
std::optional<OpKind> map_onnx_op(const std::string& op_type);

}  // namespace ember::converter
