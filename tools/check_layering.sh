#!/usr/bin/env bash
# check_layering.sh [--list] [--baseline FILE]: the include graph follows DESIGN.md's layering,
#   base (core, tensor data, graph, backend interface) <- kernels <- ops <- model <- converter/CLI.
#
# Checked: every tracked C/C++ and shader file under runtime/, kernels/, quant/
# and converter/ (tests, bench and examples may include anything). Rules:
#  1. A file includes files of its own layer or of lower layers only.
#  2. kernels/<backend> includes no other backend's folder; kernels/ref, the
#     reference every backend falls back to, may be included by all of them.
#  3. Above the kernels (ops, model, converter, CLI) nothing includes kernels/:
#     backends are reached through the Backend interface. In particular the
#     backend registry (runtime/backend/registry.cc) names every backend (it may
#     declare `Backend* vulkan_backend();` under `#if RT_WITH_VULKAN`) but
#     includes no kernels/ header.
#  4. runtime/model and converter/cli include no kernel-layer file at all
#     (neither kernels/ nor quant/'s kernels) and name no backend: no `vk::`,
#     `cuda::`, `namespace vk`, RT_WITH_VULKAN or RT_WITH_CUDA outside // comments.
#     converter/ proper may include quant/ (the schemes, COO, pruning): it writes
#     the weights those formulas read back.
#
# Output: one line per violating line, sorted,
#   FILE:LINE: includes "X" (layer A includes layer B[: why])
#   FILE:LINE: names "vk::" (layer A names a backend)
#   FILE: not in the layer table (add it to layer_of below)
# then `N violations`. --list prints `LAYER  FILE` for every checked file instead.
# Exit: 0 = no violations, 1 = violations, 2 = bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."

# ---------------------------------------------------------------------------
# The layer table: first matching glob wins. Sets LAYER (0..4), LNAME (printed)
# and GROUP (the backend folder for kernels: ref, cpu, vulkan, cuda; quant for
# quant/'s kernels; else the layer name). Edit here when files move.
layer_of() {
  case "$1" in
    # --- base: plain data and the backend interface (//runtime:core) ----------
    runtime/core/*)                                       set_layer 0 base ;;
    runtime/graph/*)                                      set_layer 0 base ;;  # ops.def, OpKind, op params
    runtime/backend/backend.h | runtime/backend/backend.cc) set_layer 0 base ;;
    # The eager Tensor (its methods and creation functions are defined in
    # //runtime:ember and run the op front-ends): ops layer. Kernels use
    # TensorView, dtype, device, scalar, half and convert.h (base).
    runtime/tensor/tensor.h | runtime/tensor/tensor.cc | runtime/tensor/storage.h | runtime/tensor/storage.cc | \
    runtime/tensor/creation.cc | runtime/tensor/print.cc) set_layer 2 ops ;;
    runtime/tensor/*)                                     set_layer 0 base ;;
    # --- kernels ----------------------------------------------------------------
    kernels/ref/*)                                        set_layer 1 kernels ref ;;
    kernels/cpu/*)                                        set_layer 1 kernels cpu ;;
    kernels/vulkan/*)                                     set_layer 1 kernels vulkan ;;
    kernels/cuda/*)                                       set_layer 1 kernels cuda ;;
    # quant/'s kernels: quantization formulas, int8 GEMM glue (dynamic Linear /
    # Conv2d over kernels/cpu/qgemm.h), CSR packing and SpMM (raw views only).
    quant/qscheme.* | quant/dynamic_linear.* | quant/dynamic_conv.* | quant/csr.* | quant/spmm.*)
                                                          set_layer 1 kernels quant ;;
    # --- ops: front-ends, autograd, nn, optim, the eager APIs ------------------
    runtime/backend/registry.cc)                          set_layer 2 ops registry ;;  # links every backend
    runtime/ops/* | runtime/autograd/* | runtime/nn/* | runtime/optim/*) set_layer 2 ops ;;
    runtime/amp/*)                                        set_layer 2 ops ;;  # autocast (in :ember), GradScaler
    runtime/ember.h)                                      set_layer 2 ops ;;
    quant/quantized.* | quant/sparse_tensor.*)            set_layer 2 ops ;;  # QTensor, SparseTensor
    quant/coo.*)                                          set_layer 2 ops ;;  # COO format over Tensors, eager CSR forms
    # --- model: format, loader, planner, executor --------------------------------
    runtime/model/*)                                      set_layer 3 model ;;
    runtime/train/*)                                      set_layer 3 model train ;;  # the trainer over the executor
    # --- converter and the CLI ------------------------------------------------------
    converter/cli/*)                                      set_layer 4 converter cli ;;
    converter/*)                                          set_layer 4 converter ;;
    quant/prune.*)                                        set_layer 4 converter ;;  # used by converter/sparsify.cc only
    *)                                                    set_layer -1 unclassified ;;
  esac
}
set_layer() { LAYER=$1 LNAME=$2 GROUP=${3:-$2}; }
# ---------------------------------------------------------------------------

list=0
baseline=""
while (($#)); do
  case "$1" in
    --list) list=1 ;;
    --baseline) baseline=${2:-}; shift; [[ -f $baseline ]] || { echo "check_layering.sh: no baseline file '$baseline'" >&2; exit 2; } ;;
    *) echo "usage: tools/check_layering.sh [--list] [--baseline FILE]" >&2; exit 2 ;;
  esac
  shift
done

mapfile -t files < <(git ls-files -- runtime kernels quant converter |
  grep -E '\.(cc|h|inc|def|cu|cuh|comp|glsl)$' || true)

if ((list)); then
  for f in "${files[@]}"; do
    layer_of "$f"
    if [[ $GROUP == "$LNAME" ]]; then printf '%-18s %s\n' "$LNAME" "$f"
    else printf '%-18s %s\n' "$LNAME/$GROUP" "$f"; fi
  done
  exit 0
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
declare -A flagged=()  # FILE:LINE already reported (one line per violating line)

report() {  # report FILE LINE TEXT
  local key="$1:$2"
  [[ -z ${flagged[$key]+x} ]] || return 0
  flagged[$key]=1
  printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$out"
}

for f in "${files[@]}"; do
  layer_of "$f"
  [[ $LAYER -ge 0 ]] || report "$f" 0 "$f: not in the layer table (add it to layer_of in tools/check_layering.sh)"
done

# Rules 1-4 on every quoted include.
while IFS= read -r hit; do
  f=${hit%%:*}; rest=${hit#*:}; line=${rest%%:*}; text=${rest#*:}
  [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]] || continue
  inc=${BASH_REMATCH[1]}
  # Repository-relative, else relative to the including file (GLSL siblings).
  if [[ $inc == */* && ( -e $inc || $inc == runtime/* || $inc == kernels/* || $inc == quant/* || $inc == converter/* ) ]]; then
    target=$inc
  else
    target=$(dirname "$f")/$inc
  fi
  layer_of "$f"; sl=$LAYER sn=$LNAME sg=$GROUP
  layer_of "$target"; tl=$LAYER tn=$LNAME tg=$GROUP
  ((sl >= 0 && tl >= 0)) || continue
  if ((tl > sl)); then
    report "$f" "$line" "$f:$line: includes \"$inc\" ($sn includes $tn)"
  elif [[ $sn == kernels && $tn == kernels && $sg != quant && $tg != quant && $sg != "$tg" && $tg != ref ]]; then
    report "$f" "$line" "$f:$line: includes \"$inc\" (kernels/$sg includes kernels/$tg: backends are independent, only kernels/ref is shared)"
  elif [[ $sg == model || $sg == cli ]] && ((tl == 1)); then
    report "$f" "$line" "$f:$line: includes \"$inc\" ($sg includes kernels: it runs the op front-ends and the Backend interface only)"
  elif ((sl > 1)) && [[ $target == kernels/* ]]; then
    if [[ $sg == registry ]]; then
      report "$f" "$line" "$f:$line: includes \"$inc\" (ops includes kernels: the registry declares the backends' entry points only)"
    else
      report "$f" "$line" "$f:$line: includes \"$inc\" ($sn includes kernels: above the kernels, backends are reached through the Backend interface)"
    fi
  fi
done < <(git grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' -- "${files[@]}" || true)

# Rule 4: runtime/model and converter/cli name no backend (// comments aside).
mapfile -t named_scope < <(printf '%s\n' "${files[@]}" | grep -E '^(runtime/model|converter/cli)/' || true)
if ((${#named_scope[@]})); then
  while IFS= read -r hit; do
    f=${hit%%:*}; rest=${hit#*:}; line=${rest%%:*}; text=${rest#*:}
    code=${text%%//*}
    if [[ $code =~ (^|[^A-Za-z0-9_])((vk|cuda)::) ]]; then
      what=${BASH_REMATCH[2]}
    elif [[ $code =~ RT_WITH_(VULKAN|CUDA) ]]; then
      what=${BASH_REMATCH[0]}
    elif [[ $code =~ namespace[[:space:]]+(ember::)?(vk|cuda)([^A-Za-z0-9_]|$) ]]; then
      what="namespace ${BASH_REMATCH[2]}"
    else
      continue
    fi
    layer_of "$f"
    report "$f" "$line" "$f:$line: names \"$what\" ($GROUP names a backend)"
  done < <(git grep -nE '(vk|cuda)::|RT_WITH_(VULKAN|CUDA)|namespace +(ember::)?(vk|cuda)' -- "${named_scope[@]}" || true)
fi

n=$(wc -l < "$out")
sort -t $'\t' -k1,1 -k2,2n "$out" | cut -f3-
echo "$n violations"
if [[ -n $baseline ]]; then
  # Known violations (FILE: message, line numbers dropped) pass; a new one fails.
  new=$(sort -t $'\t' -k1,1 -k2,2n "$out" | cut -f3- | sed -E 's/^([^:]+):[0-9]+:/\1:/' |
        grep -vxF -f <(grep -v '^#' "$baseline") || true)
  if [[ -n $new ]]; then
    echo "new violations (not in $baseline):"
    echo "$new"
    exit 1
  fi
  echo "every violation is a known one listed in $baseline"
  exit 0
fi
((n == 0)) || exit 1
