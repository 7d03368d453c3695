// The fine-tuning loop of `ember finetune` (runtime/train/trainer.h trains;
// this feeds it batches of a data set and steps an optimizer). PyTorch's loop
// over a data set, written once:
//
//   for epoch in range(epochs):
//       for i in range(0, N, B):                 # file order, or a shuffled order
//           opt.zero_grad()
//           loss = loss_fn(model(x[i:i+B]), target[i:i+B])
//           loss.backward()
//           clip_grad_norm_(params, max_norm)     # when asked
//           opt.step()
//       scheduler.step()                         # per epoch, when asked
//
// With shuffle off, batches and steps are exactly those of that loop: the
// per-step losses match PyTorch's (tests/train/finetune_test.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/model/npz.h"
#include "runtime/train/trainer.h"

namespace ember {

struct FinetuneConfig {
  // (model input name, data set key), one per model input.
  std::vector<std::pair<std::string, std::string>> inputs;
  std::string target;                  // data set key of the targets
  std::string loss = "cross-entropy";  // cross-entropy | mse | bce-logits | l1
  std::string optimizer = "sgd";       // sgd | adam | adamw
  double lr = 0.01;
  double momentum = 0.0;               // sgd
  double weight_decay = 0.0;           // sgd, adam, adamw (adamw's default is set by the CLI: 0.01)
  double clip_grad_norm = 0.0;         // 0: off
  std::string scheduler;               // "" | "step:SIZE:GAMMA" | "cosine:TMAX" (stepped per epoch)
  int epochs = 1;
  int64_t batch_size = 32;
  bool shuffle = true;                 // a new order each epoch from `seed`
  uint64_t seed = 0;
  // Checkpoints (runtime/train/checkpoint.h): written to `checkpoint` every
  // `checkpoint_every` steps (0: never); `resume` continues from one exactly
  // as if the run had not stopped (same data, config and seed).
  std::string checkpoint;
  int64_t checkpoint_every = 0;
  std::string resume;
};

struct StepLog {
  int epoch = 0;      // from 1
  int64_t step = 0;   // from 1, over all epochs
  double loss = 0;
  double lr = 0;      // the rate this step used
};

struct FinetuneResult {
  std::vector<StepLog> steps;       // this run's (after a resume: from the resumed step on)
  std::vector<double> epoch_loss;   // mean loss of each epoch this run finished
};

// The config alone: a known loss and optimizer, lr > 0, epochs and batch
// size >= 1, --checkpoint and --checkpoint-every given together. finetune()
// runs it first; the CLI runs it before loading anything.
Status check_config(const FinetuneConfig& config, std::string* error = nullptr);

// The data set's arrays checked against the model and the config first: every
// key present, one first dim shared by all, the inputs' dtypes and fixed dims
// those of the model's inputs, a batch dim that is symbolic (else the batch
// size must equal it), targets of the loss's dtype and shape, class labels in
// range. Each error names the key and `data_name`.
Result<FinetuneResult> finetune(Trainer& trainer, const std::vector<NpzEntry>& data, const std::string& data_name,
                                const FinetuneConfig& config, const std::function<void(const StepLog&)>& on_step = {},
                                std::string* error = nullptr);

// The mean loss of the model over a data set (no gradient; batches of the config's size).
Result<double> evaluate(Trainer& trainer, const std::vector<NpzEntry>& data, const std::string& data_name,
                        const FinetuneConfig& config, double* accuracy = nullptr, std::string* error = nullptr);

}  // namespace ember
