#!/usr/bin/env python3
"""Builds Hearth's Gemma 3 vision golden: testdata/models/gemma3_vision-f32.

A tiny random-weight Gemma3ForConditionalGeneration built from transformers'
own config classes (Gemma3Config with a Gemma3TextConfig shrunk like the
manifest's gemma3 entry and a SiglipVisionConfig shrunk to 64x64 pictures in
8x8 patches, hidden 32, 2 layers, 2 heads; mm_tokens_per_image 16, so the
projector average-pools the 8x8 patch grid 2x2 down to 4x4), saved the way
the hub has it (save_pretrained of the model and of its Gemma3Processor:
config.json, generation_config.json, model.safetensors, the tokenizer files,
the processor's config files and chat template), plus two deterministic
pictures (image0.png, image1.png) and golden.json:

  images[i]: the processor's pixel_values of the picture, the vision tower's
             last_hidden_state and the projector's output (get_image_features)
  cases[j]:  a chat-template conversation with pictures; the rendered text,
             the processor's expanded input_ids and token_type_ids, 8 greedy
             ids and the logits before each (as the manifest's text entries:
             logits[i] is the last position's logits before greedy_ids[i]),
             from transformers' own forward with pixel_values and
             token_type_ids, re-run over the whole sequence at every step.

The tokenizer is chat-tiny's byte-level BPE cut to 504 tokens plus Gemma 3's
special tokens (<pad> <eos> <bos> <start_of_turn> <end_of_turn>
<start_of_image> <end_of_image> <image_soft_token>, ids 504-511); the chat
template is Gemma 3's own (engine/template/testdata/templates/gemma3).

Reference: float32 on the CPU, eager attention, deterministic algorithms.
A seed is accepted when, in every case, the smallest top1-top2 logit gap is
>= 0.01, the 8 greedy ids hold >= 4 distinct ids and none is a special
token, the picture changes the step-0 logits (another picture in its place
moves them by > 0.05) and so does the bidirectional image mask
(token_type_ids None moves them by > 1e-3).

Usage (repository root, on the device machine):
  python3 tools/oracle/make_vision_goldens.py --out DIR
Needs: torch, numpy, safetensors, transformers 5.17, tokenizers, Pillow,
torchvision (the processor's default backend).
"""

import argparse
import json
import os
import shutil
import sys
import traceback

import numpy as np
import torch
import transformers
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import make_goldens as mg  # noqa: E402

SCRIPT = "tools/oracle/make_vision_goldens.py"
NAME = "gemma3_vision-f32"
STEPS = 8
MAX_ATTEMPTS = 400
MIN_MARGIN = 0.01
MIN_DISTINCT = 4
SIZE_LIMIT = 1_500_000

BASE = 504  # chat-tiny's BPE keeps ids [0, BASE)
SPECIALS = ["<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>",
            "<start_of_image>", "<end_of_image>", "<image_soft_token>"]
ID = {t: BASE + i for i, t in enumerate(SPECIALS)}
NAMED = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}

IMAGE = 64
PATCH = 8
MM_TOKENS = 16


class Mismatch(Exception):
    """Two ways of computing one golden disagree."""


def log(msg):
    print(msg, flush=True)


def fmt(x):
    return float(f"{float(x):.9g}")


def flat(t):
    return [fmt(v) for v in t.detach().to(torch.float32).reshape(-1).tolist()]


# --- tokenizer and processor ------------------------------------------------


def tokenizer_json(specials=SPECIALS):
    """chat-tiny's BPE cut to ids [0, BASE), then specials at BASE, BASE+1, ...
    (make_qwen_vision_goldens.py passes Qwen's)."""
    with open(os.path.join(ROOT, "testdata", "models", "chat-tiny", "tokenizer.json")) as f:
        tj = json.load(f)
    vocab = {t: i for t, i in tj["model"]["vocab"].items() if i < BASE}
    merges = []
    for m in tj["model"]["merges"]:
        a, b = m.split(" ") if isinstance(m, str) else m
        if vocab.get(a + b, BASE) < BASE:
            merges.append(m)
    if sorted(vocab.values()) != list(range(BASE)):
        raise RuntimeError("chat-tiny's vocabulary below %d is not contiguous" % BASE)
    added = []
    for i, tok in enumerate(specials):
        vocab[tok] = BASE + i
        added.append({"id": BASE + i, "content": tok, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": True})
    tj["model"]["vocab"] = vocab
    tj["model"]["merges"] = merges
    tj["added_tokens"] = added
    return tj


def chat_template():
    path = os.path.join(ROOT, "engine", "template", "testdata", "templates", "gemma3", "tokenizer_config.json")
    with open(path) as f:
        return json.load(f)["chat_template"]


def make_tokenizer():
    """A PreTrainedTokenizerFast with Gemma 3's named special tokens
    (boi_token, eoi_token, image_token), which Gemma3Processor reads."""
    import tokenizers
    tj = tokenizer_json()
    base = dict(bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")
    errors = []
    for how in ("extra_special_tokens", "model_specific_special_tokens", "setattr"):
        try:
            obj = tokenizers.Tokenizer.from_str(json.dumps(tj))
            if how == "setattr":
                tok = transformers.PreTrainedTokenizerFast(tokenizer_object=obj, **base)
                for k, v in NAMED.items():
                    setattr(tok, k, v)
                    setattr(tok, k + "_id", ID[v])
            else:
                tok = transformers.PreTrainedTokenizerFast(tokenizer_object=obj, **base, **{how: dict(NAMED)})
            ok = all(getattr(tok, k, None) == v and getattr(tok, k + "_id", None) == ID[v] for k, v in NAMED.items())
            if ok and tok.bos_token_id == ID["<bos>"] and len(tok) == 512:
                log(f"tokenizer: named special tokens through {how}")
                return tok
            errors.append(f"{how}: attributes {[(k, getattr(tok, k, None), getattr(tok, k + '_id', None)) for k in NAMED]}, len {len(tok)}")
        except Exception as e:  # noqa: BLE001
            errors.append(f"{how}: {type(e).__name__}: {e}")
    raise RuntimeError("could not make the tokenizer: " + "; ".join(errors))


def make_processor(tok):
    ip = transformers.Gemma3ImageProcessor(size={"height": IMAGE, "width": IMAGE})
    return transformers.Gemma3Processor(image_processor=ip, tokenizer=tok, chat_template=chat_template(),
                                        image_seq_length=MM_TOKENS)


# --- pictures ---------------------------------------------------------------


def make_images():
    """image0: 64x64, the tower's own size (the resize leaves it alone);
    image1: 80 wide, 48 high (resized to 64x64)."""
    y, x = np.mgrid[0:IMAGE, 0:IMAGE]
    a = np.stack([(x * 4) % 256, (y * 4) % 256, ((x // 8 + y // 8) % 2) * 200 + 20], -1).astype(np.uint8)
    y, x = np.mgrid[0:48, 0:80]
    b = np.stack([(x * y) % 256, 255 - x * 3, (y * 5 + (x // 10) * 17) % 256], -1).astype(np.uint8)
    return [Image.fromarray(a, "RGB"), Image.fromarray(b, "RGB")]


CASES = [
    dict(name="one_image", images=[0], content=[{"type": "image"}, {"type": "text", "text": "What is in this picture?"}]),
    dict(name="two_images", images=[0, 1],
         content=[{"type": "text", "text": "Compare"}, {"type": "image"}, {"type": "text", "text": "with"},
                  {"type": "image"}, {"type": "text", "text": "please."}]),
]


# --- model ------------------------------------------------------------------


def make_config():
    text = dict(mg.COMMON)
    text.update(mg.ARCHS["gemma3"]["kwargs"])
    text.update(bos_token_id=ID["<bos>"], eos_token_id=ID["<eos>"], pad_token_id=ID["<pad>"])
    text_config = transformers.Gemma3TextConfig(**text)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, num_channels=3,
                  image_size=IMAGE, patch_size=PATCH, hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6,
                  attention_dropout=0.0)
    try:
        vision_config = transformers.SiglipVisionConfig(**vision, vision_use_head=False)  # as Gemma 3's config says
    except TypeError as e:
        log(f"SiglipVisionConfig refuses vision_use_head ({e}); set as an attribute")
        vision_config = transformers.SiglipVisionConfig(**vision)
        vision_config.vision_use_head = False
    config = transformers.Gemma3Config(
        text_config=text_config, vision_config=vision_config, mm_tokens_per_image=MM_TOKENS,
        boi_token_index=ID["<start_of_image>"], eoi_token_index=ID["<end_of_image>"],
        image_token_index=ID["<image_soft_token>"], tie_word_embeddings=True)
    for c in (config, config.text_config, config.vision_config):
        c._attn_implementation = "eager"
    return config


def new_model(config):
    model = transformers.Gemma3ForConditionalGeneration(config).to(dtype=torch.float32, device="cpu")
    model.eval()
    for c in (model.config, model.config.text_config, model.config.vision_config):
        if c._attn_implementation != "eager":
            raise RuntimeError(f"attention is {c._attn_implementation!r}, want eager")
    vt = model.model.vision_tower
    if any(getattr(m, "use_head", False) for m in vt.modules()):
        raise RuntimeError("the vision tower has a head; Gemma 3's has none")
    if model.lm_head.weight.data_ptr() != model.model.language_model.embed_tokens.weight.data_ptr():
        log("lm_head was not tied to the embedding: tying it")
        model.lm_head.weight = model.model.language_model.embed_tokens.weight
    return model


def init_weights(model, seed):
    master = {}
    for name, p in model.named_parameters():
        g = torch.Generator(device="cpu").manual_seed(mg.param_seed(seed, name))
        z = torch.randn(tuple(p.shape), generator=g, dtype=torch.float32)
        if ".vision_tower." in name:
            if name.endswith("patch_embedding.weight"):
                w = z / float(np.prod(p.shape[1:])) ** 0.5
            elif name.endswith("position_embedding.weight"):
                w = 0.3 * z
            elif name.endswith(".bias"):
                w = 0.1 * z
            elif p.ndim == 1:  # LayerNorm weights
                w = 1.0 + 0.1 * z
            elif p.ndim == 2:
                w = z / float(p.shape[1]) ** 0.5
            else:
                raise RuntimeError(f"no init rule for {name} {tuple(p.shape)}")
        elif name.endswith("mm_input_projection_weight"):  # [vision hidden, text hidden], x @ W
            w = z / float(p.shape[0]) ** 0.5
        elif name.endswith("norm.weight"):
            w = 0.1 * z  # Gemma's (1 + w) norms, the projector's soft_emb_norm too
        elif name.endswith("embed_tokens.weight"):
            w = 0.05 * z
        elif name.endswith(("o_proj.weight", "down_proj.weight")):
            w = 2.0 * z / float(p.shape[1]) ** 0.5
        elif p.ndim == 2:
            w = z / float(p.shape[1]) ** 0.5
        else:
            raise RuntimeError(f"no init rule for {name} {tuple(p.shape)}")
        master[name] = w.contiguous()
    mg.load_weights(model, master)
    return master


def logits_of(model, ids, pixel_values, bidirectional=True):
    t = torch.tensor([ids], dtype=torch.long)
    tt = (t == ID["<image_soft_token>"]).long() if bidirectional else None
    with torch.no_grad():
        out = model(input_ids=t, pixel_values=pixel_values, token_type_ids=tt, use_cache=False)
    return out.logits[0, -1].to(torch.float32).clone()


def run_case(model, prompt, pixel_values):
    seq = list(prompt)
    all_logits, greedy, margins = [], [], []
    for _ in range(STEPS):
        lg = logits_of(model, seq, pixel_values)
        top2 = torch.topk(lg, 2)
        nxt = int(top2.indices[0])
        all_logits.append(lg)
        greedy.append(nxt)
        margins.append(float(top2.values[0] - top2.values[1]))
        seq.append(nxt)
    return all_logits, greedy, margins


def image_features(model, pv):
    with torch.no_grad():
        hidden = model.model.vision_tower(pixel_values=pv).last_hidden_state
        r = model.model.get_image_features(pv)
    feats = r.pooler_output if hasattr(r, "pooler_output") else r
    return hidden[0], feats[0]


# --- main -------------------------------------------------------------------


def process(proc, images):
    """Renders and expands every case, two ways (render then call the
    processor; apply_chat_template with the pictures in the messages),
    which must agree."""
    out = []
    for case in CASES:
        messages = [{"role": "user", "content": case["content"]}]
        imgs = [images[i] for i in case["images"]]
        text = proc.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        enc = proc(text=text, images=imgs, add_special_tokens=False, return_tensors="pt")
        ids = enc["input_ids"][0].tolist()
        tt = enc["token_type_ids"][0].tolist()
        want_tt = [1 if i == ID["<image_soft_token>"] else 0 for i in ids]
        if tt != want_tt:
            raise RuntimeError(f"{case['name']}: token_type_ids {tt} are not the image-token positions")
        if ids.count(ID["<image_soft_token>"]) != MM_TOKENS * len(imgs):
            raise RuntimeError(f"{case['name']}: {ids.count(ID['<image_soft_token>'])} image tokens")
        try:
            with_pics = [{"role": "user", "content": [dict(p, image=images[case['images'][k]]) if p["type"] == "image" else p
                                                      for k, p in zip(_image_index(case["content"]), case["content"])]}]
            enc2 = proc.apply_chat_template(with_pics, add_generation_prompt=True, tokenize=True, return_dict=True,
                                            return_tensors="pt")
            same = enc2["input_ids"][0].tolist() == ids and torch.equal(enc2["pixel_values"], enc["pixel_values"])
            log(f"  {case['name']}: apply_chat_template(tokenize=True) agrees: {same}")
            if not same:
                raise Mismatch(f"{case['name']}: apply_chat_template(tokenize=True) gives other ids or pixels")
        except Mismatch:
            raise
        except Exception as e:  # noqa: BLE001
            log(f"  {case['name']}: apply_chat_template(tokenize=True) not compared: {type(e).__name__}: {e}")
        out.append(dict(case, messages=messages, text=text, ids=ids, token_type_ids=tt,
                        pixel_values=enc["pixel_values"].to(torch.float32)))
    return out


def _image_index(content):
    """For each part, the index of the picture it is (or 0 for text)."""
    k, out = 0, []
    for p in content:
        out.append(k)
        if p["type"] == "image":
            k += 1
    return out


def build(out_dir, args_list):
    tok = make_tokenizer()
    proc = make_processor(tok)
    images = make_images()
    cases = process(proc, images)
    for c in cases:
        log(f"case {c['name']}: {len(c['ids'])} ids {c['ids']}")
        log(f"  text {c['text']!r}")
    single = [proc.image_processor(images=[im], return_tensors="pt")["pixel_values"][0:1].to(torch.float32) for im in images]
    for c in cases:
        for k, i in enumerate(c["images"]):
            if not torch.equal(c["pixel_values"][k:k + 1], single[i]):
                raise RuntimeError(f"{c['name']}: picture {i}'s pixel_values differ from the picture's own")
    try:
        pil = transformers.Gemma3ImageProcessorPil(size={"height": IMAGE, "width": IMAGE})
        for i, im in enumerate(images):
            pv = pil(images=[im], return_tensors="pt")["pixel_values"][0:1].to(torch.float32)
            log(f"image{i}: PIL backend vs default max |diff| {float((pv - single[i]).abs().max()):.3g}")
    except Exception as e:  # noqa: BLE001
        log(f"PIL backend not compared: {type(e).__name__}: {e}")

    config = make_config()
    for attempt in range(MAX_ATTEMPTS):
        seed = 31000 + attempt
        model = new_model(config)
        init_weights(model, seed)
        results, reason = [], None
        for c in cases:
            logits, greedy, margins = run_case(model, c["ids"], c["pixel_values"])
            if min(margins) < MIN_MARGIN or len(set(greedy)) < MIN_DISTINCT or max(greedy) >= BASE:
                reason = f"{c['name']}: margin {min(margins):.4g}, {len(set(greedy))} distinct, greedy {greedy}"
                break
            other = c["pixel_values"].flip(0) if len(c["images"]) > 1 else single[1]
            d_img = float((logits_of(model, c["ids"], other) - logits[0]).abs().max())
            d_mask = float((logits_of(model, c["ids"], c["pixel_values"], bidirectional=False) - logits[0]).abs().max())
            if d_img <= 0.05 or d_mask <= 1e-3:
                reason = f"{c['name']}: another picture moves the logits {d_img:.3g}, the causal mask {d_mask:.3g}"
                break
            results.append(dict(logits=logits, greedy=greedy, margins=margins, d_img=d_img, d_mask=d_mask))
        if reason is None:
            break
        log(f"  seed {seed}: {reason}; retrying")
    else:
        raise RuntimeError(f"no seed in {MAX_ATTEMPTS} attempts met the rules")
    log(f"seed {seed} accepted")

    entry = os.path.join(out_dir, NAME)
    shutil.rmtree(entry, ignore_errors=True)
    os.makedirs(entry)
    model.generation_config.eos_token_id = [ID["<eos>"], ID["<end_of_turn>"]]
    model.save_pretrained(entry)
    proc.save_pretrained(entry)
    files = {}
    for i, im in enumerate(images):
        im.save(os.path.join(entry, f"image{i}.png"))
    for f in sorted(os.listdir(entry)):
        files[f] = os.path.getsize(os.path.join(entry, f))
    log(f"written: {files}")
    from safetensors import safe_open
    with safe_open(os.path.join(entry, "model.safetensors"), "pt") as f:
        names = sorted(f.keys())
        log("tensors: " + ", ".join(f"{n} {list(f.get_slice(n).get_shape())}" for n in names
                                     if ".layers.1." not in n and ".layers.2." not in n))
    for fn in ("config.json", "processor_config.json", "preprocessor_config.json", "tokenizer_config.json",
               "generation_config.json"):
        p = os.path.join(entry, fn)
        if os.path.exists(p):
            with open(p) as f:
                log(f"{fn}: {f.read()}")

    # Read back what was written.
    m2 = transformers.Gemma3ForConditionalGeneration.from_pretrained(entry, dtype=torch.float32,
                                                                     attn_implementation="eager")
    m2.eval()
    d = float((logits_of(m2, cases[0]["ids"], cases[0]["pixel_values"]) - results[0]["logits"][0]).abs().max())
    if d > 1e-5:
        raise RuntimeError(f"reloaded model: step-0 logits off by {d}")
    log(f"check: reloaded model step-0 max |diff| {d:.3g}")
    try:
        p2 = transformers.AutoProcessor.from_pretrained(entry)
        for c in cases:
            text = p2.apply_chat_template(c["messages"], tokenize=False, add_generation_prompt=True)
            enc = p2(text=text, images=[images[i] for i in c["images"]], add_special_tokens=False, return_tensors="pt")
            same = text == c["text"] and enc["input_ids"][0].tolist() == c["ids"] and \
                torch.equal(enc["pixel_values"].to(torch.float32), c["pixel_values"])
            log(f"check: reloaded processor ({type(p2).__name__}, {type(p2.image_processor).__name__}, "
                f"{type(p2.tokenizer).__name__}) reproduces {c['name']}: {same}")
    except Exception:  # noqa: BLE001
        log("check: reloaded processor FAILED:\n" + traceback.format_exc())

    golden = {
        "script": SCRIPT, "args": args_list, "transformers": transformers.__version__, "torch": torch.__version__,
        "numpy": np.__version__, "name": NAME, "model_type": "gemma3", "variant": "f32", "seed": seed,
        "tolerance": {"max_abs_logit": 1e-4, "max_abs_tower": 1e-4,
                      "why": "the reference runs in float32 on the F32 weights as saved, so only float32 "
                             "summation order differs"},
        "special_tokens": ID, "mm_tokens_per_image": MM_TOKENS, "images": [], "cases": [],
    }
    for i, im in enumerate(images):
        hidden, feats = image_features(model, single[i])
        golden["images"].append({
            "file": f"image{i}.png", "width": im.width, "height": im.height,
            "pixel_values_shape": list(single[i].shape[1:]), "pixel_values": flat(single[i]),
            "vision_last_hidden_state_shape": list(hidden.shape), "vision_last_hidden_state": flat(hidden),
            "image_features_shape": list(feats.shape), "image_features": flat(feats),
        })
        log(f"image{i}: {im.width}x{im.height}, pixel_values {list(single[i].shape)}, tower {list(hidden.shape)} "
            f"std {float(hidden.std()):.3g}, features {list(feats.shape)} std {float(feats.std()):.3g}")
    for c, r in zip(cases, results):
        golden["cases"].append({
            "name": c["name"], "images": c["images"], "messages": c["messages"], "prompt_text": c["text"],
            "prompt_ids": c["ids"], "token_type_ids": c["token_type_ids"], "greedy_ids": r["greedy"],
            "logits": [[fmt(v) for v in lg.tolist()] for lg in r["logits"]], "min_margin": fmt(min(r["margins"])),
            "logit_std_step0": fmt(r["logits"][0].std()),
        })
        log(f"case {c['name']}: greedy {r['greedy']} min margin {min(r['margins']):.4g}; another picture moves "
            f"step 0 by {r['d_img']:.3g}, a causal mask by {r['d_mask']:.3g}")
    with open(os.path.join(entry, "golden.json"), "w") as f:
        f.write(json.dumps(golden, separators=(",", ":")) + "\n")
    size = sum(os.path.getsize(os.path.join(entry, x)) for x in os.listdir(entry))
    log(f"{NAME}: {size} bytes in {sorted(os.listdir(entry))}")
    if size > SIZE_LIMIT:
        raise RuntimeError(f"{NAME} is {size} bytes, over {SIZE_LIMIT}")


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
