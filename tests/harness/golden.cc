#include "tests/harness/golden.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace ember::testing {
namespace {

struct Records {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> texts;
};

DType parse_dtype(const std::string& s) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (dtype_name(static_cast<DType>(i)) == s) return static_cast<DType>(i);
  }
  raise_error(Status::InvalidArgument, "golden: unknown dtype " + s);
}

// Text records escape backslash and newline as \\ and \n.
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      out += s[i + 1] == 'n' ? '\n' : s[i + 1];
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

Records load() {
  Records r;
  const char* dir = std::getenv("TEST_SRCDIR");
  std::string path = "tests/golden/golden.txt";
  std::ifstream in(path);
  if (!in && dir != nullptr) in.open(std::string(dir) + "/ember/" + path);
  EMBER_ENFORCE(in.good(), Status::IoError, "golden: cannot open ", path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string kind, name;
    ls >> kind >> name;
    if (kind == "S") {
      std::string rest;
      std::getline(ls, rest);
      r.texts[name] = unescape(rest.empty() ? rest : rest.substr(1));
      continue;
    }
    if (kind != "T") continue;
    std::string dtype_str;
    int64_t rank;
    ls >> dtype_str >> rank;
    Shape shape(static_cast<size_t>(rank));
    int64_t n = 1;
    for (auto& d : shape) {
      ls >> d;
      n *= d;
    }
    const DType dtype = parse_dtype(dtype_str);
    std::vector<double> fvals;
    std::vector<int64_t> ivals;
    for (int64_t i = 0; i < n; ++i) {
      std::string tok;
      ls >> tok;
      if (is_floating(dtype)) {
        fvals.push_back(std::strtod(tok.c_str(), nullptr));
      } else {
        ivals.push_back(std::strtoll(tok.c_str(), nullptr, 10));
      }
    }
    EMBER_ENFORCE(!ls.fail(), Status::InvalidArgument, "golden: bad record ", name);
    r.tensors[name] = is_floating(dtype) ? tensor(fvals, shape).to(dtype) : tensor(ivals, shape).to(dtype);
  }
  return r;
}

const Records& records() {
  static const Records r = load();
  return r;
}

}  // namespace

Tensor golden(const std::string& name) {
  auto it = records().tensors.find(name);
  EMBER_ENFORCE(it != records().tensors.end(), Status::NotFound, "golden: no record named ", name);
  return it->second.clone();
}

std::string golden_text(const std::string& name) {
  auto it = records().texts.find(name);
  EMBER_ENFORCE(it != records().texts.end(), Status::NotFound, "golden: no text record named ", name);
  return it->second;
}

bool has_golden(const std::string& name) {
  return records().tensors.count(name) > 0 || records().texts.count(name) > 0;
}

}  // namespace ember::testing
