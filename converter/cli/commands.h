// The `ember` command line tool's subcommands that need only the runtime
// (inspect, devices, run, bench, finetune: the `ember_run` binary carries
// these alone; convert_command.h adds convert). Each returns a Diag (a Status
// and its message); only main() turns it into an exit code.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "runtime/core/diag.h"
#include "runtime/train/finetune.h"

namespace ember::cli {

using ::ember::Diag;

// ember inspect MODEL.ember [--device vulkan]: with a device, which nodes
// would fall back to the CPU ("all N nodes run on vulkan" when none).
struct InspectArgs {
  std::string model;
  bool trainable = false;  // --trainable: every weight and whether `ember finetune` can train it
  std::string device = "cpu";
  std::string precision = "fp32";
};
Diag inspect(const InspectArgs& args, std::ostream& out);

// ember devices: each backend's devices in selection order (index: --device vulkan:N, cuda:N).
Diag devices(std::ostream& out);

// ember run MODEL.ember --input NAME=FILE.npy ... --output-dir DIR
struct RunArgs {
  std::string model;
  std::string weights;  // --weights D.safetensors: a fine-tuning delta applied to the model
  std::vector<std::string> inputs;  // "NAME=FILE.npy"
  std::string output_dir;
  std::string device = "cpu";
  bool allow_fallback = false;    // nodes without a device kernel run on the CPU
  std::string precision = "fp32";  // fp32 | fp16 (device only)
  std::string conv_layout = "auto";  // auto | nchw | channels_last (ExecutorOptions::conv_layout)
  int threads = 0;  // 0: the default thread count
  bool profile = false;
  bool profile_ops = false;  // also one line per op, in op order (implies profile)
};
Diag run(const RunArgs& args, std::ostream& out);

// ember bench MODEL.ember [--input NAME=FILE.npy ...]: latency min/median/p90/mean,
// runs/s, load time, peak RSS, arena bytes; --json: one object with those.
struct BenchArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::string device = "cpu";
  bool allow_fallback = false;
  std::string precision = "fp32";
  std::string conv_layout = "auto";
  int threads = 0;
  int warmup = 5;
  int iterations = 50;
  bool json = false;
};
Diag bench(const BenchArgs& args, std::ostream& out);

// ember finetune MODEL.ember --data train.npz [--eval-data test.npz] --input NAME=KEY ... --target KEY
//   --loss cross-entropy|mse|bce-logits|l1 --optimizer sgd|adam|adamw --lr F [--momentum F] [--weight-decay F]
//   [--clip-grad-norm F] [--scheduler step:SIZE:GAMMA|cosine:TMAX] --epochs N --batch-size B
//   [--no-shuffle | --shuffle-seed S] [--train PATTERN,... | --freeze PATTERN,...] -o OUT.ember
//   [--save-delta D.safetensors] [--lora RANK[:ALPHA] --lora-targets PATTERN,... [--merge-lora]]
//   [--checkpoint C --checkpoint-every N] [--resume C]
//   [--log loss.csv] [--json] [--threads N] (runtime/train/finetune.h)
struct FinetuneArgs {
  std::string model;
  std::string data;
  std::string eval_data;
  std::vector<std::string> inputs;  // "NAME=KEY" (or KEY for a one-input model)
  std::vector<std::string> train, freeze;  // comma-separated glob patterns
  std::string lora;                         // "RANK" or "RANK:ALPHA"
  std::vector<std::string> lora_targets;    // comma-separated glob patterns
  bool merge_lora = false;  // -o merges adapters on int8 weights into float32 ones (SaveOptions::merge_int8_lora)
  std::string output;
  std::string delta;  // --save-delta D.safetensors: the trained tensors only
  std::string log;
  std::string device = "cpu";
  bool json = false;
  int threads = 0;
  FinetuneConfig config;
};
Diag finetune(const FinetuneArgs& args, std::ostream& out);

// `ember inspect --trainable`: each weight, its dtype and shape, and whether it can be trained (or why not).
void print_trainable(const Executor& executor, std::ostream& out);

}  // namespace ember::cli
