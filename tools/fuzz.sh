#!/usr/bin/env bash
# Builds the model-loader libFuzzer target with clang (ASan + UBSan) and runs it
# for a bounded time on a seed corpus of valid .ember files.
#   tools/fuzz_loader.sh [SECONDS]   (default 30)
# Exit status: 0 when no crash was found, non-zero otherwise (crash files in $WORK).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN="${1:-30}"
WORK="${FUZZ_WORK:-$(mktemp -d /tmp/ember_fuzz.XXXXXX)}"
mkdir -p "$WORK/corpus" "$WORK/seeds"

# Seeds with the normal (gcc) build.
bazel build //tests:fuzz_seeds
bazel-bin/tests/fuzz_seeds "$WORK/seeds"

# The fuzzer with clang, in its own output directory.
FUZZ_FLAGS=(--repo_env=CC=clang --platform_suffix=-fuzz --copt=-fsanitize=fuzzer-no-link,address
  --copt=-fno-omit-frame-pointer --copt=-g --strip=never)
CC=clang bazel build "${FUZZ_FLAGS[@]}" //tests:loader_fuzz
FUZZER="$(bazel info "${FUZZ_FLAGS[@]}" bazel-bin 2>/dev/null)/tests/loader_fuzz"

echo "fuzzing the loader for ${SECONDS_TO_RUN}s (corpus: $WORK/corpus)"
cd "$WORK"
"$FUZZER" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 corpus seeds
