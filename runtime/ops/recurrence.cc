// Front-end of the Recurrence op (ONNX LSTM, GRU and RNN over a whole
// sequence; op_params.h: RecurrenceParams): argument checks, output shapes,
// the kernel. When an operand carries a gradient (grad mode on: the trainer,
// `ember finetune`), the same recurrence is composed of differentiable ops
// (linear, sigmoid, tanh, where, stack: as PyTorch's CPU LSTM is), so autograd
// reaches its weights, states and input.
#include <string>

#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {

namespace {

struct Operands {
  const Tensor &x, &w, &r, &b, &lens, &h0, &c0, &p;
};



// The ops direction d's steps are made of.
struct Cell {
  const Operands& o;
  const RecurrenceParams& p;
  int64_t d, H;

  // Gate k's slice of v [B, G*H].
  Result<Tensor> gate(const Tensor& v, int64_t k) const { return core::narrow(v, 1, k * H, H); }
  Result<Tensor> clip(const Tensor& v) const {
    if (p.clip > 0) return core::clamp(v, Scalar(-p.clip), Scalar(p.clip));
    return v;
  }
  // f(clip(v)): the gates' activation (sigmoid; RNN: tanh or relu).
  Result<Tensor> act(const Tensor& v) const {
    EMBER_ASSIGN_OR_RETURN(const Tensor c, clip(v));
    if (p.cell == 2) return p.relu ? core::relu(c) : core::tanh(c);
    return core::sigmoid(c);
  }
  Result<Tensor> tanh_clip(const Tensor& v) const {
    EMBER_ASSIGN_OR_RETURN(const Tensor c, clip(v));
    return core::tanh(c);
  }
  // LSTM gate k of g, plus its peephole term P[d][k] * state when P is given, activated.
  Result<Tensor> peep_act(const Tensor& g, int64_t k, const Tensor& state) const {
    EMBER_ASSIGN_OR_RETURN(Tensor v, gate(g, k));
    if (o.p.defined()) {
      EMBER_ASSIGN_OR_RETURN(const Tensor pd, core::select(o.p, 0, d));
      EMBER_ASSIGN_OR_RETURN(const Tensor pk, core::narrow(pd, 0, k * H, H));
      EMBER_ASSIGN_OR_RETURN(const Tensor term, core::mul(pk, state));
      EMBER_ASSIGN_OR_RETURN(v, core::add(v, term));
    }
    return act(v);
  }
  // GRU gate k: f(clip(xw's gate + hr's gate)).
  Result<Tensor> sum_act(const Tensor& xt, const Tensor& hr, int64_t k) const {
    EMBER_ASSIGN_OR_RETURN(const Tensor gh, gate(hr, k));
    EMBER_ASSIGN_OR_RETURN(const Tensor gx, gate(xt, k));
    EMBER_ASSIGN_OR_RETURN(const Tensor sum, core::add(gx, gh));
    return act(sum);
  }
};

// The steps create their ops in a fixed order, which the autograd nodes'
// sequence numbers (and so the backward pass's accumulation order) follow: in
// a sum or a product, the right operand's ops first, as GCC evaluated the
// nested expressions these steps were first written as.

// One LSTM step (gates i, o, f, c): {h', c'}.
Result<std::pair<Tensor, Tensor>> lstm_step(const Cell& k, const Tensor& xt, const Tensor& h, const Tensor& c,
                                            const Tensor& rd, const Tensor& rb) {
  EMBER_ASSIGN_OR_RETURN(const Tensor hr, core::linear(h, rd, rb));
  EMBER_ASSIGN_OR_RETURN(const Tensor g, core::add(xt, hr));
  EMBER_ASSIGN_OR_RETURN(const Tensor i, k.peep_act(g, 0, c));
  Tensor fg;
  if (k.p.input_forget) {
    EMBER_ASSIGN_OR_RETURN(fg, core::rsub(i, 1.0));
  } else {
    EMBER_ASSIGN_OR_RETURN(fg, k.peep_act(g, 2, c));
  }
  // c' = fg * c + i * tanh(clip(gate 3))
  EMBER_ASSIGN_OR_RETURN(const Tensor g3, k.gate(g, 3));
  EMBER_ASSIGN_OR_RETURN(const Tensor cand, k.tanh_clip(g3));
  EMBER_ASSIGN_OR_RETURN(const Tensor added, core::mul(i, cand));
  EMBER_ASSIGN_OR_RETURN(const Tensor kept, core::mul(fg, c));
  EMBER_ASSIGN_OR_RETURN(Tensor cn, core::add(kept, added));
  // h' = o * tanh(c')
  EMBER_ASSIGN_OR_RETURN(const Tensor tc, core::tanh(cn));
  EMBER_ASSIGN_OR_RETURN(const Tensor og, k.peep_act(g, 1, cn));
  EMBER_ASSIGN_OR_RETURN(Tensor hn, core::mul(og, tc));
  return std::pair<Tensor, Tensor>{hn, cn};
}

// One GRU step (gates z, r, h): h'.
Result<Tensor> gru_step(const Cell& k, const Tensor& xt, const Tensor& h, const Tensor& rd, const Tensor& rb) {
  const int64_t H = k.H;
  EMBER_ASSIGN_OR_RETURN(const Tensor rz, core::narrow(rd, 0, 0, 2 * H));
  EMBER_ASSIGN_OR_RETURN(const Tensor rh, core::narrow(rd, 0, 2 * H, H));
  Tensor rbz, rbh;
  if (rb.defined()) {
    EMBER_ASSIGN_OR_RETURN(rbz, core::narrow(rb, 0, 0, 2 * H));
  }
  EMBER_ASSIGN_OR_RETURN(const Tensor hr, core::linear(h, rz, rbz));
  EMBER_ASSIGN_OR_RETURN(const Tensor z, k.sum_act(xt, hr, 0));
  EMBER_ASSIGN_OR_RETURN(const Tensor rg, k.sum_act(xt, hr, 1));
  if (rb.defined()) {
    EMBER_ASSIGN_OR_RETURN(rbh, core::narrow(rb, 0, 2 * H, H));
  }
  Tensor hidden;
  if (k.p.linear_before_reset) {
    EMBER_ASSIGN_OR_RETURN(const Tensor lin, core::linear(h, rh, rbh));
    EMBER_ASSIGN_OR_RETURN(hidden, core::mul(rg, lin));
  } else {
    EMBER_ASSIGN_OR_RETURN(const Tensor reset, core::mul(rg, h));
    EMBER_ASSIGN_OR_RETURN(hidden, core::linear(reset, rh, rbh));
  }
  EMBER_ASSIGN_OR_RETURN(const Tensor g2, k.gate(xt, 2));
  EMBER_ASSIGN_OR_RETURN(const Tensor pre, core::add(g2, hidden));
  EMBER_ASSIGN_OR_RETURN(const Tensor cand, k.tanh_clip(pre));
  // h' = (1 - z) * cand + z * h
  EMBER_ASSIGN_OR_RETURN(const Tensor kept, core::mul(z, h));
  EMBER_ASSIGN_OR_RETURN(const Tensor nz, core::rsub(z, 1.0));
  EMBER_ASSIGN_OR_RETURN(const Tensor fresh, core::mul(nz, cand));
  return core::add(fresh, kept);
}

// One RNN step: h' = f(clip(xt + h R^T + biases)).
Result<Tensor> rnn_step(const Cell& k, const Tensor& xt, const Tensor& h, const Tensor& rd, const Tensor& rb) {
  EMBER_ASSIGN_OR_RETURN(const Tensor hr, core::linear(h, rd, rb));
  EMBER_ASSIGN_OR_RETURN(const Tensor pre, core::add(xt, hr));
  return k.act(pre);
}

// The recurrence of kernels/ref/recurrence.cc, step by step with forward ops.
Result<std::vector<Tensor>> composed(const Operands& o, const RecurrenceParams& p) {
  const int64_t T = o.x.size(0), B = o.x.size(1), H = p.hidden, GH = p.gates() * H;
  const bool lstm = p.cell == 0, gru = p.cell == 1;
  const TensorOptions like = TensorOptions(o.x.dtype()).device(o.x.device());
  std::vector<Tensor> ys(static_cast<size_t>(p.directions)), hs, cs;
  for (int64_t d = 0; d < p.directions; ++d) {
    const Cell cell{o, p, d, H};
    EMBER_ASSIGN_OR_RETURN(const Tensor wd, core::select(o.w, 0, d));
    EMBER_ASSIGN_OR_RETURN(const Tensor rd, core::select(o.r, 0, d));
    Tensor wb, rb;
    if (o.b.defined()) {
      EMBER_ASSIGN_OR_RETURN(const Tensor bw, core::select(o.b, 0, d));
      EMBER_ASSIGN_OR_RETURN(wb, core::narrow(bw, 0, 0, GH));
      EMBER_ASSIGN_OR_RETURN(const Tensor br, core::select(o.b, 0, d));
      EMBER_ASSIGN_OR_RETURN(rb, core::narrow(br, 0, GH, GH));
    }
    EMBER_ASSIGN_OR_RETURN(const Tensor xw, core::linear(o.x, wd, wb));  // [T, B, G*H]
    EMBER_ASSIGN_OR_RETURN(Tensor h, o.h0.defined() ? core::select(o.h0, 0, d) : core::zeros({B, H}, like));
    EMBER_ASSIGN_OR_RETURN(Tensor c, o.c0.defined() ? core::select(o.c0, 0, d) : core::zeros({B, H}, like));
    std::vector<Tensor> per_step(static_cast<size_t>(T));
    const bool backward = p.reverse || d == 1;
    for (int64_t k = 0; k < T; ++k) {
      const int64_t t = backward ? T - 1 - k : k;
      EMBER_ASSIGN_OR_RETURN(const Tensor xt, core::select(xw, 0, t));
      Tensor hn, cn;
      if (lstm) {
        EMBER_ASSIGN_OR_RETURN(auto next, lstm_step(cell, xt, h, c, rd, rb));
        hn = next.first;
        cn = next.second;
      } else if (gru) {
        EMBER_ASSIGN_OR_RETURN(hn, gru_step(cell, xt, h, rd, rb));
      } else {
        EMBER_ASSIGN_OR_RETURN(hn, rnn_step(cell, xt, h, rd, rb));
      }
      Tensor& y = per_step[static_cast<size_t>(t)];
      if (o.lens.defined()) {  // steps at or past an entry's length: output 0, keep the state
        EMBER_ASSIGN_OR_RETURN(const Tensor lens, core::to(o.lens, DType::Int64));
        EMBER_ASSIGN_OR_RETURN(const Tensor live, core::gt(lens, Scalar(t)));
        EMBER_ASSIGN_OR_RETURN(const Tensor valid, core::reshape(live, {B, 1}));
        EMBER_ASSIGN_OR_RETURN(y, core::where(valid, hn, Scalar(0.0)));
        EMBER_ASSIGN_OR_RETURN(h, core::where(valid, hn, h));
        if (lstm) {
          EMBER_ASSIGN_OR_RETURN(c, core::where(valid, cn, c));
        }
      } else {
        y = hn;
        h = hn;
        if (lstm) c = cn;
      }
    }
    if (T > 0) {
      EMBER_ASSIGN_OR_RETURN(ys[static_cast<size_t>(d)], core::stack(per_step, 0));
    } else {
      EMBER_ASSIGN_OR_RETURN(ys[static_cast<size_t>(d)], core::zeros({0, B, H}, like));
    }
    hs.push_back(h);
    cs.push_back(c);
  }
  std::vector<Tensor> out(3);
  EMBER_ASSIGN_OR_RETURN(out[0], core::stack(ys, 1));
  EMBER_ASSIGN_OR_RETURN(out[1], core::stack(hs, 0));
  if (lstm) {
    EMBER_ASSIGN_OR_RETURN(out[2], core::stack(cs, 0));
  }
  return out;
}

}  // namespace

Result<std::vector<Tensor>> core::recurrence(const Tensor& x, const Tensor& w, const Tensor& r, const Tensor& b,
                                             const Tensor& lens, const Tensor& h0, const Tensor& c0, const Tensor& p,
                                             const RecurrenceParams& params) {
  static const char* const kCells[] = {"LSTM", "GRU", "RNN"};
  EMBER_CHECK(params.valid(), Status::InvalidArgument, "Recurrence: cell ", params.cell, ", ", params.directions,
              " directions, hidden size ", params.hidden, " and clip ", params.clip, " are not valid");
  const char* cell = kCells[params.cell];
  EMBER_CHECK(x.defined() && w.defined() && r.defined(), Status::InvalidArgument, cell,
              ": the input X, the weights W and R are required");
  EMBER_CHECK(x.dim() == 3, Status::ShapeMismatch, cell, ": expected X of rank 3 [seq_length, batch, input_size], got ",
              shape_str(x.sizes()));
  EMBER_CHECK(is_floating(x.dtype()), Status::NotSupported, cell, ": expected a floating-point X, got ",
              dtype_name(x.dtype()));
  EMBER_TRY(check_same_device({x, w, r, b, lens, h0, c0, p}));
  const int64_t T = x.size(0), B = x.size(1), I = x.size(2), D = params.directions, H = params.hidden;
  const int64_t GH = params.gates() * H;
  auto check = [&](const Tensor& t, const char* what, const Shape& want) -> Status {
    if (!t.defined()) return Status::Ok;
    EMBER_CHECK(t.sizes() == want, Status::ShapeMismatch, cell, ": ", what, " must be ", shape_str(want), ", got ",
                shape_str(t.sizes()));
    EMBER_CHECK(t.dtype() == x.dtype(), Status::DTypeMismatch, cell, ": ", what, " must have X's dtype ",
                dtype_name(x.dtype()), ", got ", dtype_name(t.dtype()));
    return Status::Ok;
  };
  EMBER_TRY(check(w, "W", {D, GH, I}));
  EMBER_TRY(check(r, "R", {D, GH, H}));
  EMBER_TRY(check(b, "B", {D, 2 * GH}));
  EMBER_TRY(check(h0, "initial_h", {D, B, H}));
  if (lens.defined()) {
    EMBER_CHECK(lens.sizes() == Shape{B}, Status::ShapeMismatch, cell, ": sequence_lens must be [", B, "], got ",
                shape_str(lens.sizes()));
    EMBER_CHECK(lens.dtype() == DType::Int32 || lens.dtype() == DType::Int64, Status::DTypeMismatch, cell,
                ": sequence_lens must be int32 or int64, got ", dtype_name(lens.dtype()));
    EMBER_ASSIGN_OR_RETURN(const Tensor on_host, core::to(lens, Device(DeviceType::CPU)));
    EMBER_ASSIGN_OR_RETURN(const Tensor as_int64, core::to(on_host, DType::Int64));
    EMBER_ASSIGN_OR_RETURN(const Tensor l, core::contiguous(as_int64));
    for (int64_t k = 0; k < B; ++k) {
      const int64_t v = l.data_ptr<int64_t>()[k];
      EMBER_CHECK(v >= 0 && v <= T, Status::OutOfRange, cell, ": sequence_lens[", k, "] = ", v,
                  " is outside [0, ", T, "] (the sequence length)");
    }
  }
  if (params.cell == 0) {
    EMBER_TRY(check(c0, "initial_c", {D, B, H}));
    EMBER_TRY(check(p, "P", {D, 3 * H}));
  } else {
    EMBER_CHECK(!c0.defined() && !p.defined(), Status::InvalidArgument, cell,
                ": initial_c and P are LSTM inputs");
  }
  const Operands o{x, w, r, b, lens, h0, c0, p};
  if (GradMode::is_enabled()) {
    for (const Tensor* t : {&x, &w, &r, &b, &h0, &c0, &p}) {
      if (t->defined() && t->requires_grad()) return composed(o, params);
    }
  }
  const TensorOptions like = TensorOptions(x.dtype()).device(x.device());
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::empty({T, D, B, H}, like));
  EMBER_ASSIGN_OR_RETURN(Tensor y_h, core::empty({D, B, H}, like));
  Tensor y_c;
  if (params.cell == 0) {
    EMBER_ASSIGN_OR_RETURN(y_c, core::empty({D, B, H}, like));
  }
  EMBER_TRY(run_kernel(OpKind::Recurrence, {x, w, r, b, lens, h0, c0, p}, {y, y_h, y_c}, params));
  return std::vector<Tensor>{y, y_h, y_c};
}

std::vector<Tensor> recurrence(const Tensor& x, const Tensor& w, const Tensor& r, const Tensor& b, const Tensor& lens,
                               const Tensor& h0, const Tensor& c0, const Tensor& p, const RecurrenceParams& params) {
  return unwrap(core::recurrence(x, w, r, b, lens, h0, c0, p, params));
}

}  // namespace ember
