// PadBackward of ELEM values (float32 or float16: pad_backward.comp /
// pad_backward_f16.comp; float32 arithmetic), up to 5 dims, any strides. One
// invocation per grad_in element: along each dim, the output indices that
// read its index (kernels/ref/pad_index.h's map inverted: at most 3 runs of
// evenly spaced indices, ascending), and over their product, in row-major
// order (kernels/ref/pad_backward.cc's), grad_out is summed and added to
// grad_in (zeroed by the front-end). No atomics: deterministic.
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer Grad { ELEM g[]; };
layout(std430, set = 0, binding = 1) buffer GradIn { ELEM gi[]; };
layout(push_constant) uniform Push {
  uint g_first, gi_first;
  uint total;
  uint mode;  // 0 constant, 1 reflect, 2 replicate, 3 circular (PadMode)
  int rank;
  int osize[5];
  int isize[5];
  int before[5];
  int gs[5];
  int gis[5];
} p;

#include "pad_source.glsl"

// Per dim: runs r of cnt[d][r] output indices st[d][r] + k * stp[d][r].
int st[5][3], cnt[5][3], stp[5][3];

void set_run(int d, int r, int start, int count, int step) {
  st[d][r] = start;
  cnt[d][r] = max(count, 0);
  stp[d][r] = step;
}

// The single output index o when it is inside the output and reads input index i.
void set_point(int d, int r, int o, int i) {
  set_run(d, r, o, o >= 0 && o < p.osize[d] && source(d, o) == i ? 1 : 0, 1);
}

// The output indices reading input index i along dim d; returns how many.
int preimage(int d, int i) {
  const int size = p.isize[d], n = p.osize[d], b = p.before[d];
  set_run(d, 1, 0, 0, 1);
  set_run(d, 2, 0, 0, 1);
  if (p.mode == 0u) {
    set_point(d, 0, b + i, i);
  } else if (p.mode == 1u) {  // reflect: |x| = i, or 2 (size - 1) - x = i
    set_point(d, 0, i > 0 ? b - i : -1, i);
    set_point(d, 1, b + i, i);
    set_point(d, 2, i < size - 1 ? b + 2 * (size - 1) - i : -1, i);
  } else if (p.mode == 2u) {  // replicate: the first and last index take the clamped ones
    const int lo = max(i == 0 ? 0 : b + i, 0);
    const int hi = min(i == size - 1 ? n - 1 : b + i, n - 1);
    set_run(d, 0, lo, hi - lo + 1, 1);
  } else {  // circular: o - max(b, 0) = i - crop_l (mod kept)
    const int crop_l = max(-b, 0);
    const int kept = size - crop_l - max(b + size - n, 0);
    const int first = (max(b, 0) + i - crop_l) % kept;
    set_run(d, 0, first, i >= crop_l && i < crop_l + kept && first < n ? (n - 1 - first) / kept + 1 : 0, kept);
  }
  return cnt[d][0] + cnt[d][1] + cnt[d][2];
}

// The k-th output index of dim d's runs.
int nth(int d, int k) {
  for (int r = 0; r < 2; ++r) {
    if (k < cnt[d][r]) return st[d][r] + k * stp[d][r];
    k -= cnt[d][r];
  }
  return st[d][2] + k * stp[d][2];
}

void main() {
  const uint f = flat_index();
  if (f >= p.total) return;
  int rest = int(f);
  int at = 0;
  int len[5], pos[5];
  for (int d = p.rank - 1; d >= 0; --d) {
    const int i = rest % p.isize[d];
    rest /= p.isize[d];
    at += i * p.gis[d];
    len[d] = preimage(d, i);
    pos[d] = 0;
    if (len[d] == 0) return;  // no output reads this element
  }
  float acc = float(gi[p.gi_first + uint(at)]);
  while (true) {
    int off = 0;
    for (int d = 0; d < p.rank; ++d) off += nth(d, pos[d]) * p.gs[d];
    acc += float(g[p.g_first + uint(off)]);
    int d = p.rank - 1;
    for (; d >= 0; --d) {
      if (++pos[d] < len[d]) break;
      pos[d] = 0;
    }
    if (d < 0) break;
  }
  gi[p.gi_first + uint(at)] = ELEM(acc);
}
