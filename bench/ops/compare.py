"""Runs the ember op benchmark and the PyTorch one on the same machine, in the
same session, and prints a table of times and ember/PyTorch ratios
(< 1 means ember is faster).

    bazel build -c opt //bench/ops:ops_bench && /usr/bin/python3 bench/ops/compare.py
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    binary = os.path.join(ROOT, "bazel-bin", "bench", "ops", "ops_bench")
    ember_json = subprocess.run([binary, "--benchmark_format=json"], check=True,
                                capture_output=True, text=True).stdout
    ember = {b["name"]: b["real_time"] for b in json.loads(ember_json)["benchmarks"]}
    torch_json = subprocess.run([sys.executable, os.path.join(HERE, "torch_ops.py")], check=True,
                                capture_output=True, text=True).stdout
    torch_times = json.loads(torch_json)
    print(f"{'case':40s} {'ember us':>10s} {'torch us':>10s} {'ember/torch':>12s}")
    for name, t in ember.items():
        p = torch_times.get(name)
        ratio = f"{t / p:12.2f}" if p else "           -"
        print(f"{name:40s} {t:10.1f} {p or float('nan'):10.1f} {ratio}")


if __name__ == "__main__":
    main()
