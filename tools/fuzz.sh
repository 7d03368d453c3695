#!/usr/bin/env bash
# Builds a libFuzzer target with clang (ASan + UBSan) and runs it for a bounded
# time on a seed corpus of valid inputs.
#   tools/fuzz.sh loader [SECONDS]   the .ember loader (seeds: valid .ember files)
#   tools/fuzz.sh onnx [SECONDS]     the ONNX importer, passes, lowering and writer
#                                    (seeds: the tests' and the model zoo's .onnx files)
#   tools/fuzz.sh npz [SECONDS]      the .npz and .npy readers (seeds: the tests' data sets)
#   tools/fuzz.sh safetensors [SECONDS]  the safetensors reader (seeds: fine-tuning deltas and checkpoints)
#   tools/fuzz.sh shape_ops [SECONDS]    the executor's shape ops on shapes from the bytes (seeds: one per op)
# SECONDS defaults to 30; -runs=N as a third argument bounds by executions instead.
# Exit status: 0 when no crash was found, non-zero otherwise (crash files in $WORK).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET="${1:?usage: tools/fuzz.sh loader|onnx|npz|safetensors|shape_ops [SECONDS] [LIBFUZZER_FLAGS...]}"
SECONDS_TO_RUN="${2:-30}"
shift $(( $# < 2 ? $# : 2 ))
WORK="${FUZZ_WORK:-$(mktemp -d /tmp/ember_fuzz_$TARGET.XXXXXX)}"
mkdir -p "$WORK/corpus" "$WORK/seeds"

case "$TARGET" in
  loader)
    FUZZ_TARGET=//tests:loader_fuzz
    MAX_LEN=65536
    bazel build //tests:fuzz_seeds  # seeds with the normal (gcc) build
    bazel-bin/tests/fuzz_seeds "$WORK/seeds"
    ;;
  onnx)
    FUZZ_TARGET=//tests:onnx_import_fuzz
    MAX_LEN=262144
    bazel build //tests/golden:onnx_models //tests/golden:model_zoo
    find bazel-bin/tests/golden/onnx bazel-bin/tests/golden/model_zoo -name '*.onnx' -size -256k \
      -exec cp {} "$WORK/seeds/" \;
    ;;
  npz)
    FUZZ_TARGET=//tests:npz_fuzz
    MAX_LEN=65536
    bazel build //tests/golden:finetune_models //tests/golden:digits_model
    cp bazel-bin/tests/golden/finetune/data.npz "$WORK/seeds/finetune.npz"
    cp bazel-bin/tests/golden/digits/digits.calib.npz "$WORK/seeds/calib.npz"
    cp bazel-bin/tests/golden/finetune/head_sgd.losses.npy "$WORK/seeds/"
    ;;
  safetensors)
    FUZZ_TARGET=//tests:safetensors_fuzz
    MAX_LEN=65536
    bazel build //tests:finetune_test
    # Seeds: a delta, a checkpoint and a LoRA delta that the fine-tuning test writes.
    (cd bazel-bin/tests/finetune_test.runfiles/ember && TEST_TMPDIR="$WORK/seeds" ../../finetune_test \
      -tc='*checkpoints*,*delta*,*LoRA on a float32*' > /dev/null 2>&1 || true)
    find "$WORK/seeds" -type f ! -name '*.safetensors' -delete
    ;;
  shape_ops)
    FUZZ_TARGET=//tests:shape_ops_fuzz
    MAX_LEN=256
    # Seeds: one small input per op (tests/model/shape_ops_fuzz.cc's byte layout).
    for op in 0 1 2 3 4 5 6 7; do
      printf "\\x02\\x02\\x03\\x02\\x$(printf %02x $op)\\x66\\x67\\x65\\x64\\x66\\x67\\x64\\x65" > "$WORK/seeds/op$op"
    done
    ;;
  *) echo "tools/fuzz.sh: unknown target '$TARGET' (loader, onnx, npz, safetensors or shape_ops)" >&2; exit 2 ;;
esac

# The fuzzer with clang, in its own output directory.
# (Line tables only: a crash's stack keeps file:line, and the build is shorter.)
FUZZ_FLAGS=(--repo_env=CC=clang --platform_suffix=-fuzz --copt=-fsanitize=fuzzer-no-link,address
  --copt=-fno-omit-frame-pointer --copt=-gline-tables-only --strip=never)
CC=clang bazel build "${FUZZ_FLAGS[@]}" "$FUZZ_TARGET"
FUZZER="$(bazel info "${FUZZ_FLAGS[@]}" bazel-bin 2>/dev/null)/tests/${FUZZ_TARGET#//tests:}"

echo "fuzzing $TARGET for ${SECONDS_TO_RUN}s (corpus: $WORK/corpus, $(ls "$WORK/seeds" | wc -l) seeds)"
cd "$WORK"
"$FUZZER" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=2048 -max_len="$MAX_LEN" \
  -print_final_stats=1 "$@" corpus seeds
