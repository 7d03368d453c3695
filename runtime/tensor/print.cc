// Printing, as torch/_tensor_str.py does it: precision 4, threshold 1000
// elements (then 3 edge items), line width 80, and the dtype and device
// suffixes PyTorch shows.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/autograd/node.h"
#include "runtime/tensor/tensor.h"

namespace ember {
namespace {

constexpr int kPrecision = 4;
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int kLineWidth = 80;

std::string format_double(const char* fmt, double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, kPrecision, v);
  return buf;
}

// A CPU tensor with every value as double (floating), int64 or bool.
struct Values {
  Tensor t;
  bool floating;
  bool boolean;
  double as_double(const Tensor& scalar) const {
    return floating ? *static_cast<const double*>(scalar.data_ptr())
                    : static_cast<double>(*static_cast<const int64_t*>(scalar.data_ptr()));
  }
  std::string plain(const Tensor& scalar) const {
    if (boolean) return *static_cast<const bool*>(scalar.data_ptr()) ? "True" : "False";
    return std::to_string(*static_cast<const int64_t*>(scalar.data_ptr()));
  }
};

class Formatter {
 public:
  Formatter(const Values& values, const std::vector<Tensor>& elements) : values_(values) {
    if (!values.floating) {
      for (const Tensor& e : elements) width_ = std::max(width_, values.plain(e).size());
      return;
    }
    std::vector<double> finite;
    for (const Tensor& e : elements) {
      const double v = values.as_double(e);
      if (std::isfinite(v) && v != 0) finite.push_back(v);
    }
    if (finite.empty()) return;
    double lo = INFINITY, hi = 0;
    for (double v : finite) {
      lo = std::min(lo, std::fabs(v));
      hi = std::max(hi, std::fabs(v));
      int_mode_ = int_mode_ && v == std::ceil(v);
    }
    if (int_mode_) {
      sci_mode_ = hi / lo > 1000.0 || hi > 1e8;
    } else {
      sci_mode_ = hi / lo > 1000.0 || hi > 1e8 || lo < 1e-4;
    }
    for (double v : finite) {
      if (sci_mode_) {
        width_ = std::max(width_, format_double("%.*e", v).size());
      } else if (int_mode_) {
        width_ = std::max(width_, format_double("%.0f", v).size() + 1);
      } else {
        width_ = std::max(width_, format_double("%.*f", v).size());
      }
    }
  }

  size_t width() const { return width_; }

  std::string format(const Tensor& scalar) const {
    std::string s;
    if (!values_.floating) {
      s = values_.plain(scalar);
    } else {
      const double v = values_.as_double(scalar);
      if (sci_mode_) {
        s = format_double("%.*e", v);
      } else if (int_mode_) {
        s = format_double("%.0f", v);
        if (std::isfinite(v)) s += ".";
      } else {
        s = format_double("%.*f", v);
      }
    }
    return std::string(width_ > s.size() ? width_ - s.size() : 0, ' ') + s;
  }

 private:
  const Values& values_;
  size_t width_ = 1;
  bool int_mode_ = true;
  bool sci_mode_ = false;
};

// The 0-dim elements that printing shows (all, or the edge items when summarizing).
void summarized_elements(const Tensor& t, bool summarize, std::vector<Tensor>& out) {
  if (t.dim() == 0) {
    out.push_back(t);
    return;
  }
  const int64_t n = t.size(0);
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    summarized_elements(t[i], summarize, out);
  }
}

std::string tensor_str(const Tensor& t, int indent, bool summarize, const Formatter& f) {
  if (t.dim() == 0) return f.format(t);
  const int64_t n = t.size(0);
  const bool cut = summarize && n > 2 * kEdgeItems;
  if (t.dim() == 1) {
    std::vector<std::string> data;
    for (int64_t i = 0; i < n; ++i) {
      if (cut && i == kEdgeItems) {
        data.push_back(" ...");
        i = n - kEdgeItems;
      }
      data.push_back(f.format(t[i]));
    }
    const int64_t element_length = static_cast<int64_t>(f.width()) + 2;
    const int64_t per_line = std::max<int64_t>(1, (kLineWidth - indent) / element_length);
    std::string s = "[";
    for (size_t i = 0; i < data.size(); ++i) {
      if (i > 0) s += (i % per_line == 0) ? ",\n" + std::string(indent + 1, ' ') : ", ";
      s += data[i];
    }
    return s + "]";
  }
  std::vector<std::string> slices;
  for (int64_t i = 0; i < n; ++i) {
    if (cut && i == kEdgeItems) {
      slices.push_back("...");
      i = n - kEdgeItems;
    }
    slices.push_back(tensor_str(t[i], indent + 1, summarize, f));
  }
  const std::string sep = "," + std::string(t.dim() - 1, '\n') + std::string(indent + 1, ' ');
  std::string s = "[";
  for (size_t i = 0; i < slices.size(); ++i) s += (i ? sep : "") + slices[i];
  return s + "]";
}

}  // namespace

std::string to_string(const Tensor& t) {
  if (!t.defined()) return "Tensor(undefined)";
  const std::string prefix = "tensor(";
  const int indent = static_cast<int>(prefix.size());
  std::vector<std::string> suffixes;
  if (!t.device().is_cpu()) suffixes.push_back("device='" + t.device().str() + "'");
  const bool default_dtype = t.dtype() == DType::Float32 || t.dtype() == DType::Int64 || t.dtype() == DType::Bool;
  std::string body;
  if (t.numel() == 0) {
    if (t.dim() != 1) {
      std::string size = "size=(";
      for (int64_t d = 0; d < t.dim(); ++d) size += (d ? ", " : "") + std::to_string(t.sizes()[d]);
      suffixes.push_back(size + (t.dim() == 1 ? ",)" : ")"));
    }
    if (t.dtype() != DType::Float32) suffixes.push_back(str_cat("dtype=", t.dtype()));
    body = "[]";
  } else {
    if (!default_dtype) suffixes.push_back(str_cat("dtype=", t.dtype()));
    Values values;
    values.floating = t.is_floating_point();
    values.boolean = t.dtype() == DType::Bool;
    const DType host_dtype = values.floating ? DType::Float64 : values.boolean ? DType::Bool : DType::Int64;
    values.t = t.to(Device(DeviceType::CPU)).to(host_dtype);
    const bool summarize = t.numel() > kThreshold;
    std::vector<Tensor> elements;
    summarized_elements(values.t, summarize, elements);
    const Formatter formatter(values, elements);
    body = tensor_str(values.t, indent, summarize, formatter);
  }
  if (const std::shared_ptr<Node> fn = t.grad_fn()) {
    suffixes.push_back(str_cat("grad_fn=<", fn->name(), ">"));
  } else if (t.requires_grad()) {
    suffixes.push_back("requires_grad=True");
  }
  std::string out = prefix + body;
  // As PyTorch computes it (rfind gives -1 there when there is no newline).
  const size_t newline = out.rfind('\n');
  size_t last_line_len = newline == std::string::npos ? out.size() + 2 : out.size() - newline + 1;
  for (const std::string& suffix : suffixes) {
    if (last_line_len + suffix.size() + 2 > static_cast<size_t>(kLineWidth)) {
      out += ",\n" + std::string(indent, ' ') + suffix;
      last_line_len = indent + suffix.size();
    } else {
      out += ", " + suffix;
      last_line_len += suffix.size() + 2;
    }
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << to_string(t); }

}  // namespace ember
