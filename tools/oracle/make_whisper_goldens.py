#!/usr/bin/env python3
"""Builds Hearth's Whisper golden: testdata/models/whisper-f32.

A tiny random-weight WhisperForConditionalGeneration built from
transformers' own WhisperConfig (d_model 64, 2 encoder and 2 decoder layers,
4 heads, ffn 128, 80 mel bins, max_source_positions 200 so a chunk is 400
mel frames = 4 s, max_target_positions 64), saved the way the hub has it
(save_pretrained of the model and of a WhisperProcessor: config.json,
generation_config.json, model.safetensors, tokenizer files,
preprocessor_config.json), plus:

  features.f32.gz   WhisperFeatureExtractor(feature_size=80, chunk_length=4)
                    input_features[0] of testdata/media/audio/chirp16k.wav
                    ([80, 400], little-endian float32, gzipped)
  encoder.f32.gz    the encoder's last_hidden_state for them ([200, 64])
  logits.f32.gz     every case's per-step logits, case after case
  golden.json       shapes, ids, and per case: the decoder prompt
                    (init tokens, with prompt_ids when the case has a
                    prompt), model.generate's ids, the logits before each
                    generated id (raw, from a teacher-forced forward), the
                    processed scores' top-2 margin, the segments
                    (return_segments) and the tokenizer's text.

The real Whisper tokenizer is not available offline, so the tokenizer is a
byte-level BPE in Whisper's shape: the 256 byte tokens in GPT-2's order
(so " " is id 220 as in Whisper), a few merges, then Whisper's special
tokens in Whisper's order (<|endoftext|>, <|startoftranscript|>, three
languages, <|translate|>, <|transcribe|>, <|startoflm|>, <|startofprev|>,
<|nospeech|>, <|notimestamps|>) and 201 timestamp tokens <|0.00|> ..
<|4.00|>. generation_config.json carries lang_to_id, task_to_id,
no_timestamps_token_id, suppress_tokens, begin_suppress_tokens,
max_initial_timestamp_index as Whisper's checkpoints do.

The greedy ids are model.generate's; a replica loop (the reference's own
logits processors over full forwards) checks them and gives the processed
scores' margins. A seed is accepted when, in every case, the smallest
top1-top2 processed-score gap is >= 0.01; in the two en_ cases generate
and the replica agree, the notimestamps case holds no timestamp token (else generate's short-form
loop seeks on from it), the notimestamps case generates >= 6 ids with >= 3
distinct, and the timestamps case holds >= 2 timestamp tokens and >= 2
text tokens.

Usage (repository root, on the device machine):
  python3 tools/oracle/make_whisper_goldens.py --out DIR
Needs: torch, numpy, safetensors, transformers 5.17, tokenizers.
"""

import argparse
import copy
import gzip
import json
import os
import shutil
import sys
import time
import traceback
import wave
import zlib

import numpy as np
import torch
import transformers
from transformers.generation.logits_process import (
    SuppressTokensAtBeginLogitsProcessor,
    SuppressTokensLogitsProcessor,
    WhisperTimeStampLogitsProcessor,
)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

SCRIPT = "tools/oracle/make_whisper_goldens.py"
NAME = "whisper-f32"
CLIP = "chirp16k"
MAX_NEW = 16
MAX_ATTEMPTS = 2000
MIN_MARGIN = 0.01
SIZE_LIMIT = 1_400_000

D_MODEL, HEADS, FFN, LAYERS = 64, 4, 128, 2
MELS, SOURCE, TARGET = 80, 200, 64
CHUNK_S = 4  # chunk_length: SOURCE * 2 frames of 10 ms

# Whisper's special tokens, in Whisper's order after the text tokens.
LANGS = ["en", "de", "fr"]
SPECIALS = (["<|endoftext|>", "<|startoftranscript|>"] + [f"<|{l}|>" for l in LANGS]
            + ["<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>",
               "<|notimestamps|>"])
TIMESTAMPS = [f"<|{i * 0.02:.2f}|>" for i in range(CHUNK_S * 50 + 1)]
MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("Ġ", "a"), ("i", "n"), ("e", "r"), ("Ġ", "s"), ("o", "n"),
          ("r", "e"), ("Ġ", "w"), ("a", "t"), ("e", "n"), ("Ġ", "o"), ("i", "s"), ("Ġ", "h"), ("Ġ", "c"),
          ("e", "s"), ("o", "r"), ("l", "l"), ("Ġ", "b"), ("Ġw", "or"), ("l", "d"), ("Ġh", "e"),
          ("Ġhe", "ll"), ("Ġhell", "o"), ("Ġwor", "ld")]


def log(msg):
    print(msg, flush=True)


def fmt(x):
    return float(f"{float(x):.9g}")


def f32gz(a):
    return gzip.compress(np.ascontiguousarray(a, dtype="<f4").tobytes(), mtime=0)


def bytes_to_unicode():
    """GPT-2's byte → character table (Whisper's tokenizer uses it)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def make_tokenizer():
    chars = bytes_to_unicode()
    vocab = {}
    for c in chars.values():  # GPT-2's order: printable bytes first
        vocab[c] = len(vocab)
    for a, b in MERGES:
        vocab[a + b] = len(vocab)
    text = len(vocab)
    tok = transformers.WhisperTokenizer(vocab=dict(vocab), merges=list(MERGES))
    from tokenizers import AddedToken
    tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIALS], special_tokens=True)
    tok.add_tokens([AddedToken(t, special=False, normalized=False, lstrip=False, rstrip=False) for t in TIMESTAMPS])
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIALS + TIMESTAMPS[:1]}
    want = {t: text + i for i, t in enumerate(SPECIALS + TIMESTAMPS[:1])}
    if ids != want or len(tok) != text + len(SPECIALS) + len(TIMESTAMPS):
        raise RuntimeError(f"tokenizer ids {ids} (want {want}), len {len(tok)}")
    if tok.convert_tokens_to_ids("Ġ") != 220:
        raise RuntimeError("'Ġ' is not id 220")
    return tok, text


def read_clip():
    path = os.path.join(ROOT, "testdata", "media", "audio", CLIP + ".wav")
    with wave.open(path) as w:
        if w.getframerate() != 16000 or w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise RuntimeError(f"{path}: want 16 kHz 16-bit mono")
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return (x.astype(np.float64) / 32768).astype(np.float32)  # media.DecodeAudio's scaling


def make_config(text):
    ID = {t: text + i for i, t in enumerate(SPECIALS)}
    vocab = text + len(SPECIALS) + len(TIMESTAMPS)
    cfg = transformers.WhisperConfig(
        vocab_size=vocab, num_mel_bins=MELS, d_model=D_MODEL,
        encoder_layers=LAYERS, encoder_attention_heads=HEADS, encoder_ffn_dim=FFN,
        decoder_layers=LAYERS, decoder_attention_heads=HEADS, decoder_ffn_dim=FFN,
        max_source_positions=SOURCE, max_target_positions=TARGET,
        pad_token_id=ID["<|endoftext|>"], bos_token_id=ID["<|endoftext|>"], eos_token_id=ID["<|endoftext|>"],
        decoder_start_token_id=ID["<|startoftranscript|>"],
        begin_suppress_tokens=[220, ID["<|endoftext|>"]], suppress_tokens=None,
        tie_word_embeddings=True)
    cfg._attn_implementation = "eager"
    return cfg, ID


def make_generation_config(cfg, ID):
    gc = transformers.GenerationConfig(
        decoder_start_token_id=ID["<|startoftranscript|>"], bos_token_id=ID["<|endoftext|>"],
        eos_token_id=ID["<|endoftext|>"], pad_token_id=ID["<|endoftext|>"],
        max_length=TARGET,
        no_timestamps_token_id=ID["<|notimestamps|>"],
        prev_sot_token_id=ID["<|startofprev|>"],
        is_multilingual=True,
        lang_to_id={f"<|{l}|>": ID[f"<|{l}|>"] for l in LANGS},
        task_to_id={"translate": ID["<|translate|>"], "transcribe": ID["<|transcribe|>"]},
        # a few text tokens as Whisper's list has punctuation, then its specials
        suppress_tokens=[1, 2, 7, 8, 9, 10, 14, 25, ID["<|startoftranscript|>"], ID["<|translate|>"],
                         ID["<|transcribe|>"], ID["<|startoflm|>"], ID["<|startofprev|>"], ID["<|nospeech|>"]],
        begin_suppress_tokens=[220, ID["<|endoftext|>"]],
        max_initial_timestamp_index=50,
        return_timestamps=False,
    )
    return gc


def param_seed(seed, name):
    return (seed * 1000003 + zlib.crc32(name.encode("utf-8"))) % (2**63 - 1)


# Tied output projections make a random decoder repeat its last token (the
# residual carries the token's own embedding into the logits), so the
# decoder's layer outputs are scaled up against the embedding, and the 201
# timestamp rows get half the scale so that the notimestamps case does not
# pick them. Attempts cycle through these (embedding, output) scales; a
# simulation of this init over Hearth's own graph (which holds the encoder
# to a plain reading of the reference) accepted about 30% of seeds, where
# the first device run's init (0.5, 2.0, full-scale timestamps) accepted
# none in 300.
STYLES = [(0.25, 10.0), (0.2, 12.0), (0.2, 16.0)]
TIMESTAMP_ROWS = 0.5


def init_weights(model, seed):
    emb, out = STYLES[seed % len(STYLES)]
    with torch.no_grad():
        for name, p in model.named_parameters():
            g = torch.Generator(device="cpu").manual_seed(param_seed(seed, name))
            z = torch.randn(tuple(p.shape), generator=g, dtype=torch.float32)
            if name.endswith("embed_positions.weight"):
                # the encoder's stays sinusoidal; the decoder's are strong so each step differs
                w = 1.0 * z if ".decoder." in name else p.data.clone()
            elif name.endswith("embed_tokens.weight"):
                w = emb * z
                w[model.config.vocab_size - len(TIMESTAMPS):] *= TIMESTAMP_ROWS
            elif name.endswith("conv1.weight") or name.endswith("conv2.weight"):
                w = z / float(np.prod(p.shape[1:])) ** 0.5
            elif name.endswith(".bias"):
                w = 0.1 * z
            elif "layer_norm" in name and name.endswith(".weight"):
                w = 1.0 + 0.1 * z
            elif name.endswith(("out_proj.weight", "fc2.weight")):
                w = (out if ".decoder." in name else 2.0) * z / float(p.shape[1]) ** 0.5
            elif p.ndim == 2:
                w = z / float(p.shape[1]) ** 0.5
            else:
                raise RuntimeError(f"no init rule for {name} {tuple(p.shape)}")
            p.copy_(w)


def new_model(cfg, gc, seed):
    model = transformers.WhisperForConditionalGeneration(cfg).to(dtype=torch.float32, device="cpu")
    model.eval()
    model.generation_config = gc
    init_weights(model, seed)
    if model.proj_out.weight.data_ptr() != model.model.decoder.embed_tokens.weight.data_ptr():
        raise RuntimeError("proj_out is not tied to embed_tokens")
    return model


def logits_of(model, feats, ids):
    with torch.no_grad():
        out = model(input_features=feats, decoder_input_ids=torch.tensor([ids]), use_cache=False)
    return out.logits[0].to(torch.float32)


def replica(model, feats, gc, init, timestamps):
    """Greedy decoding with the reference's own Whisper logits processors in
    generate's order; returns ids (with eos if reached), processed margins."""
    begin = len(init)
    procs = [SuppressTokensAtBeginLogitsProcessor(gc.begin_suppress_tokens, begin_index=begin),
             SuppressTokensLogitsProcessor(gc.suppress_tokens)]
    if timestamps:
        procs.append(WhisperTimeStampLogitsProcessor(gc, begin_index=begin))
    ids, margins = list(init), []
    for _ in range(MAX_NEW):
        raw = logits_of(model, feats, ids)[-1:]
        scores = raw.clone()
        t = torch.tensor([ids])
        for p in procs:
            scores = p(t, scores)
        top = torch.topk(scores[0], 2).values
        margins.append(float(top[0] - top[1]) if torch.isfinite(top[1]) else float("inf"))
        nxt = int(scores[0].argmax())
        ids.append(nxt)
        if nxt == gc.eos_token_id:
            break
    return ids[begin:], margins


CASES = [
    # name, generate kwargs, timestamps
    ("en_notimestamps", dict(language="en", task="transcribe", return_timestamps=False), False),
    ("en_timestamps", dict(language="en", task="transcribe", return_timestamps=True), True),
    ("detect_language", dict(task="transcribe", return_timestamps=False), False),
    ("de_translate_prompt", dict(language="de", task="translate", return_timestamps=False, prompt="hello world"), False),
]


def init_tokens(ID, lang, task, timestamps):
    t = [ID["<|startoftranscript|>"], ID[f"<|{lang}|>"], ID[f"<|{task}|>"]]
    return t if timestamps else t + [ID["<|notimestamps|>"]]


def run_case(model, tok, gc, ID, feats, name, kw, timestamps):
    kw = dict(kw)
    prompt = kw.pop("prompt", None)
    lang = kw.get("language")
    detected = None
    if lang is None:
        detected = int(model.detect_language(input_features=feats, generation_config=gc)[0])
        lang = {v: k[2:-2] for k, v in gc.lang_to_id.items()}[detected]
    init = init_tokens(ID, lang, kw["task"], timestamps)
    prompt_ids = None
    if prompt is not None:
        prompt_ids = [int(x) for x in tok.get_prompt_ids(prompt, return_tensors="np")]
    prefix = (prompt_ids or []) + init
    mine, margins = replica(model, feats, gc, prefix, timestamps)
    early = acceptable(dict(name=name, timestamps=timestamps, greedy_ids=mine, min_margin=min(margins), agree=True), ID)
    if early:
        raise Reject(early)  # before generate, whose seek loop is slow on such ids
    with torch.no_grad():
        # One window, one call: without force_unique_generate_call a
        # window that does not end on a single timestamp is decoded again
        # from its last timestamp pair (the long-form seek loop), which
        # Hearth does not do.
        out = model.generate(input_features=feats, generation_config=copy.deepcopy(gc), max_new_tokens=MAX_NEW,
                             do_sample=False, force_unique_generate_call=True,
                             prompt_ids=None if prompt_ids is None else torch.tensor(prompt_ids),
                             return_segments=True, **kw)
    seq = [int(x) for x in out["sequences"][0].tolist()]
    segs = out["segments"][0]
    trimmed = mine[:-1] if mine and mine[-1] == gc.eos_token_id else mine
    for head in (prefix, prompt_ids or [], init):
        if head and seq[:len(head)] == head:
            seq = seq[len(head):]  # the forced call returns the decoder prompt ahead of the ids
            break
    while seq and seq[-1] == gc.pad_token_id and len(seq) > len(trimmed):
        seq = seq[:-1]
    if seq != trimmed:
        log(f"MISMATCH {name}: generate {seq} but the replica {mine}")
    full = prefix + mine
    lg = logits_of(model, feats, full[:-1] if mine else full)[len(prefix) - 1:]
    segments = [{"start": fmt(s["start"]), "end": fmt(s["end"]), "tokens": [int(x) for x in s["tokens"].tolist()]}
                for s in segs]
    text = tok.decode([x for x in mine if x < ID["<|endoftext|>"]], skip_special_tokens=True)
    return dict(name=name, language=lang, task=kw["task"], timestamps=timestamps, prompt=prompt,
                prompt_ids=prompt_ids, detected_language_id=detected, init_tokens=init,
                decoder_input_ids=prefix, generated=seq, greedy_ids=mine, eos=bool(mine and mine[-1] == gc.eos_token_id),
                agree=seq == trimmed, logits=lg.numpy(), min_margin=fmt(min(margins)),
                segments=segments, text=text)


class Reject(Exception):
    """A seed that fails the acceptance rules."""


def acceptable(c, ID):
    ts = ID["<|notimestamps|>"] + 1
    g = c["greedy_ids"]
    if c["min_margin"] < MIN_MARGIN:
        return f"margin {c['min_margin']}"
    if not c["name"].startswith("en_"):
        return None  # optional cases: the replica's ids are the golden, agree says whether generate's match
    if not c["agree"]:
        return "generate and the replica disagree"
    if not c["timestamps"] and any(x >= ts for x in g):
        return f"timestamp tokens without timestamps: {g}"  # generate would loop over segments
    if c["name"] == "en_notimestamps" and (len(g) < 6 or len(set(g)) < 3):
        return f"ids {g}"
    if c["timestamps"]:
        n_ts = sum(1 for x in g if x >= ts)
        n_txt = sum(1 for x in g if x < ID["<|endoftext|>"])
        if n_ts < 2 or n_txt < 2:
            return f"timestamps {n_ts}, text {n_txt} in {g}"
    return None


def build(out_dir, args_list):
    tok, text = make_tokenizer()
    cfg, ID = make_config(text)
    gc = make_generation_config(cfg, ID)
    fe = transformers.WhisperFeatureExtractor(feature_size=MELS, sampling_rate=16000, hop_length=160,
                                              chunk_length=CHUNK_S, n_fft=400)
    audio = read_clip()
    feats = fe(audio, sampling_rate=16000, return_tensors="pt")["input_features"].to(torch.float32)
    if list(feats.shape) != [1, MELS, SOURCE * 2]:
        raise RuntimeError(f"features {list(feats.shape)}")
    log(f"tokenizer: {len(tok)} tokens, text {text}; features {list(feats.shape)}")

    start = time.time()
    for attempt in range(MAX_ATTEMPTS):
        if time.time() - start > 180:
            raise RuntimeError(f"no seed in {attempt} attempts (180 s) met the rules")
        seed = 52000 + attempt
        model = new_model(cfg, gc, seed)
        cases, reason = [], None
        for name, kw, timestamps in list(CASES):
            try:
                c = run_case(model, tok, gc, ID, feats, name, kw, timestamps)
            except Reject as e:
                reason = f"{name}: {e}"
                break
            except Exception:  # noqa: BLE001
                if name.startswith("en_"):
                    raise
                log(f"case {name} dropped:\n" + traceback.format_exc())
                CASES.remove((name, kw, timestamps))
                continue
            reason = acceptable(c, ID)
            if reason:
                reason = f"{name}: {reason}"
                break
            cases.append(c)
        if reason is None:
            break
        log(f"  seed {seed}: {reason}")
    else:
        raise RuntimeError(f"no seed in {MAX_ATTEMPTS} attempts met the rules")
    log(f"seed {seed} accepted")

    with torch.no_grad():
        enc = model.model.encoder(input_features=feats).last_hidden_state[0].to(torch.float32)

    entry = os.path.join(out_dir, NAME)
    shutil.rmtree(entry, ignore_errors=True)
    os.makedirs(entry)
    model.save_pretrained(entry)
    gc.save_pretrained(entry)
    transformers.WhisperProcessor(feature_extractor=fe, tokenizer=tok).save_pretrained(entry)
    with open(os.path.join(entry, "features.f32.gz"), "wb") as f:
        f.write(f32gz(feats[0].numpy()))
    with open(os.path.join(entry, "encoder.f32.gz"), "wb") as f:
        f.write(f32gz(enc.numpy()))

    from safetensors import safe_open
    with safe_open(os.path.join(entry, "model.safetensors"), "pt") as f:
        log("tensors: " + ", ".join(f"{n} {list(f.get_slice(n).get_shape())}" for n in sorted(f.keys())
                                     if ".layers.1." not in n))
    for fn in sorted(os.listdir(entry)):
        if fn.endswith(".json") and fn != "tokenizer.json":
            with open(os.path.join(entry, fn)) as f:
                log(f"{fn}: {f.read()[:3000]}")

    m2 = transformers.WhisperForConditionalGeneration.from_pretrained(entry, dtype=torch.float32,
                                                                     attn_implementation="eager")
    m2.eval()
    d = float((logits_of(m2, feats, cases[0]["decoder_input_ids"]) -
               logits_of(model, feats, cases[0]["decoder_input_ids"])).abs().max())
    if d > 1e-5:
        raise RuntimeError(f"reloaded model: logits off by {d}")
    log(f"check: reloaded model max |diff| {d:.3g}")
    tok2 = transformers.AutoTokenizer.from_pretrained(entry)
    for c in cases:
        same = tok2.decode([x for x in c["greedy_ids"] if x < ID["<|endoftext|>"]], skip_special_tokens=True) == c["text"]
        log(f"check: reloaded tokenizer ({type(tok2).__name__}) decodes {c['name']} alike: {same}")
    enc_pos = model.model.encoder.embed_positions.weight
    from transformers.models.whisper.modeling_whisper import sinusoids
    log(f"encoder positions vs sinusoids max |diff| {float((enc_pos - sinusoids(*enc_pos.shape)).abs().max()):.3g}")

    rows = []
    for c in cases:
        c["logits_rows"] = int(c["logits"].shape[0])
        rows.append(c.pop("logits"))
    with open(os.path.join(entry, "logits.f32.gz"), "wb") as f:
        f.write(f32gz(np.concatenate(rows, axis=0)))
    golden = {
        "script": SCRIPT, "args": args_list, "transformers": transformers.__version__, "torch": torch.__version__,
        "numpy": np.__version__, "name": NAME, "model_type": "whisper", "variant": "f32", "seed": seed,
        "tolerance": {"max_abs_logit": 1e-4, "max_abs_tower": 1e-4,
                      "why": "the reference runs in float32 on the F32 weights as saved, so only float32 "
                             "summation order differs"},
        "clip": f"testdata/media/audio/{CLIP}.wav", "special_tokens": ID, "timestamp_begin": ID["<|notimestamps|>"] + 1,
        "features_shape": list(feats.shape[1:]), "encoder_shape": list(enc.shape),
        "encoder_std": fmt(enc.std()), "max_new_tokens": MAX_NEW, "vocab_size": cfg.vocab_size,
        "logits_file": "logits.f32.gz: each case's logits_rows rows of vocab_size, in case order",
        "cases": cases,
    }
    with open(os.path.join(entry, "golden.json"), "w") as f:
        f.write(json.dumps(golden, separators=(",", ":")) + "\n")
    for c in cases:
        log(f"case {c['name']}: prefix {c['decoder_input_ids']} greedy {c['greedy_ids']} margin {c['min_margin']} "
            f"segments {[(s['start'], s['end'], len(s['tokens'])) for s in c['segments']]} text {c['text']!r}")
    size = sum(os.path.getsize(os.path.join(entry, x)) for x in os.listdir(entry))
    log(f"{NAME}: {size} bytes in {sorted(os.listdir(entry))}")
    if size > SIZE_LIMIT:
        log(f"WARNING: {NAME} is {size} bytes, over {SIZE_LIMIT}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output folder (the entry goes in OUT/" + NAME + ")")
    args = ap.parse_args()
    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    log(f"python {sys.version.split()[0]} torch {torch.__version__} transformers {transformers.__version__} "
        f"numpy {np.__version__}")
    build(args.out, sys.argv[1:])


if __name__ == "__main__":
    main()
