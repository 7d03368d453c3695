"""Writes PyTorch reference records for ember's tests.

Each golden_<family>.py beside this file defines `cases(emit)`, where
emit.tensor(name, t) records a tensor and emit.text(name, s) a string.
Line format:  T <name> <dtype> <rank> <dims...> <values...>
              S <name> <text with \\ and newlines escaped>
"""
import importlib.util
import os
import sys

import torch


class Emitter:
    def __init__(self, out):
        self.out = out
        self.names = set()

    def _name(self, name):
        assert name not in self.names, f"duplicate golden record {name}"
        assert " " not in name
        self.names.add(name)

    def tensor(self, name, t):
        self._name(name)
        t = t.detach().contiguous()
        dtype = str(t.dtype).replace("torch.", "")
        flat = t.reshape(-1)
        if t.is_floating_point():
            vals = [repr(float(v)) for v in flat.double().tolist()]
        else:
            vals = [str(int(v)) for v in flat.long().tolist()]
        dims = " ".join(str(d) for d in t.shape)
        self.out.write(f"T {name} {dtype} {t.dim()} {dims} {' '.join(vals)}\n".replace("  ", " "))

    def text(self, name, s):
        self._name(name)
        self.out.write(f"S {name} " + s.replace("\\", "\\\\").replace("\n", "\\n") + "\n")


def main(paths):
    torch.set_num_threads(1)
    emit = Emitter(sys.stdout)
    for path in sorted(paths):
        if os.path.basename(path) == "gen_golden.py":
            continue
        spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        torch.manual_seed(0)
        module.cases(emit)


if __name__ == "__main__":
    main(sys.argv[1:])
