#!/usr/bin/env python3
"""finetune_cpu.py continues training a saved starter model on the CPU, for
when no GPU time is at hand: a short, small-LR fine-tune of the shipped
weights on the same mixture train.py draws (corpus windows plus masked Q&A
chats and dialogues), time-boxed by wall clock.

It needs only PyTorch (Debian 12: apt-get install python3-torch; install
libopenblas0-pthread too, or the reference BLAS makes it ~15x slower),
numpy, jinja2 and regex (python3-jinja2, python3-regex): the model is
cpu_check.py's plain Llama and the tokenizer its BPE, so no transformers or
tokenizers package is involved.  Run it with Debian's /usr/bin/python3.

    /usr/bin/python3 tools/starter/dequant_mlx.py assets/starter /tmp/run7/init
    /usr/bin/python3 tools/starter/finetune_cpu.py --init /tmp/run7/init \\
        --out /tmp/run7/out --minutes 40 --qa-include-eval

(docs/starter-model.md, "Run 7", has the exact command of that run.)  OUT
gets model.safetensors (bfloat16 by default, or float32; the tensor names
and layout dequant_mlx.py writes), config.json and the tokenizer files from
--init, and metrics.json (perplexity on a fixed set of valid.txt windows before and
after, the loss log, steps, tokens and wall time).  --eval-only measures a
model directory's perplexity on the same windows and trains nothing.
"""

import os

# One BLAS thread unless told otherwise: the machine is shared.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_check  # noqa: E402
import dequant_mlx  # noqa: E402
import starter_common as sc  # noqa: E402
import train  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--init", required=True, help="float32 model directory to start from (dequant_mlx.py output)")
    ap.add_argument("--out", help="output model directory (not needed with --eval-only)")
    ap.add_argument("--data", default=".cache/starter/data")
    ap.add_argument("--cache", default=".cache/starter/tok", help="where tokenized corpus files are kept")
    ap.add_argument("--qa", default=os.path.join(sc.HERE, "hearth_qa.jsonl"))
    ap.add_argument("--dialogue", default=os.path.join(sc.HERE, "hearth_dialogue.jsonl"))
    ap.add_argument("--heldout", default=os.path.join(sc.HERE, "starter_heldout.jsonl"))
    ap.add_argument("--vary", type=float, default=0.15)
    ap.add_argument("--qa-passes", type=int, default=12)
    ap.add_argument("--qa-frac", type=float, default=0.3, help="share of rows drawn from Q&A chats")
    ap.add_argument("--qa-include-eval", action="store_true", help="train on the held-out Q&A pairs too")
    ap.add_argument("--boost", default="",
                    help="comma-separated Q&A pair ids whose chats appear --boost-times times per pass: "
                         "answers corrected since the init weights, which a short run would otherwise "
                         "see only once or twice")
    ap.add_argument("--boost-times", type=int, default=4)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--batch", type=int, default=8, help="rows of --seq tokens per step")
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=5, help="warm-up steps")
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--minutes", type=float, default=40.0, help="wall-clock budget of the training loop")
    ap.add_argument("--total-steps", type=int, default=0,
                    help="fix the schedule length in steps (default: the cosine runs over the wall-clock budget, "
                         "because the step time swings with the load of a shared machine)")
    ap.add_argument("--valid-windows", type=int, default=96,
                    help="evenly spaced non-overlapping valid.txt windows for the perplexity check")
    ap.add_argument("--log-every", type=int, default=5)
    ap.add_argument("--save-minutes", type=float, default=10.0, help="write OUT's weights this often")
    ap.add_argument("--dtype", choices=["bfloat16", "float32"], default="bfloat16",
                    help="dtype of the saved weights (bfloat16, like train.py's output, so that "
                         "tools/quantize gives the shipped layout: bf16 norms and scales)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--eval-only", action="store_true", help="only measure --init's perplexity")
    return ap.parse_args(argv)


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Encoding:
    def __init__(self, ids):
        self.ids = ids


class Tokenizer:
    """Tokenizer gives cpu_check.BPE the small part of the tokenizers API
    that train.py's stream builders call."""

    def __init__(self, path):
        if cpu_check.regex is None:
            raise SystemExit("the regex package is needed (Debian: apt-get install python3-regex)")
        self.bpe = cpu_check.BPE(path)
        if self.bpe.split is None:
            raise SystemExit(f"{path}: no Split pre-tokenizer")

    def encode(self, text, add_special_tokens=False):
        return Encoding(self.bpe.encode(text))

    def encode_batch(self, texts, add_special_tokens=False):
        return [self.encode(t) for t in texts]

    def token_to_id(self, t):
        return self.bpe.special.get(t, self.bpe.vocab.get(t))

    def get_vocab_size(self):
        return len(self.bpe.inv)


def file_md5(path):
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cached_stream(tok, path, tok_path, cache_dir):
    """cached_stream is train.text_stream, kept on disk keyed by the corpus
    file's and the tokenizer's md5 (the pure-Python BPE takes minutes)."""
    key = f"{file_md5(path)[:12]}-{file_md5(tok_path)[:12]}"
    f = os.path.join(cache_dir, f"{os.path.basename(path)}.{key}.npz")
    if os.path.exists(f):
        z = np.load(f)
        return z["ids"], int(z["bytes"])
    t0 = time.time()
    ids, nbytes = train.text_stream(tok, path)
    os.makedirs(cache_dir, exist_ok=True)
    np.savez(f + ".tmp.npz", ids=ids.astype(np.int32), bytes=nbytes)
    os.replace(f + ".tmp.npz", f)
    log(f"tokenized {path}: {len(ids):,} tokens in {time.time() - t0:.0f}s -> {f}")
    return ids, nbytes


def valid_offsets(valid, seq, n):
    """valid_offsets picks n evenly spaced windows among the non-overlapping
    (seq+1)-token windows of the validation stream (all of them for n <= 0)."""
    total = (len(valid) - 1) // seq
    if total < 1:
        raise SystemExit("valid.txt is shorter than one window")
    idx = np.arange(total) if n <= 0 or n >= total else np.linspace(0, total - 1, n).round().astype(np.int64)
    return idx * seq


@torch.no_grad()
def window_loss(m, stream, offsets, seq, bs=8):
    """window_loss is the mean next-token loss (nats) over the windows."""
    tot, cnt = 0.0, 0
    ar = np.arange(seq + 1)
    for i in range(0, len(offsets), bs):
        w = torch.from_numpy(stream[offsets[i:i + bs, None] + ar].astype(np.int64))
        logits = m.logits(w[:, :-1])
        tot += F.cross_entropy(logits.reshape(-1, logits.size(-1)), w[:, 1:].reshape(-1), reduction="sum").item()
        cnt += w[:, 1:].numel()
    return tot / max(1, cnt), cnt


def lr_at(step, frac, a):
    """lr_at is the learning rate: linear warm-up over a.warmup steps, then a
    cosine to a.min_lr_frac of a.lr over frac (0..1) of the schedule."""
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    return a.lr * (a.min_lr_frac + (1 - a.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))


def write_bf16(path, tensors):
    """write_bf16 writes tensors as BF16 safetensors (rounded to nearest
    even), names sorted, in the layout of dequant_mlx.write_safetensors."""
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        t = tensors[name].detach().to(torch.bfloat16).contiguous()
        raw = t.view(torch.int16).numpy().tobytes()
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for raw in blobs:
            f.write(raw)


def save_model(m, init, out, dtype):
    """save_model writes m's weights and --init's config (with dtype) and
    tokenizer files into out."""
    os.makedirs(out, exist_ok=True)
    tmp = os.path.join(out, "model.safetensors.tmp")
    if dtype == "bfloat16":
        write_bf16(tmp, m.w)
    else:
        dequant_mlx.write_safetensors(tmp, {k: v.detach().numpy() for k, v in m.w.items()})
    os.replace(tmp, os.path.join(out, "model.safetensors"))
    for name in ("generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        if os.path.exists(os.path.join(init, name)):
            shutil.copy(os.path.join(init, name), os.path.join(out, name))
    cfg = dict(m.c, dtype=dtype)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


def main():
    a = parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    t_proc = time.time()
    need = [os.path.join(a.init, f) for f in ("config.json", "model.safetensors", "tokenizer.json",
                                               "tokenizer_config.json")]
    need += [os.path.join(a.data, "valid.txt")] + ([] if a.eval_only else [os.path.join(a.data, "train.txt")])
    missing = [f for f in need if not os.path.isfile(f)]
    if missing:
        raise SystemExit(f"missing: {', '.join(missing)} (see docs/starter-model.md for the corpus and dequant_mlx.py)")
    with open(need[0]) as f:
        if json.load(f).get("quantization"):
            raise SystemExit(f"{a.init} is quantized: run dequant_mlx.py on it first")
    tok_path = os.path.join(a.init, "tokenizer.json")
    tok = Tokenizer(tok_path)
    for i, t in enumerate(sc.SPECIALS):
        if tok.token_to_id(t) != i:
            raise SystemExit(f"tokenizer: {t} is not id {i}")
    m = cpu_check.Llama(a.init)
    if m.c["vocab_size"] != tok.get_vocab_size():
        raise SystemExit(f"config vocab {m.c['vocab_size']} != tokenizer vocab {tok.get_vocab_size()}")
    n_params = sum(v.numel() for v in m.w.values())

    valid, valid_bytes = cached_stream(tok, os.path.join(a.data, "valid.txt"), tok_path, a.cache)
    voffs = valid_offsets(valid, a.seq, a.valid_windows)
    t0 = time.time()
    vl0, vcnt = window_loss(m, valid, voffs, a.seq)
    log(f"valid loss {vl0:.4f} (perplexity {math.exp(vl0):.2f}) on {len(voffs)} windows, {vcnt:,} tokens, "
        f"{time.time() - t0:.0f}s: {a.init}")
    if a.eval_only:
        return
    if not a.out:
        raise SystemExit("--out is required unless --eval-only")

    render = sc.load_template(os.path.join(a.init, "tokenizer_config.json"))
    system_prompt = sc.load_system_prompt()
    qa = sc.load_qa(a.qa)
    dialogues = sc.load_dialogues(a.dialogue, qa) if a.dialogue else []
    if a.heldout and os.path.exists(a.heldout):
        sc.check_heldout(qa, dialogues, a.heldout)
    text, text_bytes = cached_stream(tok, os.path.join(a.data, "train.txt"), tok_path, a.cache)
    boost = [b for b in a.boost.split(",") if b]
    unknown = sorted(set(boost) - {p["id"] for p in qa})
    if unknown:
        raise SystemExit(f"--boost: no such Q&A pair: {unknown}")
    qa_mix = qa + [p for p in qa if p["id"] in boost] * max(0, a.boost_times - 1)
    chat, chat_mask, chat_starts = train.chat_stream(tok, qa_mix, system_prompt, render, a.seed, passes=a.qa_passes,
                                                      include_eval=a.qa_include_eval, dialogues=dialogues,
                                                      vary_p=a.vary)
    log(f"data: text {len(text):,} tokens, valid {len(valid):,}; {len(qa)} pairs, {len(dialogues)} dialogues; "
        f"{len(boost)} boosted x{a.boost_times}; chats {len(chat_starts):,} in {len(chat):,} tokens ({int(chat_mask.sum()):,} trained); "
        f"{time.time() - t_proc:.0f}s")

    for v in m.w.values():
        v.requires_grad_(True)
    decay = [v for v in m.w.values() if v.dim() >= 2]
    no_decay = [v for v in m.w.values() if v.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    batcher = train.Batcher(text.astype(np.int64), chat, chat_mask, chat_starts, a.batch, a.seq, a.qa_frac,
                            a.seed, "cpu")
    n_text = batcher.n_text
    st = {"step": 0, "total_steps": a.total_steps, "tokens": 0, "text_tokens": 0, "chat_tokens": 0,
          "answer_tokens": 0}
    hist = []
    t_loop = time.time()
    stop_at = t_loop + a.minutes * 60
    last_save = t_loop
    step_time = None
    t_warm = None  # when warm-up ended: the cosine runs from there to stop_at
    log(f"training: {n_params:,} parameters, {a.batch} rows x {a.seq} ({n_text} text, {a.batch - n_text} chat), "
        f"budget {a.minutes:.0f} min, {a.threads} thread(s), PyTorch {torch.__version__}")
    while True:
        if st["total_steps"] and st["step"] >= st["total_steps"]:
            break
        if time.time() + (step_time or 0) > stop_at:
            log("time budget reached")
            break
        x, y = batcher.next()
        if st["step"] == a.warmup:
            t_warm = time.time()
        if a.total_steps:
            frac = (st["step"] - a.warmup) / max(1, a.total_steps - a.warmup)
        else:
            frac = (time.time() - t_warm) / max(1.0, stop_at - t_warm) if t_warm else 0.0
        lr = lr_at(st["step"], frac, a)
        for g in opt.param_groups:
            g["lr"] = lr
        logits = m.logits(x)
        tok_loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1), ignore_index=-100,
                                   reduction="none").view(y.shape)
        valid_tok = y != -100
        loss = tok_loss.sum() / valid_tok.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(list(m.w.values()), 1.0).item()
        opt.step()
        st["step"] += 1
        st["tokens"] += x.numel()
        st["text_tokens"] += x[:n_text].numel()
        st["chat_tokens"] += x[n_text:].numel()
        st["answer_tokens"] += int(valid_tok[n_text:].sum())
        with torch.no_grad():
            tl = (tok_loss[:n_text].sum() / valid_tok[:n_text].sum().clamp(min=1)).item()
            cl = (tok_loss[n_text:].sum() / valid_tok[n_text:].sum().clamp(min=1)).item()
        hist.append({"step": st["step"], "loss": round(loss.item(), 4), "text_loss": round(tl, 4),
                     "answer_loss": round(cl, 4), "lr": lr, "grad_norm": round(gnorm, 3),
                     "t": round(time.time() - t_loop, 1)})
        k = st["step"]
        # The loop stops before a step that would end past the budget.
        step_time = (time.time() - t_loop) / k
        if k % a.log_every == 0 or k <= 2:
            log(f"step {k} ({(time.time() - t_loop) / 60:.1f} of {a.minutes:g} min) loss {loss.item():.4f} (text {tl:.4f}, answers {cl:.4f}) "
                f"lr {lr:.2e} grad {gnorm:.2f} tokens {st['tokens']:,}")
        if time.time() - last_save > a.save_minutes * 60:
            save_model(m, a.init, a.out, a.dtype)
            last_save = time.time()
            log(f"saved step {k} -> {a.out}")
    train_s = time.time() - t_loop

    for v in m.w.values():
        v.requires_grad_(False)
    del opt
    save_model(m, a.init, a.out, a.dtype)
    t0 = time.time()
    vl1, _ = window_loss(m, valid, voffs, a.seq)
    log(f"valid loss {vl0:.4f} -> {vl1:.4f} (perplexity {math.exp(vl0):.2f} -> {math.exp(vl1):.2f}), "
        f"{time.time() - t0:.0f}s")
    metrics = {
        "init": a.init, "args": vars(a), "torch": torch.__version__, "parameters": n_params,
        "steps": st["step"], "tokens": st["tokens"], "text_tokens": st["text_tokens"],
        "chat_tokens": st["chat_tokens"], "answer_tokens_trained": st["answer_tokens"],
        "train_seconds": round(train_s, 1), "step_seconds": round(train_s / max(1, st["step"]), 2),
        "wall_seconds": round(time.time() - t_proc, 1),
        "valid": {"windows": len(voffs), "tokens": vcnt, "loss_before": round(vl0, 4), "loss_after": round(vl1, 4),
                  "perplexity_before": round(math.exp(vl0), 3), "perplexity_after": round(math.exp(vl1), 3)},
        "text_epochs": round(st["text_tokens"] / len(text), 4), "valid_bytes": valid_bytes,
        "train_text_tokens": len(text), "train_text_bytes": text_bytes, "history": hist,
    }
    with open(os.path.join(a.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    log(f"done: {st['step']} steps, {st['tokens']:,} tokens in {train_s / 60:.1f} min -> {a.out}")


if __name__ == "__main__":
    main()
