#!/usr/bin/env bash
# The fine-tuning demo: a digits classifier trained in PyTorch on 0-4 is
# exported, converted (fp32, and with an int8 backbone), then its last layer is
# fine-tuned on the device on 5-9 with `ember finetune`. Accuracy on the 5-9
# test set before and after, beside PyTorch's identical run; exits non-zero
# when they differ by more than 0.5 points or the fine-tuning did not help.
#   finetune_pipeline.sh EMBER PREPARE_PY [WORK_DIR]
# With EMBER_FINETUNE set (a command line, e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu
# .../ember_run"), that binary fine-tunes instead of EMBER (tools/aarch64_finetune.sh).
set -euo pipefail
ember=$(realpath "$1")
read -r -a finetune <<< "${EMBER_FINETUNE:-$ember}"
prepare=$(realpath "$2")
work="${3:-${TEST_TMPDIR:-$(mktemp -d)}}"
mkdir -p "$work"
cd "$work"

echo "== 1. PyTorch: train on digits 0-4, export; fine-tune the head on 5-9 (fp32 and int8 backbone)"
/usr/bin/python3 "$prepare" . 2>/dev/null
echo
status=0
while read -r kind torch_before torch_after; do
  case $kind in
    fp32) flags=() ;;
    int8) flags=(--quantize dynamic-int8 --per-tensor --min-weight-elements 1000) ;;  # the 640-element head stays fp32
  esac
  echo "== 2. ember convert digits_0_4.onnx -o $kind.ember ${flags[*]}"
  "$ember" convert digits_0_4.onnx -o "$kind.ember" "${flags[@]}" > /dev/null
  echo "== 3. ember finetune $kind.ember (head only: 4.weight, 4.bias)"
  "${finetune[@]}" finetune "$kind.ember" --data train_5_9.npz --eval-data test_5_9.npz --input x=x --target y \
    --optimizer sgd --lr 0.02 --momentum 0.9 --batch-size 16 --epochs 20 --no-shuffle --train '4.*' \
    -o "${kind}_5_9.ember" | tee "$kind.log" | grep -E '^(fine-tuning|before|after|steps|wrote)'
  before=$(sed -nE 's/^before: .*accuracy ([0-9.]+) %$/\1/p' "$kind.log")
  after=$(sed -nE 's/^after: .*accuracy ([0-9.]+) %$/\1/p' "$kind.log")
  printf '%s: accuracy on 5-9  ember %6.2f %% -> %6.2f %%   PyTorch %6.2f %% -> %6.2f %%\n' \
    "$kind" "$before" "$after" "$torch_before" "$torch_after"
  if ! awk -v a="$after" -v b="$before" -v t="$torch_after" -v tb="$torch_before" \
      'BEGIN { d = a - t; if (d < 0) d = -d; e = b - tb; if (e < 0) e = -e; exit !(d <= 0.5 && e <= 0.5 && a > b + 50) }'; then
    echo "FAIL: $kind differs from PyTorch by more than 0.5 points, or did not learn" >&2
    status=1
  fi
  echo
done < torch_results.txt
exit $status
