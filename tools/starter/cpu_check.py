#!/usr/bin/env python3
"""cpu_check.py runs a saved starter model on the CPU with an independent,
from-scratch Llama implementation (PyTorch tensors only; no transformers, no
tokenizers package) and measures greedy decode speed.

It checks that the files alone (config.json, model.safetensors,
tokenizer.json, tokenizer_config.json) define the model, the way Hearth's
generic tier reads them, and that decoding is fast on a small CPU.  Prompts
must be ASCII unless the `regex` package (Debian: python3-regex) is there:
the fallback pre-tokenizer split below is exact for ASCII text only.
finetune_cpu.py trains this same model (Llama.logits) and tokenizes its
corpus with this BPE.

    python3 tools/starter/cpu_check.py .cache/starter/out/model --threads 2
"""

import argparse
import json
import math
import os
import re
import struct
import sys
import time

import torch
import torch.nn.functional as F

try:  # the exact Llama 3 split needs \p{L} and \p{N}
    import regex
except ImportError:
    regex = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import starter_common as sc  # noqa: E402

# The Llama 3 split regex with \p{L} -> [^\W\d_] and \p{N} -> \d: the same
# on ASCII text.
SPLIT = re.compile(r"'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])|[^\r\n\w]?[^\W\d_]+|\d{1,3}|"
                   r" ?[^\s\w]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def byte_map():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


class BPE:
    """BPE is a minimal byte-level BPE encoder/decoder over tokenizer.json."""

    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            tj = json.load(f)
        self.vocab = tj["model"]["vocab"]
        merges = tj["model"]["merges"]
        self.ranks = {tuple(m.split(" ") if isinstance(m, str) else m): i for i, m in enumerate(merges)}
        self.special = {t["content"]: t["id"] for t in tj["added_tokens"]}
        self.inv = {v: k for k, v in self.vocab.items()}
        for k, v in self.special.items():
            self.inv[v] = k
        self.bm = byte_map()
        self.ub = {c: b for b, c in self.bm.items()}
        self.sp_re = re.compile("(" + "|".join(re.escape(s) for s in self.special) + ")")
        self.split = None
        pre = tj.get("pre_tokenizer") or {}
        for p in pre.get("pretokenizers", [pre]):
            if p.get("type") == "Split" and regex is not None:
                self.split = regex.compile(p["pattern"]["Regex"])
        self.cache = {}

    def _word(self, w):
        ids = self.cache.get(w)
        if ids is None:
            ids = self.cache[w] = self._merge(w)
        return ids

    def _merge(self, w):
        parts = [self.bm[b] for b in w.encode("utf-8")]
        while len(parts) > 1:
            best = min(((self.ranks.get((a, b), 1 << 30), i) for i, (a, b) in enumerate(zip(parts, parts[1:]))))
            if best[0] == 1 << 30:
                break
            i = best[1]
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        return [self.vocab[p] for p in parts]

    def encode(self, text):
        split = self.split
        if split is None:
            if not text.isascii():
                raise ValueError("without the regex package, cpu_check encodes ASCII text only")
            split = SPLIT
        ids = []
        for seg in self.sp_re.split(text):
            if seg in self.special:
                ids.append(self.special[seg])
            elif seg:
                for w in split.findall(seg):
                    ids.extend(self._word(w))
        return ids

    def decode(self, ids):
        out = bytearray()
        for i in ids:
            t = self.inv[i]
            if i in self.special.values():
                continue
            out.extend(self.ub[c] for c in t)
        return out.decode("utf-8", errors="replace")


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        dt = {"BF16": torch.bfloat16, "F32": torch.float32, "F16": torch.float16}.get(info["dtype"])
        if dt is None:
            raise SystemExit(f"{path}: {name} is {info['dtype']}; quantized weights need dequant_mlx.py first")
        out[name] = torch.frombuffer(bytearray(data[a:b]), dtype=dt).reshape(info["shape"]).float()
    return out


class Llama:
    """Llama is a plain Llama (f32): forward decodes one sequence with a KV
    cache; logits runs a batch of rows causally and keeps the autograd graph,
    so finetune_cpu.py trains the tensors in self.w directly."""

    def __init__(self, d, weights=None):
        with open(os.path.join(d, "config.json")) as f:
            c = json.load(f)
        self.c = c
        self.w = weights if weights is not None else load_safetensors(os.path.join(d, "model.safetensors"))
        self.L, self.H, self.KV = c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"]
        self.hd = c.get("head_dim") or c["hidden_size"] // self.H
        rp = c.get("rope_parameters") or {}
        theta = rp.get("rope_theta", c.get("rope_theta", 10000.0))
        inv = 1.0 / (theta ** (torch.arange(0, self.hd, 2).float() / self.hd))
        pos = torch.arange(c["max_position_embeddings"]).float()
        f = torch.outer(pos, inv)
        emb = torch.cat([f, f], -1)
        self.cos, self.sin = emb.cos(), emb.sin()
        self.tied = bool(c.get("tie_word_embeddings"))
        self.eps = c["rms_norm_eps"]
        self.t = None

    def head(self):
        return self.w["model.embed_tokens.weight" if self.tied else "lm_head.weight"]

    def norm(self, x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * w

    def rope(self, x, p):
        cos, sin = self.cos[p][:, None, :], self.sin[p][:, None, :]
        h = x.shape[-1] // 2
        rot = torch.cat([-x[..., h:], x[..., :h]], -1)
        return x * cos + rot * sin

    def layer(self, i, x, p, start, cache, proj):
        """layer runs decoder layer i on x [B, T, hidden] at positions p
        (start..); proj(h, name) applies the named projection matrix."""
        B, T, _ = x.shape
        pre = f"model.layers.{i}."
        h = self.norm(x, self.w[pre + "input_layernorm.weight"])
        q = proj(h, pre + "self_attn.q_proj.weight").view(B, T, self.H, self.hd)
        k = proj(h, pre + "self_attn.k_proj.weight").view(B, T, self.KV, self.hd)
        v = proj(h, pre + "self_attn.v_proj.weight").view(B, T, self.KV, self.hd)
        q, k = self.rope(q, p), self.rope(k, p)
        if cache is not None:
            if i in cache:
                k = torch.cat([cache[i][0], k], 1)
                v = torch.cat([cache[i][1], v], 1)
            cache[i] = (k, v)
        rep = self.H // self.KV
        kk = k.repeat_interleave(rep, 2).transpose(1, 2)
        vv = v.repeat_interleave(rep, 2).transpose(1, 2)
        att = (q.transpose(1, 2) @ kk.transpose(2, 3)) / math.sqrt(self.hd)
        S = k.shape[1]
        mask = torch.arange(S)[None, :] > (torch.arange(T)[:, None] + start)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        o = (att @ vv).transpose(1, 2).reshape(B, T, self.H * self.hd)
        x = x + proj(o, pre + "self_attn.o_proj.weight")
        h = self.norm(x, self.w[pre + "post_attention_layernorm.weight"])
        g = proj(h, pre + "mlp.gate_proj.weight")
        u = proj(h, pre + "mlp.up_proj.weight")
        return x + proj(F.silu(g) * u, pre + "mlp.down_proj.weight")

    def logits(self, ids):
        """logits returns next-token logits [B, T, vocab] for rows ids [B, T]
        starting at position 0, differentiable in self.w."""
        x = F.embedding(ids, self.w["model.embed_tokens.weight"])
        p = torch.arange(ids.shape[1])
        for i in range(self.L):
            x = self.layer(i, x, p, 0, None, lambda h, n: F.linear(h, self.w[n]))
        return F.linear(self.norm(x, self.w["model.norm.weight"]), self.head())

    @torch.no_grad()
    def forward(self, ids, start, cache):
        """forward runs ids at positions start.. and returns last logits."""
        if self.t is None:
            # Projection weights transposed once, so each step is a plain x @ W.
            self.t = {k: v.T.contiguous() for k, v in self.w.items() if k.endswith("proj.weight")}
            self.head_t = self.head().T.contiguous()
        x = self.w["model.embed_tokens.weight"][ids][None]
        p = torch.arange(start, start + len(ids))
        for i in range(self.L):
            x = self.layer(i, x, p, start, cache, lambda h, n: h @ self.t[n])
        x = self.norm(x[0, -1], self.w["model.norm.weight"])
        return x @ self.head_t


def generate(m, prompt, max_new, penalty, stop):
    cache = {}
    seen = list(prompt)
    t0 = time.perf_counter()
    logits = m.forward(torch.tensor(prompt), 0, cache)
    t_prefill = time.perf_counter() - t0
    out = []
    t1 = time.perf_counter()
    for _ in range(max_new):
        idx = torch.tensor(sorted(set(seen)))
        s = logits[idx]
        logits[idx] = torch.where(s < 0, s * penalty, s / penalty)
        nxt = int(logits.argmax())
        if nxt in stop:
            break
        out.append(nxt)
        seen.append(nxt)
        logits = m.forward(torch.tensor([nxt]), len(seen) - 1, cache)
    dt = time.perf_counter() - t1
    return out, t_prefill, dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-new", type=int, default=128)
    ap.add_argument("-q", "--question", action="append", dest="questions", help="repeatable")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    tok = BPE(os.path.join(a.model_dir, "tokenizer.json"))
    render = sc.load_template(os.path.join(a.model_dir, "tokenizer_config.json"))
    m = Llama(a.model_dir)
    qs = a.questions or ["What is Hearth?", "How do I pull a model?", "What does tight mean?",
                         "Is my data private?", "Tell me about the moon."]
    total_tok, total_s = 0, 0.0
    for q in qs:
        prompt = tok.encode(render([{"role": "user", "content": q}], True))
        out, tp, td = generate(m, prompt, a.max_new, 1.1, {sc.IM_END, sc.EOT})
        total_tok += len(out)
        total_s += td
        print(f"Q: {q}\nA: {tok.decode(out)}\n   [{len(prompt)} prompt tokens, prefill {tp * 1000:.0f} ms; "
              f"{len(out)} tokens at {len(out) / td:.1f} tokens/s]\n", flush=True)
    print(f"decode: {total_tok} tokens in {total_s:.2f}s = {total_tok / total_s:.1f} tokens/s "
          f"(f32, {a.threads} threads, PyTorch {torch.__version__})")


if __name__ == "__main__":
    main()
