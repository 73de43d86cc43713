"""Goldens for engine/gguf's dequantizer: random blocks of each GGUF type
and what llama.cpp's own Python package (gguf-py, gguf.quants.dequantize)
makes of them.

    PYTHONPATH=<dir holding gguf-py's gguf package> python3 tools/oracle/make_gguf_goldens.py --out engine/gguf/testdata/dequant

gguf-py is not installed on the device machine (and no wheel can be
fetched from here); the goldens committed were made with gguf-py's
quants.py dequantizers run under numpy 1.24 (docs/design/gguf.md says how).
Each type writes TYPE.blocks (the raw blocks) and TYPE.f32 (the values,
little-endian float32). The scale fields of each block are set to finite
half floats of mixed sign and size, so that every value is finite; the
quantized bits are random.
"""
import argparse
import os

import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T
from gguf.quants import dequantize

# Byte offsets of the half-float scale fields in each block type.
HALVES = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
}
BLOCKS = {"F32": 37, "F16": 37, "BF16": 37}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261203)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    for name in ["F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]:
        qt = T[name]
        elems, size = GGML_QUANT_SIZES[qt]
        n = BLOCKS.get(name, 5 if elems == 32 else 3)
        if name == "F32":
            raw = rng.standard_normal(n).astype(np.float32).view(np.uint8)
        elif name == "F16":
            raw = rng.standard_normal(n).astype(np.float16).view(np.uint8)
        elif name == "BF16":
            f = rng.standard_normal(n).astype(np.float32).view(np.uint32)
            raw = (f >> 16).astype(np.uint16).view(np.uint8)
        else:
            raw = rng.integers(0, 256, size=(n, size), dtype=np.uint8)
            for off in HALVES[name]:
                h = (rng.choice([-1, 1], n) * rng.uniform(1e-3, 1.0, n)).astype(np.float16)
                raw[:, off:off + 2] = h.view(np.uint8).reshape(n, 2)
            raw = raw.reshape(-1)
        y = np.asarray(dequantize(raw.copy(), qt), dtype=np.float32).reshape(-1)
        assert y.size == n * elems and np.all(np.isfinite(y)), name
        raw.tofile(os.path.join(a.out, name + ".blocks"))
        y.astype("<f4").tofile(os.path.join(a.out, name + ".f32"))
        print(f"{name}: {n} blocks, {y.size} values")


if __name__ == "__main__":
    main()
