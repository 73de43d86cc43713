#!/usr/bin/env python3
"""dequant_mlx.py turns an MLX affine-quantized checkpoint (such as the
shipped assets/starter, 8-bit, group 64) back into a float32 safetensors
checkpoint that transformers loads, so that train.py --init-from can
continue training from the shipped weights.

    python3 tools/starter/dequant_mlx.py assets/starter /tmp/init

Each quantized matrix is stored as `weight` (uint32, 32/bits values per
word, little-endian), `scales` and `biases` (one per group along the last
dimension); the value is scales * q + biases, as in MLX.  Other tensors are
converted to float32.  config.json loses its quantization entries; the
tokenizer files are copied.  Needs numpy only.
"""

import json
import os
import shutil
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "U32": np.uint32, "U8": np.uint8, "I64": np.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        raw = data[a:b]
        if info["dtype"] == "BF16":
            arr = (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(raw, DTYPES[info["dtype"]])
        out[name] = arr.reshape(info["shape"])
    return out


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name], dtype=np.float32)
        raw = arr.tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for raw in blobs:
            f.write(raw)


def dequantize(tensors, bits, group):
    out = {}
    for name, arr in tensors.items():
        if name.endswith((".scales", ".biases")):
            continue
        prefix = name[: -len(".weight")] if name.endswith(".weight") else None
        if prefix and prefix + ".scales" in tensors:
            if bits != 8:
                raise SystemExit(f"{name}: only 8-bit is handled here")
            q = arr.view(np.uint8).astype(np.float32)  # little-endian: value j of a word is byte j
            rows = q.shape[0]
            q = q.reshape(rows, -1, group)
            s = tensors[prefix + ".scales"][..., None]
            b = tensors[prefix + ".biases"][..., None]
            out[name] = (q * s + b).reshape(rows, -1)
        else:
            out[name] = arr.astype(np.float32)
    return out


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: dequant_mlx.py SRC DST")
    src, dst = sys.argv[1:]
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    q = cfg.pop("quantization", None)
    cfg.pop("quantization_config", None)
    if not q:
        raise SystemExit("config.json has no quantization entry")
    tensors = dequantize(read_safetensors(os.path.join(src, "model.safetensors")), q["bits"], q["group_size"])
    os.makedirs(dst, exist_ok=True)
    write_safetensors(os.path.join(dst, "model.safetensors"), tensors)
    cfg["dtype"] = "float32"
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copy(os.path.join(src, name), os.path.join(dst, name))
    n = sum(v.size for v in tensors.values())
    print(f"dequantized {len(tensors)} tensors, {n:,} values -> {dst}")


if __name__ == "__main__":
    main()
