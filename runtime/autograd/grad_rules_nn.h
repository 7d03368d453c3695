// The backward rules of the neural-network and joining ops (grad_rules_nn.cc),
// and record() for ops with a list of inputs (cat, stack).
#pragma once

#include <vector>

#include "runtime/autograd/node.h"

namespace ember {

// The gradients of the node's inputs for the rules listed under "neural-network
// ops and joining" in grad_rules.def (apply_grad_rule forwards them here).
std::vector<Tensor> apply_nn_grad_rule(Node& n, const Tensor& grad);

namespace autograd {

// The node gradients for `t` flow into (node.cc).
std::shared_ptr<Node> gradient_edge(const Tensor& t);

// autograd::record for a list of inputs.
Node* record_list(GradRule rule, const Tensor& out, Span<const Tensor> inputs);

}  // namespace autograd
}  // namespace ember
