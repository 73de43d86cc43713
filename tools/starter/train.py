#!/usr/bin/env python3
"""train.py trains Hearth's starter model: a small Llama-architecture model
(generic tier) on the corpus from build_corpus.py plus the Hearth Q&A set.

It runs on the device machine (PyTorch, transformers, tokenizers).  A run is
time-boxed (--minutes, --deadline), checkpoints into OUT/ckpt at intervals
and at the end (weights, optimizer, step, RNG), and continues from one with
--resume OUT/ckpt.  At the end it measures held-out perplexity on valid.txt
and the Q&A overlap score of greedy answers, and writes OUT/model (the
save_pretrained checkpoint in bf16 with tokenizer and generation config) and
OUT/metrics.json.

    python3 tools/starter/train.py --data .cache/starter/data \\
        --tokenizer OUT/tokenizer.json --out OUT --minutes 6
"""

import argparse
import json
import math
import os
import random
import shutil
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import starter_common as sc  # noqa: E402
import starter_eval  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=".cache/starter/data")
    ap.add_argument("--qa", default=os.path.join(sc.HERE, "hearth_qa.jsonl"))
    ap.add_argument("--dialogue", default=os.path.join(sc.HERE, "hearth_dialogue.jsonl"),
                    help="hand-written multi-turn chats (each trained once per pass over the Q&A)")
    ap.add_argument("--heldout", default=os.path.join(sc.HERE, "starter_heldout.jsonl"),
                    help="evaluation prompts the training must never see (checked before training)")
    ap.add_argument("--vary", type=float, default=0.15,
                    help="chance that a user turn is lower-cased, and that it loses its final punctuation")
    ap.add_argument("--qa-passes", type=int, default=12, help="passes over the Q&A and dialogues in the chat stream")
    ap.add_argument("--tokenizer", help="tokenizer.json (default: the checkpoint's, with --resume)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--resume", help="checkpoint directory written by an earlier run")
    ap.add_argument("--init-from", help="start from the weights of a saved model directory")
    ap.add_argument("--init-max-loss", type=float, default=0,
                    help="with --init-from: stop at once when the initial validation loss is above this")
    ap.add_argument("--keep-final", action="store_true",
                    help="keep the final weights even when an earlier validation check was better "
                         "(a continued run whose point is the chats, not the text)")
    ap.add_argument("--minutes", type=float, default=6.0, help="training-loop budget")
    ap.add_argument("--deadline", type=float, default=0, help="unix time by which training stops")
    ap.add_argument("--reserve", type=float, default=75, help="seconds kept for eval and saving")
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--intermediate", type=int, default=1024)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--batch", type=int, default=128, help="rows of --seq tokens per step")
    ap.add_argument("--qa-frac", type=float, default=0.2, help="share of rows drawn from Q&A chats")
    ap.add_argument("--qa-include-eval", action="store_true",
                    help="train on the held-out pairs too (for the shipped weights; the Q&A score then "
                         "no longer measures held-out answers)")
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--max-epochs", type=float, default=6, help="cap on passes over the text")
    ap.add_argument("--total-steps", type=int, default=0, help="fix the schedule length")
    ap.add_argument("--ckpt-minutes", type=float, default=3.0)
    ap.add_argument("--compile", choices=["auto", "on", "off"], default="auto")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--eval-max-new", type=int, default=160)
    return ap.parse_args(argv)


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def text_stream(tok, path):
    """text_stream tokenizes a corpus file into one array: BOS doc EOT ..."""
    with open(path, encoding="utf-8") as f:
        docs = [d for d in f.read().split(sc.DOC_SEP) if d.strip()]
    encs = tok.encode_batch(docs, add_special_tokens=False)
    total = sum(len(e.ids) + 2 for e in encs)
    arr = np.empty(total, dtype=np.int64)
    pos = 0
    for e in encs:
        n = len(e.ids)
        arr[pos] = sc.BOS
        arr[pos + 1:pos + 1 + n] = e.ids
        arr[pos + 1 + n] = sc.EOT
        pos += n + 2
    return arr, sum(len(d.encode("utf-8")) for d in docs)


def chat_stream(tok, qa, system_prompt, render, seed, passes, include_eval=False, dialogues=(), vary_p=0.0):
    """chat_stream packs `passes` shuffled passes over the training chats into
    one token array with a loss mask and the start of each chat."""
    cache = {}

    def encode(s):
        if s not in cache:
            cache[s] = tok.encode(s, add_special_tokens=False).ids
        return cache[s]

    rnd = random.Random(seed)
    # The piecewise tokenization must equal the template's.
    for turns in [[("What is Hearth?", "A local LLM engine.")], [("Hi", "`hearth ls`\nok")],
                  [("hi", "Hello!"), ("can you read images", "Not yet."), ("ok thanks", "You're welcome.")]]:
        if not sc.check_chat_ids(encode, render, system_prompt, turns):
            raise SystemExit("chat pieces do not tokenize like the rendered template")
    ids, mask, starts = [], [], []
    for _ in range(passes):
        chats = sc.build_chats(qa, encode, system_prompt, rnd, include_eval=include_eval,
                               dialogues=dialogues, vary_p=vary_p)
        rnd.shuffle(chats)
        for c_ids, c_mask in chats:
            starts.append(len(ids))
            ids.extend(c_ids)
            mask.extend(c_mask)
    return np.array(ids, np.int64), np.array(mask, np.bool_), np.array(starts, np.int64)


class Batcher:
    """Batcher draws training rows: random windows of the text stream, and
    windows of the chat stream that begin at a chat."""

    def __init__(self, text, chat, chat_mask, chat_starts, batch, seq, qa_frac, seed, device):
        self.text, self.chat, self.chat_mask = text, chat, chat_mask
        self.starts = chat_starts[chat_starts + seq + 1 <= len(chat)]
        self.n_chat = int(round(batch * qa_frac))
        self.n_text = batch - self.n_chat
        self.seq, self.device = seq, device
        self.rng = np.random.default_rng(seed)
        self.ar = np.arange(seq + 1)

    def next(self):
        offs = self.rng.integers(0, len(self.text) - self.seq - 1, self.n_text)
        st = self.starts[self.rng.integers(0, len(self.starts), self.n_chat)]
        x = np.concatenate([self.text[offs[:, None] + self.ar], self.chat[st[:, None] + self.ar]])
        m = np.concatenate([np.ones((self.n_text, self.seq + 1), np.bool_), self.chat_mask[st[:, None] + self.ar]])
        y = np.where(m[:, 1:], x[:, 1:], -100)
        xt = torch.from_numpy(x[:, :-1]).to(self.device, non_blocking=True)
        yt = torch.from_numpy(y).to(self.device, non_blocking=True)
        return xt, yt


def lr_at(step, total, a):
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    frac = min(1.0, (step - a.warmup) / max(1, total - a.warmup))
    return a.lr * (a.min_lr_frac + (1 - a.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * frac)))


def make_model(a, vocab, device):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(
        vocab_size=vocab, hidden_size=a.hidden, intermediate_size=a.intermediate,
        num_hidden_layers=a.layers, num_attention_heads=a.heads, num_key_value_heads=a.kv_heads,
        head_dim=a.hidden // a.heads, hidden_act="silu", max_position_embeddings=2048,
        rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=True, attention_bias=False, mlp_bias=False, initializer_range=0.02,
        bos_token_id=sc.BOS, eos_token_id=[sc.IM_END, sc.EOT], pad_token_id=sc.PAD, use_cache=True)
    return LlamaForCausalLM(cfg).to(device)


def loss_fn(model, x, y, device):
    with torch.autocast(device_type=device, dtype=torch.bfloat16):
        logits = model(input_ids=x, use_cache=False).logits
    return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), y.reshape(-1), ignore_index=-100)


def save_ckpt(path, raw, opt, st, batcher, tok_path):
    os.makedirs(path, exist_ok=True)
    tmp = os.path.join(path, "state.pt.tmp")
    torch.save({
        "model": raw.state_dict(), "opt": opt.state_dict(), "config": raw.config.to_dict(),
        "state": st, "np_rng": batcher.rng.bit_generator.state,
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "py_rng": random.getstate(),
    }, tmp)
    os.replace(tmp, os.path.join(path, "state.pt"))
    if os.path.abspath(tok_path) != os.path.abspath(os.path.join(path, "tokenizer.json")):
        shutil.copy(tok_path, os.path.join(path, "tokenizer.json"))
    log(f"checkpoint: step {st['step']} -> {path}")


def main():
    a = parse_args()
    from tokenizers import Tokenizer
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    os.makedirs(a.out, exist_ok=True)
    t_proc = time.time()
    deadline = a.deadline or float("inf")

    ck = None
    if a.resume:
        ck = torch.load(os.path.join(a.resume, "state.pt"), map_location="cpu", weights_only=False)
        a.tokenizer = a.tokenizer or os.path.join(a.resume, "tokenizer.json")
    if not a.tokenizer:
        raise SystemExit("--tokenizer is required without --resume")
    tok = Tokenizer.from_file(a.tokenizer)
    vocab = tok.get_vocab_size()
    for i, t in enumerate(sc.SPECIALS):
        if tok.token_to_id(t) != i:
            raise SystemExit(f"tokenizer: {t} is not id {i}")

    render = sc.load_template()
    system_prompt = sc.load_system_prompt()
    qa = sc.load_qa(a.qa)
    dialogues = sc.load_dialogues(a.dialogue, qa) if a.dialogue else []
    if a.heldout and os.path.exists(a.heldout):
        sc.check_heldout(qa, dialogues, a.heldout)
    text, text_bytes = text_stream(tok, os.path.join(a.data, "train.txt"))
    valid, valid_bytes = text_stream(tok, os.path.join(a.data, "valid.txt"))
    chat, chat_mask, chat_starts = chat_stream(tok, qa, system_prompt, render, a.seed, passes=a.qa_passes,
                                                include_eval=a.qa_include_eval, dialogues=dialogues,
                                                vary_p=a.vary)
    log(f"data: text {len(text):,} tokens ({text_bytes / len(text):.2f} bytes/token), valid {len(valid):,}, "
        f"{len(dialogues)} dialogues; chats {len(chat_starts):,} in {len(chat):,} tokens ({int(chat_mask.sum()):,} trained); "
        f"vocab {vocab}; {time.time() - t_proc:.0f}s")

    if ck:
        from transformers import LlamaConfig, LlamaForCausalLM
        raw = LlamaForCausalLM(LlamaConfig.from_dict(ck["config"])).to(device)
        raw.load_state_dict(ck["model"])
    else:
        raw = make_model(a, vocab, device)
        if a.init_from:
            from transformers import LlamaForCausalLM
            src = LlamaForCausalLM.from_pretrained(a.init_from, dtype=torch.float32)
            raw.load_state_dict(src.state_dict())
            del src
    raw.train()
    n_params = sum(p.numel() for p in raw.parameters())
    n_embed = raw.get_input_embeddings().weight.numel()
    log(f"model: {n_params / 1e6:.2f}M parameters ({(n_params - n_embed) / 1e6:.2f}M without the embedding)")

    decay = [p for p in raw.parameters() if p.dim() >= 2]
    no_decay = [p for p in raw.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8,
                            **({"fused": True} if device == "cuda" else {}))
    batcher = Batcher(text, chat, chat_mask, chat_starts, a.batch, a.seq, a.qa_frac, a.seed, device)
    st = {"step": 0, "total_steps": a.total_steps, "tokens": 0, "train_seconds": 0.0,
          "best_loss": None, "best_step": None, "compiled": False, "runs": 0}
    if ck:
        opt.load_state_dict(ck["opt"])
        st.update(ck["state"])
        batcher.rng.bit_generator.state = ck["np_rng"]
        torch.set_rng_state(ck["torch_rng"])
        if ck.get("cuda_rng") is not None and device == "cuda":
            torch.cuda.set_rng_state_all(ck["cuda_rng"])
        random.setstate(ck["py_rng"])
        if a.total_steps:
            st["total_steps"] = a.total_steps
        log(f"resumed at step {st['step']} of {st['total_steps']}")
        del ck
    st["runs"] += 1

    model = raw
    want_compile = a.compile == "on" or (a.compile == "auto" and device == "cuda" and hasattr(torch, "compile"))
    if want_compile:
        model = torch.compile(raw)
    text_rows_per_step = batcher.n_text
    epoch_steps = len(text) / (text_rows_per_step * a.seq) if text_rows_per_step else float("inf")
    cap_steps = int(a.max_epochs * epoch_steps)
    vrng = np.random.default_rng(a.seed + 1)
    quick_valid = np.sort(vrng.integers(0, len(valid) - a.seq - 1, 64))
    quick_train = np.sort(vrng.integers(0, len(text) - a.seq - 1, 64))

    if a.init_from and not a.resume:
        vl0, _ = starter_eval.window_loss(raw, valid, quick_valid, a.seq, device)
        log(f"initial valid loss {vl0:.4f} (perplexity {math.exp(vl0):.2f}) from {a.init_from}")
        if a.init_max_loss and vl0 > a.init_max_loss:
            raise SystemExit(f"initial valid loss {vl0:.4f} > {a.init_max_loss}: the init weights are not right")

    t_loop = time.time()
    stop_at = min(t_loop + a.minutes * 60, deadline - a.reserve)
    last_ckpt = time.time()
    best_state = None
    calib_from, calib_t = None, None
    eval_every = max(100, (st["total_steps"] or 1000) // 10)
    step_time = None
    fit = None
    run_start_step = st["step"]
    log(f"training: budget {max(0, stop_at - t_loop):.0f}s, {epoch_steps:.0f} steps per text epoch, "
        f"cap {cap_steps} steps, compile={want_compile}")
    while True:
        if st["total_steps"] and st["step"] >= st["total_steps"]:
            break
        now = time.time()
        if now + (step_time or 0) > stop_at:
            log("time budget reached")
            break
        x, y = batcher.next()
        lr = lr_at(st["step"], st["total_steps"] or cap_steps, a)
        for g in opt.param_groups:
            g["lr"] = lr
        try:
            loss = loss_fn(model, x, y, device)
            loss.backward()
        except Exception as e:  # torch.compile trouble: fall back to eager once
            if model is raw:
                raise
            log(f"compile failed ({type(e).__name__}: {str(e)[:300]}); continuing eager")
            opt.zero_grad(set_to_none=True)
            model = raw
            loss = loss_fn(model, x, y, device)
            loss.backward()
        torch.nn.utils.clip_grad_norm_(raw.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        st["step"] += 1
        st["tokens"] += x.numel()
        k = st["step"] - run_start_step
        if k == 10:
            if device == "cuda":
                torch.cuda.synchronize()
            calib_from, calib_t = st["step"], time.time()
            st["compiled"] = model is not raw
        if k == 40 and calib_t:
            if device == "cuda":
                torch.cuda.synchronize()
            step_time = (time.time() - calib_t) / (st["step"] - calib_from)
            if not st["total_steps"]:
                fit = st["step"] + int((stop_at - time.time()) / step_time * 0.97)
                st["total_steps"] = max(st["step"] + 1, min(fit, cap_steps))
            eval_every = max(100, st["total_steps"] // 10)
            log(f"step time {step_time * 1000:.1f} ms ({x.numel() / step_time / 1e6:.2f}M tokens/s); "
                f"schedule: {st['total_steps']} steps (time fit {fit}, cap {cap_steps})")
        if st["step"] % 50 == 0:
            log(f"step {st['step']}/{st['total_steps']} loss {loss.item():.4f} lr {lr:.2e} "
                f"tokens {st['tokens'] / 1e6:.1f}M")
        if st["step"] % eval_every == 0:
            vl, _ = starter_eval.window_loss(raw, valid, quick_valid, a.seq, device)
            if st["best_loss"] is None or vl < st["best_loss"]:
                st["best_loss"], st["best_step"] = vl, st["step"]
                best_state = {k2: v.detach().clone() for k2, v in raw.state_dict().items()}
            log(f"eval step {st['step']}: valid loss {vl:.4f} (best {st['best_loss']:.4f} at {st['best_step']})")
        if time.time() - last_ckpt > a.ckpt_minutes * 60:
            st["train_seconds"] += time.time() - t_loop
            t_loop = time.time()
            save_ckpt(os.path.join(a.out, "ckpt"), raw, opt, st, batcher, a.tokenizer)
            last_ckpt = time.time()
    st["train_seconds"] += time.time() - t_loop
    save_ckpt(os.path.join(a.out, "ckpt"), raw, opt, st, batcher, a.tokenizer)

    # Keep the best weights seen by the periodic validation check.
    final_vl, _ = starter_eval.window_loss(raw, valid, quick_valid, a.seq, device)
    log(f"final quick valid loss {final_vl:.4f}")
    if best_state is not None and st["best_loss"] < final_vl - 0.01 and not a.keep_final:
        log(f"restoring best weights from step {st['best_step']} ({st['best_loss']:.4f} < {final_vl:.4f})")
        raw.load_state_dict(best_state)
    del opt, best_state
    starter_eval.finish(a, raw, tok, render, system_prompt, qa, valid, valid_bytes, text, quick_train,
                        st, n_params, n_embed, device, t_proc, log)


if __name__ == "__main__":
    main()
