"""Load time, first run, steady-state latency and peak RSS of two ember_cli
binaries (e.g. main and a change) on the benchmark models, alternating rounds.
Each figure is `ember bench --json --threads 1` in its own process: once with
`--warmup 0 --iterations 1` (load_ms and the first run), once with
`--warmup 3 --iterations 10` (steady state, peak RSS). Prints medians over
rounds as a markdown table. Not part of CI. From the repository root, models
converted by `bash bench/models/run.sh DIR`:

    python3 bench/models/first_run.py --dir DIR --a /tmp/old_ember_cli \
        --b bazel-bin/converter/cli/ember_cli [--rounds 3] [--models mlp,resnet18]
"""
import argparse
import json
import statistics
import subprocess


def bench(binary, model, warmup, iterations):
    out = subprocess.run([binary, "bench", model, "--json", "--threads", "1", "--warmup", str(warmup),
                          "--iterations", str(iterations)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--a", required=True, help="ember_cli, e.g. main's")
    ap.add_argument("--b", required=True, help="ember_cli, e.g. the change's")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default="mlp,mobilenet_v2,resnet18,transformer,bert")
    args = ap.parse_args()
    models = args.models.split(",")
    res = {}
    for r in range(args.rounds):
        for m in models:
            for side in ("a", "b") if r % 2 == 0 else ("b", "a"):
                path = f"{args.dir}/{m}.ember"
                first = bench(getattr(args, side), path, 0, 1)
                steady = bench(getattr(args, side), path, 3, 10)
                d = res.setdefault((m, side), {"load": [], "first": [], "both": [], "steady": [], "rss": []})
                d["load"].append(first["load_ms"])
                d["first"].append(first["latency_ms"]["median"])
                d["both"].append(first["load_ms"] + first["latency_ms"]["median"])
                d["steady"].append(steady["latency_ms"]["median"])
                d["rss"].append(steady["peak_rss_bytes"] / 2**20)
    cols = [("load ms", "load", 2), ("first run ms", "first", 1), ("load + first", "both", 1),
            ("steady ms", "steady", 2), ("peak RSS MiB", "rss", 1)]
    print("| model | " + " | ".join(f"{c} a | b" for c, _, _ in cols) + " |")
    print("|---" * (1 + 2 * len(cols)) + "|")
    for m in models:
        cells = []
        for _, key, digits in cols:
            for side in ("a", "b"):
                cells.append(f"{statistics.median(res[(m, side)][key]):.{digits}f}")
        print(f"| {m} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
