"""silero-vad's 16k sequence model (a dynamic number of 576-sample chunks, an
LSTM over them) timed by `ember bench` beside ONNX Runtime in the same run,
alternating rounds: the file converted as it is (a dynamic length) and with
the length fixed (--input-shape); both make the LSTM one Recurrence op (before
it, a Scan over the dynamic length and an unrolled LSTM),
and optionally a second ember build (--baseline) on the fixed-length form.
  bash tools/real_models.sh   # once: the wheels, tools/.venv-real
  tools/.venv-real/bin/python bench/onnx/silero_sequence_bench.py --ember bazel-bin/converter/cli/ember_cli \\
      [--baseline OTHER_EMBER] [--chunks 37] [--threads 1] [--rounds 3]
Prints min / median latency in ms per round. Measure on a quiet machine.
"""
import argparse
import glob
import json
import os
import subprocess
import tempfile
import time
import zipfile

import numpy as np
import onnxruntime as ort

MEMBER = "silero_vad/data/silero_vad_16k_sequence.onnx"


def ember_ms(binary, model, inputs, threads, iterations):
    args = [binary, "bench", model, "--threads", str(threads), "--iterations", str(iterations), "--json"]
    for name, path in inputs.items():
        args += ["-i", f"{name}={path}"]
    lat = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)["latency_ms"]
    return lat["min"], lat["median"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    ap.add_argument("--baseline", help="another ember build, timed on the fixed-length conversion")
    ap.add_argument("--wheels", default=os.environ.get("EMBER_WHEELS", "/tmp/ember_wheels"))
    ap.add_argument("--chunks", type=int, default=37)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=300)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    onnx_path = os.path.join(tmp, "seq.onnx")
    with zipfile.ZipFile(glob.glob(os.path.join(a.wheels, "silero_vad-*.whl"))[0]) as z, open(onnx_path, "wb") as f:
        f.write(z.read(MEMBER))
    g = np.random.default_rng(0)
    feeds = {"input": g.standard_normal((a.chunks, 576)).astype(np.float32),
             "h": np.zeros((1, 1, 128), np.float32), "c": np.zeros((1, 1, 128), np.float32)}
    inputs = {}
    for name, v in feeds.items():
        inputs[name] = os.path.join(tmp, name + ".npy")
        np.save(inputs[name], v)
    fixed = ["--input-shape", f"input={a.chunks},576"]
    runs = []  # (label, binary, model)
    for label, binary, flags in [("ember, dynamic length", a.ember, []),
                                 ("ember, length fixed", a.ember, fixed)] + (
                                     [("baseline, length fixed", a.baseline, fixed)] if a.baseline else []):
        model = os.path.join(tmp, f"m{len(runs)}.ember")
        subprocess.run([binary, "convert", onnx_path, "-o", model, *flags], check=True, capture_output=True)
        runs.append((label, binary, model))
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])

    def ort_ms():
        ts = []
        for _ in range(a.iterations):
            t = time.perf_counter()
            sess.run(None, feeds)
            ts.append(time.perf_counter() - t)
        return 1e3 * min(ts), 1e3 * float(np.median(ts))

    timers = [(label, lambda b=binary, m=model: ember_ms(b, m, inputs, a.threads, a.iterations))
              for label, binary, model in runs] + [("ONNX Runtime", ort_ms)]
    results = {label: [] for label, _ in timers}
    for r in range(a.rounds):
        for label, timer in timers if r % 2 == 0 else timers[::-1]:
            results[label].append(timer())
    print(f"silero-vad 16k sequence, {a.chunks} chunks, {a.threads} thread(s), {a.rounds} alternating rounds "
          "(min / median ms per round)")
    for label, rows in results.items():
        print(f"| {label} | " + " | ".join("%.3f / %.3f" % row for row in rows) + " |")


if __name__ == "__main__":
    main()
