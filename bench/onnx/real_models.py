"""Real models from PyPI packages: converted with `ember convert`, run with
`ember run` and with ONNX Runtime on the same random inputs, outputs compared.
The models come from the wheels (downloaded once with pip, no install):
  rapidocr-onnxruntime 1.4.4  PaddleOCR v4 det / rec, mobile v2 cls (PaddlePaddle -> paddle2onnx)
  silero-vad 6.2.3            the VAD models (PyTorch export; If, LSTM, STFT-like convs)
Usage (tools/real_models.sh makes the venv and the download):
  python real_models.py --ember bazel-bin/converter/cli/ember_cli --wheels DIR
Prints one row per model and input shape: converts?, runs?, max abs diff vs ORT, or the first error line.
"""
import argparse
import glob
import os
import subprocess
import tempfile
import zipfile

import numpy as np
import onnxruntime as ort

# (package file glob, model path inside the wheel, {input: shape or value}, label)
SILERO_FIXED = ["--fix-input", "sr=16000", "--input-shape", "input=1,576", "--input-shape", "state=2,1,128"]

CASES = [
    ("rapidocr_onnxruntime-*.whl", "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
     {"x": (1, 3, 48, 192)}, "PP-OCR cls 48x192"),
    ("rapidocr_onnxruntime-*.whl", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
     {"x": (1, 3, 48, 320)}, "PP-OCRv4 rec 48x320"),
    ("rapidocr_onnxruntime-*.whl", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
     {"x": (1, 3, 320, 320)}, "PP-OCRv4 det 320x320"),
    ("silero_vad-*.whl", "silero_vad/data/silero_vad_openvino_16k.onnx",
     {"input": (1, 576), "state": (2, 1, 128)}, "silero-vad openvino 16k"),
    # Their Ifs test the sample rate and (squeeze on a dynamic dim) the input's
    # dims: resolved at conversion by binding sr and the input shapes.
    ("silero_vad-*.whl", "silero_vad/data/silero_vad_op18_ifless.onnx",
     {"input": (1, 576), "sr": np.array(16000, np.int64), "state": (2, 1, 128)}, "silero-vad op18 ifless",
     SILERO_FIXED),
    ("silero_vad-*.whl", "silero_vad/data/silero_vad_16k_op15.onnx",
     {"input": (1, 576), "state": (2, 1, 128), "sr": np.array(16000, np.int64)}, "silero-vad 16k op15",
     SILERO_FIXED),
    ("silero_vad-*.whl", "silero_vad/data/silero_vad.onnx",
     {"input": (1, 576), "state": (2, 1, 128), "sr": np.array(16000, np.int64)}, "silero-vad", SILERO_FIXED),
    ("silero_vad-*.whl", "silero_vad/data/silero_vad_half.onnx",
     {"input": (1, 576), "state": (2, 1, 128)}, "silero-vad half",
     ["--input-shape", "input=1,576", "--input-shape", "state=2,1,128"]),
    # Chunks of 576 samples in, one probability per chunk out: the LSTM runs
    # over a dynamic number of steps (a Scan, converter/recurrence_scan.cc).
    ("silero_vad-*.whl", "silero_vad/data/silero_vad_16k_sequence.onnx",
     {"input": (4, 576), "h": (1, 1, 128), "c": (1, 1, 128)}, "silero-vad 16k sequence, 4 chunks"),
    ("silero_vad-*.whl", "silero_vad/data/silero_vad_16k_sequence.onnx",
     {"input": (37, 576), "h": (1, 1, 128), "c": (1, 1, 128)}, "silero-vad 16k sequence, 37 chunks"),
]


def first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:160]
    return "(no message)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    ap.add_argument("--wheels", required=True)
    a = ap.parse_args()
    ember = os.path.abspath(a.ember)
    tmp = tempfile.mkdtemp()
    rng = np.random.default_rng(0)
    print("| model | converts | runs | max abs diff vs ONNX Runtime | note |")
    print("|---|---|---|---|---|")
    for case in CASES:
        pattern, member, inputs, label = case[:4]
        flags = list(case[4]) if len(case) > 4 else []
        fixed = {f.split("=")[0] for k, f in zip(flags, flags[1:]) if k == "--fix-input"}
        wheels = glob.glob(os.path.join(a.wheels, pattern))
        if not wheels:
            print(f"| {label} | - | - | - | wheel {pattern} not downloaded |")
            continue
        onnx_path = os.path.join(tmp, os.path.basename(member))
        with zipfile.ZipFile(wheels[0]) as z, open(onnx_path, "wb") as f:
            f.write(z.read(member))
        ember_path = onnx_path[:-5] + ".ember"
        conv = subprocess.run([ember, "convert", onnx_path, "-o", ember_path, *flags], capture_output=True, text=True)
        if conv.returncode != 0:
            print(f"| {label} | no | - | - | {first_line(conv.stderr)} |")
            continue
        feeds, args = {}, []
        for name, spec in inputs.items():
            v = spec if isinstance(spec, np.ndarray) else rng.standard_normal(spec).astype(np.float32)
            if name == "state" or name in ("h", "c"):
                v = (v * 0.1).astype(np.float32)
            feeds[name] = v
            if name in fixed:
                continue  # a constant of the converted model
            path = os.path.join(tmp, f"{label.replace(' ', '_')}.{name}.npy")
            np.save(path, v)
            args += ["--input", f"{name}={path}"]
        out_dir = os.path.join(tmp, label.replace(" ", "_") + ".out")
        run = subprocess.run([ember, "run", ember_path, *args, "-d", out_dir], capture_output=True, text=True)
        if run.returncode != 0:
            print(f"| {label} | yes | no | - | {first_line(run.stderr)} |")
            continue
        sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
        ref = sess.run(None, feeds)
        diffs = []
        for o, r in zip(sess.get_outputs(), ref):
            safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in o.name) or "_"
            e = np.load(os.path.join(out_dir, safe + ".npy"))
            diffs.append(float(np.max(np.abs(e.astype(np.float64) - r.astype(np.float64)))) if r.size else 0.0)
        print(f"| {label} | yes | yes | {max(diffs):.2e} | outputs {len(diffs)} |")


if __name__ == "__main__":
    main()
