"""Two ember builds op by op: alternating `ember run --profile-ops` runs of one
model (base, new; then new, base: whichever runs second reads slower), the
minimum of each op's time over the runs. A change to one kernel shows here
when whole-model medians (compare.py) drown it in this VM's noise. Not part of
CI.

    python3 bench/models/opcompare.py --base OLD_BIN --new NEW_BIN MODEL.ember \\
        --input NAME=FILE.npy [--input ...] [--threads 1] [--runs 7] [--match REGEX]

Prints the sums over every op and over the ops whose type or node name matches
--match, then the ops that moved most (ms: base, new).
"""
import argparse
import re
import subprocess
import sys
import tempfile

LINE = re.compile(r"op (\d+) (\S+) (\S+) ([0-9.]+)$")


def profile(binary, args, out_dir):
    cmd = [binary, "run", args.model, "--profile-ops", "--threads", str(args.threads), "-d", out_dir]
    for kv in args.input:
        cmd += ["--input", kv]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{binary} failed: {run.stderr.strip()[-2000:]}")
    ops = {}
    for line in run.stdout.splitlines():
        m = LINE.match(line)
        if m:
            ops[(int(m.group(1)), m.group(2), m.group(3))] = float(m.group(4))
    return ops


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--match")
    args = ap.parse_args()
    out_dir = tempfile.mkdtemp()
    mins = [{}, {}]
    for i in range(args.runs):
        for w in ((0, 1) if i % 2 == 0 else (1, 0)):
            for key, ms in profile((args.base, args.new)[w], args, out_dir).items():
                mins[w][key] = min(ms, mins[w].get(key, float("inf")))
    keys = sorted(set(mins[0]) & set(mins[1]))

    def sums(ks):
        a, b = sum(mins[0][k] for k in ks), sum(mins[1][k] for k in ks)
        return f"base {a:.3f} new {b:.3f} new/base {b / a:.3f}" if a > 0 else "no time"

    print(f"{args.model}, {args.threads} thread(s), minima of {args.runs} runs each (ms)")
    print(f"every op ({len(keys)}): {sums(keys)}")
    if args.match:
        pat = re.compile(args.match)
        matched = [k for k in keys if pat.search(k[1]) or pat.search(k[2])]
        print(f"matching '{args.match}' ({len(matched)}): {sums(matched)}")
    moved = sorted(keys, key=lambda k: mins[1][k] - mins[0][k])
    for k in moved[:8] + moved[-5:]:
        print(f"  {k[0]:4d} {k[1]:28s} {k[2][-44:]:44s} {mins[0][k]:8.4f} {mins[1][k]:8.4f}")


if __name__ == "__main__":
    main()
