// Front-end of the Recurrence op (ONNX LSTM, GRU and RNN over a whole
// sequence; op_params.h: RecurrenceParams): argument checks, output shapes,
// the kernel. When an operand carries a gradient (grad mode on: the trainer,
// `ember finetune`), the same recurrence is composed of differentiable ops
// (linear, sigmoid, tanh, where, stack: as PyTorch's CPU LSTM is), so autograd
// reaches its weights, states and input.
#include <string>

#include "runtime/autograd/grad_mode.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {

namespace {

struct Operands {
  const Tensor &x, &w, &r, &b, &lens, &h0, &c0, &p;
};

// The recurrence of kernels/ref/recurrence.cc, step by step with forward ops.
std::vector<Tensor> composed(const Operands& o, const RecurrenceParams& p) {
  const int64_t T = o.x.size(0), B = o.x.size(1), H = p.hidden, GH = p.gates() * H;
  const bool lstm = p.cell == 0, gru = p.cell == 1;
  const TensorOptions like = TensorOptions(o.x.dtype()).device(o.x.device());
  auto clip = [&](const Tensor& v) { return p.clip > 0 ? clamp(v, Scalar(-p.clip), Scalar(p.clip)) : v; };
  auto f = [&](const Tensor& v) { return p.cell == 2 ? (p.relu ? relu(v) : tanh(v)) : sigmoid(v); };
  auto gate = [&](const Tensor& v, int64_t k) { return v.narrow(1, k * H, H); };
  std::vector<Tensor> ys(static_cast<size_t>(p.directions)), hs, cs;
  for (int64_t d = 0; d < p.directions; ++d) {
    const Tensor wd = o.w.select(0, d), rd = o.r.select(0, d);
    const Tensor wb = o.b.defined() ? o.b.select(0, d).narrow(0, 0, GH) : Tensor();
    const Tensor rb = o.b.defined() ? o.b.select(0, d).narrow(0, GH, GH) : Tensor();
    const Tensor xw = linear(o.x, wd, wb);  // [T, B, G*H]
    Tensor h = o.h0.defined() ? o.h0.select(0, d) : zeros({B, H}, like);
    Tensor c = o.c0.defined() ? o.c0.select(0, d) : zeros({B, H}, like);
    std::vector<Tensor> per_step(static_cast<size_t>(T));
    const bool backward = p.reverse || d == 1;
    for (int64_t k = 0; k < T; ++k) {
      const int64_t t = backward ? T - 1 - k : k;
      const Tensor xt = xw.select(0, t);
      Tensor hn, cn;
      if (lstm) {
        const Tensor g = xt + linear(h, rd, rb);
        auto peep = [&](const Tensor& v, int64_t k2, const Tensor& state) {
          return o.p.defined() ? v + o.p.select(0, d).narrow(0, k2 * H, H) * state : v;
        };
        const Tensor i = f(clip(peep(gate(g, 0), 0, c)));
        const Tensor fg = p.input_forget ? 1.0 - i : f(clip(peep(gate(g, 2), 2, c)));
        cn = fg * c + i * tanh(clip(gate(g, 3)));
        hn = f(clip(peep(gate(g, 1), 1, cn))) * tanh(cn);
      } else if (gru) {
        const Tensor rz = rd.narrow(0, 0, 2 * H), rh = rd.narrow(0, 2 * H, H);
        const Tensor hr = linear(h, rz, rb.defined() ? rb.narrow(0, 0, 2 * H) : Tensor());
        const Tensor z = f(clip(gate(xt, 0) + gate(hr, 0))), rg = f(clip(gate(xt, 1) + gate(hr, 1)));
        const Tensor rbh = rb.defined() ? rb.narrow(0, 2 * H, H) : Tensor();
        const Tensor hidden = p.linear_before_reset ? rg * linear(h, rh, rbh) : linear(rg * h, rh, rbh);
        const Tensor cand = tanh(clip(gate(xt, 2) + hidden));
        hn = (1.0 - z) * cand + z * h;
      } else {
        hn = f(clip(xt + linear(h, rd, rb)));
      }
      if (o.lens.defined()) {  // steps at or past an entry's length: output 0, keep the state
        const Tensor valid = (o.lens.to(DType::Int64) > Scalar(t)).reshape({B, 1});
        per_step[static_cast<size_t>(t)] = where(valid, hn, Scalar(0.0));
        h = where(valid, hn, h);
        if (lstm) c = where(valid, cn, c);
      } else {
        per_step[static_cast<size_t>(t)] = hn;
        h = hn;
        if (lstm) c = cn;
      }
    }
    ys[static_cast<size_t>(d)] = T > 0 ? stack(per_step, 0) : zeros({0, B, H}, like);
    hs.push_back(h);
    cs.push_back(c);
  }
  std::vector<Tensor> out = {stack(ys, 1), stack(hs, 0), lstm ? stack(cs, 0) : Tensor()};
  return out;
}

}  // namespace

std::vector<Tensor> recurrence(const Tensor& x, const Tensor& w, const Tensor& r, const Tensor& b, const Tensor& lens,
                               const Tensor& h0, const Tensor& c0, const Tensor& p, const RecurrenceParams& params) {
  static const char* const kCells[] = {"LSTM", "GRU", "RNN"};
  EMBER_ENFORCE(params.valid(), Status::InvalidArgument, "Recurrence: cell ", params.cell, ", ", params.directions,
              " directions, hidden size ", params.hidden, " and clip ", params.clip, " are not valid");
  const char* cell = kCells[params.cell];
  EMBER_ENFORCE(x.defined() && w.defined() && r.defined(), Status::InvalidArgument, cell,
              ": the input X, the weights W and R are required");
  EMBER_ENFORCE(x.dim() == 3, Status::ShapeMismatch, cell, ": expected X of rank 3 [seq_length, batch, input_size], got ",
              shape_str(x.sizes()));
  EMBER_ENFORCE(is_floating(x.dtype()), Status::NotSupported, cell, ": expected a floating-point X, got ",
              dtype_name(x.dtype()));
  unwrap(check_same_device({x, w, r, b, lens, h0, c0, p}));
  const int64_t T = x.size(0), B = x.size(1), I = x.size(2), D = params.directions, H = params.hidden;
  const int64_t GH = params.gates() * H;
  auto check = [&](const Tensor& t, const char* what, const Shape& want) {
    if (!t.defined()) return;
    EMBER_ENFORCE(t.sizes() == want, Status::ShapeMismatch, cell, ": ", what, " must be ", shape_str(want), ", got ",
                shape_str(t.sizes()));
    EMBER_ENFORCE(t.dtype() == x.dtype(), Status::DTypeMismatch, cell, ": ", what, " must have X's dtype ",
                dtype_name(x.dtype()), ", got ", dtype_name(t.dtype()));
  };
  check(w, "W", {D, GH, I});
  check(r, "R", {D, GH, H});
  check(b, "B", {D, 2 * GH});
  check(h0, "initial_h", {D, B, H});
  if (lens.defined()) {
    EMBER_ENFORCE(lens.sizes() == Shape{B}, Status::ShapeMismatch, cell, ": sequence_lens must be [", B, "], got ",
                shape_str(lens.sizes()));
    EMBER_ENFORCE(lens.dtype() == DType::Int32 || lens.dtype() == DType::Int64, Status::DTypeMismatch, cell,
                ": sequence_lens must be int32 or int64, got ", dtype_name(lens.dtype()));
    const Tensor l = lens.to(Device(DeviceType::CPU)).to(DType::Int64).contiguous();
    for (int64_t k = 0; k < B; ++k) {
      const int64_t v = l.data_ptr<int64_t>()[k];
      EMBER_ENFORCE(v >= 0 && v <= T, Status::OutOfRange, cell, ": sequence_lens[", k, "] = ", v,
                  " is outside [0, ", T, "] (the sequence length)");
    }
  }
  if (params.cell == 0) {
    check(c0, "initial_c", {D, B, H});
    check(p, "P", {D, 3 * H});
  } else {
    EMBER_ENFORCE(!c0.defined() && !p.defined(), Status::InvalidArgument, cell,
                ": initial_c and P are LSTM inputs");
  }
  const Operands o{x, w, r, b, lens, h0, c0, p};
  if (GradMode::is_enabled()) {
    for (const Tensor* t : {&x, &w, &r, &b, &h0, &c0, &p}) {
      if (t->defined() && t->requires_grad()) return composed(o, params);
    }
  }
  const TensorOptions like = TensorOptions(x.dtype()).device(x.device());
  std::vector<Tensor> out = {empty({T, D, B, H}, like), empty({D, B, H}, like),
                             params.cell == 0 ? empty({D, B, H}, like) : Tensor()};
  unwrap(run_kernel(OpKind::Recurrence, {x, w, r, b, lens, h0, c0, p}, {out[0], out[1], out[2]}, params));
  return out;
}

}  // namespace ember
