// Lowering of Det for matrices of static size 1 to 3 (see lowerer.h): the
// cofactor expansion over the elements (Reshape to [..., n*n], Gather of each
// element, Mul, Sub, Add); larger matrices are refused.
#include "converter/lowerer.h"

namespace ember::converter::lowering {

void Lowerer::lower_det(const Node& n) {
  const int x = n.inputs[0];
  const std::optional<DType> dt = dtype_of(x);
  if (!dt || !is_floating(*dt)) refuse("input " + vname(x) + " is not floating point");
  const std::vector<Dim> xs = dims_of(x, "input");
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (rank < 2) refuse("input " + vname(x) + " has rank " + std::to_string(rank) + ", not at least 2");
  const Dim& rows = xs[static_cast<size_t>(rank - 2)];
  const Dim& cols = xs[static_cast<size_t>(rank - 1)];
  if (!rows.is_static() || !cols.is_static() || rows.value != cols.value) {
    refuse("input " + vname(x) + " is not made of square matrices of a static size");
  }
  const int64_t m = rows.value;
  if (m < 1 || m > 3) refuse("matrices of size " + std::to_string(m) + " are not supported (1 to 3)");
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  std::vector<int64_t> shape(static_cast<size_t>(rank - 2), 0);
  shape.push_back(m * m);
  std::vector<Dim> batch(xs.begin(), xs.end() - 2), flat_dims = batch;
  flat_dims.push_back(Dim::fixed(m * m));
  const int32_t flat = reshape_new(tensor(x), shape, flat_dims, base + "/flat");
  auto e = [&](int64_t i, int64_t j) {
    const std::string nm = base + "/e" + std::to_string(i) + std::to_string(j);
    return emit_new(OpKind::Gather, {flat, int_scalar(nm + "/at", i * m + j)}, *dt, batch, AxisParams{-1}, nm);
  };
  auto mul = [&](int32_t a, int32_t b, const std::string& what) { return binary_new(OpKind::Mul, a, b, *dt, base + what); };
  // The 2x2 minor of rows r0, r1 and columns c0, c1.
  auto minor = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1, const std::string& what, int32_t into) {
    return binary_new(OpKind::Sub, mul(e(r0, c0), e(r1, c1), what + "_a"), mul(e(r0, c1), e(r1, c0), what + "_b"), *dt,
                      base + what, into);
  };
  if (m == 1) return (void)emit_new(OpKind::Copy, {e(0, 0)}, *dt, batch, NoParams{}, base, out);
  if (m == 2) return (void)minor(0, 1, 0, 1, "", out);
  const int32_t t0 = mul(e(0, 0), minor(1, 2, 1, 2, "/m0", -1), "/t0");
  const int32_t t1 = mul(e(0, 1), minor(1, 2, 0, 2, "/m1", -1), "/t1");
  const int32_t t2 = mul(e(0, 2), minor(1, 2, 0, 1, "/m2", -1), "/t2");
  binary_new(OpKind::Add, binary_new(OpKind::Sub, t0, t1, *dt, base + "/t01"), t2, *dt, base, out);
}

}  // namespace ember::converter::lowering
