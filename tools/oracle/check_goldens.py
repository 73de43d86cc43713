#!/usr/bin/env python3
"""Recomputes Hearth's parity goldens with an independent numpy forward pass.

Reads testdata/models/manifest.json and, for each entry, only what an engine
reads: config.json and model.safetensors (F32, BF16 or MLX-quantized U32 +
scales/biases).  It runs the decoder (llama, mistral, qwen2, qwen3) in
float64, greedy-decodes from the golden's prompt with a full re-run each
step, and compares the logits with golden.json's.  Needs only python3 and
numpy, so it runs on a development machine; it is a second opinion on the
transformers oracle and a plain-code statement of what the engine computes.

Usage: python3 check_goldens.py [--dir testdata/models] [--only NAME]
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlxquant  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def load_weights(entry_dir, cfg):
    """Returns {name: float64 array}, dequantizing MLX-quantized tensors."""
    files = mlxquant.read_safetensors(os.path.join(entry_dir, "model.safetensors"))
    qconf = cfg.get("quantization")
    out = {}
    for name, (dtype, arr) in files.items():
        if dtype == "U32":
            path = name[: -len(".weight")]
            spec = qconf.get(path, qconf) if isinstance(qconf.get(path), dict) else qconf
            s = mlxquant.as_f32(*files[path + ".scales"])
            b = mlxquant.as_f32(*files[path + ".biases"])
            out[name] = mlxquant.dequantize(arr, s, b, spec["group_size"], spec["bits"]).astype(np.float64)
        elif qconf and (name.endswith(".scales") or name.endswith(".biases")):
            continue
        else:
            out[name] = mlxquant.as_f32(dtype, arr).astype(np.float64)
    if "lm_head.weight" not in out:
        if not cfg.get("tie_word_embeddings"):
            raise ValueError("no lm_head.weight and tie_word_embeddings is not set")
        out["lm_head.weight"] = out["model.embed_tokens.weight"]
    return out


def rope_params(cfg):
    rp = cfg.get("rope_parameters")
    if rp is None:  # transformers 4 layout
        rp = dict(cfg.get("rope_scaling") or {})
        rp.setdefault("rope_type", rp.get("type", "default"))
        rp["rope_theta"] = cfg.get("rope_theta", 10000.0)
    return rp


def inv_freq(cfg, head_dim):
    rp = rope_params(cfg)
    theta = float(rp["rope_theta"])
    inv = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    kind = rp.get("rope_type", "default")
    if kind == "default":
        return inv
    if kind == "linear":
        return inv / float(rp["factor"])
    if kind == "llama3":
        factor = float(rp["factor"])
        lo, hi = float(rp["low_freq_factor"]), float(rp["high_freq_factor"])
        old = float(rp["original_max_position_embeddings"])
        wavelen = 2 * np.pi / inv
        out = np.where(wavelen > old / lo, inv / factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        mid = (wavelen >= old / hi) & (wavelen <= old / lo)
        return np.where(mid, (1 - smooth) * out / factor + smooth * out, out)
    raise ValueError(f"unsupported rope_type {kind!r}")


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, cos, sin):
    # x [heads, T, hd]; rotate_half layout: pairs (i, i + hd/2).
    half = x.shape[-1] // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rot * sin


def layer_window(cfg, i):
    sw = cfg.get("sliding_window")
    if sw is None:
        return None
    types = cfg.get("layer_types")
    if types is None:
        return sw
    return sw if types[i] == "sliding_attention" else None


def forward(cfg, W, ids):
    """Returns the logits of the last position, in float64."""
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    eps = cfg["rms_norm_eps"]
    T = len(ids)
    freqs = np.outer(np.arange(T, dtype=np.float64), inv_freq(cfg, hd))
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos, sin = np.cos(emb)[None], np.sin(emb)[None]
    x = W["model.embed_tokens.weight"][ids]
    qpos = np.arange(T)[:, None]
    kpos = np.arange(T)[None, :]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."

        def lin(name, h):
            y = h @ W[p + name + ".weight"].T
            bias = W.get(p + name + ".bias")
            return y if bias is None else y + bias

        h = rms_norm(x, W[p + "input_layernorm.weight"], eps)
        q = lin("self_attn.q_proj", h).reshape(T, H, hd)
        k = lin("self_attn.k_proj", h).reshape(T, KV, hd)
        v = lin("self_attn.v_proj", h).reshape(T, KV, hd)
        if p + "self_attn.q_norm.weight" in W:
            q = rms_norm(q, W[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, W[p + "self_attn.k_norm.weight"], eps)
        q, k, v = q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        rep = H // KV
        k, v = np.repeat(k, rep, axis=0), np.repeat(v, rep, axis=0)  # head h uses kv head h // rep
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
        allowed = kpos <= qpos
        window = layer_window(cfg, i)
        if window is not None:
            allowed = allowed & (kpos > qpos - window)
        scores = np.where(allowed[None], scores, -np.inf)
        scores = scores - scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(axis=-1, keepdims=True)
        attn = (probs @ v).transpose(1, 0, 2).reshape(T, H * hd)
        x = x + lin("self_attn.o_proj", attn)
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
        gate = lin("mlp.gate_proj", h)
        act = gate / (1.0 + np.exp(-gate)) * lin("mlp.up_proj", h)
        x = x + lin("mlp.down_proj", act)
    x = rms_norm(x, W["model.norm.weight"], eps)
    return x[-1] @ W["lm_head.weight"].T


def check_entry(root, entry):
    d = os.path.join(root, entry["dir"])
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(d, "golden.json")) as f:
        golden = json.load(f)
    W = load_weights(d, cfg)
    seq = list(golden["prompt_ids"])
    worst = 0.0
    problems = []
    for step, (want_id, want) in enumerate(zip(golden["greedy_ids"], golden["logits"])):
        got = forward(cfg, W, seq)
        diff = float(np.max(np.abs(got - np.asarray(want, dtype=np.float64))))
        worst = max(worst, diff)
        if int(np.argmax(got)) != want_id:
            problems.append(f"step {step}: argmax {int(np.argmax(got))}, golden {want_id}")
        seq.append(want_id)
    tol = entry["tolerance"]["max_abs_logit"]
    if worst > tol:
        problems.append(f"max abs logit diff {worst:.3g} > {tol}")
    return worst, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=os.path.normpath(os.path.join(HERE, "..", "..", "testdata", "models")))
    ap.add_argument("--only")
    args = ap.parse_args()
    with open(os.path.join(args.dir, "manifest.json")) as f:
        manifest = json.load(f)
    bad = 0
    for entry in manifest["entries"]:
        if args.only and entry["name"] != args.only:
            continue
        worst, problems = check_entry(args.dir, entry)
        status = "ok" if not problems else "FAIL " + "; ".join(problems)
        print(f"{entry['name']:14s} max|dlogit| {worst:.3g}  {status}")
        bad += bool(problems)
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
