"""starter_eval measures and saves a trained starter model: held-out
perplexity, the Q&A overlap score of greedy answers, sample answers, the
save_pretrained directory with tokenizer and generation defaults, a reload
check through transformers, and metrics.json.  Called by train.py."""

import json
import math
import os
import shutil
import time

import numpy as np
import torch
import torch.nn.functional as F

import starter_common as sc

# Sampling defaults shipped in generation_config.json: moderate temperature,
# nucleus sampling and a repetition penalty keep a tiny model out of loops.
GEN_DEFAULTS = dict(do_sample=True, temperature=0.7, top_p=0.9, top_k=40,
                    repetition_penalty=1.1, max_new_tokens=256)

SAMPLE_QUESTIONS = [
    "What is Hearth?",
    "How do I download a model?",
    "What does generic mean for a model?",
    "Is my data sent to the cloud?",
    "Which port does the API use and how do I call it from Python?",
    "Can you write me a haiku about autumn?",
]


def gen_config(**over):
    from transformers import GenerationConfig
    kw = dict(bos_token_id=sc.BOS, eos_token_id=[sc.IM_END, sc.EOT], pad_token_id=sc.PAD)
    kw.update(over)
    return GenerationConfig(**kw)


@torch.no_grad()
def answer(model, tok, render, questions, gc, device, bs=32):
    """answer generates one reply per question (left-padded batches) and
    returns (text, ended_with_eos, new_tokens) for each."""
    model.eval()
    out = []
    for i in range(0, len(questions), bs):
        prompts = [tok.encode(render([{"role": "user", "content": q}], True), add_special_tokens=False).ids
                   for q in questions[i:i + bs]]
        width = max(map(len, prompts))
        ids = torch.full((len(prompts), width), sc.PAD, dtype=torch.long)
        att = torch.zeros_like(ids)
        for j, p in enumerate(prompts):
            ids[j, width - len(p):] = torch.tensor(p)
            att[j, width - len(p):] = 1
        gen = model.generate(input_ids=ids.to(device), attention_mask=att.to(device), generation_config=gc)
        for row in gen[:, width:].tolist():
            cut, eos = len(row), False
            for k, t in enumerate(row):
                if t in (sc.IM_END, sc.EOT):
                    cut, eos = k, True
                    break
            out.append((tok.decode(row[:cut], skip_special_tokens=True).strip(), eos, cut))
    return out


def score(pairs, preds):
    rows = []
    for p, (pred, eos, n) in zip(pairs, preds):
        rows.append({"id": p["id"], "split": p["split"], "q": p["q"], "ref": p["a"], "pred": pred,
                     "token_f1": round(sc.token_f1(pred, p["a"]), 4),
                     "rouge_l": round(sc.rouge_l(pred, p["a"]), 4),
                     "eos": eos, "new_tokens": n, "repetition": round(sc.repetition_ratio(pred), 4)})
    n = max(1, len(rows))
    summary = {"n": len(rows),
               "token_f1": round(sum(r["token_f1"] for r in rows) / n, 4),
               "rouge_l": round(sum(r["rouge_l"] for r in rows) / n, 4),
               "eos_rate": round(sum(r["eos"] for r in rows) / n, 4),
               "mean_repetition": round(sum(r["repetition"] for r in rows) / n, 4)}
    return summary, rows


@torch.no_grad()
def window_loss(model, stream, offsets, seq, device, bs=64):
    """window_loss is the mean next-token loss (nats) over windows of stream."""
    model.eval()
    tot, cnt = 0.0, 0
    ar = np.arange(seq + 1)
    for i in range(0, len(offsets), bs):
        w = stream[offsets[i:i + bs, None] + ar]
        x = torch.from_numpy(w[:, :-1]).to(device)
        y = torch.from_numpy(w[:, 1:]).to(device)
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            logits = model(input_ids=x, use_cache=False).logits
        tot += F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), y.reshape(-1), reduction="sum").item()
        cnt += y.numel()
    model.train()
    return tot / max(1, cnt), cnt


def finish(a, raw, tok, render, system_prompt, qa, valid, valid_bytes, text, quick_train,
           st, n_params, n_embed, device, t_proc, log):
    """finish saves the trained weights in bf16, reloads them the way users'
    tools do, and measures that reloaded model (so the numbers describe the
    shipped files), then writes metrics.json."""
    t0 = time.time()
    raw.eval()
    probe = [{"role": "user", "content": "How do I pull a model?"}]
    px = torch.tensor([tok.encode(render(probe, True), add_special_tokens=False).ids], device=device)
    with torch.no_grad():
        ref_logits = raw(input_ids=px).logits.float()
    mdir = os.path.join(a.out, "model")
    raw.to(torch.bfloat16).save_pretrained(mdir)
    gen_config(**GEN_DEFAULTS).save_pretrained(mdir)
    shutil.copy(a.tokenizer, os.path.join(mdir, "tokenizer.json"))
    shutil.copy(os.path.join(sc.HERE, "tokenizer_config.json"), os.path.join(mdir, "tokenizer_config.json"))
    del raw
    from transformers import LlamaForCausalLM
    model = LlamaForCausalLM.from_pretrained(mdir, dtype=torch.bfloat16).to(device).eval()
    checks = reload_checks(mdir, model, tok, render, px, ref_logits)
    log(f"checks: {checks}")
    raw = model

    offs = np.arange(0, len(valid) - a.seq - 1, a.seq)
    vloss, vcount = window_loss(raw, valid, offs, a.seq, device)
    # Bits per byte: nats per token over bytes per token of the valid text.
    bpb = vloss / (valid_bytes / len(valid)) / math.log(2)
    tloss, _ = window_loss(raw, text, quick_train, a.seq, device)
    log(f"valid: loss {vloss:.4f}, perplexity {math.exp(vloss):.2f}, {bpb:.3f} bits/byte "
        f"over {vcount:,} tokens; train-sample loss {tloss:.4f}")

    greedy = gen_config(do_sample=False, max_new_tokens=a.eval_max_new, repetition_penalty=1.1)
    ev = [p for p in qa if p["split"] == "eval"]
    tr = [p for p in qa if p["split"] == "train"]
    ev_sum, ev_rows = score(ev, answer(raw, tok, render, [p["q"] for p in ev], greedy, device))
    tr_sum, tr_rows = score(tr, answer(raw, tok, render, [p["q"] for p in tr], greedy, device))
    log(f"Q&A held out: {ev_sum}")
    log(f"Q&A trained questions: {tr_sum}")

    torch.manual_seed(0)
    sampled = answer(raw, tok, render, SAMPLE_QUESTIONS, gen_config(**GEN_DEFAULTS), device)
    greedy_s = answer(raw, tok, render, SAMPLE_QUESTIONS, greedy, device)
    samples = [{"q": q, "greedy": g[0], "sampled": s[0], "sampled_eos": s[1]}
               for q, g, s in zip(SAMPLE_QUESTIONS, greedy_s, sampled)]
    for s in samples:
        print(f"\nQ: {s['q']}\nA (greedy): {s['greedy']}\nA (sampled): {s['sampled']}", flush=True)
    for r in ev_rows[:5]:
        print(f"\n[held out] Q: {r['q']}\n  want: {r['ref']}\n  got:  {r['pred']}", flush=True)

    cfg = raw.config
    metrics = {
        "model": {"params": n_params, "params_without_embedding": n_params - n_embed,
                  "vocab": cfg.vocab_size, "hidden": cfg.hidden_size, "layers": cfg.num_hidden_layers,
                  "heads": cfg.num_attention_heads, "kv_heads": cfg.num_key_value_heads,
                  "intermediate": cfg.intermediate_size, "tied_embeddings": bool(cfg.tie_word_embeddings),
                  "saved_dtype": "bfloat16"},
        "training": {"steps": st["step"], "scheduled_steps": st["total_steps"], "tokens": st["tokens"],
                     "train_minutes": round(st["train_seconds"] / 60, 2), "runs": st["runs"],
                     "compiled": st["compiled"], "batch_rows": a.batch, "seq": a.seq, "qa_row_frac": a.qa_frac,
                     "lr": a.lr, "text_tokens": int(len(text)),
                     "text_epochs": round(st["tokens"] * (1 - a.qa_frac) / len(text), 2),
                     "best_quick_valid_loss": st["best_loss"], "best_step": st["best_step"]},
        "valid": {"loss": round(vloss, 4), "perplexity": round(math.exp(vloss), 3),
                  "bits_per_byte": round(bpb, 4), "tokens": vcount,
                  "bytes_per_token": round(valid_bytes / len(valid), 3)},
        "train_sample_loss": round(tloss, 4),
        "qa": {"held_out": ev_sum, "trained": tr_sum, "eval_pairs_were_trained": bool(a.qa_include_eval),
               "generation": {"greedy": True, "repetition_penalty": 1.1, "max_new_tokens": a.eval_max_new}},
        "qa_answers": ev_rows + tr_rows,
        "samples": samples,
        "checks": checks,
        "seconds": {"eval_and_save": round(time.time() - t0, 1), "total": round(time.time() - t_proc, 1)},
        "versions": versions(),
    }
    with open(os.path.join(a.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1, ensure_ascii=False)
    log(f"wrote {mdir} and metrics.json ({time.time() - t0:.0f}s for eval and save)")


def reload_checks(mdir, model, tok, render, px, ref_logits):
    """reload_checks compares the saved directory, loaded through
    transformers, with what was trained: tokenizer and template through
    AutoTokenizer, and the bf16 logits against the f32 ones."""
    checks = {"files": sorted(os.listdir(mdir))}
    msgs = [{"role": "user", "content": "How do I pull a model?"}]
    try:
        from transformers import AutoTokenizer
        ht = AutoTokenizer.from_pretrained(mdir)
        s = ht.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        checks["hf_tokenizer_class"] = type(ht).__name__
        checks["template_matches"] = s == render(msgs, True)
        checks["ids_match"] = ht(s, add_special_tokens=False)["input_ids"] == tok.encode(s, add_special_tokens=False).ids
        checks["hf_eos"] = ht.eos_token
    except Exception as e:  # recorded, not fatal: the weights are still good
        checks["tokenizer_error"] = repr(e)[:500]
    try:
        with torch.no_grad():
            got = model(input_ids=px).logits.float()
        checks["bf16_vs_f32_max_abs_logit_diff"] = round((got - ref_logits).abs().max().item(), 4)
        checks["bf16_vs_f32_argmax_agree"] = round((got.argmax(-1) == ref_logits.argmax(-1)).float().mean().item(), 4)
        from safetensors import safe_open
        with safe_open(os.path.join(mdir, "model.safetensors"), "pt") as f:
            keys = list(f.keys())
        checks["tensors"] = len(keys)
        checks["has_lm_head"] = any(k.startswith("lm_head") for k in keys)
    except Exception as e:
        checks["reload_error"] = repr(e)[:500]
    return checks


def versions():
    v = {"torch": torch.__version__}
    for m in ("transformers", "tokenizers", "safetensors"):
        try:
            v[m] = __import__(m).__version__
        except Exception:
            v[m] = None
    if torch.cuda.is_available():
        v["gpu"] = torch.cuda.get_device_name(0)
    return v
