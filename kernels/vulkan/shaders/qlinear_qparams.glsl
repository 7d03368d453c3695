// ATen's ChooseQuantizationParams (what quant/qscheme.cc computes in double)
// in float arithmetic that reproduces it: Vulkan rounds +, - and * correctly
// but not /, so every quotient is corrected to the correctly rounded one with
// exact residuals (Dekker's product, Knuth's sum), and the zero point is
// rounded from the exact quotient. Needs `precise` everywhere: a fused
// multiply-add would change the residuals.

const float kSmallScale = 6.1e-5;  // ATen's SMALL_SCALE_THRESHOLD

// Tests only (specialization constant 1): skews every device quotient by a
// pseudo-random -2 .. 2 ulp, as a device with a loose division would, to show
// that the corrections below recover the correctly rounded one anyway.
layout(constant_id = 1) const uint kSkewDivision = 0;

// The exact error of p = a * b (Dekker; no overflow for |a|, |b| < 2^100).
float two_prod_err(float a, float b, float p) {
  precise float ca = 4097.0 * a;
  precise float ah = ca - (ca - a);
  precise float al = a - ah;
  precise float cb = 4097.0 * b;
  precise float bh = cb - (cb - b);
  precise float bl = b - bh;
  precise float e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
  return e;
}

// (ah + al) - b * q, for q close to (ah + al) / b (ah - b*q is then exact).
float residual(float ah, float al, float b, float q) {
  precise float p = b * q;
  precise float r = ((ah - p) - two_prod_err(b, q, p)) + al;
  return r;
}

// The float nearest to (ah + al) / b, ties to even, for ah + al >= 0 and b > 0
// (ah >> al): the device's quotient (within 3 ulp) and its neighbours.
float cr_div2(float ah, float al, float b) {
  if (ah == 0.0) return 0.0;
  float q0 = ah / b;
  if (kSkewDivision != 0u) {
    const uint h = (floatBitsToUint(ah) ^ floatBitsToUint(b)) * 2654435761u;
    q0 = uintBitsToFloat(uint(max(int(floatBitsToUint(q0)) + int(h >> 29u) % 5 - 2, 0)));
  }
  const uint bits = floatBitsToUint(q0);
  float best = q0;
  float best_r = abs(residual(ah, al, b, q0));
  for (int d = -3; d <= 3; ++d) {
    if (d == 0 || (d < 0 && bits < uint(-d))) continue;
    const float q = uintBitsToFloat(uint(int(bits) + d));
    const float r = abs(residual(ah, al, b, q));
    if (r < best_r || (r == best_r && (floatBitsToUint(q) & 1u) == 0u)) {
      best = q;
      best_r = r;
    }
  }
  return best;
}

float cr_div(float a, float b) { return cr_div2(a, 0.0, b); }

// Sign of (c + sgn * a / s) - h for a >= 0, s > 0, small integers c and
// half-integers h: sign((c - h) * s + sgn * a), evaluated exactly.
float side(float c, float sgn, float a, float s, float h) {
  precise float ch = c - h;
  precise float p = ch * s;
  precise float e = two_prod_err(ch, s, p);
  precise float t = (p + sgn * a) + e;
  return sign(t);
}

// nearbyint(c + sgn * a / s) (ties to even), from the exact quotient.
float round_exact(float c, float sgn, float a, float s) {
  precise float v = c + sgn * cr_div(a, s);
  float n = roundEven(v);
  const float up = side(c, sgn, a, s, n + 0.5);
  if (up > 0.0 || (up == 0.0 && mod(n, 2.0) != 0.0)) return n + 1.0;
  const float down = side(c, sgn, a, s, n - 0.5);
  if (down < 0.0 || (down == 0.0 && mod(n, 2.0) != 0.0)) return n - 1.0;
  return n;
}

// (scale, zero point) for uint8 activations over [mn, mx]; qmax 255 or 127 (reduce_range).
vec2 choose_qparams(float mn, float mx, float qmax) {
  mn = min(mn, 0.0);
  mx = max(mx, 0.0);
  // scale = (double(mx) - mn) / qmax, rounded to float: mx - mn exactly as dh + dl.
  precise float dh = mx - mn;
  precise float bb = dh - mx;
  precise float dl = (mx - (dh - bb)) + (-mn - bb);
  float scale = cr_div2(dh, dl, qmax);
  if (scale == 0.0 || isinf(1.0 / scale)) scale = 0.1;
  if (scale < kSmallScale) {
    const float org_scale = scale;
    scale = kSmallScale;
    if (mn == 0.0) {
      precise float m = kSmallScale * qmax;
      mx = m;
    } else if (mx == 0.0) {
      precise float m = -kSmallScale * qmax;
      mn = m;
    } else {
      const float amplifier = cr_div(kSmallScale, org_scale);
      precise float a = mn * amplifier;
      precise float b = mx * amplifier;
      mn = a;
      mx = b;
    }
  }
  // zp_from_min = -mn / s, zp_from_max = qmax - mx / s; ATen keeps the one
  // whose error is smaller: -|mn / s| < qmax - |mx / s|  <=>  mx + mn < qmax * s.
  precise float sh = mx + mn;
  precise float sb = sh - mx;
  precise float sl = (mx - (sh - sb)) + (mn - sb);
  precise float p = qmax * scale;
  precise float pe = two_prod_err(qmax, scale, p);
  precise float diff = (sh - p) + (sl - pe);
  float zp;
  if (diff < 0.0) {
    zp = round_exact(0.0, 1.0, -mn, scale);
  } else {
    zp = round_exact(qmax, -1.0, mx, scale);
  }
  zp = clamp(zp, 0.0, qmax);
  return vec2(scale, zp);
}
