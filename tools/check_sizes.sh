#!/usr/bin/env bash
# check_sizes.sh [--top N]: no source file over 800 lines and no function over
# 150 lines under runtime/, kernels/, quant/ and converter/.
#
# Source files: tracked *.cc *.h *.inc *.def *.comp *.glsl *.cu *.cuh there.
# A file's size is its number of lines. A function's size is the lines of its
# whole definition, from the first line of its signature (template<> line
# included) to its closing `}`. Functions are found by a brace-depth tracker:
# a `{` opened at namespace scope (`namespace ... {`, `extern "C" {`) or in a
# class/struct/union body whose header has a parameter list `(...)` (and is not
# an `= ...` initializer or an enum/GLSL block) opens a function; member
# functions defined in a class count as `Class::name`; lambdas and local
# classes inside a function count toward that function; a lambda assigned at
# namespace scope counts as a function named after its variable. String and
# char literals, // and /* */ comments and preprocessor lines are ignored.
#
# Output: `FILE: N lines (limit 800)` per file over the limit, then
# `FILE:LINE: function NAME is N lines (limit 150)` per function over the limit
# (LINE: where the signature starts), then the summary
# `N files over 800 lines, M functions over 150 lines`. With --top N, after
# that: the N largest files (`  LINES FILE`) and the N longest functions
# (`  LINES FILE:LINE NAME`), for notes and planning splits.
# Exit: 0 = within limits, 1 = over a limit, 2 = bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."

max_file=800
max_func=150
top=0
while (($#)); do
  case "$1" in
    --top)
      [[ $# -ge 2 && $2 =~ ^[0-9]+$ ]] || { echo "usage: tools/check_sizes.sh [--top N]" >&2; exit 2; }
      top=$2; shift 2 ;;
    *) echo "usage: tools/check_sizes.sh [--top N]" >&2; exit 2 ;;
  esac
done

mapfile -t files < <(git ls-files -- runtime kernels quant converter |
  grep -E '\.(cc|h|inc|def|comp|glsl|cu|cuh)$' || true)
((${#files[@]})) || { echo "0 files over $max_file lines, 0 functions over $max_func lines"; exit 0; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One record per file (F lines path) and per function (f lines path line name).
awk -v sq="'" '
function reset_hdr() { hdr = ""; hdr_line = 0; hpd = 0 }
# The text of s with every (...) group emptied: "f(int a = 1) const" -> "f() const".
function flat_parens(s,    out, i, c, d) {
  out = ""; d = 0
  for (i = 1; i <= length(s); i++) {
    c = substr(s, i, 1)
    if (c == "(") { if (d == 0) out = out c; d++ }
    else if (c == ")") { if (d > 0) d--; if (d == 0) out = out c }
    else if (d == 0) out = out c
  }
  return out
}
function strip_template(s,    i, c, d) {
  while (match(s, /^[ \t]*template[ \t]*</)) {
    d = 0
    for (i = RLENGTH; i <= length(s); i++) {
      c = substr(s, i, 1)
      if (c == "<") d++
      else if (c == ">") { d--; if (d == 0) break }
    }
    s = substr(s, i + 1)
  }
  return s
}
function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
# What a "{" opens, given the header text before it (at namespace or class
# level): ns, class, func or other. Sets NAME for class and func.
function classify(h,    h0, pre, i, n, w) {
  h = trim(strip_template(h)); NAME = ""
  if (h ~ /(^|[^A-Za-z0-9_])namespace([^A-Za-z0-9_]|$)/ || h ~ /^extern[ \t]*""$/) return "ns"
  if (h ~ /^(typedef[ \t]+)?enum([^A-Za-z0-9_]|$)/) return "other"
  if (h ~ /^(layout|uniform|buffer|readonly|writeonly|coherent|restrict)([^A-Za-z0-9_]|$)/) return "other"
  h0 = flat_parens(h)
  if (h0 ~ /(^|[^A-Za-z0-9_])(class|struct|union)([^A-Za-z0-9_]|$)/ && h0 !~ /\)[ \t]*(const|noexcept|override|final|[ \t])*$/) {
    if (match(h0, /(class|struct|union)[ \t]+[A-Za-z_][A-Za-z0-9_]*/)) {
      w = substr(h0, RSTART, RLENGTH); sub(/^(class|struct|union)[ \t]+/, "", w)
      if (w == "alignas" && match(h0, /\)[ \t]*[A-Za-z_][A-Za-z0-9_]*/)) { w = substr(h0, RSTART + 1, RLENGTH - 1); w = trim(w) }
      NAME = w
    }
    return "class"
  }
  # An initializer (`T x = ...`), unless it is a lambda: `auto f = [...](...)`.
  pre = h0; gsub(/operator[ \t]*[^ \t(]*/, "operator", pre)
  if (pre ~ /[^=!<>]=[^=]/ || pre ~ /^=/) {
    if (pre ~ /=[ \t]*\[[^]]*\]/) {
      w = pre; sub(/[ \t]*=.*$/, "", w); n = split(w, a, /[ \t]+/); NAME = a[n]; return "func"
    }
    return "other"
  }
  if (h0 ~ /\(\)/) {
    i = index(h0, "("); w = trim(substr(h0, 1, i - 1))
    n = split(w, a, /[ \t]+/); w = a[n]; sub(/^[*&]+/, "", w)
    if (w ~ /operator$/) w = w "()"
    NAME = w
    return "func"
  }
  return "other"
}
function qualify(name,    i, q) {
  q = ""
  for (i = 1; i <= sp; i++) if (kind[i] == "class" && cname[i] != "") q = q cname[i] "::"
  return q name
}
FNR == 1 {
  if (prev_file != "") print "F", prev_lines, prev_file
  sp = 0; infunc = 0; odepth = 0; initd = 0; reset_hdr(); in_block = 0; in_pp = 0
}
{
  prev_file = FILENAME; prev_lines = FNR
  line = $0
  # Preprocessor lines and their continuations.
  if (in_pp || (!in_block && line ~ /^[ \t]*#/)) { in_pp = (line ~ /\\$/); next }
  # Strip comments and literal contents (quotes kept).
  code = ""; n = length(line); i = 1
  while (i <= n) {
    c = substr(line, i, 1)
    if (in_block) {
      if (c == "*" && substr(line, i + 1, 1) == "/") { in_block = 0; i += 2; code = code " "; continue }
      i++; continue
    }
    if (c == "/" && substr(line, i + 1, 1) == "/") break
    if (c == "/" && substr(line, i + 1, 1) == "*") { in_block = 1; i += 2; continue }
    if (c == "\"" || (c == sq && !(substr(line, i - 1, 1) ~ /[0-9]/ && substr(line, i + 1, 1) ~ /[0-9A-Za-z]/))) {
      q = c; i++
      while (i <= n) {
        d = substr(line, i, 1)
        if (d == "\\") { i += 2; continue }
        if (d == q) break
        i++
      }
      code = code q q; i++; continue
    }
    code = code c; i++
  }
  # An ALL_CAPS macro call on a line of its own, at namespace/class level, ends
  # a statement (RT_UNARY_KERNEL(silu, ...) needs no `;`).
  if (!infunc && hdr ~ /^[ \t]*[A-Z][A-Z0-9_]*[ \t]*\(.*\)[ \t]*$/) reset_hdr()
  n = length(code)
  for (i = 1; i <= n; i++) {
    c = substr(code, i, 1)
    if (odepth > 0) {
      if (c == "{") odepth++
      else if (c == "}") { odepth--; if (odepth == 0) reset_hdr() }
      continue
    }
    if (infunc) {
      if (c == "{") fdepth++
      else if (c == "}") {
        fdepth--
        if (fdepth == 0) {
          infunc = 0
          print "f", FNR - fstart + 1, FILENAME, fstart, fname
          reset_hdr()
        }
      }
      continue
    }
    if (c == "{") {
      # Braces inside the signature: a default argument `T x = {}` or a
      # brace-init in a constructor initializer list `) : a_(x), b_{1} {`.
      if (hpd > 0 || (hdr ~ /[A-Za-z0-9_>]$/ && flat_parens(hdr) ~ /\)[ \t]*:[^:]/)) { hdr = hdr "{"; initd++; continue }
      k = classify(hdr)
      if (k == "func") {
        infunc = 1; fdepth = 1; fstart = hdr_line ? hdr_line : FNR; fname = qualify(NAME == "" ? "?" : NAME)
        continue
      }
      reset_hdr()
      # Initializers, enums, GLSL blocks: skipped to their matching brace.
      if (k == "other") { odepth = 1; continue }
      sp++; kind[sp] = k; cname[sp] = (k == "class") ? NAME : ""
      continue
    }
    if (c == "}") {
      if (initd > 0) { initd--; hdr = hdr "}"; continue }
      if (sp > 0) sp--
      reset_hdr(); continue
    }
    if (c == ";") {
      if (initd > 0) { hdr = hdr c; continue }
      reset_hdr(); continue
    }
    if (hdr == "" && c ~ /[ \t]/) continue
    if (hdr == "") hdr_line = FNR
    hdr = hdr c
    if (c == "(") hpd++
    else if (c == ")" && hpd > 0) hpd--
    # Access specifiers start a new header.
    if (c == ":" && hdr ~ /^[ \t]*(public|private|protected)[ \t]*:$/) { reset_hdr(); continue }
  }
  if (hdr != "") hdr = hdr " "
}
END { if (prev_file != "") print "F", prev_lines, prev_file }
' "${files[@]}" > "$tmp/all"

awk -v mf="$max_file" '$1 == "F" && $2 > mf { print $3 ": " $2 " lines (limit " mf ")" }' "$tmp/all" | sort > "$tmp/files_over"
awk -v mx="$max_func" '$1 == "f" && $2 > mx { print $3 ":" $4 ": function " $5 " is " $2 " lines (limit " mx ")" }' "$tmp/all" |
  sort -t: -k1,1 -k2,2n > "$tmp/funcs_over"
cat "$tmp/files_over" "$tmp/funcs_over"
nf=$(wc -l < "$tmp/files_over")
nfn=$(wc -l < "$tmp/funcs_over")
echo "$nf files over $max_file lines, $nfn functions over $max_func lines"

if ((top > 0)); then
  echo
  echo "largest files:"
  awk '$1 == "F" { printf "%7d %s\n", $2, $3 }' "$tmp/all" | sort -k1,1nr -k2,2 | awk -v n="$top" 'NR <= n'
  echo "longest functions:"
  awk '$1 == "f" { printf "%7d %s:%d %s\n", $2, $3, $4, $5 }' "$tmp/all" | sort -k1,1nr -k2,2 | awk -v n="$top" 'NR <= n'
fi
((nf == 0 && nfn == 0)) || exit 1
