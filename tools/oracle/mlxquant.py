"""MLX affine quantization, bfloat16 rounding and a small safetensors reader/writer.

Stdlib + numpy only, so that check_goldens.py can run without PyTorch.
Everything here is deterministic and computed in float32 unless said otherwise.

MLX affine quantization (mlx/ops.cpp `affine_quantize`, the CPU fallback; the
Metal kernel in mlx/backend/metal/kernels/quantized.h computes the same thing
per group, in float):

  For a weight w of shape [out, in] with in % group_size == 0, per group of
  group_size consecutive elements along the last axis:
      w_min = min(group), w_max = max(group)
      n_bins = 2**bits - 1, eps = 1e-7
      scale = max((w_max - w_min) / n_bins, eps)
      if |w_min| > |w_max|:  edge = w_min            (scale stays positive)
      else:                  edge = w_max, scale = -scale
      q0 = round(edge / scale)
      if q0 != 0: scale = edge / q0,  bias = edge    (edge lands exactly on a level,
      else:       bias = 0                            and 0 is exactly representable)
      q = clip(round((w - bias) / scale), 0, n_bins)
  so that w ~= scale * q + bias.  Note the sign convention: MLX keeps the
  scale POSITIVE when the minimum has the larger magnitude (bias = w_min) and
  makes it NEGATIVE when the maximum does (bias = w_max, q counts down from
  it).  round() is numpy.rint, i.e. round half to even (MLX's CPU `round`);
  the Metal kernel's round() is half away from zero, so quantize_affine()
  reports exact .5 ties and make_goldens.py refuses data that has any, which
  makes the stored q independent of the rule.  The Metal kernel also starts
  its running max at 0, which differs from the CPU path only for groups that
  are entirely negative; make_goldens.py refuses those too.

  Storage (what mlx-lm writes): q packed little-endian into uint32 words,
  32/bits elements a word, element i of a word in bits [i*bits, (i+1)*bits);
  `<path>.weight` U32 [out, in*bits/32]; `<path>.scales` and `<path>.biases`
  in the model's float dtype (here BF16) [out, in/group_size].

  Dequantization (what the reference and the engine compute), in float32:
      w = float32(q) * float32(scale_bf16) + float32(bias_bf16)
"""

import json
import struct

import numpy as np

# --- bfloat16 -------------------------------------------------------------


def f32_to_bf16_bits(x):
    """Rounds float32 values to bfloat16 (nearest, ties to even); returns uint16 bits."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if not np.all(np.isfinite(x)):
        raise ValueError("bf16 conversion of a non-finite value")
    u = x.view(np.uint32).astype(np.uint64)
    rounding = ((u >> np.uint64(16)) & np.uint64(1)) + np.uint64(0x7FFF)
    return ((u + rounding) >> np.uint64(16)).astype(np.uint16)


def bf16_bits_to_f32(b):
    """Widens uint16 bfloat16 bits to float32 exactly."""
    b = np.ascontiguousarray(b, dtype=np.uint16)
    return (b.astype(np.uint32) << np.uint32(16)).view(np.float32)


def round_bf16(x):
    """Returns x rounded to the nearest bfloat16, as float32."""
    return bf16_bits_to_f32(f32_to_bf16_bits(x))


# --- MLX affine quantization ---------------------------------------------


def quantize_affine(w, group_size, bits):
    """Quantizes a 2-D float32 matrix with MLX's affine scheme (see module doc).

    Returns (q, scales, biases, stats): q uint32 [out, in] (unpacked levels),
    scales and biases float32 [out, in/group_size] (not yet rounded to bf16),
    and stats, a dict with the number of exact .5 ties met while rounding and
    the number of groups that are entirely negative.
    """
    w = np.ascontiguousarray(w, dtype=np.float32)
    if w.ndim > 2:  # stacked experts [..., out, in]: each row quantizes alike
        q, s, b, st = quantize_affine(w.reshape(-1, w.shape[-1]), group_size, bits)
        lead = w.shape[:-1]
        return q.reshape(w.shape), s.reshape(lead + (-1,)), b.reshape(lead + (-1,)), st
    if w.ndim != 2 or w.shape[1] % group_size != 0:
        raise ValueError(f"cannot quantize shape {w.shape} with group size {group_size}")
    if bits not in (2, 4, 8):
        raise ValueError(f"unsupported bits {bits}")
    out_dim, in_dim = w.shape
    g = w.reshape(out_dim, in_dim // group_size, group_size)
    n_bins = np.float32((1 << bits) - 1)
    eps = np.float32(1e-7)
    w_max = g.max(axis=-1, keepdims=True)
    w_min = g.min(axis=-1, keepdims=True)
    mask = np.abs(w_min) > np.abs(w_max)
    scale = np.maximum((w_max - w_min) / n_bins, eps).astype(np.float32)
    scale = np.where(mask, scale, -scale).astype(np.float32)
    edge = np.where(mask, w_min, w_max).astype(np.float32)
    ratio0 = (edge / scale).astype(np.float32)
    q0 = np.rint(ratio0).astype(np.float32)
    safe_q0 = np.where(q0 != 0, q0, np.float32(1)).astype(np.float32)
    scale = np.where(q0 != 0, edge / safe_q0, scale).astype(np.float32)
    bias = np.where(q0 == 0, np.float32(0), edge).astype(np.float32)
    ratio = ((g - bias) / scale).astype(np.float32)
    q = np.clip(np.rint(ratio), 0, n_bins).astype(np.uint32)
    ties = int(np.count_nonzero(np.abs(ratio - np.floor(ratio)) == 0.5))
    ties += int(np.count_nonzero(np.abs(ratio0 - np.floor(ratio0)) == 0.5))
    stats = {"ties": ties, "all_negative_groups": int(np.count_nonzero(w_max < 0))}
    return (
        q.reshape(out_dim, in_dim),
        scale.reshape(out_dim, in_dim // group_size),
        bias.reshape(out_dim, in_dim // group_size),
        stats,
    )


def pack(q, bits):
    """Packs levels q [out, in] into uint32 words [out, in*bits/32], element i in bits [i*bits, (i+1)*bits)."""
    per_word = 32 // bits
    if q.ndim > 2:
        return pack(q.reshape(-1, q.shape[-1]), bits).reshape(q.shape[:-1] + (-1,))
    out_dim, in_dim = q.shape
    if in_dim % per_word != 0:
        raise ValueError(f"cannot pack {in_dim} elements {per_word} to a word")
    q = q.astype(np.uint32).reshape(out_dim, in_dim // per_word, per_word)
    shifts = (np.arange(per_word, dtype=np.uint32) * np.uint32(bits)).astype(np.uint32)
    return np.bitwise_or.reduce(q << shifts, axis=-1).astype(np.uint32)


def unpack(words, bits):
    """Inverts pack(): uint32 words [out, n] -> levels uint32 [out, n*32/bits]."""
    per_word = 32 // bits
    words = np.ascontiguousarray(words, dtype=np.uint32)
    shifts = (np.arange(per_word, dtype=np.uint32) * np.uint32(bits)).astype(np.uint32)
    mask = np.uint32((1 << bits) - 1)
    levels = (words[..., None] >> shifts) & mask
    return levels.reshape(words.shape[0], -1)


def dequantize(words, scales, biases, group_size, bits):
    """Dequantizes packed words with float32 scales/biases: float32(q)*scale + bias, in float32."""
    if words.ndim > 2:  # stacked experts
        lead = words.shape[:-1]
        flat = dequantize(words.reshape(-1, words.shape[-1]), np.asarray(scales).reshape(-1, np.shape(scales)[-1]),
                          np.asarray(biases).reshape(-1, np.shape(biases)[-1]), group_size, bits)
        return flat.reshape(lead + (-1,))
    q = unpack(words, bits).astype(np.float32)
    out_dim, in_dim = q.shape
    g = q.reshape(out_dim, in_dim // group_size, group_size)
    s = np.asarray(scales, dtype=np.float32)[..., None]
    b = np.asarray(biases, dtype=np.float32)[..., None]
    prod = (g * s).astype(np.float32)
    return (prod + b).astype(np.float32).reshape(out_dim, in_dim)


# --- safetensors ------------------------------------------------------------

_DTYPES = {"F32": ("<f4", 4), "BF16": ("<u2", 2), "U32": ("<u4", 4), "F16": ("<f2", 2)}


def write_safetensors(path, tensors, metadata=None):
    """Writes tensors {name: (dtype, ndarray)} (dtype "F32", "BF16" given as uint16 bits, or "U32").

    Tensors are laid out in sorted name order; the header is padded with
    spaces to a multiple of 8 bytes.
    """
    header = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    blobs = []
    offset = 0
    for name in sorted(tensors):
        dtype, arr = tensors[name]
        np_dtype, _ = _DTYPES[dtype]
        data = np.ascontiguousarray(arr).astype(np_dtype, copy=False).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * ((8 - len(raw) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for data in blobs:
            f.write(data)


def read_safetensors(path):
    """Reads a safetensors file into {name: (dtype, ndarray)}; BF16 comes back as uint16 bits."""
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8 : 8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info["dtype"]
        if dtype not in _DTYPES:
            raise ValueError(f"tensor {name!r}: unsupported dtype {dtype!r}")
        np_dtype, size = _DTYPES[dtype]
        start, end = info["data_offsets"]
        count = int(np.prod(info["shape"], dtype=np.int64))
        if end - start != count * size:
            raise ValueError(f"tensor {name!r}: {end - start} bytes for shape {info['shape']}")
        arr = np.frombuffer(buf, dtype=np_dtype, count=count, offset=base + start).reshape(info["shape"])
        out[name] = (dtype, arr)
    return out


def as_f32(dtype, arr):
    """Converts a tensor read by read_safetensors to float32 (F32, F16 or BF16)."""
    if dtype == "F32" or dtype == "F16":
        return np.asarray(arr, dtype=np.float32)
    if dtype == "BF16":
        return bf16_bits_to_f32(arr)
    raise ValueError(f"dtype {dtype!r} is not a float type")
