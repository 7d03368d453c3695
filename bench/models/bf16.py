"""ember's CPU --precision bf16 (issue 12 item 7) on the benchmark models:
speed against ember fp32 and ONNX Runtime fp32 (alternating rounds), and
accuracy: the max abs error of ember bf16 and of PyTorch's bf16 autocast
(torch.autocast("cpu", dtype=torch.bfloat16)) against PyTorch fp32, next to
ember fp32's, each divided by max |y| of the fp32 output. Needs a CPU with
AVX-512 BF16. Builds the torch models itself (random weights, BatchNorm
statistics from random data), exports them to DIR and converts them. Not part
of CI. From the repository root:

    bazel build //converter/cli:ember_cli
    bench/.venv-ort/bin/python bench/models/bf16.py [--dir /tmp/ember_bench_bf16] [--rounds 3]
        [--iterations 20] [--threads 1] [--models mobilenet_v2,resnet18,...]
        [--ember bazel-bin/converter/cli/ember_cli]
(torch comes from Debian's python3-torch: the script re-runs its torch part
with /usr/bin/python3.)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["mobilenet_v2", "resnet18", "transformer", "bert_b1", "bert_b8", "mobilenet_v3", "lraspp"]


def torch_part(out, names):
    """With Debian's torch: export every model, save its input, torch fp32 and autocast-bf16 outputs."""
    import numpy as np
    import torch
    import torchvision
    sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "golden"))
    from model_zoo import BertEncoder, calibrate_bn
    sys.path.insert(0, HERE)
    from export_vision import Out

    def vision(ctor, seed):
        torch.manual_seed(seed)
        net = ctor()
        calibrate_bn(net, (2, 3, 224, 224))
        return net.eval(), (torch.randn(1, 3, 224, 224),), ["input"]

    def bert(batch):
        torch.manual_seed(15)
        net = BertEncoder(vocab=30522, max_pos=512, d=384, heads=12, layers=6, ff=1536).eval()
        ids = torch.randint(0, 30522, (batch, 128))
        return net, (ids, torch.ones(batch, 128, dtype=torch.int64)), ["ids", "mask"]

    def transformer():
        torch.manual_seed(13)
        layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
        return (torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval(),
                (torch.randn(1, 128, 256),), ["input"])

    builders = {
        "mobilenet_v2": lambda: vision(lambda: torchvision.models.mobilenet_v2(weights=None), 11),
        "resnet18": lambda: vision(lambda: torchvision.models.resnet18(weights=None), 12),
        "mobilenet_v3": lambda: vision(lambda: torchvision.models.mobilenet_v3_large(weights=None), 21),
        "lraspp": lambda: vision(lambda: Out(torchvision.models.segmentation.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None)), 22),
        "transformer": transformer,
        "bert_b1": lambda: bert(1),
        "bert_b8": lambda: bert(8),
    }
    for name in names:
        net, inputs, in_names = builders[name]()
        # torch 1.13 takes a fused path for TransformerEncoder without grad (not exportable): run with grad.
        with torch.enable_grad():
            ref = net(*inputs).detach()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                low = net(*inputs).detach().float()
            torch.onnx.export(net, inputs, os.path.join(out, name + ".onnx"), opset_version=14,
                              input_names=in_names, output_names=["output"])
        for n, t in zip(in_names, inputs):
            np.save(os.path.join(out, f"{name}.{n}.npy"), t.numpy())
        np.save(os.path.join(out, f"{name}.torch.npy"), ref.numpy())
        np.save(os.path.join(out, f"{name}.torch_bf16.npy"), low.numpy())
        print(f"exported {name}", file=sys.stderr)


def ember_bench(ember, model, precision, threads, iterations, feeds):
    out = subprocess.run([ember, "bench", model, "--json", "--threads", str(threads), "--precision", precision,
                          "--warmup", "3", "--iterations", str(iterations)] +
                         [a for f in feeds for a in ("-i", f)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["latency_ms"]["median"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp/ember_bench_bf16")
    ap.add_argument("--ember", default="bazel-bin/converter/cli/ember_cli")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--torch-part", action="store_true")
    args = ap.parse_args()
    names = args.models.split(",")
    os.makedirs(args.dir, exist_ok=True)
    if args.torch_part:
        return torch_part(args.dir, names)
    subprocess.run(["/usr/bin/python3", "-W", "ignore", os.path.abspath(__file__), "--torch-part", "--dir", args.dir,
                    "--models", args.models], check=True)

    import numpy as np
    sys.path.insert(0, HERE)
    from compare import ort_measure  # ORT in its own process, like the other model benches

    print(f"{'model':13s} {'fp32 ms':>8s} {'bf16 ms':>8s} {'ORT ms':>8s} {'bf16/fp32':>9s} {'bf16/ORT':>8s}   "
          f"{'err fp32':>9s} {'err bf16':>9s} {'err torch bf16':>14s}  (errors: max abs vs torch fp32 / max |y|)")
    for name in names:
        onnx_path = os.path.join(args.dir, name + ".onnx")
        model = os.path.join(args.dir, name + ".ember")
        subprocess.run([args.ember, "convert", onnx_path, "-o", model], check=True, capture_output=True)
        in_names = ["ids", "mask"] if name.startswith("bert") else ["input"]
        feeds = [f"{n}={os.path.join(args.dir, f'{name}.{n}.npy')}" for n in in_names]
        ref = np.load(os.path.join(args.dir, name + ".torch.npy"))
        scale = float(np.abs(ref).max())
        err = {}
        for precision in ("fp32", "bf16"):
            run_dir = os.path.join(args.dir, f"run_{name}_{precision}")
            os.makedirs(run_dir, exist_ok=True)
            subprocess.run([args.ember, "run", model, "-d", run_dir, "--precision", precision] +
                           [a for f in feeds for a in ("-i", f)], check=True, capture_output=True)
            err[precision] = float(np.abs(np.load(os.path.join(run_dir, "output.npy")) - ref).max()) / scale
        err_torch = float(np.abs(np.load(os.path.join(args.dir, name + ".torch_bf16.npy")) - ref).max()) / scale
        rows = []
        for _ in range(args.rounds):
            o = ort_measure(argparse.Namespace(iterations=args.iterations, warmup=3), onnx_path, args.threads,
                            feeds)["median_ms"]
            f = ember_bench(args.ember, model, "fp32", args.threads, args.iterations, feeds)
            b = ember_bench(args.ember, model, "bf16", args.threads, args.iterations, feeds)
            rows.append((f, b, o))
        med = statistics.median
        print(f"{name:13s} {med(r[0] for r in rows):8.2f} {med(r[1] for r in rows):8.2f} {med(r[2] for r in rows):8.2f} "
              f"{med(r[1] / r[0] for r in rows):9.2f} {med(r[1] / r[2] for r in rows):8.2f}   "
              f"{err['fp32']:9.2e} {err['bf16']:9.2e} {err_torch:14.2e}")


if __name__ == "__main__":
    main()
