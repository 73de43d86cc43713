#!/usr/bin/env python3
"""Adds a video golden to Hearth's Gemma 4 vision entry (gemma4_vision-f32).

The model is the committed entry itself: config.json, model.safetensors,
tokenizer and processor_config.json are loaded with from_pretrained from
testdata/models/gemma4_vision-f32 (the device call carries that folder), so
the weights are the committed ones byte for byte; the script checks that the
reloaded model reproduces golden.json's one_image step-0 logits.

The clip is clip.mov: 10 frames of 50x30 RGB at 4 frames a second,
PNG-coded (lossless, so ffmpeg and AVFoundation decode the very bytes of
clip_frames()). It is made on the development machine, where ffmpeg is, with
  python3 tools/oracle/make_gemma4_video_goldens.py --clip testdata/models/gemma4_vision-f32/clip.mov
and the oracle feeds the same frames (clip_frames(), pure Python) with their
metadata (10 frames, 4 fps) to the reference, so the device needs no video
decoder. The video processor's num_frames is set to 3 (the class default 32
is more frames than the clip has, and 32 frames of 60 soft tokens are more
than the tiny model's 256 positions): BaseVideoProcessor.sample_frames takes
torch.arange(0, 10, 10/3).int() = 0, 3, 6; each frame is resized as a
picture (50x30 -> 60x36: 6x10 soft tokens), and Gemma4Processor writes
each frame as "mm:ss <|image>" + 60 x <|video|> + "<image|>", frames joined
by spaces (times 0, 0.75, 1.5 s: 00:00 00:00 00:01).

Written into OUT/gemma4_vision-f32:
  processor_config.json  the processor with the video processor's
                         num_frames 3 (the image processor as before)
  chat_template.jinja    the short Gemma-4-style template with a video
                         branch (<|video|>, as Gemma 4's own); image parts
                         render as before
  video_golden.json      videos[0]: the clip's sampled indices, times and
                         timestamp strings, the real rows of
                         pixel_values_videos frame after frame with each
                         frame's patch grid, the vision model's
                         last_hidden_state over the frames and the features
                         after embed_vision (get_video_features), and how far
                         each frame run alone as a picture is from them;
                         cases[0] one_video: the rendered text, the expanded
                         input_ids, mm_token_type_ids (2 on video tokens), 8
                         greedy ids and the logits before each (use_cache=
                         False re-runs with mm_token_type_ids over the prompt)

Usage (repository root, on the device machine, with the entry there):
  python3 tools/oracle/make_gemma4_video_goldens.py --out DIR
Needs: torch, torchvision, numpy, safetensors, transformers 5.17, Pillow.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ENTRY = os.path.join(ROOT, "testdata", "models", "gemma4_vision-f32")

SCRIPT = "tools/oracle/make_gemma4_video_goldens.py"
NAME = "gemma4_vision-f32"
STEPS = 8
NUM_FRAMES = 3
CLIP_W, CLIP_H, CLIP_N, CLIP_FPS = 50, 30, 10, 4
MIN_MARGIN = 0.01

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

# Prompts tried in turn: the weights are fixed, so the first whose greedy
# steps all keep a top1-top2 gap >= MIN_MARGIN and no special token is taken.
TEXTS = ["What happens in this clip?", "Describe the video.", "What moves here?", "Tell me about it.",
         "What is shown?", "Say what you see."]


def log(msg):
    print(msg, flush=True)


def fmt(x):
    return float(f"{float(x):.9g}")


def clip_frames():
    """The clip's CLIP_N frames as rgb24 bytes, rows top to bottom."""
    out = []
    for t in range(CLIP_N):
        b = bytearray()
        for y in range(CLIP_H):
            for x in range(CLIP_W):
                b += bytes(((x * 7 + t * 29) % 256, (y * 9 + x * t * 2) % 256,
                            ((x // 6 + y // 4 + t) % 2) * 160 + 30 + t * 7))
        out.append(bytes(b))
    return out


def write_clip(path):
    """Encodes clip_frames() losslessly (PNG in QuickTime) with ffmpeg."""
    cmd = ["ffmpeg", "-nostdin", "-y", "-v", "error", "-f", "rawvideo", "-pix_fmt", "rgb24",
           "-s", f"{CLIP_W}x{CLIP_H}", "-r", str(CLIP_FPS), "-i", "pipe:0",
           "-c:v", "png", "-pix_fmt", "rgb24", "-map_metadata", "-1",
           "-fflags", "+bitexact", "-flags:v", "+bitexact", "-f", "mov", path]
    subprocess.run(cmd, input=b"".join(clip_frames()), check=True)
    log(f"{path}: {os.path.getsize(path)} bytes")


def build(out_dir, args_list):
    import numpy as np
    import torch
    import transformers

    def flat(t):
        return [fmt(v) for v in t.detach().to(torch.float32).reshape(-1).tolist()]

    with open(os.path.join(ENTRY, "golden.json")) as f:
        image_golden = json.load(f)
    ID = image_golden["special_tokens"]
    base = min(ID.values())

    proc = transformers.AutoProcessor.from_pretrained(ENTRY)
    proc.chat_template = CHAT_TEMPLATE
    vp = proc.video_processor
    vp.num_frames = NUM_FRAMES
    log(f"processor {type(proc).__name__}: video processor {type(vp).__name__} {vp.to_dict()}")
    if proc.video_token_id != ID["<|video|>"]:
        raise RuntimeError(f"video token id {proc.video_token_id}, want {ID['<|video|>']}")

    model = transformers.Gemma4ForConditionalGeneration.from_pretrained(ENTRY, dtype=torch.float32,
                                                                         attn_implementation="eager")
    model.eval()
    if type(model).__name__ != "Gemma4ForConditionalGeneration":
        raise RuntimeError(f"loaded {type(model).__name__}")

    def forward_logits(ids, mm, n_new=0, **media):
        t = torch.tensor([ids], dtype=torch.long)
        kw = dict(media)
        if mm is not None:
            kw["mm_token_type_ids"] = torch.tensor([list(mm) + [0] * n_new], dtype=torch.long)
        with torch.no_grad():
            out = model(input_ids=t, use_cache=False, **kw)
        return out.logits[0, -1].to(torch.float32).clone()

    # the committed weights: golden.json's one_image step 0 again
    c0 = image_golden["cases"][0]
    from PIL import Image
    pil = Image.open(os.path.join(ENTRY, "image0.png")).convert("RGB")
    enc = proc.image_processor(images=[pil], return_tensors="pt")
    lg = forward_logits(c0["prompt_ids"], c0["mm_token_type_ids"], pixel_values=enc["pixel_values"],
                        image_position_ids=enc["image_position_ids"])
    d_w = float((lg - torch.tensor(c0["logits"][0])).abs().max())
    log(f"check: the loaded entry reproduces one_image's step-0 logits to {d_w:.3g}")
    if d_w > 1e-4:
        raise RuntimeError("the loaded entry is not the committed model")

    frames = np.stack([np.frombuffer(f, dtype=np.uint8).reshape(CLIP_H, CLIP_W, 3) for f in clip_frames()])
    meta = {"total_num_frames": CLIP_N, "fps": float(CLIP_FPS), "width": CLIP_W, "height": CLIP_H,
            "duration": CLIP_N / CLIP_FPS}
    want_idx = [int(i) for i in torch.arange(0, CLIP_N, CLIP_N / NUM_FRAMES).int().tolist()]
    try:
        from transformers.video_utils import VideoMetadata
        idx = vp.sample_frames(VideoMetadata(**meta), num_frames=NUM_FRAMES)
        log(f"Gemma4VideoProcessor.sample_frames: {[int(i) for i in idx]} (want {want_idx})")
    except Exception:  # noqa: BLE001
        log("sample_frames FAILED:\n" + traceback.format_exc())

    def process(kw):
        try:
            enc = proc(videos=[frames], video_metadata=[dict(meta)], do_sample_frames=True, return_metadata=True,
                       return_tensors="pt", **kw)
            how = "the processor sampled the clip"
        except Exception:  # noqa: BLE001
            log("processor with do_sample_frames FAILED:\n" + traceback.format_exc())
            enc = proc(videos=[frames[want_idx]], video_metadata=[dict(meta, frames_indices=want_idx)],
                       do_sample_frames=False, return_metadata=True, return_tensors="pt", **kw)
            how = "frames sampled here, metadata given"
        return enc, how

    alone, how = process({"text": "<|video|>"})
    pvv, vpos = alone["pixel_values_videos"].to(torch.float32), alone["video_position_ids"]
    md = alone["video_metadata"][0]
    sampled = [int(i) for i in md.frames_indices]
    times = [i / float(md.fps) for i in sampled]  # VideoMetadata.timestamps
    stamps = [f"{int(s // 60):02d}:{int(s % 60):02d}" for s in times]
    log(f"video processor ({how}): pixel_values_videos {list(pvv.shape)}, position ids {list(vpos.shape)}, "
        f"sampled {sampled}, times {times} {stamps}, fps {md.fps}")
    if sampled != want_idx:
        raise RuntimeError(f"sampled {sampled}, want {want_idx}")

    # the real rows of each frame (the padding checked) and its patch grid
    rows, grids = [], []
    for k in range(pvv.shape[1]):
        pv, pos = pvv[0, k], vpos[0, k]
        real = (pos != -1).all(-1)
        n = int(real.sum())
        if not bool(real[:n].all()) or (n < pv.shape[0] and float(pv[n:].abs().max()) != 0):
            raise RuntimeError(f"frame {k}: the padding rows are not zero rows at the end")
        pw, ph = int(pos[:n, 0].max()) + 1, int(pos[:n, 1].max()) + 1
        want = torch.stack(torch.meshgrid(torch.arange(pw), torch.arange(ph), indexing="xy"), -1).reshape(-1, 2)
        if ph * pw != n or not torch.equal(pos[:n].long(), want.long()):
            raise RuntimeError(f"frame {k}: position ids are not the {ph}x{pw} patch grid")
        rows.append(pv[:n])
        grids.append([ph, pw])
    log(f"frames: grids {grids}, {int(alone['num_soft_tokens_per_video'][0]) if 'num_soft_tokens_per_video' in alone else '?'} soft tokens each")

    with torch.no_grad():
        vt = model.model.vision_tower(pixel_values=pvv.flatten(0, 1), pixel_position_ids=vpos.flatten(0, 1))
        hidden = vt.last_hidden_state
        feats = model.model.get_video_features(pvv, vpos, return_dict=True).pooler_output
        feats = torch.cat(list(feats), 0) if isinstance(feats, (tuple, list)) else feats
        per_frame = []
        for k in range(pvv.shape[1]):
            f = model.model.get_image_features(pvv[:, k], vpos[:, k], return_dict=True).pooler_output
            per_frame.append(f[0] if isinstance(f, (tuple, list)) else f)
        d_alone = float((torch.cat(per_frame, 0) - feats).abs().max())
    log(f"video tower: hidden {list(hidden.shape)} std {float(hidden.std()):.3g}, features {list(feats.shape)} std "
        f"{float(feats.std()):.3g}; each frame alone as a picture differs by {d_alone:.3g}")

    chosen = None
    for text_part in TEXTS:
        messages = [{"role": "user", "content": [{"type": "video"}, {"type": "text", "text": text_part}]}]
        text = proc.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        enc, how = process({"text": text, "add_special_tokens": False})
        ids = enc["input_ids"][0].tolist()
        if not torch.equal(enc["pixel_values_videos"].to(torch.float32), pvv):
            raise RuntimeError("the processor's pixel_values_videos differ from the video processor's alone")
        mm = enc["mm_token_type_ids"][0].tolist() if "mm_token_type_ids" in enc else None
        want_mm = [2 if i == ID["<|video|>"] else 1 if i == ID["<|image|>"] else 0 for i in ids]
        if mm is None:
            log("  no mm_token_type_ids from the processor; made from the ids")
            mm = want_mm
        elif mm != want_mm:
            raise RuntimeError(f"mm_token_type_ids {mm} are not the media-token positions {want_mm}")
        media = dict(pixel_values_videos=pvv, video_position_ids=vpos)
        seq, logits, greedy, margins = list(ids), [], [], []
        for _ in range(STEPS):
            lg = forward_logits(seq, mm, len(seq) - len(ids), **media)
            top2 = torch.topk(lg, 2)
            logits.append(lg)
            greedy.append(int(top2.indices[0]))
            margins.append(float(top2.values[0] - top2.values[1]))
            if greedy[-1] >= base:
                break
            seq.append(greedy[-1])
        expanded = proc.tokenizer.decode(ids, skip_special_tokens=False)
        log(f"text {text_part!r}: {len(ids)} ids, greedy {greedy}, margins {[round(m, 4) for m in margins]}\n"
            f"  expanded {expanded!r}")
        if len(ids) + STEPS > model.config.text_config.max_position_embeddings:
            raise RuntimeError(f"{len(ids)} prompt ids leave no room for {STEPS} steps")
        ok = min(margins) >= MIN_MARGIN and len(greedy) == STEPS and max(greedy) < base
        cand = dict(text_part=text_part, messages=messages, text=text, ids=ids, mm=mm, expanded=expanded,
                    logits=logits, greedy=greedy, margins=margins)
        if chosen is None or ok:
            chosen = cand
        if ok:
            break
    else:
        log("WARNING: no prompt met the margin rule; keeping the first")
    c = chosen
    other = pvv.flip(1)  # the frames in reverse order
    d_vid = float((forward_logits(c["ids"], c["mm"], pixel_values_videos=other, video_position_ids=vpos.flip(1))
                   - c["logits"][0]).abs().max())
    d_mask = float((forward_logits(c["ids"], None, pixel_values_videos=pvv, video_position_ids=vpos)
                    - c["logits"][0]).abs().max())
    log(f"case one_video ({c['text_part']!r}): reversed frames move step 0 by {d_vid:.3g}, the causal mask by "
        f"{d_mask:.3g}")
    try:  # what generate does (mm_token_type_ids on the prompt pass only, then a cache)
        t = torch.tensor([c["ids"]])
        with torch.no_grad():
            gen = model.generate(input_ids=t, pixel_values_videos=pvv, video_position_ids=vpos,
                                 mm_token_type_ids=torch.tensor([c["mm"]]), max_new_tokens=STEPS, do_sample=False)
        log(f"check: generate gives {gen[0, len(c['ids']):].tolist()}, re-runs {c['greedy']}")
    except Exception:  # noqa: BLE001
        log("check: generate FAILED:\n" + traceback.format_exc())

    entry = os.path.join(out_dir, NAME)
    shutil.rmtree(entry, ignore_errors=True)
    os.makedirs(entry)
    tmp = tempfile.mkdtemp()
    proc.save_pretrained(tmp)
    for fn in ("processor_config.json", "chat_template.jinja"):
        shutil.copy(os.path.join(tmp, fn), os.path.join(entry, fn))
        with open(os.path.join(entry, fn)) as f:
            log(f"{fn}: {f.read()}")
    try:
        p2 = transformers.AutoProcessor.from_pretrained(tmp)
        e2 = p2(text=c["text"], videos=[frames], video_metadata=[dict(meta)], do_sample_frames=True,
                return_metadata=True, add_special_tokens=False, return_tensors="pt")
        log(f"check: the saved processor reproduces the case: {e2['input_ids'][0].tolist() == c['ids']}")
    except Exception:  # noqa: BLE001
        log("check: saved processor FAILED:\n" + traceback.format_exc())

    golden = {
        "script": SCRIPT, "args": args_list, "transformers": transformers.__version__, "torch": torch.__version__,
        "numpy": np.__version__, "name": NAME, "model_type": "gemma4", "variant": "f32",
        "tolerance": {"max_abs_logit": 1e-4, "max_abs_tower": 1e-4,
                      "why": "the reference runs in float32 on the F32 weights as saved, so only float32 "
                             "summation order differs"},
        "special_tokens": ID, "videos": [], "cases": [],
    }
    golden["videos"].append({
        "file": "clip.mov", "width": CLIP_W, "height": CLIP_H, "frames": CLIP_N, "fps": CLIP_FPS,
        "num_frames": NUM_FRAMES, "sampled_indices": sampled, "times": [fmt(s) for s in times],
        "timestamps": stamps, "frame_grids": grids,
        "pixel_values_shape": [sum(r.shape[0] for r in rows), rows[0].shape[1]],
        "pixel_values": flat(torch.cat(rows, 0)),
        "vision_last_hidden_state_shape": list(hidden.shape), "vision_last_hidden_state": flat(hidden),
        "video_features_shape": list(feats.shape), "video_features": flat(feats),
        "frame_alone_max_diff": fmt(d_alone),
    })
    golden["cases"].append({
        "name": "one_video", "videos": [0], "messages": c["messages"], "prompt_text": c["text"],
        "expanded_text": c["expanded"], "prompt_ids": c["ids"], "mm_token_type_ids": c["mm"],
        "greedy_ids": c["greedy"], "logits": [[fmt(v) for v in lg.tolist()] for lg in c["logits"]],
        "margins": [fmt(m) for m in c["margins"]], "min_margin": fmt(min(c["margins"])),
        "reversed_frames_move": fmt(d_vid), "causal_mask_move": fmt(d_mask),
    })
    with open(os.path.join(entry, "video_golden.json"), "w") as f:
        f.write(json.dumps(golden, separators=(",", ":")) + "\n")
    log(f"written: { {f: os.path.getsize(os.path.join(entry, f)) for f in sorted(os.listdir(entry))} }")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="output folder (the files go in OUT/" + NAME + ")")
    ap.add_argument("--clip", help="write the clip here (development machine, needs ffmpeg) and stop")
    args = ap.parse_args()
    if args.clip:
        write_clip(args.clip)
        return
    if not args.out:
        ap.error("--out is required")
    import numpy as np
    import torch
    import transformers
    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(4)
    log(f"python {sys.version.split()[0]} torch {torch.__version__} transformers {transformers.__version__} "
        f"numpy {np.__version__}")
    os.makedirs(args.out, exist_ok=True)
    build(args.out, sys.argv[1:])


if __name__ == "__main__":
    main()
