// Magnitude pruning (quant/prune.h).
#include "quant/prune.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>

#include "runtime/core/error.h"

namespace ember::sparse {

Status parse_prune_spec(const std::string& text, PruneSpec* spec, std::string* error) {
  const std::string usage = "expected magnitude:FRACTION[:OP_TYPES], e.g. magnitude:0.9:Gemm,MatMul";
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() < 2 || parts.size() > 3)
    return report_error(error, Status::InvalidArgument, "bad prune spec '", text, "': ", usage);
  if (parts[0] != "magnitude")
    return report_error(error, Status::InvalidArgument, "bad prune spec '", text, "': unknown method '", parts[0],
                        "' (only magnitude)");
  char* end = nullptr;
  const double f = std::strtod(parts[1].c_str(), &end);
  if (parts[1].empty() || end == nullptr || *end != '\0' || !(f >= 0.0 && f <= 1.0))
    return report_error(error, Status::InvalidArgument, "bad prune spec '", text, "': fraction '", parts[1],
                        "' is not a number in [0, 1]");
  PruneSpec s;
  s.fraction = f;
  if (parts.size() == 3) {
    size_t p = 0;
    const std::string& list = parts[2];
    for (;;) {
      const size_t comma = list.find(',', p);
      const std::string op = list.substr(p, comma == std::string::npos ? std::string::npos : comma - p);
      if (op.empty())
        return report_error(error, Status::InvalidArgument, "bad prune spec '", text, "': empty op type");
      s.op_types.push_back(op);
      if (comma == std::string::npos) break;
      p = comma + 1;
    }
  } else {
    s.op_types = {"Gemm", "MatMul"};
  }
  *spec = s;
  return Status::Ok;
}

Tensor magnitude_prune(const Tensor& w, double fraction) {
  EMBER_ENFORCE(w.defined() && w.device().is_cpu(), Status::InvalidArgument, "magnitude_prune needs a CPU tensor");
  EMBER_ENFORCE(w.is_floating_point(), Status::DTypeMismatch, "magnitude_prune needs a floating tensor, got ",
              dtype_name(w.dtype()));
  EMBER_ENFORCE(fraction >= 0.0 && fraction <= 1.0, Status::InvalidArgument, "magnitude_prune: fraction ", fraction,
              " is not in [0, 1]");
  // Through float64 and back: exact for every floating dtype.
  Tensor out = w.contiguous().to(DType::Float64, /*copy=*/true);
  const int64_t n = out.numel();
  const int64_t k = std::min<int64_t>(n, std::llround(fraction * static_cast<double>(n)));
  if (k > 0) {
    double* a = out.data_ptr<double>();
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    auto less = [&](int64_t x, int64_t y) {
      const double ax = std::fabs(a[x]), ay = std::fabs(a[y]);
      return ax < ay || (ax == ay && x < y);
    };
    std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), less);
    for (int64_t i = 0; i < k; ++i) a[order[static_cast<size_t>(i)]] = 0.0;
  }
  return out.to(w.dtype(), /*copy=*/true);
}

}  // namespace ember::sparse
