// run_passes() and the clean-up passes (passes.h): identities and dead nodes.
// Constant folding: fold.cc; shape folding and inference: shape_fold.cc;
// BatchNorm folding, activation fusion and Conv1d rewriting: fuse.cc.
#include "converter/passes.h"

#include <algorithm>
#include <sstream>

#include "converter/pass_util.h"
#include "runtime/core/error.h"

namespace ember::converter {

std::string PassReport::summary() const {
  std::ostringstream os;
  os << "folded " << constants_folded << " constant nodes and " << shapes_folded << " shape nodes, removed "
     << identities_removed << " identities and " << dead_nodes_removed << " dead nodes, folded "
     << batchnorms_folded << " BatchNorms, fused " << activations_fused << " activations, dropped "
     << values_dropped << " unused values";
  if (ifs_inlined > 0) os << ", inlined " << ifs_inlined << " Ifs of constant condition";
  if (convs_made_2d > 0) os << ", made " << convs_made_2d << " 1-D convolutions 2-D";
  if (matmul_biases_fused > 0) os << ", fused " << matmul_biases_fused << " MatMul biases";
  if (attention_scales_folded > 0) os << ", folded " << attention_scales_folded << " attention scales into Gemms";
  if (layer_norms_fused > 0) os << ", fused " << layer_norms_fused << " LayerNorms";
  if (gelus_fused > 0) os << ", fused " << gelus_fused << " GELUs";
  if (hardswishes_fused > 0) os << ", fused " << hardswishes_fused << " Hardswishes";
  if (residual_adds_fused > 0) os << ", fused " << residual_adds_fused << " residual Adds";
  if (recurrences_scanned > 0) os << ", made " << recurrences_scanned << " recurrences over a dynamic length Scans";
  if (attentions_fused > 0) os << ", fused " << attentions_fused << " attentions";
  if (gemms_merged > 0) os << ", merged " << gemms_merged << " Gemms of a shared input";
  return os.str();
}

int remove_identities(Graph& graph) {
  int removed = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& node = graph.nodes[i];
    if (node.op_type != "Identity" && node.op_type != "Dropout") continue;
    if (node.op_type == "Dropout" && node.outputs.size() > 1 && node.outputs[1] >= 0) {
      const int mask = node.outputs[1];
      if (!graph.users_of(mask).empty() || graph.is_graph_output(mask)) continue;
    }
    // Passes run before the lowering checks arity: a node without its input or
    // output is left for it to refuse (an Identity with no outputs in a
    // subgraph crashed here: found by fuzzing).
    if (node.inputs.empty() || node.outputs.empty()) continue;
    const int in = node.inputs[0], out = node.outputs[0];
    if (in < 0 || out < 0) continue;
    if (!graph.is_graph_output(out)) {
      graph.replace_uses(out, in);
    } else if (graph.producer_of(in) >= 0 && !graph.is_graph_output(in)) {
      // Keep the output's name: the producer of `in` writes `out` directly.
      Node& producer = graph.nodes[static_cast<size_t>(graph.producer_of(in))];
      for (int& o : producer.outputs) {
        if (o == in) o = out;
      }
      graph.replace_uses(in, out);
    } else {
      continue;  // graph input or constant straight to an output: keep the copy
    }
    node.inputs.clear();
    node.outputs.clear();
    dead[i] = true;
    ++removed;
  }
  graph.erase_nodes(dead);
  return removed;
}

int eliminate_dead_nodes(Graph& graph) {
  std::vector<bool> live_value(graph.values.size(), false);
  for (int o : graph.outputs) live_value[static_cast<size_t>(o)] = true;
  std::vector<bool> dead(graph.nodes.size(), true);
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    const Node& node = graph.nodes[i];
    bool live = false;
    for (int o : node.outputs) live = live || (o >= 0 && live_value[static_cast<size_t>(o)]);
    if (!live) continue;
    dead[i] = false;
    for (int in : node.inputs) {
      if (in >= 0) live_value[static_cast<size_t>(in)] = true;
    }
  }
  const int removed = static_cast<int>(std::count(dead.begin(), dead.end(), true));
  graph.erase_nodes(dead);
  return removed;
}

namespace {

Expected<PassReport> run_passes_or_raise(Graph& graph, bool fuse_matmul_biases, bool merge_gemms) {
  PassReport r;
  expand_flex_attention_mods(graph);
  for (;;) {
    const int ids = remove_identities(graph);
    const int shapes = fold_shapes(graph);
    auto consts = fold_constants(graph);
    if (!consts.ok()) return consts.diag();
    const int ifs = inline_constant_ifs(graph);
    infer_missing_shapes(graph);  // inlined values; Slice starts and Reshape targets folded
    const int dead = eliminate_dead_nodes(graph);
    r.ifs_inlined += ifs;
    r.identities_removed += ids;
    r.shapes_folded += shapes;
    r.constants_folded += *consts;
    r.dead_nodes_removed += dead;
    if (ids + shapes + *consts + ifs + dead == 0) break;
  }
  infer_missing_shapes(graph);  // Slice starts and Reshape targets may be constants now
  r.recurrences_scanned = recurrences_to_scans(graph);
  if (r.recurrences_scanned > 0) {
    auto sliced = fold_constants(graph);  // a bidirectional node's initial states, when constants
    if (!sliced.ok()) return sliced.diag();
    infer_missing_shapes(graph);
  }
  auto bn = fold_batchnorm(graph);
  if (!bn.ok()) return bn.diag();
  r.batchnorms_folded = *bn;
  r.matmul_biases_fused = fuse_matmul_biases ? fuse_matmul_bias(graph) : 0;
  r.attention_scales_folded = fuse_matmul_biases ? fold_attention_scales(graph) : 0;  // into those Gemms
  r.gemms_merged = merge_gemms ? merge_sibling_gemms(graph) : 0;  // after: q's Gemm took its scale alone
  r.attentions_fused = fuse_attention(graph);  // after: a folded scale is no longer in the chain
  r.hardswishes_fused = fuse_hardswishes(graph);  // first: a Conv's x * HardSigmoid(x) becomes its activation
  r.residual_adds_fused = fuse_residual_adds(graph);  // before: the activation then follows the Add
  r.activations_fused = fuse_activations(graph);
  r.layer_norms_fused = fuse_layer_norms(graph);
  r.gelus_fused = fuse_gelus(graph);
  r.convs_made_2d = conv1d_to_conv2d(graph);
  r.dead_nodes_removed += eliminate_dead_nodes(graph);
  r.values_dropped = graph.compact();
  Diag d = graph.validate();
  if (!d.ok()) return d;
  return r;
}

}  // namespace

Expected<PassReport> run_passes(Graph& graph, bool fuse_matmul_biases, bool merge_gemms) {
  try {
    return run_passes_or_raise(graph, fuse_matmul_biases, merge_gemms);
  } catch (const Error& e) {  // an eager op refused what a malformed graph gave it
    return Diag{e.status(), std::string("optimizing the graph: ") + e.what()};
  }
}

}  // namespace ember::converter
