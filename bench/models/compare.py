"""ember vs ONNX Runtime on real models: median latency (1 and 2 threads; batch 1,
and the BERT-style encoder at batch 1 and 8) and load time / peak RSS against
model size. Not part of CI.

Driven by bench/models/run.sh, which exports the models, converts them with
`ember convert` and runs this with the venv's python (onnxruntime installed):

    compare.py --dir DIR --ember BIN [--threads 1,2] [--iterations 50] [--warmup 10]
    compare.py --dir DIR --ember BIN --baseline OLD_BIN [--baseline-dir BDIR] [--rounds 5]
        [--cases mobilenet_v2,resnet18] (any of LATENCY_CASES, or of INT8_CASES with --int8; default all)
        (two builds, alternating rounds; the baseline runs BDIR/<model>.ember, converted by
        OLD_BIN so that converter changes count too, else DIR's)
    compare.py ... --busy-core
        (any of the above while a busy loop holds the last CPU: threads that no longer keep pace)
    compare.py --dir DIR --ember BIN --int8 [--rounds 5]
        (dynamic int8 only, INT8_CASES: DIR/bert_int8.ember and the CNNs' <model>_int8.ember,
        from `ember convert --quantize dynamic-int8`, vs DIR/<model>_int8.onnx, from ORT's
        quantize_dynamic, and vs ember's fp32 DIR/<model>.ember, in alternating rounds; plus
        the outputs' max abs differences)

DIR holds <model>.onnx and, once converted, <model>.ember; a latency case with
input names reads its inputs from DIR/<case>.<input>.npy (both runtimes),
the others get random inputs with symbolic dims 1. Each measurement
runs in its own process so that its peak RSS (os.wait4's ru_maxrss) is its own.
ember's figures come from `BIN bench MODEL.ember --threads N --warmup W
--iterations I --json`; a model without a .ember, or a missing BIN, shows "-".
"""
import argparse
import json
import os
import subprocess
import sys
import time

# (case, model, input names: DIR/<case>.<name>.npy, or None: random inputs at batch 1)
LATENCY_CASES = [("mobilenet_v2", "mobilenet_v2", None), ("resnet18", "resnet18", None),
                 ("transformer", "transformer", None),
                 ("bert_b1", "bert", ["ids", "mask"]), ("bert_b8", "bert", ["ids", "mask"]),
                 ("mobilenet_v3", "mobilenet_v3", ["input"]), ("lraspp", "lraspp", ["input"])]
MEMORY_MODELS = ["mlp", "mobilenet_v2", "resnet18", "transformer", "mobilenet_v3", "lraspp"]
# Dynamic int8: (row, case (its inputs DIR/<case>.<name>.npy), fp32 model, int8 model
# (DIR/<name>.ember and .onnx), input names). _rr: weights within [-64, 64] in both
# (ember convert --reduce-range, quantize_dynamic(reduce_range=True)).
# The CNNs: every Conv and Gemm quantized in both (ember convert --quantize-ops
# Conv,Gemm; quantize_dynamic's default op types); random inputs where None.
INT8_CASES = [(case + rr, case, "bert", "bert_int8" + rr, ["ids", "mask"])
              for case in ("bert_b1", "bert_b8") for rr in ("", "_rr")] + \
             [(m, m, m, m + "_int8", inputs)
              for m, inputs in (("mobilenet_v2", None), ("resnet18", None), ("mobilenet_v3", ["input"]))]


def run_measured(cmd):
    """Runs cmd; returns (stdout, wall seconds) or raises with its stderr."""
    # Linux keeps ru_maxrss across execve: a child exec'd straight from this
    # (vforking) Python process would report Python's RSS as its own peak. The
    # shell forks the measured command from its own small image instead.
    cmd = ["/bin/sh", "-c", '"$@"; exit $?', "sh"] + list(cmd)
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate()
    wall = time.perf_counter() - start
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {err.strip()[-500:]}")
    return out, wall


def ort_worker(args):
    """In a child process: load the model in ORT, time it, print JSON."""
    import resource

    import numpy as np
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    t0 = time.perf_counter()
    sess = ort.InferenceSession(args.model, opts, providers=["CPUExecutionProvider"])
    load_ms = (time.perf_counter() - t0) * 1e3
    rng = np.random.default_rng(0)
    feeds = {name: np.load(path) for name, path in (f.split("=", 1) for f in args.feeds)}
    for i in sess.get_inputs():
        if i.name in feeds:
            continue
        shape = [d if isinstance(d, int) else 1 for d in i.shape]  # symbolic dims = 1 (batch 1)
        if i.type == "tensor(float)":
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
        elif i.type == "tensor(int64)":
            feeds[i.name] = np.zeros(shape, dtype=np.int64)
        else:
            sys.exit(f"input {i.name}: type {i.type} not handled")
    for _ in range(args.warmup):
        sess.run(None, feeds)
    times = []
    for _ in range(args.iterations):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    print(json.dumps({"load_ms": load_ms, "median_ms": times[len(times) // 2],
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def feeds_of(args, case, inputs):
    """["NAME=DIR/<case>.NAME.npy", ...] for a case with input files, else []."""
    return [f"{n}={os.path.join(args.dir, f'{case}.{n}.npy')}" for n in inputs or []]


def ort_measure(args, model, threads, feeds=()):
    out, _ = run_measured([sys.executable, os.path.abspath(__file__), "--ort-worker", "--model", model,
                           "--threads", str(threads), "--iterations", str(args.iterations),
                           "--warmup", str(args.warmup)] + [a for f in feeds for a in ("--feed", f)])
    return json.loads(out)


def flatten(obj, prefix=""):
    """{"latency_ms": {"median": 1.0}} -> {"latency_ms.median": 1.0}."""
    out = {}
    for k, v in obj.items():
        if isinstance(v, dict):
            out.update(flatten(v, prefix + k + "."))
        else:
            out[prefix + k] = v
    return out


def find_key(obj, *words):
    """The first numeric value whose (flattened) key contains every word, and that key."""
    for k, v in flatten(obj).items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and all(w in k.lower() for w in words):
            return float(v), k
    return None, None


def ember_measure(args, ember_model, threads, feeds=()):
    if not args.ember or not os.path.exists(args.ember) or not os.path.exists(ember_model):
        return None
    cmd = [args.ember, "bench", ember_model, "--threads", str(threads), "--warmup", str(args.warmup),
           "--iterations", str(args.iterations), "--json"] + [a for f in feeds for a in ("--input", f)]
    out, wall = run_measured(cmd)
    j = json.loads(out)
    median, _ = find_key(j, "latency", "median")
    rss, rss_key = find_key(j, "rss")
    if rss is not None and "mib" not in rss_key.lower():
        rss = rss / (1024 * 1024) if "byte" in rss_key.lower() else rss / 1024  # bytes or KiB
    load, _ = find_key(j, "load")
    return {"median_ms": median, "peak_rss_mib": rss, "load_ms": load}


def latency_cases(args, cases=LATENCY_CASES):
    """LATENCY_CASES (or INT8_CASES), restricted to --cases when given."""
    if not args.cases:
        return cases
    wanted = args.cases.split(",")
    return [c for c in cases if c[0] in wanted]


def median(values):
    v = sorted(values)
    return v[len(v) // 2]


def compare_builds(args):
    """Two ember builds against ORT, in alternating rounds (ORT, baseline, ember; the
    next round ORT, ember, baseline: whichever ran second read about 1 % slower in
    an A/A run): the median over rounds of each round's ember/ORT ratio, for both builds."""
    print(f"{'model':14s} {'threads':>7s} {'base ms':>9s} {'ember ms':>9s} {'ORT ms':>8s} "
          f"{'base/ORT':>9s} {'ember/ORT':>9s} {'ember/base':>10s}   (median of {args.rounds} rounds)")
    for name, model, inputs in latency_cases(args):
        onnx_path = os.path.join(args.dir, model + ".onnx")
        ember_model = os.path.join(args.dir, model + ".ember")
        base_model = os.path.join(args.baseline_dir or args.dir, model + ".ember")
        feeds = feeds_of(args, name, inputs)
        for threads in [int(t) for t in args.threads.split(",")]:
            rows = []
            for r in range(args.rounds):
                o = ort_measure(args, onnx_path, threads, feeds)["median_ms"]
                base = lambda: ember_measure(argparse.Namespace(**{**vars(args), "ember": args.baseline}),
                                             base_model, threads, feeds)["median_ms"]
                new = lambda: ember_measure(args, ember_model, threads, feeds)["median_ms"]
                if r % 2 == 0:
                    b = base()
                    e = new()
                else:
                    e = new()
                    b = base()
                rows.append((b, e, o))
            print(f"{name:14s} {threads:7d} {median([r[0] for r in rows]):9.2f} {median([r[1] for r in rows]):9.2f} "
                  f"{median([r[2] for r in rows]):8.2f} {median([r[0] / r[2] for r in rows]):9.2f} "
                  f"{median([r[1] / r[2] for r in rows]):9.2f} {median([r[1] / r[0] for r in rows]):10.3f}")


def compare_int8(args):
    """ember's dynamic int8 model against ORT's quantize_dynamic model and against
    ember's fp32 model, in alternating rounds (ORT int8, ember int8, ember fp32,
    ...): the medians over rounds of each measurement and of each round's ratios."""
    print(f"{'int8 model':14s} {'threads':>7s} {'ember i8':>9s} {'ORT i8':>8s} {'ember f32':>9s} "
          f"{'i8: ember/ORT':>13s} {'ember i8/f32':>12s}   (ms, median of {args.rounds} rounds)")
    for name, case, f32, i8, inputs in latency_cases(args, INT8_CASES):
        feeds = feeds_of(args, case, inputs)
        for threads in [int(t) for t in args.threads.split(",")]:
            rows = []
            for _ in range(args.rounds):
                o = ort_measure(args, os.path.join(args.dir, i8 + ".onnx"), threads, feeds)["median_ms"]
                e = ember_measure(args, os.path.join(args.dir, i8 + ".ember"), threads, feeds)["median_ms"]
                f = ember_measure(args, os.path.join(args.dir, f32 + ".ember"), threads, feeds)["median_ms"]
                rows.append((e, o, f))
            print(f"{name:14s} {threads:7d} {median([r[0] for r in rows]):9.2f} {median([r[1] for r in rows]):8.2f} "
                  f"{median([r[2] for r in rows]):9.2f} {median([r[0] / r[1] for r in rows]):13.2f} "
                  f"{median([r[0] / r[2] for r in rows]):12.2f}")
    int8_accuracy(args)


def int8_accuracy(args):
    """Max abs differences of the first output: ember int8 vs ember fp32, vs ORT int8,
    and ORT int8 vs ORT fp32 (how far quantization moves each runtime)."""
    import tempfile

    import numpy as np
    import onnxruntime as ort

    print(f"\n{'int8 model':14s} {'max |out|':>9s} {'ember i8-f32':>12s} {'ORT i8-f32':>10s} "
          f"{'ember i8-ORT i8':>15s} {'ember f32-ORT f32':>17s}   (max abs difference)")
    for name, case, f32, i8, inputs in latency_cases(args, INT8_CASES):
        outs = {}
        with tempfile.TemporaryDirectory() as tmp:
            if inputs is None:  # one standard normal input (fixed seed), its symbolic dims 1
                first = ort.InferenceSession(os.path.join(args.dir, f32 + ".onnx"),
                                             providers=["CPUExecutionProvider"]).get_inputs()[0]
                shape = [d if isinstance(d, int) else 1 for d in first.shape]
                feeds = {first.name: np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
                np.save(os.path.join(tmp, "x.npy"), feeds[first.name])
                files = [f"{first.name}={os.path.join(tmp, 'x.npy')}"]
            else:
                feeds = {n: np.load(os.path.join(args.dir, f"{case}.{n}.npy")) for n in inputs}
                files = feeds_of(args, case, inputs)
            for model in (f32, i8):
                d = os.path.join(tmp, model)
                os.makedirs(d)
                run_measured([args.ember, "run", os.path.join(args.dir, model + ".ember"), "-d", d] +
                             [a for f in files for a in ("--input", f)])
                outs["ember", model] = np.load(os.path.join(d, sorted(os.listdir(d))[0]))
        for model in (f32, i8):
            sess = ort.InferenceSession(os.path.join(args.dir, model + ".onnx"), providers=["CPUExecutionProvider"])
            outs["ort", model] = sess.run(None, feeds)[0]

        def diff(a, b):
            return float(np.max(np.abs(outs[a].astype(np.float64) - outs[b].astype(np.float64))))

        print(f"{name:14s} {float(np.max(np.abs(outs['ember', f32]))):9.3f} {diff(('ember', i8), ('ember', f32)):12.4f} "
              f"{diff(('ort', i8), ('ort', f32)):10.4f} {diff(('ember', i8), ('ort', i8)):15.4f} "
              f"{diff(('ember', f32), ('ort', f32)):17.6f}")


def fmt(v, spec=".2f"):
    return "-" if v is None else format(v, spec)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir")
    ap.add_argument("--ember")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--ort-worker", action="store_true")
    ap.add_argument("--model")
    ap.add_argument("--feed", dest="feeds", action="append", default=[], help="ORT worker: NAME=FILE.npy")
    ap.add_argument("--baseline", help="a second ember binary (e.g. main before a change): compare builds")
    ap.add_argument("--baseline-dir", help="the baseline's .ember files (converted by the baseline binary)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cases", help="cases to run, comma-separated (default: all of LATENCY_CASES, or of INT8_CASES)")
    ap.add_argument("--int8", action="store_true", help="dynamic int8 models only (INT8_CASES)")
    ap.add_argument("--busy-core", action="store_true",
                    help="a busy loop holds the last allowed CPU throughout (another process on one core, "
                         "as a phone's little core or a shared VM: the threads no longer keep pace)")
    args = ap.parse_args()
    if args.ort_worker:
        args.threads = int(args.threads)
        return ort_worker(args)
    if args.busy_core:
        cpu = max(os.sched_getaffinity(0))
        hog = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])
        print(f"busy core: a busy loop (pid {hog.pid}) holds CPU {cpu}")
        try:
            return run(args)
        finally:
            hog.kill()
            hog.wait()
    return run(args)


def run(args):

    import onnxruntime
    print(f"onnxruntime {onnxruntime.__version__}; batch 1 (bert_b8: 8); median of {args.iterations} runs "
          f"after {args.warmup} warm-up runs; ratio < 1: ember faster\n")
    if args.int8:
        return compare_int8(args)
    if args.baseline:
        return compare_builds(args)
    print(f"{'model':14s} {'threads':>7s} {'ember ms':>10s} {'ORT ms':>10s} {'ember/ORT':>10s}")
    for name, model, inputs in latency_cases(args):
        onnx_path = os.path.join(args.dir, model + ".onnx")
        feeds = feeds_of(args, name, inputs)
        for threads in [int(t) for t in args.threads.split(",")]:
            o = ort_measure(args, onnx_path, threads, feeds)
            e = ember_measure(args, os.path.join(args.dir, model + ".ember"), threads, feeds)
            em = e["median_ms"] if e else None
            ratio = em / o["median_ms"] if em else None
            print(f"{name:14s} {threads:7d} {fmt(em):>10s} {o['median_ms']:10.2f} {fmt(ratio):>10s}")

    print(f"\n{'model':14s} {'.onnx MiB':>9s} {'.ember MiB':>10s} {'ember load ms*':>14s} {'ORT load ms':>11s} "
          f"{'ember RSS MiB':>13s} {'ORT RSS MiB':>11s}")
    for name in MEMORY_MODELS:
        onnx_path = os.path.join(args.dir, name + ".onnx")
        ember_path = os.path.join(args.dir, name + ".ember")
        o = ort_measure(args, onnx_path, 1)
        e = ember_measure(args, ember_path, 1)
        ember_mib = os.path.getsize(ember_path) / 2**20 if os.path.exists(ember_path) else None
        print(f"{name:14s} {os.path.getsize(onnx_path) / 2**20:9.2f} {fmt(ember_mib):>10s} "
              f"{fmt(e['load_ms'] if e else None, '.1f'):>14s} {o['load_ms']:11.1f} "
              f"{fmt(e['peak_rss_mib'] if e else None, '.1f'):>13s} {o['peak_rss_mib']:11.1f}")
    print("\n* ember's load_ms (from `ember bench --json`): mmap, full verification and executor creation\n"
          "  (weights stay in the mapping, nothing is copied); ORT's is InferenceSession creation.\n"
          "ORT RSS includes the Python interpreter and numpy (about 30-40 MiB of baseline); ember's is the\n"
          "whole `ember bench` process (peak_rss_bytes of its JSON).")


if __name__ == "__main__":
    main()
