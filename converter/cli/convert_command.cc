// `ember convert`: flags into ConvertOptions, convert_file, the report.
#include "converter/cli/convert_command.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "converter/cli/model_io.h"
#include "converter/report.h"

namespace ember::cli {
namespace {

std::string item_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f", v);
  return buf;
}

}  // namespace

// --- convert -------------------------------------------------------------------

namespace {

// "NAME=V[,V...]" into `fixed` (--fix-input).
Diag parse_fix_input(const std::string& spec, converter::FixedInputs& fixed) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    return {Status::InvalidArgument, "--fix-input '" + spec + "': expected NAME=VALUE[,VALUE...]"};
  }
  const std::string name = spec.substr(0, eq);
  if (fixed.count(name)) return {Status::InvalidArgument, "--fix-input: input '" + name + "' is given twice"};
  std::vector<double> values;
  size_t pos = eq + 1;
  for (;;) {
    const size_t comma = spec.find(',', pos);
    const std::string item = spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || end != item.c_str() + item.size()) {
      return {Status::InvalidArgument, "--fix-input " + name + ": '" + item + "' is not a number"};
    }
    values.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  fixed[name] = std::move(values);
  return Diag::success();
}

}  // namespace

Diag convert(const ConvertArgs& args_in, std::ostream& out) {
  ConvertArgs args = args_in;
  for (const std::string& spec : args.fix_inputs) {
    Diag pd = parse_fix_input(spec, args.options.fixed_inputs);
    if (!pd.ok()) return pd;
  }
  for (const std::string& spec : args.input_shapes) {
    converter::FixedInputs parsed;
    Diag pd = parse_fix_input(spec, parsed);
    if (!pd.ok()) return {pd.status, "--input-shape" + pd.message.substr(std::string("--fix-input").size())};
    const auto& [name, values] = *parsed.begin();
    std::vector<int64_t> dims;
    for (double v : values) {
      if (v != std::floor(v) || v < 0) {
        return {Status::InvalidArgument, "--input-shape " + name + ": " + item_text(v) + " is not a dim"};
      }
      dims.push_back(static_cast<int64_t>(v));
    }
    if (args.options.input_shapes.count(name)) {
      return {Status::InvalidArgument, "--input-shape: input '" + name + "' is given twice"};
    }
    args.options.input_shapes[name] = dims;
  }
  converter::ConvertReport report;
  Diag d = converter::convert_file(args.input, args.output, args.options, &report);
  if (!d.ok()) return d;
  out << "converted '" << args.input << "': " << report.onnx_nodes << " ONNX nodes -> " << report.ops
      << " ops, " << report.tensors << " tensors\n"
      << "passes: " << (args.options.optimize ? report.passes.summary() : std::string("none (--no-optimize)"))
      << "\n"
      << "weights: " << with_commas(report.weight_bytes) << " bytes\n";
  if (!args.options.quantize.empty()) {
    out << "quantized (" << args.options.quantize << ", " << (args.options.per_tensor ? "per tensor" : "per channel")
        << (args.options.reduce_range ? ", weights within +-64" : "") << ", activations "
        << (args.options.activations == ActivationQuant::PerRow ? "per row" : "per tensor") << "): " << report.quantize.quantized << " weights, " << with_commas(report.quantize.bytes_before)
        << " -> " << with_commas(report.quantize.bytes_after) << " bytes\n";
  }
  out << "source: " << report.source_hash << "\n";
  for (const std::string& w : report.warnings) out << "warning: " << w << "\n";
  out << converter::sparse_table(report);
  if (report.has_accuracy) out << converter::accuracy_table(report.accuracy);
  out << "wrote " << args.output << "\n";
  return Diag::success();
}

}  // namespace ember::cli
