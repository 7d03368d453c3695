// What the `ember` subcommands share: loading a model with its executor,
// the device flag, inputs from .npy files checked against the model, default
// inputs, and formatting.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/core/diag.h"
#include "runtime/model/executor.h"
#include "runtime/model/loader.h"

namespace ember::cli {

using ::ember::Diag;
using ::ember::Expected;

struct LoadedModel {
  std::shared_ptr<const Model> model;
  std::shared_ptr<const Executor> executor;
};

// Loads and fully verifies `path` and builds its executor with `options`
// (on Vulkan: the context's message without a loader or a device, and the
// executor's for a node without a Vulkan kernel unless allow_fallback).
// `delta`: a fine-tuning delta (runtime/train/delta.h) applied first.
Expected<LoadedModel> load_model(const std::string& path, const ExecutorOptions& options = {},
                                 const std::string& delta = "");

// Ok for "cpu" and the devices whose backend is built in ("vulkan:N",
// "cuda:N"; N: the device index, see `ember devices`); "device 'cuda' is not
// available in this build (...)" for the others; Device's own message for a
// malformed spec.
Diag check_device(const std::string& spec);

// The executor options of --device, --allow-fallback, --precision
// (fp32|fp16|bf16) and --conv-layout (auto|nchw|channels_last); "vulkan:N"
// selects the Nth Vulkan device first.
Expected<ExecutorOptions> executor_options(const std::string& device, bool allow_fallback,
                                           const std::string& precision, const std::string& conv_layout = "auto");

// "[batch, 3, 224, 224]": symbolic dims by name ("?" when unnamed).
std::string io_shape_str(const IOInfo& io);
std::string shape_str(const Shape& shape);

// The model's inputs from `specs` ("NAME=FILE.npy"), in Executor::inputs()
// order, each checked: the name is an input, given once, the file reads, the
// dtype and the shape match (fixed dims equal, each symbolic dim bound to one
// value across inputs). Inputs not given are an error unless `fill_missing`,
// which makes them as default_input() does (symbolic dims from the given
// inputs, else 1).
Expected<std::vector<Tensor>> read_inputs(const Executor& executor, const std::vector<std::string>& specs,
                                          bool fill_missing = false, bool random = false);

// An input for `io` with symbolic dims 1: zeros, or when `random` standard
// normal values for floating dtypes (zeros for the others).
Tensor default_input(const IOInfo& io, bool random);

// The names of the symbolic dims of the model's inputs, in order of first use.
std::vector<std::string> symbolic_dims(const Executor& executor);

// A file name from an output name: [A-Za-z0-9._-] kept, anything else '_',
// never empty, never starting with '.'.
std::string sanitize_file_name(const std::string& name);

// This process's peak resident set size in bytes: VmHWM of /proc/self/status
// (reset by exec; getrusage's ru_maxrss keeps the parent's peak across exec on
// Linux), else ru_maxrss.
int64_t peak_rss_bytes();

// 1234567 -> "1,234,567".
std::string with_commas(int64_t n);

}  // namespace ember::cli
