#!/usr/bin/env python3
"""Builds Hearth's Qwen 3.5 vision golden: testdata/models/qwen3_5_vision-f32.

A tiny random-weight Qwen3_5ForConditionalGeneration built from transformers'
own config classes: the text model shrunk like the manifest's qwen3_5 entry
(hidden 64, 4 heads of 32, 2 KV heads, vocab 512) to 2 layers (one Gated
DeltaNet layer, one full-attention layer), partial rotary 0.25 (8 rotary
dims, 4 frequencies) and mrope_section [2, 1, 1] so the interleaved mRoPE
has a temporal, a height and a width frequency; tied embeddings. The vision
tower (Qwen3_5VisionConfig): depth 2, hidden 32, 2 heads, intermediate 64,
8x8 patches, temporal_patch_size 2, spatial_merge_size 2, 36 learned
position embeddings (a 6x6 grid, interpolated to each picture's grid),
out_hidden_size 64. Saved the way the hub has it (save_pretrained of the
model and of its Qwen3VLProcessor), with two deterministic pictures
(image0.png 32x32 -> a 4x4 patch grid, 4 soft tokens; image1.png 50x30 ->
resized to 48x32, a 4x6 grid, 6 soft tokens) and golden.json:

  images[i]: the processor's pixel_values and image_grid_thw of the
             picture, the vision model's last_hidden_state (before the
             merger) and its pooler_output (the merger's soft tokens)
  cases[j]:  a chat-template conversation with pictures; the rendered text,
             the processor's expanded input_ids and mm_token_type_ids,
             get_rope_index's 3 position streams and rope delta over the
             prompt plus the greedy ids, 8 greedy ids and the logits before
             each (logits[i] is the last position's logits before
             greedy_ids[i]), from transformers' own forward with
             pixel_values and image_grid_thw, re-run over the whole
             sequence at every step (use_cache=False).

The tokenizer is chat-tiny's byte-level BPE cut to 504 tokens plus Qwen's
special tokens (<|endoftext|> <|im_start|> <|im_end|> <|vision_start|>
<|vision_end|> <|image_pad|> <|video_pad|> <|vision_pad|>, ids 504-511);
the chat template is a short Qwen-VL one (image parts written as
<|vision_start|><|image_pad|><|vision_end|>, as Qwen3.5's own does).

A seed is accepted when, in every case, the smallest top1-top2 logit gap is
>= 0.01, the 8 greedy ids hold >= 4 distinct ids and none is special,
another picture moves the step-0 logits by > 0.05, and plain 1-D positions
in place of get_rope_index's move them by > 1e-3 (so a missing mRoPE
fails the tests).

With --sources FILE it also writes the reference sources it ran
(inspect.getsource) into FILE.

Usage (repository root, on the device machine):
  python3 tools/oracle/make_qwen_vision_goldens.py --out DIR [--sources FILE]
The device tool brings back a limited number of files: copy the entry's
files back from the log if some are left out (the script prints every
config it writes; tokenizer.json is mv.tokenizer_json(SPECIALS) as
tokenizers writes it, json.dumps(indent=2, ensure_ascii=False) with merges
as pairs).
Needs: torch, numpy, safetensors, transformers 5.17, tokenizers, Pillow,
torchvision.
"""

import argparse
import inspect
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
sys.path.insert(0, HERE)
import make_goldens as mg  # noqa: E402
import make_vision_goldens as mv  # noqa: E402

SCRIPT = "tools/oracle/make_qwen_vision_goldens.py"
NAME = "qwen3_5_vision-f32"
STEPS = 8
MAX_ATTEMPTS = 300
SEARCH_SECONDS = 180
MIN_MARGIN = 0.01
MIN_DISTINCT = 4
SIZE_LIMIT = 1_500_000

BASE = mv.BASE
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
            "<|image_pad|>", "<|video_pad|>", "<|vision_pad|>"]
ID = {t: BASE + i for i, t in enumerate(SPECIALS)}

PATCH = 8
MERGE = 2
TEMPORAL = 2
MIN_PIXELS = 16 * 16
MAX_PIXELS = 64 * 64
# The video processor's budget is wider, as make_qwen_video_goldens.py (which
# adds the entry's video golden) sets it: its clip's frames keep a 4x6 grid.
VIDEO_SIZE = {"shortest_edge": MIN_PIXELS, "longest_edge": 16384}

CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' -%}{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- elif item['type'] == 'video' -%}{{- '<|vision_start|><|video_pad|><|vision_end|>' -}}"
    "{%- elif item['type'] == 'text' -%}{{- item['text'] -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)

CASES = [
    dict(name="one_image", images=[0], content=[{"type": "image"}, {"type": "text", "text": "What is in this picture?"}]),
    dict(name="two_images", images=[0, 1],
         content=[{"type": "text", "text": "Compare"}, {"type": "image"}, {"type": "text", "text": "with"},
                  {"type": "image"}, {"type": "text", "text": "please."}]),
]

log = mv.log
fmt = mv.fmt
flat = mv.flat


def cls(name):
    """A transformers class by name: top level, else its model's modules."""
    c = getattr(transformers, name, None)
    if c is not None:
        return c
    import importlib
    for mod in ("transformers.models.qwen3_5.configuration_qwen3_5", "transformers.models.qwen3_5.modeling_qwen3_5",
                "transformers.models.qwen3_vl.processing_qwen3_vl", "transformers.models.qwen3_vl.video_processing_qwen3_vl",
                "transformers.models.qwen2_vl.image_processing_qwen2_vl"):
        try:
            c = getattr(importlib.import_module(mod), name, None)
        except ImportError:
            c = None
        if c is not None:
            return c
    raise RuntimeError(f"transformers {transformers.__version__} has no {name}")


# --- tokenizer and processor ------------------------------------------------


def make_tokenizer():
    import tokenizers
    obj = tokenizers.Tokenizer.from_str(json.dumps(mv.tokenizer_json(SPECIALS)))
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=obj, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    for t, i in ID.items():
        if tok.convert_tokens_to_ids(t) != i:
            raise RuntimeError(f"tokenizer: {t} is {tok.convert_tokens_to_ids(t)}, want {i}")
    if len(tok) != 512:
        raise RuntimeError(f"tokenizer has {len(tok)} tokens, want 512")
    return tok


def make_processor(tok):
    size = {"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS}
    ip = cls("Qwen2VLImageProcessor")(size=size, patch_size=PATCH, temporal_patch_size=TEMPORAL,
                                            merge_size=MERGE)
    vp = None
    try:
        vp = cls("Qwen3VLVideoProcessor")(size=VIDEO_SIZE, patch_size=PATCH, temporal_patch_size=TEMPORAL,
                                                merge_size=MERGE)
    except Exception as e:  # noqa: BLE001
        log(f"no video processor: {type(e).__name__}: {e}")
    try:
        proc = cls("Qwen3VLProcessor")(image_processor=ip, tokenizer=tok, video_processor=vp,
                                             chat_template=CHAT_TEMPLATE)
    except Exception as e:  # noqa: BLE001
        log(f"Qwen3VLProcessor with a video processor: {type(e).__name__}: {e}; trying without")
        proc = cls("Qwen3VLProcessor")(image_processor=ip, tokenizer=tok, chat_template=CHAT_TEMPLATE)
    log(f"processor {type(proc).__name__}: image processor {type(proc.image_processor).__name__}")
    return proc


def make_images():
    """image0: 32x32 (no resize: 4x4 patches); image1: 50 wide, 30 high
    (smart_resize to 48x32: 4x6 patches)."""
    y, x = np.mgrid[0:32, 0:32]
    a = np.stack([(x * 8) % 256, (y * 8) % 256, ((x // 4 + y // 4) % 2) * 200 + 20], -1).astype(np.uint8)
    y, x = np.mgrid[0:30, 0:50]
    b = np.stack([(x * y * 3) % 256, 255 - x * 5, (y * 7 + (x // 6) * 29) % 256], -1).astype(np.uint8)
    return [Image.fromarray(a, "RGB"), Image.fromarray(b, "RGB")]


# --- model ------------------------------------------------------------------


def make_config():
    text = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=32, max_position_embeddings=256, rms_norm_eps=1e-6,
                hidden_act="silu", tie_word_embeddings=True, layer_types=["linear_attention", "full_attention"],
                linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=16,
                linear_num_key_heads=2, linear_num_value_heads=4,
                rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "partial_rotary_factor": 0.25,
                                 "mrope_section": [2, 1, 1], "mrope_interleaved": True},
                eos_token_id=ID["<|im_end|>"], pad_token_id=ID["<|endoftext|>"])
    text_config = cls("Qwen3_5TextConfig")(**text)
    vision_config = cls("Qwen3_5VisionConfig")(
        depth=2, hidden_size=32, hidden_act="gelu_pytorch_tanh", intermediate_size=64, num_heads=2, in_channels=3,
        patch_size=PATCH, spatial_merge_size=MERGE, temporal_patch_size=TEMPORAL, out_hidden_size=64,
        num_position_embeddings=36)
    config = cls("Qwen3_5Config")(
        text_config=text_config, vision_config=vision_config, image_token_id=ID["<|image_pad|>"],
        video_token_id=ID["<|video_pad|>"], vision_start_token_id=ID["<|vision_start|>"],
        vision_end_token_id=ID["<|vision_end|>"], tie_word_embeddings=True)
    for c in (config, config.text_config, config.vision_config):
        c._attn_implementation = "eager"
    return config


def new_model(config):
    model = cls("Qwen3_5ForConditionalGeneration")(config).to(dtype=torch.float32, device="cpu")
    model.eval()
    emb = model.model.language_model.embed_tokens.weight
    if model.lm_head.weight.data_ptr() != emb.data_ptr():
        log("lm_head was not tied to the embedding: tying it")
        model.lm_head.weight = emb
    inv = model.model.language_model.rotary_emb.inv_freq
    if inv.numel() != 4:
        raise RuntimeError(f"text rotary has {inv.numel()} frequencies, want 4 (head_dim 32 x 0.25 / 2)")
    return model


def init_weights(model, seed):
    master = {}
    for name, p in model.named_parameters():
        g = torch.Generator(device="cpu").manual_seed(mg.param_seed(seed, name))
        z = torch.randn(tuple(p.shape), generator=g, dtype=torch.float32)
        if ".visual." in name or name.startswith("visual."):
            if name.endswith("patch_embed.proj.weight"):  # conv3d [out, C, T, p, p]
                w = z / float(np.prod(p.shape[1:])) ** 0.5
            elif name.endswith("pos_embed.weight"):
                w = 0.3 * z
            elif name.endswith(".bias"):
                w = 0.1 * z
            elif p.ndim == 1:  # LayerNorm weights
                w = 1.0 + 0.1 * z
            elif p.ndim == 2:
                w = z / float(p.shape[1]) ** 0.5
            else:
                raise RuntimeError(f"no init rule for {name} {tuple(p.shape)}")
        elif name.endswith("linear_attn.norm.weight"):
            w = 1.0 + 0.1 * z  # the gated norm multiplies by w
        elif name.endswith("norm.weight"):
            w = 0.1 * z  # Qwen3_5RMSNorm multiplies by 1 + w
        elif name.endswith(".bias"):
            w = 0.1 * z
        elif name.endswith("embed_tokens.weight"):
            w = 0.2 * z  # tied head
        elif name == "lm_head.weight":
            w = 0.3 * z
        elif name.endswith(("o_proj.weight", "down_proj.weight")):
            w = 2.0 * z / float(p.shape[1]) ** 0.5
        elif name.endswith("A_log"):
            w = torch.log(1.0 + 7.0 * torch.rand(tuple(p.shape), generator=g))
        elif name.endswith("dt_bias"):
            w = 0.5 * z
        elif name.endswith("conv1d.weight"):  # depthwise [C, 1, K]
            w = z / float(p.shape[2]) ** 0.5
        elif p.ndim == 2:
            w = z / float(p.shape[1]) ** 0.5
        else:
            raise RuntimeError(f"no init rule for parameter {name} {tuple(p.shape)}")
        master[name] = w.contiguous()
    mg.load_weights(model, master)
    return master


def accepts(fn, name):
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def forward_kwargs(model, case, n_new):
    kw = dict(pixel_values=case["pixel_values"], image_grid_thw=case["grid"])
    if case.get("mm_token_type_ids") is not None and (accepts(model.forward, "mm_token_type_ids") or
                                                      accepts(model.model.forward, "mm_token_type_ids")):
        kw["mm_token_type_ids"] = torch.tensor([case["mm_token_type_ids"] + [0] * n_new], dtype=torch.long)
    return kw


def logits_of(model, case, seq, pixel_values=None, plain_positions=False):
    t = torch.tensor([seq], dtype=torch.long)
    kw = forward_kwargs(model, case, len(seq) - len(case["ids"]))
    if pixel_values is not None:
        kw["pixel_values"] = pixel_values
    if plain_positions:
        kw["position_ids"] = torch.arange(len(seq)).view(1, 1, -1).expand(3, 1, -1)
    model.model.rope_deltas = None
    with torch.no_grad():
        out = model(input_ids=t, attention_mask=torch.ones_like(t), use_cache=False, **kw)
    return out.logits[0, -1].to(torch.float32).clone()


def rope_index(model, case, seq):
    fn = model.model.get_rope_index
    t = torch.tensor([seq], dtype=torch.long)
    kw = dict(image_grid_thw=case["grid"], attention_mask=torch.ones_like(t))
    if accepts(fn, "mm_token_type_ids"):
        mt = case.get("mm_token_type_ids")
        if mt is None:
            mt = [1 if i == ID["<|image_pad|>"] else 0 for i in case["ids"]]
        kw["mm_token_type_ids"] = torch.tensor([mt + [0] * (len(seq) - len(case["ids"]))], dtype=torch.long)
    with torch.no_grad():
        pos, delta = fn(t, **kw)
    return pos[:, 0, :].tolist(), int(delta.reshape(-1)[0])


def run_case(model, case):
    seq = list(case["ids"])
    all_logits, greedy, margins = [], [], []
    for _ in range(STEPS):
        lg = logits_of(model, case, seq)
        top2 = torch.topk(lg, 2)
        nxt = int(top2.indices[0])
        all_logits.append(lg)
        greedy.append(nxt)
        margins.append(float(top2.values[0] - top2.values[1]))
        seq.append(nxt)
    return all_logits, greedy, margins


def tower_outputs(model, pv, grid):
    with torch.no_grad():
        out = model.model.visual(pv, grid_thw=grid)
    if hasattr(out, "last_hidden_state"):
        return out.last_hidden_state, out.pooler_output
    if isinstance(out, (tuple, list)):
        raise RuntimeError(f"the vision model returned a {type(out).__name__} of {len(out)}; want last_hidden_state")
    raise RuntimeError(f"the vision model returned {type(out).__name__}")


# --- main -------------------------------------------------------------------


def process(proc, images):
    out = []
    for case in CASES:
        messages = [{"role": "user", "content": case["content"]}]
        imgs = [images[i] for i in case["images"]]
        text = proc.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        enc = proc(text=text, images=imgs, return_tensors="pt")
        log(f"  {case['name']}: processor outputs {sorted(enc.keys())}")
        ids = enc["input_ids"][0].tolist()
        grid = enc["image_grid_thw"]
        want = sum(int(g.prod()) // (MERGE * MERGE) for g in grid)
        if ids.count(ID["<|image_pad|>"]) != want:
            raise RuntimeError(f"{case['name']}: {ids.count(ID['<|image_pad|>'])} image tokens, want {want}")
        mt = enc["mm_token_type_ids"][0].tolist() if "mm_token_type_ids" in enc else None
        if mt is not None and mt != [1 if i == ID["<|image_pad|>"] else 0 for i in ids]:
            raise RuntimeError(f"{case['name']}: mm_token_type_ids {mt} are not the image-token positions")
        out.append(dict(case, messages=messages, text=text, ids=ids, mm_token_type_ids=mt, grid=grid,
                        pixel_values=enc["pixel_values"].to(torch.float32)))
    return out


def dump_sources(path):
    """Writes the reference sources into one file (the device tool brings
    back only a few files per run)."""
    import importlib
    with open(path, "w") as out:
        for mod in ["transformers.models.qwen3_5.modeling_qwen3_5", "transformers.models.qwen3_5.configuration_qwen3_5",
                    "transformers.models.qwen3_vl.processing_qwen3_vl", "transformers.vision_utils",
                    "transformers.models.qwen2_vl.image_processing_qwen2_vl"]:
            try:
                src = inspect.getsource(importlib.import_module(mod))
                out.write(f"# ===== {mod} =====\n{src}\n")
                log(f"source: {mod}")
            except Exception as e:  # noqa: BLE001
                log(f"source {mod}: {type(e).__name__}: {e}")


def build(out_dir, args_list):
    for end, steps in ((47, 6), (5, 4), (5, 16)):
        log(f"torch.linspace(0, {end}, {steps}) float32: {[repr(np.float32(v)) for v in torch.linspace(0, end, steps).tolist()]}")
    tok = make_tokenizer()
    proc = make_processor(tok)
    images = make_images()
    cases = process(proc, images)
    for c in cases:
        log(f"case {c['name']}: {len(c['ids'])} ids {c['ids']}")
        log(f"  text {c['text']!r}, grid {c['grid'].tolist()}")
    single = []
    for i, im in enumerate(images):
        enc = proc.image_processor(images=[im], return_tensors="pt")
        single.append((enc["pixel_values"].to(torch.float32), enc["image_grid_thw"]))
        log(f"image{i}: {im.width}x{im.height}: pixel_values {list(enc['pixel_values'].shape)}, "
            f"grid {enc['image_grid_thw'].tolist()}")
    for c in cases:
        row = 0
        for i in c["images"]:
            n = single[i][0].shape[0]
            if not torch.equal(c["pixel_values"][row:row + n], single[i][0]):
                raise RuntimeError(f"{c['name']}: picture {i}'s pixel_values differ from the picture's own")
            row += n

    config = make_config()
    import time
    start, fallback = time.time(), None
    for attempt in range(MAX_ATTEMPTS):
        seed = 41000 + attempt
        model = new_model(config)
        init_weights(model, seed)
        results, reason, soft = [], None, False
        for c in cases:
            logits, greedy, margins = run_case(model, c)
            if min(margins) < MIN_MARGIN or len(set(greedy)) < MIN_DISTINCT or max(greedy) >= BASE:
                reason = f"{c['name']}: margin {min(margins):.4g}, {len(set(greedy))} distinct, greedy {greedy}"
                break
            if len(c["images"]) > 1:
                other = torch.cat([c["pixel_values"][16:], c["pixel_values"][:16]])  # same grids, other pixels
            else:
                other = -c["pixel_values"]
            d_img = float((logits_of(model, c, c["ids"], pixel_values=other) - logits[0]).abs().max())
            d_pos = float((logits_of(model, c, c["ids"], plain_positions=True) - logits[0]).abs().max())
            results.append(dict(logits=logits, greedy=greedy, margins=margins, d_img=d_img, d_pos=d_pos))
            if d_img <= 0.05 or d_pos <= 1e-3:
                reason = f"{c['name']}: another picture moves the logits {d_img:.3g}, plain positions {d_pos:.3g}"
                soft = True
        if reason is None:
            break
        if soft and fallback is None and len(results) == len(cases):
            fallback = (seed, model, results)
        log(f"  seed {seed}: {reason}; retrying")
        if time.time() - start > SEARCH_SECONDS:
            break
    if reason is not None:
        if fallback is None:
            raise RuntimeError(f"no seed in {attempt + 1} attempts met the rules")
        seed, model, results = fallback
        log(f"WARNING: no seed met every rule; seed {seed} only misses the sensitivity rules")
    log(f"seed {seed} accepted")

    entry = os.path.join(out_dir, NAME)
    shutil.rmtree(entry, ignore_errors=True)
    os.makedirs(entry)
    model.generation_config.eos_token_id = [ID["<|im_end|>"], ID["<|endoftext|>"]]
    model.save_pretrained(entry)
    proc.save_pretrained(entry)
    for i, im in enumerate(images):
        im.save(os.path.join(entry, f"image{i}.png"))
    log(f"written: { {f: os.path.getsize(os.path.join(entry, f)) for f in sorted(os.listdir(entry))} }")
    from safetensors import safe_open
    with safe_open(os.path.join(entry, "model.safetensors"), "pt") as f:
        log("tensors: " + ", ".join(f"{n} {list(f.get_slice(n).get_shape())}" for n in sorted(f.keys())))
    for fn in sorted(os.listdir(entry)):
        if fn.endswith(".json") and fn not in ("tokenizer.json", "golden.json"):
            with open(os.path.join(entry, fn)) as f:
                log(f"{fn}: {f.read()}")

    m2 = cls("Qwen3_5ForConditionalGeneration").from_pretrained(entry, dtype=torch.float32,
                                                                     attn_implementation="eager")
    m2.eval()
    d = float((logits_of(m2, cases[0], cases[0]["ids"]) - results[0]["logits"][0]).abs().max())
    if d > 1e-5:
        log(f"WARNING: reloaded model: step-0 logits off by {d}")
    log(f"check: reloaded model step-0 max |diff| {d:.3g}")
    try:
        p2 = transformers.AutoProcessor.from_pretrained(entry)
        for c in cases:
            text = p2.apply_chat_template(c["messages"], tokenize=False, add_generation_prompt=True)
            enc = p2(text=text, images=[images[i] for i in c["images"]], return_tensors="pt")
            same = text == c["text"] and enc["input_ids"][0].tolist() == c["ids"] and \
                torch.equal(enc["pixel_values"].to(torch.float32), c["pixel_values"])
            log(f"check: reloaded processor ({type(p2).__name__}, {type(p2.image_processor).__name__}) "
                f"reproduces {c['name']}: {same}")
    except Exception:  # noqa: BLE001
        log("check: reloaded processor FAILED:\n" + traceback.format_exc())

    golden = {
        "script": SCRIPT, "args": args_list, "transformers": transformers.__version__, "torch": torch.__version__,
        "numpy": np.__version__, "name": NAME, "model_type": "qwen3_5", "variant": "f32", "seed": seed,
        "tolerance": {"max_abs_logit": 1e-4, "max_abs_tower": 1e-4,
                      "why": "the reference runs in float32 on the F32 weights as saved, so only float32 "
                             "summation order differs"},
        "special_tokens": ID, "images": [], "cases": [],
    }
    for i, im in enumerate(images):
        pv, grid = single[i]
        rec = {"file": f"image{i}.png", "width": im.width, "height": im.height,
               "pixel_values_shape": list(pv.shape), "pixel_values": flat(pv), "grid_thw": grid[0].tolist()}
        try:
            hidden, merged = tower_outputs(model, pv, grid)
            rec.update({"vision_last_hidden_state_shape": list(hidden.shape), "vision_last_hidden_state": flat(hidden),
                        "image_features_shape": list(merged.shape), "image_features": flat(merged)})
            log(f"image{i}: tower {list(hidden.shape)} std {float(hidden.std()):.3g}, "
                f"merged {list(merged.shape)} std {float(merged.std()):.3g}")
        except Exception:  # noqa: BLE001
            log(f"image{i}: tower FAILED:\n" + traceback.format_exc())
        golden["images"].append(rec)
    for c, r in zip(cases, results):
        try:
            pos, delta = rope_index(model, c, c["ids"] + r["greedy"])
        except Exception:  # noqa: BLE001
            log(f"{c['name']}: get_rope_index FAILED:\n" + traceback.format_exc())
            pos, delta = None, None
        golden["cases"].append({
            "name": c["name"], "images": c["images"], "messages": c["messages"], "prompt_text": c["text"],
            "prompt_ids": c["ids"], "mm_token_type_ids": c["mm_token_type_ids"],
            "token_type_ids": [1 if i == ID["<|image_pad|>"] else 0 for i in c["ids"]],
            "position_ids": pos, "rope_delta": delta, "greedy_ids": r["greedy"],
            "logits": [[fmt(v) for v in lg.tolist()] for lg in r["logits"]], "min_margin": fmt(min(r["margins"])),
            "logit_std_step0": fmt(r["logits"][0].std()),
        })
        log(f"case {c['name']}: greedy {r['greedy']} min margin {min(r['margins']):.4g}; another picture moves "
            f"step 0 by {r['d_img']:.3g}, plain positions by {r['d_pos']:.3g}; rope delta {delta}; positions {pos}")
    with open(os.path.join(entry, "golden.json"), "w") as f:
        f.write(json.dumps(golden, separators=(",", ":")) + "\n")
    size = sum(os.path.getsize(os.path.join(entry, x)) for x in os.listdir(entry))
    log(f"{NAME}: {size} bytes in {sorted(os.listdir(entry))}")
    if size > SIZE_LIMIT:
        log(f"WARNING: {NAME} is {size} bytes, over {SIZE_LIMIT}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output folder (the entry goes in OUT/" + NAME + ")")
    ap.add_argument("--sources", help="also write the reference sources into this one file")
    args = ap.parse_args()
    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    log(f"python {sys.version.split()[0]} torch {torch.__version__} transformers {transformers.__version__} "
        f"numpy {np.__version__}")
    if args.sources:
        dump_sources(args.sources)
    build(args.out, sys.argv[1:])


if __name__ == "__main__":
    main()
