#!/usr/bin/env bash
# op_sites.sh NAME [--sites]: every non-test source file that names the op NAME.
#
# NAME is an op of runtime/graph/ops.def, in its snake_case (`silu`, `max_pool2d`)
# or CamelCase (`Silu`, `MaxPool2d`) spelling. A file "names the op" when a
# line of it holds an identifier (or a word of a comment or string) that has the
# op as whole word-parts, in any case: word-parts are split at `_`, at
# lower->Upper humps (`PadParams` = Pad|Params) and at the end of an acronym
# (`SiLUBackward` = SiLU|Backward), so for `pad` these all count:
#   pad  Pad  PAD  kPad  OP_PAD  PadParams  pad_backward  PadBackward  pad_f16  "Pad"
# but `padding`, `padding_idx` and `paddle` do not. For ops of several words the
# underscores are optional (`max_pool2d`, `MaxPool2d`, `OP_MAX_POOL2D`), and the
# libm-style float suffix counts (`tanhf`, `expf`). A file whose basename starts
# with NAME followed by `.` or `_` (kernels/vulkan/shaders/pad_f16.comp) counts
# even if its text does not name the op.
#
# Searched: tracked files (git ls-files). Left out: tests/, bench/, examples/,
# *_test.cc, *.md docs, build files (BUILD, *.bzl, WORKSPACE, .bazelrc), and the
# repository's tooling (tools/, third_party/, .ci/).
#
# Output: the matching paths, one per line, sorted; then `N files`. With --sites,
# after that list, every matching line as `path:line: text` (a file matched only
# by its name shows as `path: (file name)`).
# Exit: 0 = listed (N may be 0), 2 = bad usage or NAME not in ops.def.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: tools/op_sites.sh NAME [--sites]   (NAME: an op of runtime/graph/ops.def, e.g. silu)" >&2
  exit 2
}

name="" sites=0
for a in "$@"; do
  case "$a" in
    --sites) sites=1 ;;
    -h|--help) usage ;;
    -*) echo "op_sites.sh: unknown flag $a" >&2; usage ;;
    *) [[ -z "$name" ]] || usage; name=$a ;;
  esac
done
[[ -n "$name" ]] || usage

# Look NAME up in ops.def: RT_OP, RT_OP_P, RT_UNARY, RT_UNARY_P or RT_BINARY(Camel, snake, ...).
entry=$(awk -v n="$(printf '%s' "$name" | tr 'A-Z' 'a-z')" '
  /^[ \t]*RT_(OP|OP_P|UNARY|UNARY_P|BINARY)\(/ {
    s = $0; sub(/^[ \t]*RT_(OP|OP_P|UNARY|UNARY_P|BINARY)\([ \t]*/, "", s)
    split(s, f, /[ \t]*,[ \t]*/)
    if (tolower(f[1]) == n || tolower(f[2]) == n) { print f[1], f[2]; exit }
  }' runtime/graph/ops.def)
if [[ -z "$entry" ]]; then
  echo "op_sites.sh: '$name' is not an op of runtime/graph/ops.def" >&2
  exit 2
fi
camel=${entry% *}
snake=${entry#* }

# The search pattern (lower case): the CamelCase form with an optional `_` at
# each hump and at each `_` of the snake form: MaxPool2d -> max_?pool2d.
pat=$(printf '%s\n' "$camel" | sed -E 's/([a-z0-9])([A-Z])/\1_\2/g' | tr 'A-Z' 'a-z' | sed 's/_/_?/g')
snake_base=$(printf '%s' "$snake" | tr 'A-Z' 'a-z')

files=$(git ls-files | grep -vE '(^|/)(tests|bench|examples)/|^(tools|third_party|\.ci)/|_test\.cc$|\.md$|(^|/)(BUILD(\.bazel)?|WORKSPACE|\.bazelrc)$|\.bzl$' || true)

# Candidates: files whose text holds the pattern at all (cheap), then the
# word-part check line by line in awk.
cand=$(printf '%s\n' "$files" | tr '\n' '\0' | xargs -0 grep -lIiE -- "$pat" 2>/dev/null || true)

hits_file=$(mktemp)
trap 'rm -f "$hits_file"' EXIT
if [[ -n "$cand" ]]; then
  printf '%s\n' "$cand" | tr '\n' '\0' | xargs -0 awk -v pat="$pat" '
    function up(c) { return c ~ /[A-Z]/ }
    function lo(c) { return c ~ /[a-z]/ }
    function dg(c) { return c ~ /[0-9]/ }
    function al(c) { return c ~ /[A-Za-z0-9]/ }
    # A word-part boundary between positions i-1 and i of s (1-based; 1 and
    # length+1 are the ends).
    function boundary(s, i,    a, b, c) {
      if (i <= 1 || i > length(s)) return 1
      a = substr(s, i - 1, 1); b = substr(s, i, 1); c = substr(s, i + 1, 1)
      if (!al(a) || !al(b)) return 1
      if ((lo(a) || dg(a)) && up(b)) return 1           # fooBar, f16Bar
      if (up(a) && up(b) && lo(c)) return 1             # SiLU|Backward
      return 0
    }
    function names_op(s,    ls, pos, st, en, rest, nx) {
      ls = tolower(s); pos = 1
      while (pos <= length(s)) {
        rest = substr(ls, pos)
        if (!match(rest, pat)) return 0
        st = pos + RSTART - 1; en = st + RLENGTH        # en: first char after
        if (boundary(s, st)) {
          if (boundary(s, en)) return 1
          # libm float form: tanhf, expf (a whole identifier ending in f)
          nx = substr(s, en, 1)
          if (nx == "f" && !al(substr(s, en + 1, 1)) && substr(s, en + 1, 1) != "_") return 1
        }
        pos = st + 1
      }
      return 0
    }
    names_op($0) { print FILENAME ":" FNR ": " $0 }
  ' > "$hits_file"
fi

# Files named after the op: basename NAME.* or NAME_*.
named=$(printf '%s\n' "$files" | awk -v n="$snake_base" '
  { b = $0; sub(/.*\//, "", b); b = tolower(b)
    if (index(b, n) == 1 && (substr(b, length(n) + 1, 1) == "." || substr(b, length(n) + 1, 1) == "_")) print }')

list=$( { cut -d: -f1 "$hits_file"; [[ -z "$named" ]] || printf '%s\n' "$named"; } | sort -u | sed '/^$/d')
n=0
if [[ -n "$list" ]]; then
  printf '%s\n' "$list"
  n=$(printf '%s\n' "$list" | wc -l)
fi
echo "$n files"

if ((sites)); then
  echo
  # Sites sorted by path, then line number; name-only files shown as such.
  {
    awk -F: '{ print $1 "\t" $2 "\t" $0 }' "$hits_file"
    # Named files without a matching line (the hit paths are read first).
    [[ -z "$named" ]] || printf '%s\n' "$named" | awk -F: -v hits="$hits_file" '
      BEGIN { while ((getline l < hits) > 0) { split(l, f, ":"); seen[f[1]] = 1 } }
      !($0 in seen) { print $0 "\t0\t" $0 ": (file name)" }'

  } | sort -t $'\t' -k1,1 -k2,2n | cut -f3-
fi
exit 0
