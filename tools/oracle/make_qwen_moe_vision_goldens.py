#!/usr/bin/env python3
"""Builds Hearth's Qwen 3.5 MoE vision golden: testdata/models/qwen3_5_moe_vision-f32.

A tiny random-weight Qwen3_5MoeForConditionalGeneration, built like
make_qwen_vision_goldens.py's dense one (whose tokenizer, processor, chat
template, pictures, cases, reference runs and checks it imports): the same
text dims (hidden 64, 4 heads of 32, 2 KV heads, vocab 512, one Gated
DeltaNet layer and one full-attention layer, partial rotary 0.25,
mrope_section [2, 1, 1], tied embeddings) with every feed-forward block
sparse: 4 experts, top 2, moe_intermediate_size 16, a shared expert of 16;
and the same vision tower config (Qwen3_5MoeVisionConfig: depth 2, hidden
32, 2 heads, 8x8 patches, merge 2, 36 learned positions, out 64).
transformers 5.17's Qwen3_5Moe vision classes are Qwen3_5's renamed (the
same ops, config keys and defaults; no deepstack), so the dense tower's
port must reproduce this tower too.

Written into OUT/qwen3_5_moe_vision-f32: the model and processor as
save_pretrained writes them, image0.png, image1.png and golden.json (the
dense golden's fields: per picture the pixel values, the tower's
last_hidden_state and the merger's soft tokens; per case the prompt, its
ids, get_rope_index's streams, 8 greedy ids and the logits before each).

A seed is accepted on the dense script's rules (top1-top2 gap >= 0.01,
>= 4 distinct non-special greedy ids, another picture and plain positions
move the logits) and one more: routing matters (forcing every token to the
same top-2 experts moves the step-0 logits by > 1e-2).

chat-tiny's tokenizer.json is read from ROOT/testdata/models/chat-tiny/
(--root; the repository by default). On the device, where testdata/models
does not travel, pass a folder holding a copy, e.g.
  mkdir -p .gpubin/oracle/qwenmoe/testdata/models/chat-tiny
  cp testdata/models/chat-tiny/tokenizer.json .gpubin/oracle/qwenmoe/testdata/models/chat-tiny/
  python3 tools/oracle/make_qwen_moe_vision_goldens.py --root .gpubin/oracle/qwenmoe --out DIR
Needs: torch, numpy, safetensors, transformers 5.17, tokenizers, Pillow,
torchvision.
"""

import argparse
import json
import os
import shutil
import sys
import time
import traceback

import numpy as np
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_goldens as mg  # noqa: E402
import make_qwen_vision_goldens as qv  # noqa: E402
import make_vision_goldens as mv  # noqa: E402

SCRIPT = "tools/oracle/make_qwen_moe_vision_goldens.py"
NAME = "qwen3_5_moe_vision-f32"
MAX_ATTEMPTS = 300
SEARCH_SECONDS = 60
SIZE_LIMIT = 1_100_000
EXPERTS, TOP_K, MOE_INTER, SHARED_INTER = 4, 2, 16, 16

ID = qv.ID
log = qv.log
fmt = qv.fmt
flat = qv.flat


def cls(name):
    """A transformers class by name: top level, else the MoE model's modules."""
    c = getattr(transformers, name, None)
    if c is not None:
        return c
    import importlib
    for mod in ("transformers.models.qwen3_5_moe.configuration_qwen3_5_moe",
                "transformers.models.qwen3_5_moe.modeling_qwen3_5_moe"):
        try:
            c = getattr(importlib.import_module(mod), name, None)
        except ImportError:
            c = None
        if c is not None:
            return c
    raise RuntimeError(f"transformers {transformers.__version__} has no {name}")


def make_config():
    """The dense golden's config (make_qwen_vision_goldens.make_config) with
    the MoE text config in place of the dense one."""
    text = dict(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=32, max_position_embeddings=256, rms_norm_eps=1e-6,
                hidden_act="silu", tie_word_embeddings=True, layer_types=["linear_attention", "full_attention"],
                linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=16,
                linear_num_key_heads=2, linear_num_value_heads=4,
                rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "partial_rotary_factor": 0.25,
                                 "mrope_section": [2, 1, 1], "mrope_interleaved": True},
                num_experts=EXPERTS, num_experts_per_tok=TOP_K, moe_intermediate_size=MOE_INTER,
                shared_expert_intermediate_size=SHARED_INTER,
                eos_token_id=ID["<|im_end|>"], pad_token_id=ID["<|endoftext|>"])
    text_config = cls("Qwen3_5MoeTextConfig")(**text)
    vision_config = cls("Qwen3_5MoeVisionConfig")(
        depth=2, hidden_size=32, hidden_act="gelu_pytorch_tanh", intermediate_size=64, num_heads=2, in_channels=3,
        patch_size=qv.PATCH, spatial_merge_size=qv.MERGE, temporal_patch_size=qv.TEMPORAL, out_hidden_size=64,
        num_position_embeddings=36)
    config = cls("Qwen3_5MoeConfig")(
        text_config=text_config, vision_config=vision_config, image_token_id=ID["<|image_pad|>"],
        video_token_id=ID["<|video_pad|>"], vision_start_token_id=ID["<|vision_start|>"],
        vision_end_token_id=ID["<|vision_end|>"], tie_word_embeddings=True)
    for c in (config, config.text_config, config.vision_config):
        c._attn_implementation = "eager"
    return config


def new_model(config):
    model = cls("Qwen3_5MoeForConditionalGeneration")(config).to(dtype=torch.float32, device="cpu")
    model.eval()
    emb = model.model.language_model.embed_tokens.weight
    if model.lm_head.weight.data_ptr() != emb.data_ptr():
        log("lm_head was not tied to the embedding: tying it")
        model.lm_head.weight = emb
    inv = model.model.language_model.rotary_emb.inv_freq
    if inv.numel() != 4:
        raise RuntimeError(f"text rotary has {inv.numel()} frequencies, want 4 (head_dim 32 x 0.25 / 2)")
    return model


class _Dense:
    """The model's parameters but the stacked experts, for the dense
    script's init rules (which know no 3-D expert tensors)."""

    def __init__(self, model):
        self.model = model

    def named_parameters(self):
        return ((n, p) for n, p in self.model.named_parameters() if not is_experts(n))

    def named_buffers(self):
        return iter(())


def is_experts(name):
    return ".mlp.experts." in name


def init_weights(model, seed):
    """The dense script's rules (its per-name seeds too), and for the stacked
    experts [E, out, in] make_goldens.py's: N(0, 1/sqrt(in)), doubled for
    down_proj (a residual-stream output)."""
    master = qv.init_weights(_Dense(model), seed)
    for name, p in model.named_parameters():
        if not is_experts(name):
            continue
        if p.ndim != 3:
            raise RuntimeError(f"no init rule for {name} {tuple(p.shape)}")
        g = torch.Generator(device="cpu").manual_seed(mg.param_seed(seed, name))
        z = torch.randn(tuple(p.shape), generator=g, dtype=torch.float32)
        master[name] = ((2.0 if name.endswith("down_proj") else 1.0) * z / float(p.shape[2]) ** 0.5).contiguous()
    mg.load_weights(model, master)
    return master


def routing_moves(model, case, base):
    """How far the step-0 logits move when every token takes experts 0 and 1
    with equal weights (so a port that ignores the router fails)."""
    saved = []
    for mod in model.modules():
        if type(mod).__name__.endswith("TopKRouter"):
            def fwd(h, mod=mod):
                h = h.reshape(-1, mod.hidden_dim)
                logits = torch.nn.functional.linear(h, mod.weight)
                idx = torch.arange(mod.top_k).expand(h.shape[0], -1)
                return logits, torch.full(idx.shape, 1.0 / mod.top_k), idx
            saved.append((mod, mod.forward))
            mod.forward = fwd
    if not saved:
        raise RuntimeError("no TopKRouter module in the model")
    try:
        return float((qv.logits_of(model, case, case["ids"]) - base).abs().max())
    finally:
        for mod, f in saved:
            mod.forward = f


def build(out_dir, args_list):
    tok = qv.make_tokenizer()
    proc = qv.make_processor(tok)
    images = qv.make_images()
    cases = qv.process(proc, images)
    for c in cases:
        log(f"case {c['name']}: {len(c['ids'])} ids {c['ids']}")
    single = []
    for i, im in enumerate(images):
        enc = proc.image_processor(images=[im], return_tensors="pt")
        single.append((enc["pixel_values"].to(torch.float32), enc["image_grid_thw"]))
        log(f"image{i}: {im.width}x{im.height}: pixel_values {list(enc['pixel_values'].shape)}, "
            f"grid {enc['image_grid_thw'].tolist()}")

    config = make_config()
    start, fallback, reason = time.time(), None, None
    for attempt in range(MAX_ATTEMPTS):
        seed = 43000 + attempt
        model = new_model(config)
        init_weights(model, seed)
        results, reason, soft = [], None, False
        for c in cases:
            logits, greedy, margins = qv.run_case(model, c)
            if min(margins) < qv.MIN_MARGIN or len(set(greedy)) < qv.MIN_DISTINCT or max(greedy) >= qv.BASE:
                reason = f"{c['name']}: margin {min(margins):.4g}, {len(set(greedy))} distinct, greedy {greedy}"
                break
            if len(c["images"]) > 1:
                other = torch.cat([c["pixel_values"][16:], c["pixel_values"][:16]])  # same grids, other pixels
            else:
                other = -c["pixel_values"]
            d_img = float((qv.logits_of(model, c, c["ids"], pixel_values=other) - logits[0]).abs().max())
            d_pos = float((qv.logits_of(model, c, c["ids"], plain_positions=True) - logits[0]).abs().max())
            d_route = routing_moves(model, c, logits[0])
            results.append(dict(logits=logits, greedy=greedy, margins=margins, d_img=d_img, d_pos=d_pos,
                                d_route=d_route))
            if d_img <= 0.05 or d_pos <= 1e-3 or d_route <= 1e-2:
                reason = f"{c['name']}: picture moves {d_img:.3g}, positions {d_pos:.3g}, routing {d_route:.3g}"
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
    from safetensors import safe_open
    with safe_open(os.path.join(entry, "model.safetensors"), "pt") as f:
        log("tensors: " + ", ".join(f"{n} {list(f.get_slice(n).get_shape())}" for n in sorted(f.keys())))
    with open(os.path.join(entry, "config.json")) as f:
        log(f"config.json: {f.read()}")

    m2 = cls("Qwen3_5MoeForConditionalGeneration").from_pretrained(entry, dtype=torch.float32,
                                                                        attn_implementation="eager")
    m2.eval()
    d = float((qv.logits_of(m2, cases[0], cases[0]["ids"]) - results[0]["logits"][0]).abs().max())
    log(f"check: reloaded model step-0 max |diff| {d:.3g}")
    if d > 1e-5:
        log(f"WARNING: reloaded model: step-0 logits off by {d}")

    golden = {
        "script": SCRIPT, "args": args_list, "transformers": transformers.__version__, "torch": torch.__version__,
        "numpy": np.__version__, "name": NAME, "model_type": "qwen3_5_moe", "variant": "f32", "seed": seed,
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
            hidden, merged = qv.tower_outputs(model, pv, grid)
            rec.update({"vision_last_hidden_state_shape": list(hidden.shape), "vision_last_hidden_state": flat(hidden),
                        "image_features_shape": list(merged.shape), "image_features": flat(merged)})
            log(f"image{i}: tower {list(hidden.shape)} std {float(hidden.std()):.3g}, "
                f"merged {list(merged.shape)} std {float(merged.std()):.3g}")
        except Exception:  # noqa: BLE001
            log(f"image{i}: tower FAILED:\n" + traceback.format_exc())
        golden["images"].append(rec)
    for c, r in zip(cases, results):
        try:
            pos, delta = qv.rope_index(model, c, c["ids"] + r["greedy"])
        except Exception:  # noqa: BLE001
            log(f"{c['name']}: get_rope_index FAILED:\n" + traceback.format_exc())
            pos, delta = None, None
        golden["cases"].append({
            "name": c["name"], "images": c["images"], "messages": c["messages"], "prompt_text": c["text"],
            "prompt_ids": c["ids"], "mm_token_type_ids": c["mm_token_type_ids"],
            "token_type_ids": [1 if i == ID["<|image_pad|>"] else 0 for i in c["ids"]],
            "position_ids": pos, "rope_delta": delta, "greedy_ids": r["greedy"],
            "logits": [[fmt(v) for v in lg.tolist()] for lg in r["logits"]], "min_margin": fmt(min(r["margins"])),
            "logit_std_step0": fmt(r["logits"][0].std()), "routing_moves_step0": fmt(r["d_route"]),
        })
        log(f"case {c['name']}: greedy {r['greedy']} min margin {min(r['margins']):.4g}; picture moves step 0 by "
            f"{r['d_img']:.3g}, plain positions {r['d_pos']:.3g}, fixed routing {r['d_route']:.3g}; rope delta {delta}")
    with open(os.path.join(entry, "golden.json"), "w") as f:
        f.write(json.dumps(golden, separators=(",", ":")) + "\n")
    sizes = {x: os.path.getsize(os.path.join(entry, x)) for x in sorted(os.listdir(entry))}
    log(f"{NAME}: {sum(sizes.values())} bytes: {sizes}")
    if sum(sizes.values()) > SIZE_LIMIT:
        log(f"WARNING: {NAME} is over {SIZE_LIMIT} bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output folder (the entry goes in OUT/" + NAME + ")")
    ap.add_argument("--root", default=mv.ROOT, help="folder holding testdata/models/chat-tiny/tokenizer.json")
    args = ap.parse_args()
    mv.ROOT = os.path.abspath(args.root)  # mv.tokenizer_json reads chat-tiny's tokenizer under it
    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    log(f"python {sys.version.split()[0]} torch {torch.__version__} transformers {transformers.__version__}")
    build(args.out, sys.argv[1:])


if __name__ == "__main__":
    main()
