"""Exports the BERT-style sentence encoder that bench/models/run.sh times at batch 1 and 8.

No real checkpoint can be downloaded here (PyPI only), so it is tests/golden/model_zoo.py's
BertEncoder (token + position embeddings, LayerNorm, attention written out with an additive
padding mask, GELU feed-forward) at all-MiniLM-L6-v2's size: vocab 30522, 512 positions,
d 384, 12 heads, 6 layers, feed-forward 1536; weights random from torch.manual_seed(15).
Opset 14, as sentence-transformers' ONNX exports (LayerNorm and GELU arrive decomposed).
    export_bert.py OUT_DIR
writes OUT_DIR/bert.onnx (dynamic batch and seq) and, for batch 1 and 8 at seq 128 (the last
rows padded: mask 0), bert_b<N>.ids.npy, bert_b<N>.mask.npy and torch's bert_b<N>.out.npy.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden"))
from model_zoo import BertEncoder  # noqa: E402

SEQ = 128


def main():
    out = sys.argv[1]
    torch.manual_seed(15)
    bert = BertEncoder(vocab=30522, max_pos=512, d=384, heads=12, layers=6, ff=1536).eval()
    cases = {}
    for batch in (1, 8):
        ids = torch.randint(0, 30522, (batch, SEQ))
        mask = torch.ones(batch, SEQ, dtype=torch.int64)
        for b in range(batch):
            mask[b, SEQ - 8 * b:] = 0  # row b: 8 * b padding tokens
        cases[batch] = (ids, mask)
    ids, mask = cases[1]
    torch.onnx.export(bert, (ids, mask), os.path.join(out, "bert.onnx"), opset_version=14,
                      input_names=["ids", "mask"], output_names=["hidden"],
                      dynamic_axes={"ids": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"},
                                    "hidden": {0: "batch", 1: "seq"}})
    with torch.no_grad():
        for batch, (ids, mask) in cases.items():
            np.save(os.path.join(out, f"bert_b{batch}.ids.npy"), ids.numpy())
            np.save(os.path.join(out, f"bert_b{batch}.mask.npy"), mask.numpy())
            np.save(os.path.join(out, f"bert_b{batch}.out.npy"), bert(ids, mask).numpy())


if __name__ == "__main__":
    main()
