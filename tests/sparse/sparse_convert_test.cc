// ember convert --prune magnitude:0.9 --sparse-coo on a Linear-dominated MLP
// (tests/sparse/sparse_models.py): per-layer report and warning, file size
// <= 0.35x the dense fp32 file with int16 indices, and outputs equal (1e-5)
// to the dense pruned model's, and close to torch's l1_unstructured model.
#include <sstream>
#include <sys/stat.h>

#include "converter/convert.h"
#include "runtime/model/executor.h"
#include "runtime/model/npy.h"
#include "tests/harness/testing.h"

using ember::testing::tmp_path;
using namespace ember;
using namespace ember::converter;
using ember::testing::check_close;

namespace {

const std::string kDir = "tests/sparse_models/";

int64_t file_size(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return static_cast<int64_t>(st.st_size);
}

Tensor run_model(const std::string& path, const Tensor& x) {
  std::string error;
  auto m = Model::load(path, Verification::Full, &error);
  REQUIRE_MESSAGE(m.ok(), error);
  auto ex = Executor::create(std::make_shared<const Model>(std::move(m.get())), &error);
  REQUIRE_MESSAGE(ex.ok(), error);
  ExecutionContext ctx(ex.get());
  auto y = ctx.run({x}, {}, &error);
  REQUIRE_MESSAGE(y.ok(), error);
  return (*y)[0].clone();
}

}  // namespace

TEST_CASE("sparse convert: pruned 90 % + COO is small and matches the dense pruned model") {
  const std::string onnx = kDir + "mlp_sparse.onnx";
  const std::string dense = tmp_path("dense.ember"), pruned = tmp_path("pruned.ember"), coo = tmp_path("coo.ember");
  REQUIRE(convert_file(onnx, dense, {}).ok());
  ConvertOptions p;
  p.prune = "magnitude:0.9";
  ConvertReport pr;
  Diag d = convert_file(onnx, pruned, p, &pr);
  REQUIRE_MESSAGE(d.ok(), d.message);
  REQUIRE(pr.warnings.size() == 1);
  CHECK(pr.warnings[0] ==
        "magnitude pruning zeroed 90.0 % of the weights of 3 layers: accuracy drops; check the model on real data");
  REQUIRE(pr.sparse_layers.size() == 3);
  for (const SparseLayerReport& row : pr.sparse_layers) {
    CHECK(row.pruned);
    CHECK(!row.coo);
    CHECK(row.op_type == "linear");
    CHECK(row.zero_fraction == doctest::Approx(0.9).epsilon(0.002));
  }
  CHECK(pr.sparse_layers[0].shape == std::vector<int64_t>{512, 256});

  p.sparse_coo = true;
  ConvertReport cr;
  d = convert_file(onnx, coo, p, &cr);
  REQUIRE_MESSAGE(d.ok(), d.message);
  REQUIRE(cr.sparse_layers.size() == 3);
  for (const SparseLayerReport& row : cr.sparse_layers) {
    CHECK(row.coo);
    // fp32 value + two int16 coordinates per nonzero.
    CHECK(row.bytes_after == (row.bytes_before / 4 - llround(row.bytes_before / 4 * 0.9)) * 8);
  }
  const std::string table = sparse_table(cr);
  CHECK(table.rfind("layer", 0) == 0);
  CHECK(table.find("zeros") != std::string::npos);
  CHECK(table.find("bytes (dense -> stored)\n") != std::string::npos);
  {
    // Aligned columns: "zeros" in the header starts where each row's percentage does.
    int64_t before = 0, after = 0;
    for (const SparseLayerReport& row : cr.sparse_layers) before += row.bytes_before, after += row.bytes_after;
    std::istringstream lines(table);
    std::string header, row;
    std::getline(lines, header);
    const size_t col = header.find("zeros");
    for (size_t i = 0; i < cr.sparse_layers.size(); ++i) {
      REQUIRE(std::getline(lines, row));
      CHECK(row.substr(col, 14) == "90.0% (pruned)");
    }
    REQUIRE(std::getline(lines, row));
    CHECK(row.rfind("total: " + std::to_string(before) + " -> " + std::to_string(after) + " bytes (", 0) == 0);
  }
  const double ratio = static_cast<double>(file_size(coo)) / static_cast<double>(file_size(dense));
  MESSAGE("90 % sparse COO file / dense fp32 file = " << ratio);
  CHECK(ratio <= 0.35);

  std::string error;
  auto m = Model::load(coo, Verification::Full, &error);
  REQUIRE_MESSAGE(m.ok(), error);
  int sparse_weights = 0;
  for (int t = 0; t < m->num_tensors(); ++t) {
    if (m->tensor(t).sparse() == nullptr) continue;
    ++sparse_weights;
    CHECK(m->tensor_dtype(m->tensor(t).sparse()->indices()) == DType::Int16);
  }
  CHECK(sparse_weights == 3);

  auto x = read_npy(kDir + "mlp_input.npy", &error);
  REQUIRE_MESSAGE(x.ok(), error);
  auto torch_out = read_npy(kDir + "mlp_pruned_out.npy", &error);
  REQUIRE_MESSAGE(torch_out.ok(), error);
  const Tensor y_pruned = run_model(pruned, *x), y_coo = run_model(coo, *x);
  check_close(y_coo, y_pruned, 1e-5, 1e-5);
  check_close(y_coo, *torch_out, 1e-4, 1e-4);
}

TEST_CASE("sparse convert: thresholds and errors") {
  const std::string onnx = kDir + "mlp_sparse.onnx";
  const std::string out = tmp_path("t.ember");
  // A dense model has no zeros: nothing is stored as COO.
  ConvertOptions o;
  o.sparse_coo = true;
  ConvertReport r;
  REQUIRE(convert_file(onnx, out, o, &r).ok());
  REQUIRE(r.sparse_layers.size() == 3);
  for (const SparseLayerReport& row : r.sparse_layers) CHECK(!row.coo);
  CHECK(r.warnings.empty());
  // 90 % pruned, threshold 0.95: dense.
  o.prune = "magnitude:0.9:Gemm";
  o.sparse_min_zero_fraction = 0.95;
  REQUIRE(convert_file(onnx, out, o, &r).ok());
  for (const SparseLayerReport& row : r.sparse_layers) CHECK((row.pruned && !row.coo));
  // Only Conv pruned: the MLP has none.
  o.prune = "magnitude:0.9:Conv";
  ConvertReport none;
  REQUIRE(convert_file(onnx, out, o, &none).ok());
  CHECK(none.warnings.at(0) ==
        "magnitude pruning zeroed 90.0 % of the weights of 0 layers: accuracy drops; check the model on real data");

  o.prune = "magnitude:0.9:Relu";
  Diag d = convert_file(onnx, out, o);
  CHECK(d.status == Status::InvalidArgument);
  CHECK(d.message == "bad prune spec 'magnitude:0.9:Relu': unknown op type 'Relu' (Gemm, MatMul, Conv)");
  o.prune = "magnitude:ninety";
  d = convert_file(onnx, out, o);
  CHECK(d.status == Status::InvalidArgument);
  CHECK(d.message == "bad prune spec 'magnitude:ninety': fraction 'ninety' is not a number in [0, 1]");
  o.prune = "";
  o.sparse_min_zero_fraction = 1.5;
  d = convert_file(onnx, out, o);
  CHECK(d.status == Status::InvalidArgument);
  CHECK(d.message == "sparse COO threshold 1.5 is not a fraction in [0, 1]");
}
