// The backward rules of the neural-network and joining ops (grad_rules_nn.cc).
#pragma once

#include <vector>

#include "runtime/autograd/node.h"

namespace ember {

// The gradients of the node's inputs for the rules listed under "neural-network
// ops and joining" in grad_rules.def (apply_grad_rule forwards them here).
std::vector<Tensor> apply_nn_grad_rule(Node& n, const Tensor& grad);

// ... and for the indexing, selection, scan and reordering rules (grad_rules_index.cc).
std::vector<Tensor> apply_index_grad_rule(Node& n, const Tensor& grad);

}  // namespace ember
