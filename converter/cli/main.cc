// `ember`: convert ONNX models, inspect, run and benchmark `.ember` files.
//
//   ember convert model.onnx -o model.ember
//   ember inspect model.ember
//   ember run model.ember --input input=x.npy --output-dir out [--profile]
//       [--device cpu|vulkan[:N]|cuda[:N]] [--allow-fallback] [--precision fp32|fp16]
//       [--conv-layout auto|nchw|channels_last]
//   ember bench model.ember [--threads 4] [--json] [--device ...] [--allow-fallback] [--precision ...]
//       [--conv-layout ...]
//   ember inspect model.ember [--device vulkan]: which nodes would fall back
//   ember devices: the Vulkan and CUDA devices
// Built twice (BUILD): `ember_cli` (EMBER_CLI_CONVERT) and `ember_run`, without convert.
//
// Exit codes: 0 success; 1 an error of the command (the message on stderr);
// CLI11's codes for bad flags.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>

#if EMBER_CLI_CONVERT
#include "converter/cli/convert_command.h"
#else
#include "converter/cli/commands.h"
#endif
#include "runtime/core/error.h"

namespace {

int finish(const ember::cli::Diag& d) {
  if (d.ok()) return 0;
  std::cerr << "error: " << d.message << "\n";
  return 1;
}

// `ember finetune`'s flags into `ft` (--weight-decay defaults to 0.01 for adamw: see main).
CLI::App* add_finetune(CLI::App& app, ember::cli::FinetuneArgs& ft) {
  CLI::App* cmd = app.add_subcommand("finetune", "Fine-tune a .ember model on an .npz data set (CPU)");
  cmd->add_option("model", ft.model, "The .ember model")->required();
  cmd->add_option("--data", ft.data, "Training data: an .npz (np.savez) with the inputs and targets")->required();
  cmd->add_option("--eval-data", ft.eval_data, "Evaluation data (.npz): loss (and accuracy) before and after");
  cmd->add_option("-i,--input", ft.inputs, "NAME=KEY: model input NAME from array KEY (KEY alone: the only input)")
      ->allow_extra_args(false);
  cmd->add_option("--target", ft.config.target, "The targets' array key")->required();
  cmd->add_option("--loss", ft.config.loss, "cross-entropy, mse, bce-logits or l1")->capture_default_str();
  cmd->add_option("--optimizer", ft.config.optimizer, "sgd, adam or adamw")->capture_default_str();
  cmd->add_option("--lr", ft.config.lr, "Learning rate")->capture_default_str();
  cmd->add_option("--momentum", ft.config.momentum, "SGD momentum")->capture_default_str();
  cmd->add_option("--weight-decay", ft.config.weight_decay, "Weight decay (adamw's default: 0.01)");
  cmd->add_option("--clip-grad-norm", ft.config.clip_grad_norm, "Clip the gradients' total 2-norm (0: off)");
  cmd->add_option("--scheduler", ft.config.scheduler, "step:SIZE:GAMMA or cosine:TMAX (stepped per epoch)");
  cmd->add_option("--epochs", ft.config.epochs, "Epochs")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--batch-size", ft.config.batch_size, "Batch size")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag_function("--no-shuffle", [&ft](int64_t) { ft.config.shuffle = false; },
                         "Batches in file order (x[i:i+B], as a PyTorch loop)");
  cmd->add_option("--shuffle-seed", ft.config.seed, "Seed of the shuffled order")->capture_default_str();
  cmd->add_option("--train", ft.train, "Weights to train: glob patterns, comma-separated (default: the last layer)");
  cmd->add_option("--freeze", ft.freeze, "Weights to leave out of the selection: glob patterns");
  cmd->add_option("-o,--output", ft.output, "Write the fine-tuned model here (atomically)");
  cmd->add_option("--lora", ft.lora, "LoRA adapters of rank R (alpha A, default R) on --lora-targets: R[:A]");
  cmd->add_option("--lora-targets", ft.lora_targets, "Linear weights that get adapters: glob patterns");
  cmd->add_flag("--merge-lora", ft.merge_lora,
                "With -o: write each int8 Linear that has LoRA adapters as a float32 Linear, "
                "dequant(W) + scale B A (without it such a model saves only as a delta)");
  cmd->add_option("--save-delta", ft.delta, "Write the trained tensors only (safetensors, bound to MODEL)");
  cmd->add_option("--checkpoint", ft.config.checkpoint, "Write a checkpoint (weights, optimizer, position) here");
  cmd->add_option("--checkpoint-every", ft.config.checkpoint_every, "Steps between checkpoints")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--resume", ft.config.resume, "Continue from a checkpoint (same data, flags and seed)");
  cmd->add_option("--log", ft.log, "Write every step's loss and rate to this CSV");
  cmd->add_flag("--json", ft.json, "Print one JSON object at the end");
  cmd->add_option("--threads", ft.threads, "Threads (0: default)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--device", ft.device, "cpu (other devices: not yet)")->capture_default_str();
  return cmd;
}

constexpr const char* kConvLayoutHelp =
    "CPU convolution activations: auto (channels_last where the model has a depthwise or an int8 convolution), nchw or "
    "channels_last";

// `ember bench`'s flags into `b`.
CLI::App* add_bench(CLI::App& app, ember::cli::BenchArgs& b) {
  CLI::App* bench_cmd = app.add_subcommand("bench", "Time a .ember model (random inputs by default)");
  bench_cmd->add_option("model", b.model, "The .ember model")->required();
  bench_cmd->add_option("-i,--input", b.inputs, "NAME=FILE.npy (others: random, symbolic dims 1)")
      ->allow_extra_args(false);
  bench_cmd->add_option("--device", b.device, "Device: cpu, vulkan[:N] or cuda[:N]")->capture_default_str();
  bench_cmd->add_flag("--allow-fallback", b.allow_fallback,
                      "Run nodes the device has no kernel for on the CPU instead of failing");
  bench_cmd->add_option("--precision", b.precision, "fp32, fp16 (device only) or bf16 (device; cpu: as ember run)")
      ->capture_default_str();
  bench_cmd->add_option("--conv-layout", b.conv_layout, kConvLayoutHelp)->capture_default_str();
  bench_cmd->add_option("--threads", b.threads, "Threads (0: default)")->check(CLI::NonNegativeNumber);
  bench_cmd->add_option("--warmup", b.warmup, "Untimed runs first")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  bench_cmd->add_option("--iterations", b.iterations, "Timed runs")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bench_cmd->add_flag("--json", b.json, "Print one JSON object");
  return bench_cmd;
}

#if EMBER_CLI_CONVERT
// `ember convert`'s --fix-input and --input-shape (both repeatable).
void add_fixed_inputs(CLI::App& cmd, ember::cli::ConvertArgs& args) {
  cmd.add_option("--fix-input", args.fix_inputs,
                 "NAME=V[,V...]: input NAME becomes this constant (its declared shape; int64 or float as "
                 "the input), e.g. sr=16000: an If on it is resolved at conversion (repeatable)")
      ->allow_extra_args(false);
  cmd.add_option("--input-shape", args.input_shapes,
                 "NAME=D,D,...: static dims for input NAME (Shape sub-graphs and Ifs on its dims fold; repeatable)")
      ->allow_extra_args(false);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  using namespace ember::cli;
#if EMBER_CLI_CONVERT
  CLI::App app{"ember: convert ONNX models to .ember, inspect, run and benchmark them"};
#else
  CLI::App app{"ember: inspect, run, benchmark and fine-tune .ember models (this build has no convert)"};
#endif
  app.name("ember");
  app.require_subcommand(1);

#if EMBER_CLI_CONVERT
  ConvertArgs convert_args;
  CLI::App* convert_cmd = app.add_subcommand("convert", "Convert an ONNX model to a .ember file");
  convert_cmd->add_option("input", convert_args.input, "The ONNX model")->required();
  convert_cmd->add_option("-o,--output", convert_args.output, "The .ember file to write")->required();
  convert_cmd->add_flag("--no-optimize{false}", convert_args.options.optimize, "Skip the graph passes (folding, fusion)");
  CLI::Option* quantize_opt = convert_cmd->add_option(
      "--quantize", convert_args.options.quantize,
      "dynamic-int8: int8 weights (per output channel), activations quantized at run time");
  convert_cmd->add_flag("--keep-projections{false}", convert_args.options.merge_projections,
                        "Keep Linears of one input (q, k, v) apart, not one wider Linear: for --train / LoRA on one");
  convert_cmd->add_flag("--per-tensor", convert_args.options.per_tensor,
                        "With --quantize: one scale per weight (PyTorch's default) instead of per channel");
  convert_cmd
      ->add_flag("--reduce-range", convert_args.options.reduce_range,
                 "With --quantize: weights within [-64, 64] (7 bits, ONNX Runtime's reduce_range): coarser, faster "
                 "on AVX2 CPUs without VNNI")
      ->needs(quantize_opt);
  std::string activations;
  CLI::Option* activations_opt =
      convert_cmd
          ->add_option("--activations", activations,
                       "With --quantize: per-tensor (default; PyTorch's and ONNX Runtime's scheme) or per-row "
                       "(one uint8 scale and zero point per row of each int8 Linear's input; Conv stays per tensor)")
          ->check(CLI::Validator(
              [](const std::string& v) {
                return v == "per-tensor" || v == "per-row"
                           ? std::string()
                           : "'" + v + "' is not an activation quantization (per-tensor or per-row)";
              },
              "per-tensor|per-row"))
          ->needs(quantize_opt);
  convert_cmd->add_option("--quantize-ops", convert_args.options.quantize_ops,
                          "With --quantize: ONNX op types to quantize: MatMul, Gemm (default), Conv")
      ->delimiter(',');
  convert_cmd->add_option("--min-weight-elements", convert_args.options.min_weight_elements,
                          "With --quantize: smaller weights stay fp32");
  convert_cmd->add_option("--exclude", convert_args.options.exclude,
                          "With --quantize: node names to leave in fp32 (comma separated)")
      ->delimiter(',');
  std::string sparse_coo;
  CLI::Option* sparse_coo_opt =
      convert_cmd
          ->add_option("--sparse-coo", sparse_coo,
                       "Store Linear/MatMul/Conv weights with at least this fraction of zeros as sparse COO "
                       "(--sparse-coo: 0.5; --sparse-coo=F)")
          ->expected(0, 1);
  convert_cmd->add_option("--prune", convert_args.options.prune,
                          "Magnitude pruning before storing: magnitude:FRACTION[:OP_TYPES] (e.g. magnitude:0.9:Gemm,MatMul)");
  convert_cmd->add_option("--weights", convert_args.options.weights,
                          "fp32 (default) or fp16: float32 weights stored as float16 (upcast once at load)");
  convert_cmd->add_flag("--report", convert_args.options.report,
                        "Print the per-layer accuracy table: bytes, sparsity, SNR (dB) of each converted layer vs fp32");
  convert_cmd->add_option("--calibration-inputs", convert_args.options.calibration_inputs,
                          "With --report/--min-snr: an .npz (np.savez) or a directory of NAME.npy, one per input "
                          "(default: random normal, symbolic dims 1)");
  add_fixed_inputs(*convert_cmd, convert_args);
  double min_snr = 0;
  CLI::Option* min_snr_opt = convert_cmd->add_option(
      "--min-snr", min_snr, "Layers whose output SNR (dB, measured as --report does) is below this stay fp32");

#endif

  InspectArgs inspect_args;
  CLI::App* inspect_cmd = app.add_subcommand("inspect", "Describe a .ember model");
  inspect_cmd->add_option("model", inspect_args.model, "The .ember model")->required();
  inspect_cmd->add_option("--device", inspect_args.device, "Also list the nodes that would fall back to the CPU on this device (vulkan)")
      ->capture_default_str();
  inspect_cmd->add_option("--precision", inspect_args.precision, "With --device: fp32, fp16 or bf16")->capture_default_str();

  CLI::App* devices_cmd =
      app.add_subcommand("devices", "List the Vulkan and CUDA devices (--device vulkan:N / cuda:N picks one)");

  RunArgs run_args;
  CLI::App* run_cmd = app.add_subcommand("run", "Run a .ember model on .npy inputs, write .npy outputs");
  run_cmd->add_option("model", run_args.model, "The .ember model")->required();
  run_cmd->add_option("-i,--input", run_args.inputs, "NAME=FILE.npy (once per input)")->allow_extra_args(false);
  run_cmd->add_option("-d,--output-dir", run_args.output_dir, "Directory for <output name>.npy")->required();
  run_cmd->add_option("--device", run_args.device, "Device: cpu, vulkan[:N] or cuda[:N]")->capture_default_str();
  run_cmd->add_flag("--allow-fallback", run_args.allow_fallback,
                    "Run nodes the device has no kernel for on the CPU (listed on stderr) instead of failing");
  run_cmd->add_option("--precision", run_args.precision,
                      "fp32, fp16 or bf16 (device: float weights and activations stored as float16 / bfloat16; cpu, "
                      "bf16 only, with AVX-512 BF16: Conv/Linear/MatMul weights and inputs rounded to bf16, float32 sums)")
      ->capture_default_str();
  run_cmd->add_option("--weights", run_args.weights, "A fine-tuning delta (ember finetune --save-delta) to apply (LoRA adapters on int8 weights run unmerged)");
  run_cmd->add_option("--conv-layout", run_args.conv_layout, kConvLayoutHelp)->capture_default_str();
  run_cmd->add_option("--threads", run_args.threads, "Threads (0: default)")->check(CLI::NonNegativeNumber);
  run_cmd->add_flag("--profile", run_args.profile, "Print per-op-type times and devices of a run after 3 warm-up runs (a flush per op on a device)");
  run_cmd->add_flag("--profile-ops", run_args.profile_ops, "--profile, then one line per op: 'op INDEX TYPE NODE MS' in op order");

  BenchArgs bench_args;
  CLI::App* bench_cmd = add_bench(app, bench_args);

  FinetuneArgs ft;
  CLI::App* ft_cmd = add_finetune(app, ft);
  inspect_cmd->add_flag("--trainable", inspect_args.trainable,
                        "List every weight and whether `ember finetune` can train it (or why not)");

  CLI11_PARSE(app, argc, argv);

  try {
#if EMBER_CLI_CONVERT
    if (convert_cmd->parsed()) {
      if (activations_opt->count() > 0 && activations == "per-row")
        convert_args.options.activations = ember::ActivationQuant::PerRow;
      if (min_snr_opt->count() > 0) convert_args.options.min_snr = min_snr;
      if (sparse_coo_opt->count() > 0) {
        convert_args.options.sparse_coo = true;
        if (!sparse_coo.empty()) {
          char* end = nullptr;
          const double f = std::strtod(sparse_coo.c_str(), &end);
          if (end == sparse_coo.c_str() || *end != '\0') {
            std::cerr << "error: --sparse-coo: '" << sparse_coo << "' is not a number\n";
            return 2;
          }
          convert_args.options.sparse_min_zero_fraction = f;
        }
      }
      return finish(convert(convert_args, std::cout));
    }
#endif
    if (inspect_cmd->parsed()) return finish(inspect(inspect_args, std::cout));
    if (devices_cmd->parsed()) return finish(devices(std::cout));
    if (run_cmd->parsed()) return finish(run(run_args, std::cout));
    if (bench_cmd->parsed()) return finish(bench(bench_args, std::cout));
    if (ft_cmd->parsed()) {
      if (ft_cmd->get_option("--weight-decay")->count() == 0 && ft.config.optimizer == "adamw")
        ft.config.weight_decay = 0.01;  // torch's default
      return finish(finetune(ft, std::cout));
    }
  } catch (const ember::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 1;
}
