#!/usr/bin/env python3
"""Builds Hearth's Gemma 4 vision goldens: testdata/models/gemma4_vision-f32
and the Gemma 4 image processor's goldens in testdata/media/golden/gemma4.

The model: a tiny random-weight Gemma4ForConditionalGeneration built from
transformers 5.17's own config classes, with a vision_config and no audio:

  text:   4 layers (sliding, full, sliding, full; window 6), hidden 32,
          2 heads, 1 KV head, head 16 (global 32, proportional rope on a
          quarter), per-layer inputs 8 wide, the last two layers sharing the
          KV of the first two, final softcap 8, use_bidirectional_attention
          "vision" (an image's tokens see each other on sliding layers only)
  vision: 2 layers, hidden 32, 2 heads, 1 KV head, head 16, patch 2,
          pooling 3, a 2x256 position table, axial rope (theta 100), clipped
          linears (their bounds set from the activations of image0, so they
          clip) and the standardize bias/scale

saved the way the hub has it (save_pretrained of the model and of its
Gemma4Processor: config.json, generation_config.json, model.safetensors,
the tokenizer files, processor_config.json, chat_template.jinja), plus two
deterministic pictures (image0.png 48x48, which the processor does not
resize; image1.png 50x30, which it resizes to 60x36) and golden.json:

  images[i]: the processor's pixel_values of the picture (its real patch
             rows; the padding rows are checked to be zero) and patch grid
             (grid_thw: 1, patches high, patches wide),
             the vision encoder's first 512 output values (before the
             pooler), the vision model's last_hidden_state (pooled,
             standardized soft tokens), the features after embed_vision
             (get_image_features), and how far plain (unclipped) linears
             move them
  cases[j]:  a chat-template conversation with pictures; the rendered text,
             the processor's expanded input_ids and mm_token_type_ids,
             8 greedy ids and the logits before each (logits[i] is the last
             position's logits before greedy_ids[i]), from transformers' own
             forward with pixel_values, image_position_ids and
             mm_token_type_ids, re-run over the whole sequence at every step
             (transformers' generate drops mm_token_type_ids after the
             prompt; a re-run keeps the block mask over the picture, which
             is what a cache filled by the prompt pass holds)

The processor goldens: every picture of testdata/media the processors see
(decoded as make_media_goldens.py decodes them) through
AutoImageProcessor.from_pretrained of two Gemma4ImageProcessor configs
(gemma4: the class defaults, patch 16, pooling 3, 280 soft tokens;
gemma4_tiny: the model's, patch 2, 70 soft tokens) and the PIL backend of
both, in make_media_goldens.py's format (manifest.json + pixels.f32.gz): the
real patch rows [patches, 3*p*p] and the grid (1, patches high, patches
wide); the padding rows are checked to be zero and the position ids to be
the patch grid.

Tokenizer: chat-tiny's byte-level BPE cut to 500 tokens plus Gemma 4's
special tokens (ids 500-511); a short Gemma-4-style chat template whose image
parts write <|image|>, which the processor expands to
<|image> + n x <|image|> + <image|>.

Reference: float32 on the CPU, eager attention, deterministic algorithms.
A seed is accepted when, in every case, the smallest top1-top2 logit gap is
>= 0.01, the 8 greedy ids hold >= 4 distinct ids and none is a special
token, another picture moves the step-0 logits by > 0.05, the causal mask
(mm_token_type_ids None) moves them by > 1e-3, and unclipped linears move
the image features by > 1e-3.

Usage (repository root, on the device machine; testdata/models/chat-tiny
must be there):
  python3 tools/oracle/make_gemma4_vision_goldens.py --out DIR
Needs: torch, torchvision, numpy, safetensors, transformers 5.17, tokenizers,
Pillow.
"""

import argparse
import glob
import gzip
import json
import os
import shutil
import sys
import tempfile
import traceback

import numpy as np
import torch
import transformers
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import make_goldens as mg  # noqa: E402
import make_media_goldens as mmg  # noqa: E402
import make_vision_goldens as mv  # noqa: E402

SCRIPT = "tools/oracle/make_gemma4_vision_goldens.py"
NAME = "gemma4_vision-f32"
STEPS = 8
MAX_ATTEMPTS = 300
MIN_MARGIN = 0.01
MIN_DISTINCT = 4
SIZE_LIMIT = 1_200_000

SPECIALS = ["<pad>", "<eos>", "<bos>", "<|turn>", "<turn|>", "<|image>", "<image|>", "<|image|>",
            "<|audio>", "<audio|>", "<|audio|>", "<|video|>"]
BASE = 512 - len(SPECIALS)
ID = {t: BASE + i for i, t in enumerate(SPECIALS)}
NAMED = {"boi_token": "<|image>", "eoi_token": "<image|>", "image_token": "<|image|>",
         "boa_token": "<|audio>", "eoa_token": "<audio|>", "audio_token": "<|audio|>"}

PATCH = 2
POOL = 3
SOFT = 70

CHAT_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- for message in messages -%}"
    "{{- '<|turn>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' -%}{{- '<|image|>' -}}"
    "{%- elif item['type'] == 'video' -%}{{- '<|video|>' -}}"
    "{%- elif item['type'] == 'text' -%}{{- item['text'] -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{- '<turn|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|turn>model\\n' -}}{%- endif -%}"
)

log = mv.log
fmt = mv.fmt
flat = mv.flat


def cls(name):
    c = getattr(transformers, name, None)
    if c is not None:
        return c
    import importlib
    for mod in ("transformers.models.gemma4.configuration_gemma4", "transformers.models.gemma4.modeling_gemma4",
                "transformers.models.gemma4.processing_gemma4", "transformers.models.gemma4.image_processing_gemma4",
                "transformers.models.gemma4.image_processing_pil_gemma4",
                "transformers.models.gemma4.video_processing_gemma4",
                "transformers.models.gemma4.feature_extraction_gemma4"):
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
    mv.BASE = BASE  # tokenizer_json keeps chat-tiny's ids below mv.BASE
    tj = mv.tokenizer_json(SPECIALS)
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


def image_kwargs():
    return dict(patch_size=PATCH, pooling_kernel_size=POOL, max_soft_tokens=SOFT)


def make_processor(tok):
    ip = cls("Gemma4ImageProcessor")(**image_kwargs())
    fe, vp = None, None
    try:
        fe = cls("Gemma4AudioFeatureExtractor")()
    except Exception as e:  # noqa: BLE001
        log(f"no audio feature extractor: {type(e).__name__}: {e}")
    try:
        # num_frames 3, as make_gemma4_video_goldens.py writes it: 32
        # frames of 60 soft tokens would not fit 256 positions
        vp = cls("Gemma4VideoProcessor")(**image_kwargs(), num_frames=3)
    except Exception as e:  # noqa: BLE001
        log(f"no video processor with the image settings: {type(e).__name__}: {e}")
        try:
            vp = cls("Gemma4VideoProcessor")()
        except Exception as e2:  # noqa: BLE001
            log(f"no video processor: {type(e2).__name__}: {e2}")
    proc = cls("Gemma4Processor")(feature_extractor=fe, image_processor=ip, tokenizer=tok, video_processor=vp,
                                  chat_template=CHAT_TEMPLATE, image_seq_length=SOFT)
    if len(tok) != 512 or tok.convert_tokens_to_ids("<|video|>") != ID["<|video|>"]:
        raise RuntimeError(f"the processor grew the tokenizer to {len(tok)}")
    log(f"processor {type(proc).__name__}: image processor {type(proc.image_processor).__name__}")
    return proc


# --- pictures ---------------------------------------------------------------


def make_images():
    """image0: 48x48 (already the processor's size: no resize); image1:
    50 wide, 30 high (resized up to 60x36)."""
    y, x = np.mgrid[0:48, 0:48]
    a = np.stack([(x * 5) % 256, (y * 5) % 256, ((x // 6 + y // 6) % 2) * 200 + 20], -1).astype(np.uint8)
    y, x = np.mgrid[0:30, 0:50]
    b = np.stack([(x * y) % 256, 255 - x * 3, (y * 7 + (x // 10) * 17) % 256], -1).astype(np.uint8)
    return [Image.fromarray(a, "RGB"), Image.fromarray(b, "RGB")]


CASES = [
    dict(name="one_image", images=[0], content=[{"type": "image"}, {"type": "text", "text": "What is in this picture?"}]),
    dict(name="two_images", images=[0, 1],
         content=[{"type": "text", "text": "Compare"}, {"type": "image"}, {"type": "text", "text": "with"},
                  {"type": "image"}, {"type": "text", "text": "please."}]),
]


# --- model ------------------------------------------------------------------


def make_config():
    text = dict(
        vocab_size=512, hidden_size=32, intermediate_size=64, num_hidden_layers=4, num_attention_heads=2,
        num_key_value_heads=1, head_dim=16, global_head_dim=32, hidden_activation="gelu_pytorch_tanh",
        max_position_embeddings=256, rms_norm_eps=1e-6, sliding_window=6, tie_word_embeddings=True,
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                         "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                            "rope_theta": 1000000.0}},
        hidden_size_per_layer_input=8, vocab_size_per_layer_input=512, num_kv_shared_layers=2,
        final_logit_softcapping=8.0, use_bidirectional_attention="vision",
        pad_token_id=ID["<pad>"], bos_token_id=ID["<bos>"], eos_token_id=ID["<eos>"])
    text_config = cls("Gemma4TextConfig")(**text)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=1, head_dim=16, hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6,
                  pooling_kernel_size=POOL, patch_size=PATCH, position_embedding_size=256,
                  use_clipped_linears=True, standardize=True,
                  rope_parameters={"rope_type": "axial", "rope_theta": 100.0})
    vision_config = cls("Gemma4VisionConfig")(**vision)
    config = cls("Gemma4Config")(
        text_config=text_config, vision_config=vision_config, audio_config=None,
        boi_token_id=ID["<|image>"], eoi_token_id=ID["<image|>"], image_token_id=ID["<|image|>"],
        video_token_id=ID["<|video|>"], boa_token_id=ID["<|audio>"], eoa_token_index=ID["<audio|>"],
        audio_token_id=ID["<|audio|>"], tie_word_embeddings=True)
    for c in (config, config.text_config, config.vision_config):
        c._attn_implementation = "eager"
    return config


def new_model(config):
    model = cls("Gemma4ForConditionalGeneration")(config).to(dtype=torch.float32, device="cpu")
    model.eval()
    if model.model.audio_tower is not None:
        raise RuntimeError("the model has an audio tower")
    if model.lm_head.weight.data_ptr() != model.model.language_model.embed_tokens.weight.data_ptr():
        log("lm_head was not tied to the embedding: tying it")
        model.lm_head.weight = model.model.language_model.embed_tokens.weight
    return model


def init_weights(model, seed):
    master = {}
    for name, p in model.named_parameters():
        g = torch.Generator(device="cpu").manual_seed(mg.param_seed(seed, name))
        z = torch.randn(tuple(p.shape), generator=g, dtype=torch.float32)
        if name.endswith("position_embedding_table"):
            w = 0.3 * z
        elif name.endswith("norm.weight") or (p.ndim == 1 and "layernorm" in name):
            w = 1.0 + 0.1 * z  # Gemma 4's norms multiply by w
        elif name.endswith("embed_tokens.weight"):
            w = 0.05 * z
        elif name.endswith("embed_tokens_per_layer.weight"):
            w = 0.2 * z
        elif name.endswith(("o_proj.weight", "down_proj.weight", "o_proj.linear.weight", "down_proj.linear.weight")):
            w = 2.0 * z / float(p.shape[1]) ** 0.5
        elif p.ndim == 2:
            w = z / float(p.shape[1]) ** 0.5
        else:
            raise RuntimeError(f"no init rule for {name} {tuple(p.shape)}")
        master[name] = w.contiguous()
    for name, b in model.named_buffers():
        last = name.rsplit(".", 1)[-1]
        g = torch.Generator(device="cpu").manual_seed(mg.param_seed(seed, name))
        if last == "layer_scalar":
            master[name] = (1.0 + 0.2 * torch.randn(tuple(b.shape), generator=g)).contiguous()
        elif last == "std_bias":
            master[name] = (0.3 * torch.randn(tuple(b.shape), generator=g)).contiguous()
        elif last == "std_scale":
            master[name] = (1.0 + 0.2 * torch.randn(tuple(b.shape), generator=g)).contiguous()
    mg.load_weights(model, master)
    return master


def clippables(model):
    return [(n, m) for n, m in model.model.vision_tower.named_modules() if type(m).__name__ == "Gemma4ClippableLinear"]


def set_clips(model, pv, pos):
    """Bounds at 70% of the range each clipped linear sees on image0's
    pixels (input and output), so the clamps bite."""
    seen = {}
    hooks = []
    for n, m in clippables(model):
        def hook(mod, args, out, n=n):
            x = args[0]
            seen[n] = (float(x.min()), float(x.max()), float(out.min()), float(out.max()))
        hooks.append(m.register_forward_hook(hook))
    with torch.no_grad():
        model.model.vision_tower(pixel_values=pv, pixel_position_ids=pos)
    for h in hooks:
        h.remove()
    with torch.no_grad():
        for n, m in clippables(model):
            a, b, c, d = seen[n]
            m.input_min.fill_(0.7 * a)
            m.input_max.fill_(0.7 * b)
            m.output_min.fill_(0.7 * c)
            m.output_max.fill_(0.7 * d)
    if not seen:
        raise RuntimeError("no clipped linears in the vision tower")


def unclipped(model):
    """Context: the clipped linears' bounds set to +-inf."""
    class U:
        def __enter__(self):
            self.saved = []
            with torch.no_grad():
                for _, m in clippables(model):
                    self.saved.append([t.clone() for t in (m.input_min, m.input_max, m.output_min, m.output_max)])
                    m.input_min.fill_(-float("inf"))
                    m.input_max.fill_(float("inf"))
                    m.output_min.fill_(-float("inf"))
                    m.output_max.fill_(float("inf"))

        def __exit__(self, *a):
            with torch.no_grad():
                for (_, m), s in zip(clippables(model), self.saved):
                    for t, v in zip((m.input_min, m.input_max, m.output_min, m.output_max), s):
                        t.copy_(v)
    return U()


def logits_of(model, ids, pv, pos, mm_prompt=None, bidirectional=True):
    """The last position's logits; mm_token_type_ids are the processor's
    over the prompt (0 after it), or None for the plain causal mask."""
    t = torch.tensor([ids], dtype=torch.long)
    mm = None
    if bidirectional:
        if mm_prompt is None:
            mm_prompt = [1 if i == ID["<|image|>"] else 0 for i in ids]
        mm = torch.tensor([list(mm_prompt) + [0] * (len(ids) - len(mm_prompt))], dtype=torch.long)
    with torch.no_grad():
        out = model(input_ids=t, pixel_values=pv, image_position_ids=pos, mm_token_type_ids=mm, use_cache=False)
    return out.logits[0, -1].to(torch.float32).clone()


def run_case(model, prompt, pv, pos, mm):
    seq = list(prompt)
    all_logits, greedy, margins = [], [], []
    for _ in range(STEPS):
        lg = logits_of(model, seq, pv, pos, mm)
        top2 = torch.topk(lg, 2)
        nxt = int(top2.indices[0])
        all_logits.append(lg)
        greedy.append(nxt)
        margins.append(float(top2.values[0] - top2.values[1]))
        if nxt >= BASE:  # a special token (another image token would not match the features): the seed is refused
            break
        seq.append(nxt)
    return all_logits, greedy, margins


def image_features(model, pv, pos):
    enc = {}
    h = model.model.vision_tower.encoder.register_forward_hook(
        lambda mod, args, out: enc.__setitem__("h", out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]))
    with torch.no_grad():
        hidden = model.model.vision_tower(pixel_values=pv, pixel_position_ids=pos).last_hidden_state
        r = model.model.get_image_features(pv, pos, return_dict=True)
    h.remove()
    feats = r.pooler_output[0] if isinstance(r.pooler_output, (tuple, list)) else r.pooler_output
    return enc["h"][0], hidden, feats


def real_rows(pv, pos):
    """The real patch rows of one picture and its (patches high, wide),
    checking the padding and the position ids."""
    pv, pos = pv.reshape(pv.shape[-2], pv.shape[-1]), pos.reshape(pos.shape[-2], 2)
    real = (pos != -1).all(-1)
    n = int(real.sum())
    if not bool(real[:n].all()) or bool(real[n:].any()):
        raise RuntimeError("the padding rows are not at the end")
    if n < pv.shape[0] and (float(pv[n:].abs().max()) != 0 or bool((pos[n:] != -1).any())):
        raise RuntimeError("the padding rows are not zero / -1")
    pw, ph = int(pos[:n, 0].max()) + 1, int(pos[:n, 1].max()) + 1
    want = torch.stack(torch.meshgrid(torch.arange(pw), torch.arange(ph), indexing="xy"), -1).reshape(-1, 2)
    if ph * pw != n or not torch.equal(pos[:n].long(), want.long()):
        raise RuntimeError(f"position ids are not the {ph}x{pw} patch grid")
    return pv[:n], ph, pw


# --- the processor goldens --------------------------------------------------


def media_goldens(out_dir):
    import platform
    d = os.path.join(out_dir, "media_gemma4")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    store = mmg.Store()
    mmg.FULL_MAX, mmg.SAMPLE = 1024, 512  # the sums and hashes still cover every value
    configs = {
        "gemma4": {"image_processor_type": "Gemma4ImageProcessor"},
        "gemma4_tiny": dict({"image_processor_type": "Gemma4ImageProcessor"}, **image_kwargs()),
    }
    root = tempfile.mkdtemp()
    procs = {}
    for name, cfg in configs.items():
        pdir = mmg.make_dir(root, name, cfg, None)
        procs[(name, "torchvision")] = transformers.AutoImageProcessor.from_pretrained(pdir)
        log(f"media: {name} torchvision: {type(procs[(name, 'torchvision')]).__name__}")
        try:
            p, kw = mmg.load_pil_backend(pdir)
            procs[(name, "pil")] = p
            log(f"media: {name} pil through {kw}: {type(p).__name__}")
        except Exception as e:  # noqa: BLE001
            log(f"media: {name}: no PIL backend: {type(e).__name__}: {e}")
    files = sorted(f for f in os.listdir(os.path.join(ROOT, "testdata", "media"))
                   if f.rsplit(".", 1)[-1] in ("png", "jpg", "gif", "webp") and not f.startswith("orient"))
    cases = []
    for f in files:
        try:
            rgb, _ = mmg.decode(os.path.join(ROOT, "testdata", "media", f))
        except Exception as e:  # noqa: BLE001
            log(f"media: {f}: not decoded: {e!r}")
            continue
        for (name, backend), p in procs.items():
            case = dict(image=f, config=name, backend=backend, kind="image")
            try:
                out = p(images=Image.fromarray(rgb), return_tensors="pt")
                pv = out["pixel_values"].to(torch.float32)
                rows, ph, pw = real_rows(pv, out["image_position_ids"])
                k = POOL if name == "gemma4_tiny" else 3
                soft = out.get("num_soft_tokens_per_image")
                if soft is not None and int(np.asarray(soft).reshape(-1)[0]) != ph * pw // (k * k):
                    raise RuntimeError(f"num_soft_tokens_per_image {soft}, want {ph * pw // (k * k)}")
                case.update(mmg.summarize(rows.numpy(), store))
                case["grid"] = [1, ph, pw]
                case["padded_rows"] = int(pv.shape[-2])
            except Exception as e:  # noqa: BLE001
                case["error"] = f"{type(e).__name__}: {e}"
                log(f"media: {f} {name}/{backend}: {case['error']}")
            cases.append(case)
    manifest = {
        "script": SCRIPT,
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                     "pillow": Image.__version__ if hasattr(Image, "__version__") else "", "numpy": np.__version__,
                     "python": sys.version.split()[0], "machine": platform.machine()},
        "cpu_capability": str(getattr(torch.backends.cpu, "get_cpu_capability", lambda: "")()),
        "configs": {n: {"preprocessor_config": c, "class": "Gemma4ImageProcessor", "pil_class": "Gemma4ImageProcessorPil"}
                    for n, c in configs.items()},
        "cases": cases,
    }
    with open(os.path.join(d, "manifest.json"), "w") as fp:
        json.dump(manifest, fp, indent=1)
    with gzip.open(os.path.join(d, "pixels.f32.gz"), "wb", compresslevel=9) as fp:
        fp.write(store.buf.getvalue())
    log(f"media: {len(cases)} cases, {sum(1 for c in cases if 'error' in c)} errors, "
        f"{store.n} stored values, {os.path.getsize(os.path.join(d, 'pixels.f32.gz'))} bytes gzipped")


# --- main -------------------------------------------------------------------


def process(proc, images):
    out = []
    for case in CASES:
        messages = [{"role": "user", "content": case["content"]}]
        imgs = [images[i] for i in case["images"]]
        text = proc.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        enc = proc(text=text, images=imgs, add_special_tokens=False, return_tensors="pt")
        log(f"  {case['name']}: processor outputs {sorted(enc.keys())}")
        ids = enc["input_ids"][0].tolist()
        mm = enc["mm_token_type_ids"][0].tolist() if "mm_token_type_ids" in enc else None
        want_mm = [1 if i == ID["<|image|>"] else 0 for i in ids]
        if mm is None:
            log(f"  {case['name']}: the processor gives no mm_token_type_ids; using the image-token positions")
            mm = want_mm
        elif mm != want_mm:
            log(f"  {case['name']}: NOTE mm_token_type_ids {mm} are not the image-token positions")
        out.append(dict(case, messages=messages, text=text, ids=ids, mm_token_type_ids=mm,
                        pixel_values=enc["pixel_values"].to(torch.float32), position_ids=enc["image_position_ids"]))
    return out


def build(out_dir, args_list):
    try:
        media_goldens(out_dir)
    except Exception:  # noqa: BLE001
        log("media goldens FAILED:\n" + traceback.format_exc())

    tok = make_tokenizer()
    proc = make_processor(tok)
    images = make_images()
    cases = process(proc, images)
    for c in cases:
        log(f"case {c['name']}: {len(c['ids'])} ids {c['ids']}")
        log(f"  text {c['text']!r}")
    single = []
    for im in images:
        enc = proc.image_processor(images=[im], return_tensors="pt")
        single.append((enc["pixel_values"].to(torch.float32), enc["image_position_ids"]))
    for c in cases:
        for k, i in enumerate(c["images"]):
            if not torch.equal(c["pixel_values"][k:k + 1], single[i][0]):
                raise RuntimeError(f"{c['name']}: picture {i}'s pixel_values differ from the picture's own")

    config = make_config()
    for attempt in range(MAX_ATTEMPTS):
        seed = 41000 + attempt
        model = new_model(config)
        init_weights(model, seed)
        set_clips(model, *single[0])
        results, reason = [], None
        with torch.no_grad():
            f_clip = model.model.get_image_features(*single[1], return_dict=True).pooler_output[0]
            with unclipped(model):
                f_plain = model.model.get_image_features(*single[1], return_dict=True).pooler_output[0]
        d_clip = float((f_clip - f_plain).abs().max())
        if d_clip <= 1e-3:
            reason = f"unclipped linears move the features {d_clip:.3g}"
        for c in cases if reason is None else []:
            logits, greedy, margins = run_case(model, c["ids"], c["pixel_values"], c["position_ids"],
                                               c["mm_token_type_ids"])
            if min(margins) < MIN_MARGIN or len(set(greedy)) < MIN_DISTINCT or max(greedy) >= BASE:
                reason = f"{c['name']}: margin {min(margins):.4g}, {len(set(greedy))} distinct, greedy {greedy}"
                break
            if len(c["images"]) > 1:
                other_pv, other_pos = c["pixel_values"].flip(0), c["position_ids"].flip(0)
            else:
                other_pv, other_pos = single[1]
            try:
                d_img = float((logits_of(model, c["ids"], other_pv, other_pos, c["mm_token_type_ids"])
                               - logits[0]).abs().max())
            except Exception as e:  # noqa: BLE001  (another picture may have another token count)
                log(f"  {c['name']}: another picture not compared: {type(e).__name__}: {e}")
                d_img = float("nan")
                # the same picture with its pixels reversed in each patch row instead
                pv2 = c["pixel_values"].flip(-1)
                d_img = float((logits_of(model, c["ids"], pv2, c["position_ids"], c["mm_token_type_ids"])
                               - logits[0]).abs().max())
            d_mask = float((logits_of(model, c["ids"], c["pixel_values"], c["position_ids"], bidirectional=False)
                            - logits[0]).abs().max())
            if d_img <= 0.05 or d_mask <= 1e-3:
                reason = f"{c['name']}: another picture moves the logits {d_img:.3g}, the causal mask {d_mask:.3g}"
                break
            results.append(dict(logits=logits, greedy=greedy, margins=margins, d_img=d_img, d_mask=d_mask))
        if reason is None:
            break
        log(f"  seed {seed}: {reason}; retrying")
    else:
        raise RuntimeError(f"no seed in {MAX_ATTEMPTS} attempts met the rules")
    log(f"seed {seed} accepted; unclipped linears move image1's features by {d_clip:.3g}")

    entry = os.path.join(out_dir, NAME)
    shutil.rmtree(entry, ignore_errors=True)
    os.makedirs(entry)
    model.generation_config.eos_token_id = [ID["<eos>"], ID["<turn|>"]]
    model.save_pretrained(entry)
    proc.save_pretrained(entry)
    for i, im in enumerate(images):
        im.save(os.path.join(entry, f"image{i}.png"))
    files = {f: os.path.getsize(os.path.join(entry, f)) for f in sorted(os.listdir(entry))}
    log(f"written: {files}")
    from safetensors import safe_open
    with safe_open(os.path.join(entry, "model.safetensors"), "pt") as f:
        names = sorted(f.keys())
        log("tensors: " + ", ".join(f"{n} {list(f.get_slice(n).get_shape())}" for n in names
                                     if ".layers.1." not in n and ".layers.2." not in n and ".layers.3." not in n))
    for fn in ("config.json", "processor_config.json", "preprocessor_config.json", "tokenizer_config.json",
               "generation_config.json", "chat_template.jinja"):
        p = os.path.join(entry, fn)
        if os.path.exists(p):
            with open(p) as f:
                log(f"{fn}: {f.read()}")

    m2 = cls("Gemma4ForConditionalGeneration").from_pretrained(entry, dtype=torch.float32, attn_implementation="eager")
    m2.eval()
    c0 = cases[0]
    d = float((logits_of(m2, c0["ids"], c0["pixel_values"], c0["position_ids"], c0["mm_token_type_ids"])
               - results[0]["logits"][0]).abs().max())
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
    try:  # what generate does (mm_token_type_ids on the prompt pass only, then a cache)
        t = torch.tensor([c0["ids"]])
        with torch.no_grad():
            gen = model.generate(input_ids=t, pixel_values=c0["pixel_values"], image_position_ids=c0["position_ids"],
                                 mm_token_type_ids=torch.tensor([c0["mm_token_type_ids"]]), max_new_tokens=STEPS,
                                 do_sample=False)
        log(f"check: generate gives {gen[0, len(c0['ids']):].tolist()}, re-runs {results[0]['greedy']}")
    except Exception:  # noqa: BLE001
        log("check: generate FAILED:\n" + traceback.format_exc())

    golden = {
        "script": SCRIPT, "args": args_list, "transformers": transformers.__version__, "torch": torch.__version__,
        "numpy": np.__version__, "name": NAME, "model_type": "gemma4", "variant": "f32", "seed": seed,
        "tolerance": {"max_abs_logit": 1e-4, "max_abs_tower": 1e-4,
                      "why": "the reference runs in float32 on the F32 weights as saved, so only float32 "
                             "summation order differs"},
        "special_tokens": ID, "unclipped_feature_move": fmt(d_clip), "images": [], "cases": [],
    }
    for i, im in enumerate(images):
        pv, pos = single[i]
        rows, ph, pw = real_rows(pv, pos)
        enc, hidden, feats = image_features(model, pv, pos)
        golden["images"].append({
            "file": f"image{i}.png", "width": im.width, "height": im.height, "grid_thw": [1, ph, pw],
            "pixel_values_shape": list(rows.shape), "pixel_values": flat(rows),
            "encoder_head": flat(enc[: ph * pw].reshape(-1)[:512]),
            "vision_last_hidden_state_shape": list(hidden.shape), "vision_last_hidden_state": flat(hidden),
            "image_features_shape": list(feats.shape), "image_features": flat(feats),
        })
        log(f"image{i}: {im.width}x{im.height} -> {ph}x{pw} patches, tower {list(hidden.shape)} "
            f"std {float(hidden.std()):.3g}, features {list(feats.shape)} std {float(feats.std()):.3g}")
    for c, r in zip(cases, results):
        golden["cases"].append({
            "name": c["name"], "images": c["images"], "messages": c["messages"], "prompt_text": c["text"],
            "prompt_ids": c["ids"], "mm_token_type_ids": c["mm_token_type_ids"], "greedy_ids": r["greedy"],
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
    ap.add_argument("--out", required=True, help="output folder (OUT/" + NAME + " and OUT/media_gemma4)")
    args = ap.parse_args()
    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(4)
    log(f"python {sys.version.split()[0]} torch {torch.__version__} transformers {transformers.__version__} "
        f"numpy {np.__version__}")
    build(args.out, sys.argv[1:])


if __name__ == "__main__":
    main()
