// The `ember` command line tool's subcommands. Each returns a Diag (a Status
// and its message); only main() turns it into an exit code.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "converter/report.h"

namespace ember::cli {

using converter::Diag;

// ember convert IN.onnx -o OUT.ember [--no-optimize] [--quantize ...] [--prune ...] [--sparse-coo[=F]]
//   [--weights fp32|fp16] [--report] [--calibration-inputs FILE.npz|DIR] [--min-snr DB]
struct ConvertArgs {
  std::string input;
  std::string output;
  converter::ConvertOptions options;
};
Diag convert(const ConvertArgs& args, std::ostream& out);

// ember inspect MODEL.ember
struct InspectArgs {
  std::string model;
};
Diag inspect(const InspectArgs& args, std::ostream& out);

// ember run MODEL.ember --input NAME=FILE.npy ... --output-dir DIR
struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;  // "NAME=FILE.npy"
  std::string output_dir;
  std::string device = "cpu";
  int threads = 0;  // 0: the default thread count
  bool profile = false;
};
Diag run(const RunArgs& args, std::ostream& out);

// ember bench MODEL.ember [--input NAME=FILE.npy ...]: latency min/median/p90/mean,
// runs/s, load time, peak RSS, arena bytes; --json: one object with those.
struct BenchArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::string device = "cpu";
  int threads = 0;
  int warmup = 5;
  int iterations = 50;
  bool json = false;
};
Diag bench(const BenchArgs& args, std::ostream& out);

}  // namespace ember::cli
