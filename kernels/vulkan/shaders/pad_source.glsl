// Included after a push block p with mode, isize[], osize[] and before[]
// (pad_body.glsl, pad_backward_body.glsl): kernels/ref/pad_index.h's pad_source.
// The input index read for output index o along dim d; -1: the constant value.
int source(int d, int o) {
  const int size = p.isize[d];
  const int b = p.before[d];
  const int a = p.osize[d] - size - b;
  const int x = o - b;
  if (p.mode == 0u) return x >= 0 && x < size ? x : -1;
  if (p.mode == 1u) {
    int r = abs(x);
    if (r >= size) r = 2 * (size - 1) - r;
    return r;
  }
  if (p.mode == 2u) return clamp(x, 0, size - 1);
  const int crop_l = max(-b, 0);
  const int kept = size - crop_l - max(-a, 0);
  const int j = o - max(b, 0);
  return crop_l + ((j % kept) + kept) % kept;
}
