// The backward pass: counts each node's dependencies over the graph reachable
// from the root, then runs nodes in order (highest sequence number first among
// the ready ones, so later ops run before earlier ones as in PyTorch),
// summing gradients that meet at a node before running it.
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "runtime/amp/autocast.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/ops.h"

namespace ember {

std::vector<Tensor> apply_grad_rule(Node& node, const Tensor& grad);  // grad_rules.cc

namespace {

void accumulate_into_leaf(const Node& node, const Tensor& grad) {
  const Tensor& leaf = node.variable;
  const Tensor g = grad.dtype() == leaf.dtype() ? grad : grad.to(leaf.dtype());
  const Tensor current = leaf.grad();
  if (!current.defined()) {
    Tensor fresh = empty_like(leaf);  // the gradient takes the leaf's layout
    fresh.copy_(g);
    leaf.set_grad(fresh);
  } else {
    Tensor acc = current;
    acc.add_(g);
  }
}

}  // namespace

namespace autograd {

void backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  EMBER_ENFORCE(root.requires_grad(), Status::InvalidState,
              "element 0 of tensors does not require grad and does not have a grad_fn");
  Tensor grad = gradient;
  if (!grad.defined()) {
    EMBER_ENFORCE(root.numel() == 1, Status::InvalidArgument, "grad can be implicitly created only for scalar outputs");
    grad = ones_like(root);
  } else {
    EMBER_ENFORCE(grad.sizes() == root.sizes(), Status::ShapeMismatch,
                "Mismatch in shape: grad_output[0] has a shape of torch.Size(", shape_str(grad.sizes()),
                ") and output[0] has a shape of torch.Size(", shape_str(root.sizes()), ").");
  }
  NoGradGuard no_grad;
  // Backward ops run in the forward's types (torch.autocast's rule), even
  // when backward() is called inside an autocast region.
  amp::SuspendAutocast no_autocast;
  const std::shared_ptr<Node> root_node = gradient_edge(root);

  // Dependencies: how many edges point at each node.
  std::unordered_map<Node*, int> dependencies;
  std::unordered_set<Node*> seen{root_node.get()};
  std::vector<Node*> stack{root_node.get()};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) {
      if (!e.fn) continue;
      ++dependencies[e.fn.get()];
      if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }

  std::unordered_map<Node*, Tensor> buffers;
  buffers[root_node.get()] = grad;
  using Ready = std::pair<uint64_t, Node*>;
  std::priority_queue<Ready> ready;
  ready.push({root_node->sequence_nr, root_node.get()});
  while (!ready.empty()) {
    Node* node = ready.top().second;
    ready.pop();
    Tensor g = std::move(buffers[node]);
    buffers.erase(node);
    if (node->rule == GradRule::AccumulateGrad) {
      if (g.defined()) accumulate_into_leaf(*node, g);
      continue;
    }
    if (auto retained = node->retained.lock(); retained && g.defined()) {
      retained->grad = retained->grad.defined() ? retained->grad + g : g.clone();
    }
    std::vector<Tensor> input_grads;
    if (g.defined()) input_grads = apply_grad_rule(*node, g);
    if (!retain_graph) node->release_saved();
    for (size_t i = 0; i < node->next.size(); ++i) {
      Node* next = node->next[i].fn.get();
      if (next == nullptr) continue;
      if (i < input_grads.size() && input_grads[i].defined()) {
        Tensor& slot = buffers[next];
        slot = slot.defined() ? slot + input_grads[i] : input_grads[i];
      }
      if (--dependencies[next] == 0) ready.push({next->sequence_nr, next});
    }
  }
}

}  // namespace autograd
}  // namespace ember
