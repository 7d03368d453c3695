// libFuzzer target for the executor's shape ops: a small graph of one of
// Reshape, Expand, Tile (as the converter lowers it), ConstantOfShape, Range,
// Resize, Pad or Slice whose shape-like inputs (shapes, repeats, bounds,
// scales, sizes, pads, starts, ends, axes, steps) come from the fuzzer's
// bytes, built with graph_builder.h, serialized, loaded with full
// verification and run. Any status is fine; a crash, a sanitizer report, a
// hang or an unbounded allocation is not: runs are bounded by
// RunOptions::max_tensor_bytes. Built with clang by tools/fuzz.sh shape_ops.
//
// Bytes: [op] [x rank] [x dims...] [op bytes...]; a value is one byte (small,
// -100..99) or a byte picking an edge value (0, +-2^31, 2^32, 2^62, INT64_MIN,
// INT64_MAX) or eight raw bytes. Missing bytes read as 0.
#define DOCTEST_CONFIG_DISABLE  // graph_builder.h's REQUIREs are not used here
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/model/executor.h"
#include "runtime/model/loader.h"
#include "runtime/model/writer.h"
#include "tests/model/graph_builder.h"

namespace {

using ember::DType;
using ember::OpKind;
using ember::Tensor;

class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  uint8_t byte() { return n_ > 0 ? (--n_, *p_++) : 0; }
  int64_t value() {
    const uint8_t k = byte();
    if (k < 200) return static_cast<int64_t>(k) - 100;
    switch (k % 8) {
      case 0: return int64_t{1} << 31;
      case 1: return -(int64_t{1} << 31);
      case 2: return int64_t{1} << 32;
      case 3: return int64_t{1} << 62;
      case 4: return std::numeric_limits<int64_t>::min();
      case 5: return std::numeric_limits<int64_t>::max();
      case 6: return int64_t{1} << 20;
      default: {
        uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v = v << 8 | byte();
        int64_t s;
        std::memcpy(&s, &v, sizeof s);
        return s;
      }
    }
  }
  std::vector<int64_t> values(size_t count) {
    std::vector<int64_t> v(count);
    for (int64_t& x : v) x = value();
    return v;
  }
  // A scale: a small ratio or an edge value (0, negative, huge, inf, NaN).
  float scale() {
    const uint8_t k = byte();
    if (k < 240) return static_cast<float>(k % 60) / 8.0f - 1.0f;
    const float edge[] = {0.0f, -1.0f, 1e30f, std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), 1e-30f, 65536.0f, 3.0e9f};
    return edge[k % 8];
  }

 private:
  const uint8_t* p_;
  size_t n_;
};

Tensor ints(const std::vector<int64_t>& v) { return ember::tensor(v, {static_cast<int64_t>(v.size())}); }

std::vector<int64_t> unknown(size_t rank) { return std::vector<int64_t>(rank, -1); }

// The graph of op `which` on x (a graph input), its run-time inputs appended to `feeds`.
ember::testing::Graph build(Bytes& in, const Tensor& x, std::vector<Tensor>& feeds) {
  ember::testing::Graph g;
  const size_t rank = static_cast<size_t>(x.dim());
  const int xi = g.input("x", x.sizes());
  feeds.push_back(x);
  auto run_time = [&](const std::string& name, const Tensor& t) {
    feeds.push_back(t);
    return g.input(name, t.sizes(), t.dtype());
  };
  const size_t len = in.byte() % 10;  // shape-like inputs of 0 to 9 values (ranks past kMaxRank too)
  switch (in.byte() % 8) {
    case 0: {
      const int y = g.act("y", unknown(len));
      g.op(OpKind::Reshape, {xi, run_time("shape", ints(in.values(len)))}, {y}, "reshape");
      g.output(y);
      break;
    }
    case 1: {
      const int y = g.act("y", unknown(std::max(len, rank)));
      g.op(OpKind::Expand, {xi, run_time("shape", ints(in.values(len)))}, {y}, "expand");
      g.output(y);
      break;
    }
    case 2: {  // Tile as lower_tile emits it: unsqueeze, expand by [r0, 1, r1, 1, ...], reshape to r * dims
      const int r = run_time("repeats", ints(in.values(rank)));
      ember::DimsParams even;
      std::vector<int64_t> spread;
      for (size_t d = 0; d < rank; ++d) {
        even.dims[even.rank++] = static_cast<int64_t>(2 * d);
        spread.push_back(1);
        spread.push_back(x.size(static_cast<int64_t>(d)));
      }
      const int u = g.act("spread", spread);
      g.op(OpKind::Unsqueeze, {xi, -1}, {u}, "spread", even);
      ember::DimsParams one;
      one.dims[one.rank++] = 1;
      const int column = g.act("column", {static_cast<int64_t>(rank), 1}, DType::Int64);
      g.op(OpKind::Unsqueeze, {r, -1}, {column}, "column", one);
      const int pairs = g.act("pairs", {static_cast<int64_t>(rank), 2}, DType::Int64);
      g.op(OpKind::Concat, {column, g.weight("ones", ember::ones({static_cast<int64_t>(rank), 1},
                                                                   ember::TensorOptions(DType::Int64)))},
           {pairs}, "pairs", ember::AxisParams{1});
      const int flat = g.act("flat", {static_cast<int64_t>(2 * rank)}, DType::Int64);
      g.op(OpKind::Reshape, {pairs, g.ints("minus_one", {-1})}, {flat}, "flat");
      const int e = g.act("expanded", unknown(2 * rank));
      g.op(OpKind::Expand, {u, flat}, {e}, "expand");
      const int dims = g.act("dims", {static_cast<int64_t>(rank)}, DType::Int64);
      g.op(OpKind::ShapeOf, {xi}, {dims}, "dims");
      const int tiled = g.act("tiled", {static_cast<int64_t>(rank)}, DType::Int64);
      g.op(OpKind::Mul, {r, dims}, {tiled}, "tiled");
      const int y = g.act("y", unknown(rank));
      g.op(OpKind::Reshape, {e, tiled}, {y}, "tile");
      g.output(y);
      break;
    }
    case 3: {
      const int y = g.act("y", unknown(len));
      g.op(OpKind::ConstantOfShape, {run_time("shape", ints(in.values(len)))}, {y}, "constant_of_shape",
           ember::ScalarParams{ember::Scalar(1.5)});
      g.output(y);
      break;
    }
    case 4: {
      const bool floats = in.byte() % 2 != 0;
      auto scalar = [&](const char* name) {
        const int64_t v = in.value();
        return run_time(name, floats ? ember::scalar_tensor(static_cast<double>(in.scale()) * static_cast<double>(v),
                                                            DType::Float32)
                                     : ember::scalar_tensor(v, DType::Int64));
      };
      const int start = scalar("start"), limit = scalar("limit"), delta = scalar("delta");
      const int y = g.act("y", {-1}, floats ? DType::Float32 : DType::Int64);
      g.op(OpKind::Range, {start, limit, delta}, {y}, "range");
      g.output(y);
      break;
    }
    case 5: {
      ember::ResizeParams p;
      p.mode = static_cast<ember::ResizeMode>(in.byte() % 3);
      p.coord = static_cast<ember::ResizeCoord>(in.byte() % 6);
      p.nearest = static_cast<ember::NearestMode>(in.byte() % 4);
      p.antialias = in.byte() % 2 != 0;
      p.rank = static_cast<int64_t>(rank);
      int scales = -1, sizes = -1;
      if (in.byte() % 2 != 0) {
        std::vector<float> s(len);
        for (float& v : s) v = in.scale();
        scales = run_time("scales", ember::tensor(s, {static_cast<int64_t>(len)}));
      } else {
        sizes = run_time("sizes", ints(in.values(len)));
      }
      const int y = g.act("y", unknown(rank));
      g.op(OpKind::Resize, {xi, -1, scales, sizes}, {y}, "resize", p);
      g.output(y);
      break;
    }
    case 6: {
      ember::PadParams p;
      p.mode = static_cast<ember::PadMode>(in.byte() % 4);
      for (size_t d = 0; d < rank; ++d) {
        p.before[d] = in.value();
        p.after[d] = in.value();
      }
      const int y = g.act("y", unknown(rank));
      g.op(OpKind::Pad, {xi}, {y}, "pad", p);
      g.output(y);
      break;
    }
    default: {
      const int starts = run_time("starts", ints(in.values(len)));
      const int ends = run_time("ends", ints(in.values(len)));
      const int axes = in.byte() % 2 != 0 ? run_time("axes", ints(in.values(len))) : -1;
      const int steps = in.byte() % 2 != 0 ? run_time("steps", ints(in.values(len))) : -1;
      const int y = g.act("y", unknown(rank));
      g.op(OpKind::Slice, {xi, starts, ends, axes, steps}, {y}, "slice");
      g.output(y);
      break;
    }
  }
  return g;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  const int64_t rank = in.byte() % 5;  // 0 to 4
  ember::Shape shape;
  int64_t numel = 1;
  for (int64_t d = 0; d < rank; ++d) {
    shape.push_back(in.byte() % 5);
    numel *= shape.back();
  }
  const Tensor x = ember::arange(numel, DType::Float32).reshape(shape);
  std::vector<Tensor> feeds;
  const ember::testing::Graph g = build(in, x, feeds);
  std::vector<std::byte> bytes;
  std::string error;
  if (ember::serialize_model(g.def, &bytes, &error) != ember::Status::Ok) return 0;  // the writer refused it
  auto model = ember::Model::load_from_bytes(bytes.data(), bytes.size(), ember::Verification::Full, &error);
  if (!model.ok()) return 0;
  auto ex = ember::Executor::create(std::make_shared<const ember::Model>(std::move(model.get())), &error);
  if (!ex.ok()) {
    if (error.empty()) __builtin_trap();  // every failure has a reason
    return 0;
  }
  ember::ExecutionContext ctx(ex.get());
  ember::RunOptions options;
  // 1 MiB of output at most: the bound, not the work, is what is under test
  // (overflowing and absurd sizes are refused at any bound). At 64 MiB a
  // legitimate cubic antialias Resize of [3, 2, 2] to [2, 3, 2^20] (64 taps
  // per value on the reference kernel) took 30 s under ASan and coverage,
  // past libFuzzer's 10 s per input.
  options.max_tensor_bytes = size_t{1} << 20;
  for (int run = 0; run < 2; ++run) {  // the second run is served by the planned arena
    auto r = ctx.run(feeds, options, &error);
    if (!r.ok() && error.empty()) __builtin_trap();
  }
  return 0;
}
