// Fine-tuning checkpoints (`ember finetune --checkpoint C --checkpoint-every N`,
// `--resume C`): one safetensors file holding everything the loop needs to go
// on exactly as if it had not stopped:
//   tensors  "param.<name>"               the trained tensors (adapters included)
//            "optim.<index>.<key>"         the optimizer's per-parameter state tensors
//   metadata "format": "ember-checkpoint", "base": the model's fingerprint,
//            "epoch", "step", "batch" (the next batch of `epoch`), "epoch_sum",
//            "epoch_count" (the running epoch mean), and every non-tensor value
//            of the optimizer's and scheduler's state dicts as text
//            ("optim.<index>.<key>", "group.<g>.<key>", "sched.<key>"),
//            doubles in %.17g so they read back bit for bit.
// Written atomically (a kill during a save leaves the previous checkpoint).
// 20 steps straight equal 10 + resume + 10, bit for bit
// (tests/train/finetune_test.cc).
#pragma once

#include <cstdint>
#include <string>

#include "runtime/core/result.h"
#include "runtime/optim/lr_scheduler.h"
#include "runtime/optim/optimizer.h"
#include "runtime/train/trainer.h"

namespace ember {

// Where the loop stands.
struct LoopPosition {
  int epoch = 1;          // from 1
  int64_t step = 0;       // steps done, over all epochs
  int64_t batch = 0;      // batches of `epoch` done
  double epoch_sum = 0;   // loss sum and count of `epoch` so far
  int64_t epoch_count = 0;
};

Status save_checkpoint(const std::string& path, const Trainer& trainer, const optim::Optimizer& opt,
                       const optim::LRScheduler* sched, const LoopPosition& at, std::string* error = nullptr);

// Restores the trainer's parameters, the optimizer's and scheduler's state
// and the position. Errors: another base model, another set of parameters
// (names or shapes), a scheduler in one and not the other, a malformed file.
Status load_checkpoint(const std::string& path, Trainer& trainer, optim::Optimizer& opt, optim::LRScheduler* sched,
                       LoopPosition* at, std::string* error = nullptr);

}  // namespace ember
