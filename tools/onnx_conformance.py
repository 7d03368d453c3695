"""ONNX node conformance for ember: writes the onnx package's node test cases
to a cache, converts and runs each one with the `ember` CLI, compares the
outputs with numpy and reports pass/fail per case, per opset and per op type.
Run through tools/onnx_conformance.sh (it makes the venv and builds ember).

    python tools/onnx_conformance.py --ember BIN [--cases DIR] [--jobs N]
        [--only REGEX] [--check [--listed]] [--update] [--timeout S]
"""
import argparse
import collections
import datetime
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PASSING = os.path.join(ROOT, "tools", "onnx_conformance_passing.txt")
README = os.path.join(ROOT, "bench", "onnx", "README.md")
MIN_RTOL, MIN_ATOL = 1e-4, 1e-5


# ----------------------------------------------------------------- the cache
def _to_array(value):
    """A data-set value as an ndarray, or (None, kind) when it is no tensor."""
    from onnx import TensorProto, numpy_helper

    if isinstance(value, np.ndarray):
        return value, None
    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value), None
    if isinstance(value, np.generic):
        return np.asarray(value), None
    if value is None:
        return None, "optional (None)"
    if isinstance(value, (list, tuple)):
        return None, "sequence"
    return None, type(value).__name__


def _save(path, arr):
    """np.save; non-native dtypes (ml_dtypes: bfloat16, float8, int4) as raw bytes."""
    if arr.dtype.kind == "V" or type(arr.dtype).__module__.startswith("ml_dtypes"):
        # (ascontiguousarray makes a 0-d array 1-d: keep the shape)
        arr = np.ascontiguousarray(arr).view(np.dtype("V%d" % arr.dtype.itemsize)).reshape(arr.shape)
    np.save(path, arr, allow_pickle=arr.dtype == object)


def _default_opset(model):
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    return max(versions) if versions else None


def _primary_ops(cases):
    """The op each case tests: its node's op type; for an `_expanded` case, its base case's."""
    ops = {}
    for c in cases:
        if c.model.graph.node:
            ops[c.name] = c.model.graph.node[0].op_type
    for c in cases:
        base = re.sub(r"_expanded(_ver\d+)?$", "", c.name)
        if base != c.name and base in ops:
            ops[c.name] = ops[base]
    return ops


def generate(cache):
    import onnx
    import onnx.backend.test.case.node as node_cases

    stamp = os.path.join(cache, "STAMP")
    want = "onnx %s\n" % onnx.__version__
    if os.path.exists(stamp) and open(stamp).read() == want:
        return
    t0 = time.time()
    print("writing the onnx %s node cases to %s ..." % (onnx.__version__, cache), flush=True)
    if os.path.isdir(cache):
        shutil.rmtree(cache)
    os.makedirs(cache)
    cases = [c for c in node_cases.collect_testcases(None) if c.kind == "node"]
    ops = _primary_ops(cases)
    for c in cases:
        d = os.path.join(cache, c.name)
        os.makedirs(d)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(c.model.SerializeToString())
        initializers = {t.name for t in c.model.graph.initializer}
        in_names = [v.name for v in c.model.graph.input if v.name not in initializers]
        out_names = [v.name for v in c.model.graph.output]
        inputs, outputs = c.data_sets[0]
        meta = {
            "name": c.name,
            "op": ops.get(c.name, "?"),
            "op_types": sorted({n.op_type for n in c.model.graph.node}),
            "opset": _default_opset(c.model),
            "domains": sorted({o.domain or "ai.onnx" for o in c.model.opset_import}),
            "rtol": max(c.rtol if c.rtol is not None else MIN_RTOL, MIN_RTOL),
            "atol": max(c.atol if c.atol is not None else MIN_ATOL, MIN_ATOL),
            "inputs": [],
            "outputs": [],
        }
        for kind, names, values in (("input", in_names, inputs), ("output", out_names, outputs)):
            for i, value in enumerate(values):
                name = names[i] if i < len(names) else "%s_%d" % (kind, i)
                arr, other = _to_array(value)
                entry = {"name": name, "file": None, "kind": other}
                if arr is not None:
                    entry["file"] = "%s_%d.npy" % (kind, i)
                    entry["dtype"] = str(arr.dtype)
                    entry["shape"] = list(arr.shape)
                    _save(os.path.join(d, entry["file"]), arr)
                meta[kind + "s"].append(entry)
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump(meta, f, indent=1)
    with open(stamp, "w") as f:
        f.write(want)
    print("wrote %d cases in %.0fs" % (len(cases), time.time() - t0), flush=True)


# -------------------------------------------------------------- one case run
def _first_line(text):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for l in lines:
        if l.startswith("error:"):
            return l[len("error:"):].strip()[:200]
    return (lines[0] if lines else "(no message)")[:200]


def _exec(cmd, timeout, strip=()):
    """(status, message): ok / error / timeout / crash; the paths in strip cut from the message."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", "timeout after %ds" % timeout
    if p.returncode < 0:
        return "crash", "crash (signal %d)" % -p.returncode
    if p.returncode != 0:
        text = p.stderr.decode(errors="replace") + p.stdout.decode(errors="replace")
        for path in strip:
            text = text.replace(path + "/", "").replace(path, "")
        return "error", _first_line(text)
    return "ok", ""


def _load(path, entry):
    arr = np.load(path, allow_pickle=entry.get("dtype") == "object")
    if arr.dtype.kind == "V" and entry.get("dtype"):
        import ml_dtypes

        arr = arr.view(getattr(ml_dtypes, entry["dtype"]))
    if "shape" in entry and list(arr.shape) != entry["shape"] and arr.size == int(np.prod(entry["shape"])):
        arr = arr.reshape(entry["shape"])  # a 0-d raw array that an older cache saved 1-d
    return arr


def _input_file(d, work, entry):
    """The input's .npy, rewritten into `work` when an older cache saved a 0-d raw array 1-d."""
    path = os.path.join(d, entry["file"])
    if entry.get("shape") == [] and entry.get("dtype") not in (None, "object"):
        arr = np.load(path)
        if arr.shape != ():
            path = os.path.join(work, entry["file"])
            np.save(path, arr.reshape(()))
    return path


def _compare(got, want, rtol, atol):
    """None when equal, else a message."""
    if got.shape != want.shape:
        return "shape %s, expected %s" % (list(got.shape), list(want.shape))
    if got.dtype != want.dtype:
        return "dtype %s, expected %s" % (got.dtype, want.dtype)
    if want.dtype == object or want.dtype.kind in "biuSU":
        if np.array_equal(got, want):
            return None
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64)).max() if want.dtype.kind in "biu" else "n/a"
        return "values differ (max abs diff %s)" % diff
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(w)):
        return "NaN positions differ"
    finite = np.isfinite(w)
    if not np.array_equal(g[~finite & ~np.isnan(w)], w[~finite & ~np.isnan(w)]):
        return "inf values differ"
    gf, wf = g[finite], w[finite]
    if not np.allclose(gf, wf, rtol=rtol, atol=atol):
        return "max abs diff %.3g (rtol %g, atol %g)" % (np.abs(gf - wf).max(), rtol, atol)
    return None


def run_case(job):
    cache, name, ember, timeout, scratch = job
    d = os.path.join(cache, name)
    meta = json.load(open(os.path.join(d, "case.json")))
    work = os.path.join(scratch, name)
    os.makedirs(work, exist_ok=True)
    res = {"name": name, "op": meta["op"], "opset": meta["opset"]}
    try:
        st, msg = _exec([ember, "convert", os.path.join(d, "model.onnx"), "-o",
                         os.path.join(work, "m.ember")], timeout, (d, work))
        if st != "ok":
            res.update(status="convert " + st if st != "crash" else "crash", stage="convert", error=msg)
            return res
        bad = [e for e in meta["inputs"] if e["file"] is None]
        if bad:
            res.update(status="run error", stage="run",
                       error="input %s is a %s, not a tensor" % (bad[0]["name"], bad[0]["kind"]))
            return res
        out = os.path.join(work, "out")
        cmd = [ember, "run", os.path.join(work, "m.ember"), "--output-dir", out]
        for e in meta["inputs"]:
            cmd += ["--input", "%s=%s" % (e["name"], _input_file(d, work, e))]
        st, msg = _exec(cmd, timeout, (d, work))
        if st != "ok":
            res.update(status="run " + st if st != "crash" else "crash", stage="run", error=msg)
            return res
        for e in meta["outputs"]:
            if e["file"] is None:
                res.update(status="mismatch", error="output %s is a %s: not compared" % (e["name"], e["kind"]))
                return res
            path = os.path.join(out, e["name"] + ".npy")
            if not os.path.exists(path):
                res.update(status="run error", stage="run", error="no output %s written" % e["name"])
                return res
            try:
                got = np.load(path, allow_pickle=False)
                if got.dtype.kind == "V" and e.get("dtype"):  # ember writes bfloat16, float8, int4... as raw bytes
                    import ml_dtypes

                    got = got.view(getattr(ml_dtypes, e["dtype"]))
            except Exception as ex:  # noqa: BLE001 - a bad .npy from ember is a finding
                res.update(status="run error", stage="run", error="output %s unreadable: %s" % (e["name"], ex))
                return res
            why = _compare(got, _load(os.path.join(d, e["file"]), e), meta["rtol"], meta["atol"])
            if why:
                res.update(status="mismatch", error="%s: %s" % (e["name"], why))
                return res
        res["status"] = "pass"
        return res
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -------------------------------------------------------------------- report
def _reason(r):
    """A failure's message with the case-specific bits (numbers, quoted names) folded."""
    msg = r.get("error", "")
    msg = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", msg)
    msg = re.sub(r"\b\d+(\.\d+)?(e[-+]?\d+)?\b", "N", msg)
    return "%s: %s" % (r["status"], msg)


def summarize(results, total_cases):
    lines = []
    n_pass = sum(r["status"] == "pass" for r in results)
    lines.append("%d of %d pass" % (n_pass, len(results)) +
                 ("" if len(results) == total_cases else " (subset of %d cases)" % total_cases))
    by_status = collections.Counter(r["status"] for r in results)
    lines.append("by result: " + ", ".join("%s %d" % kv for kv in by_status.most_common()))
    refused = [r for r in results if "uses ONNX opset" in r.get("error", "")]
    if refused:
        low = sum(r["opset"] is not None and r["opset"] < 7 for r in refused)
        lines.append("refused for their opset: %d (%d below 7, %d above 28)" % (len(refused), low, len(refused) - low))
    return n_pass, lines


def tables(results):
    by_opset = collections.defaultdict(lambda: [0, 0])
    for r in results:
        k = r["opset"] if r["opset"] is not None else "-"
        by_opset[k][0] += r["status"] == "pass"
        by_opset[k][1] += 1
    opset_rows = [(str(k), p, t) for k, (p, t) in sorted(by_opset.items(), key=lambda kv: (str(kv[0]) == "-", kv[0] if kv[0] != "-" else 0))]
    by_op = collections.OrderedDict()
    for r in sorted(results, key=lambda r: (r["op"], r["name"])):
        row = by_op.setdefault(r["op"], {"pass": 0, "fail": 0, "first": ""})
        if r["status"] == "pass":
            row["pass"] += 1
        else:
            row["fail"] += 1
            if not row["first"]:
                row["first"] = "%s (%s)" % (_reason_raw(r), r["name"])
    reasons = collections.Counter(_reason(r) for r in results if r["status"] != "pass")
    return opset_rows, by_op, reasons


def _reason_raw(r):
    return "%s: %s" % (r["status"], r.get("error", ""))


def write_readme(results, n_pass, seconds, command):
    import onnx

    opset_rows, by_op, reasons = tables(results)
    crashes = [r for r in results if r["status"] == "crash"]
    md = ["# ONNX node conformance", "",
          "Every node test case of the `onnx` package (%s; `onnx.backend.test.case.node.collect_testcases`)" % onnx.__version__,
          "converted with `ember convert` and run with `ember run` on the CPU, outputs compared with numpy",
          "(shape, dtype, NaN positions, `allclose` with the case's rtol/atol, at least 1e-4/1e-5).",
          "A case fails at convert (the converter refuses the model: opsets outside 7-28, ops it does not",
          "import), at run (the executor or the input check refuses it), on a mismatch, a timeout or a crash.",
          "The cases that pass are listed in `tools/onnx_conformance_passing.txt`; CI runs",
          "`tools/onnx_conformance.sh --check` (every case, about a minute), which fails when one of them",
          "no longer passes; `--update` rewrites the list, `--only REGEX` runs a subset.", "",
          "Generated %s by `%s` (%.0f s on 2 processes)." % (datetime.date.today().isoformat(), command, seconds), "",
          "**%d of %d cases pass.** %s." % (n_pass, len(results), "; ".join(summarize(results, len(results))[1][1:])), ""]
    if crashes:
        md += ["Crashes: " + ", ".join("`%s` (%s, %s)" % (r["name"], r["error"], r.get("stage", "")) for r in crashes), ""]
    md += ["## By opset (the model's default-domain opset)", "", "| opset | pass | cases |", "| --- | ---: | ---: |"]
    md += ["| %s | %d | %d |" % row for row in opset_rows]
    md += ["", "## Most common failure reasons", "", "| cases | reason |", "| ---: | --- |"]
    md += ["| %d | %s |" % (n, _md(k)) for k, n in reasons.most_common(15)]
    md += ["", "## By op type", "", "| op | pass | fail | first error |", "| --- | ---: | ---: | --- |"]
    md += ["| %s | %d | %d | %s |" % (op, row["pass"], row["fail"], _md(row["first"])) for op, row in by_op.items()]
    os.makedirs(os.path.dirname(README), exist_ok=True)
    with open(README, "w") as f:
        f.write("\n".join(md) + "\n")


def _md(text):
    return text.replace("|", "\\|").replace("\n", " ")


def print_report(results, total_cases):
    n_pass, lines = summarize(results, total_cases)
    opset_rows, by_op, reasons = tables(results)
    print("\n".join(lines))
    print("by opset: " + ", ".join("%s: %d/%d" % row for row in opset_rows))
    print("most common failure reasons:")
    for k, n in reasons.most_common(15):
        print("  %5d  %s" % (n, k))
    print("%-28s %5s %5s  %s" % ("op", "pass", "fail", "first error"))
    for op, row in by_op.items():
        print("%-28s %5d %5d  %s" % (op, row["pass"], row["fail"], row["first"][:150]))
    for r in results:
        if r["status"] == "crash":
            print("CRASH: %s: %s at %s" % (r["name"], r["error"], r.get("stage")))
    return n_pass


# ---------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ember", required=True)
    ap.add_argument("--cases", default=os.environ.get("EMBER_ONNX_CASES", "/tmp/ember_onnx_cases"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=20)
    ap.add_argument("--only", help="regex: run the cases whose name it matches (search)")
    ap.add_argument("--check", action="store_true", help="fail when a listed passing case fails")
    ap.add_argument("--listed", action="store_true", help="run only the cases in the passing list")
    ap.add_argument("--update", action="store_true", help="rewrite the passing list (full run only)")
    ap.add_argument("--results", help="write every case's result here as JSON")
    ap.add_argument("--command", default="tools/onnx_conformance.sh")
    args = ap.parse_args()

    generate(args.cases)
    all_names = sorted(n for n in os.listdir(args.cases) if os.path.exists(os.path.join(args.cases, n, "case.json")))
    listed = []
    if os.path.exists(PASSING):
        listed = [l.strip() for l in open(PASSING) if l.strip() and not l.startswith("#")]
    names = all_names
    if args.listed:
        names = [n for n in names if n in set(listed)]
    if args.only:
        names = [n for n in names if re.search(args.only, n)]
    full = not args.only and not args.listed  # only a full run writes the table and the list

    scratch = tempfile.mkdtemp(prefix="ember_onnx_run.")
    jobs = [(args.cases, n, os.path.abspath(args.ember), args.timeout, scratch) for n in names]
    t0 = time.time()
    results = []
    step = max(100, len(jobs) // 10)
    print("running %d cases on %d processes ..." % (len(jobs), args.jobs), flush=True)
    with multiprocessing.Pool(args.jobs) as pool:
        for r in pool.imap_unordered(run_case, jobs, chunksize=4):
            results.append(r)
            if len(results) % step == 0:
                print("  [%d/%d] %d pass, %.0fs" % (len(results), len(jobs),
                      sum(x["status"] == "pass" for x in results), time.time() - t0), flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    seconds = time.time() - t0
    results.sort(key=lambda r: r["name"])
    if args.results:
        with open(args.results, "w") as f:
            json.dump(results, f, indent=1)

    n_pass = print_report(results, len(all_names))
    print("ran %d cases in %.0fs" % (len(results), seconds))
    passing = [r["name"] for r in results if r["status"] == "pass"]
    if full and not args.check:
        write_readme(results, n_pass, seconds, args.command)
        print("wrote %s" % os.path.relpath(README, ROOT))
    if args.update:
        if not full:
            print("--update needs a full run (no --only, no --listed)", file=sys.stderr)
            return 2
        with open(PASSING, "w") as f:
            f.write("".join(n + "\n" for n in passing))
        print("wrote %s (%d cases)" % (os.path.relpath(PASSING, ROOT), len(passing)))
    if args.check:
        ran = {r["name"]: r for r in results}
        checked = [n for n in listed if n in ran]
        broken = [ran[n] for n in checked if ran[n]["status"] != "pass"]
        missing = [n for n in listed if n not in set(all_names)]
        for r in broken:
            print("NO LONGER PASSES: %s: %s" % (r["name"], _reason_raw(r)))
        for n in missing:
            print("LISTED BUT NOT A CASE: %s" % n)
        new = sorted(set(passing) - set(listed))
        if new:
            print("%d cases pass that are not listed (tools/onnx_conformance.sh --update adds them)" % len(new))
        subset = "" if len(checked) == len(listed) else ", %d of them run" % len(checked)
        print("%d passing cases still pass (%d listed%s)" % (len(checked) - len(broken), len(listed), subset))
        if broken or missing or not listed:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
