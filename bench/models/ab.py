#!/usr/bin/env python3
"""A/B of two ember builds (or one build under two environments) on one model.

Rounds alternate A, B, A; each run is `ember bench --json` and keeps its
minimum latency, and a round's ratio is B over the lower of its two A runs.
Prints both builds' lowest minimum and the median and range of the per-round
ratios (< 1: B faster). Minima and alternation hold up on a noisy machine
where means do not (a Zen 3 VM: the same binary 30 % apart between sittings).

  ab.py MODEL.ember --a BIN [--a-env K=V] --b BIN [--b-env K=V]
        [--input NAME=FILE.npy ...] [--threads 1] [--rounds 7] [--iterations 10]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def env_of(pairs):
    env = dict(os.environ)
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep:
            sys.exit(f"ab.py: --a-env/--b-env takes KEY=VALUE, got '{p}'")
        env[key] = value
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--a", required=True, help="ember binary A (the base)")
    ap.add_argument("--b", required=True, help="ember binary B (the change)")
    ap.add_argument("--a-env", action="append", default=[], metavar="K=V")
    ap.add_argument("--b-env", action="append", default=[], metavar="K=V")
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iterations", type=int, default=10)
    args = ap.parse_args()

    inputs = [x for i in args.input for x in ("--input", i)]

    def run(binary, env):
        cmd = [binary, "bench", args.model, "--json", "--threads", str(args.threads),
               "--iterations", str(args.iterations), "--warmup", "2"] + inputs
        out = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if out.returncode != 0:
            sys.exit(f"ab.py: {' '.join(cmd)} failed:\n{out.stderr}")
        return json.loads(out.stdout)["latency_ms"]["min"]

    env_a, env_b = env_of(args.a_env), env_of(args.b_env)
    ratios, mins_a, mins_b = [], [], []
    for _ in range(args.rounds):
        a1 = run(args.a, env_a)
        b = run(args.b, env_b)
        a2 = run(args.a, env_a)
        mins_a.append(min(a1, a2))
        mins_b.append(b)
        ratios.append(b / min(a1, a2))
    name = os.path.basename(args.model)
    print(f"{name} {args.threads}T: A {min(mins_a):.3f} ms, B {min(mins_b):.3f} ms; B/A median "
          f"{statistics.median(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f}, {args.rounds} rounds)")


if __name__ == "__main__":
    main()
