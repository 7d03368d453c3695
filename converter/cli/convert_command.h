// `ember convert` (the converter: only the full `ember` binary has it).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "converter/cli/commands.h"
#include "converter/convert.h"

namespace ember::cli {

// ember convert IN.onnx -o OUT.ember [--no-optimize] [--quantize ...] [--prune ...] [--sparse-coo[=F]]
//   [--weights fp32|fp16] [--report] [--calibration-inputs FILE.npz|DIR] [--min-snr DB]
//   [--fix-input NAME=V[,V...]]... [--input-shape NAME=D,D,...]...
struct ConvertArgs {
  std::string input;
  std::string output;
  converter::ConvertOptions options;
  std::vector<std::string> fix_inputs;  // "sr=16000": parsed into options.fixed_inputs
  std::vector<std::string> input_shapes;  // "input=1,576": parsed into options.input_shapes
};
Diag convert(const ConvertArgs& args, std::ostream& out);

}  // namespace ember::cli
