"""Runs an ember benchmark binary (Google Benchmark) and its PyTorch twin on
the same machine in the same session, and prints times and ember/PyTorch
ratios (< 1 means ember is faster). The PyTorch script prints JSON
{"<case>/threads:<n>": microseconds per call} with the same case names.

    bazel build //bench/ops:ops_bench
    /usr/bin/python3 bench/compare.py bench/ops/ops_bench bench/ops/torch_ops.py
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: compare.py <bazel-bin relative binary> <torch script>")
    binary = os.path.join(ROOT, "bazel-bin", sys.argv[1])
    script = os.path.join(ROOT, sys.argv[2])
    ember_json = subprocess.run([binary, "--benchmark_format=json"], check=True,
                                capture_output=True, text=True).stdout
    ember = {re.sub(r"/min_time:[0-9.]+", "", b["name"]): b["real_time"]
             for b in json.loads(ember_json)["benchmarks"]}
    torch_json = subprocess.run([sys.executable, script], check=True, capture_output=True, text=True).stdout
    torch_times = json.loads(torch_json)
    print(f"{'case':40s} {'ember us':>10s} {'torch us':>10s} {'ember/torch':>12s}")
    for name, t in ember.items():
        p = torch_times.get(name)
        ratio = f"{t / p:12.2f}" if p else "           -"
        print(f"{name:40s} {t:10.1f} {p or float('nan'):10.1f} {ratio}")


if __name__ == "__main__":
    main()
