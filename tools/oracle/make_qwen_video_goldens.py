#!/usr/bin/env python3
"""Adds a video golden to Hearth's Qwen 3.5 vision entry (qwen3_5_vision-f32).

The model is make_qwen_vision_goldens.py's tiny Qwen3_5ForConditionalGeneration
rebuilt from its accepted seed (41002): the same config, the same per-tensor
seeds, so the same weights as the committed model.safetensors (checked against
--expect-digest, a digest of the tensors' bytes; on a mismatch the rebuilt
model.safetensors is written too, and the log says so).

The clip is clip.mov: 8 frames of 50x30 RGB at 4 frames a second, PNG-coded
(lossless, so ffmpeg and AVFoundation decode the very bytes of clip_frames()).
It is made on the development machine, where ffmpeg is, with
  python3 tools/oracle/make_qwen_video_goldens.py --clip testdata/models/qwen3_5_vision-f32/clip.mov
and the oracle feeds the same frames (clip_frames(), pure Python) to the
reference with their metadata (8 frames, 4 fps), so the device needs no video
decoder. Qwen3VLVideoProcessor samples int(8 / 4 * 2) = 4 frames
(np.linspace(0, 7, 4).round(): 0, 2, 5, 7), resizes them to 48x32 (the video
processor's size is widened to longest_edge 16384 so that a frame keeps a 4x6
patch grid: 2x3 soft tokens, height and width apart), and the processor
writes each temporal patch as "<t seconds><|vision_start|><|video_pad|>x6
<|vision_end|>" with t the mean time of the patch's two frames (0.25 -> "0.2",
1.5).

Written into OUT/qwen3_5_vision-f32:
  processor_config.json  the processor with the widened video size
  chat_template.jinja    the short Qwen-VL template with a video branch
                         (<|vision_start|><|video_pad|><|vision_end|>, as
                         Qwen3.5's own); image parts render as before
  video_golden.json      videos[0]: the clip's sampled indices, timestamps,
                         pixel_values_videos, video_grid_thw, the vision
                         model's last_hidden_state and pooler_output (and the
                         first temporal patch run alone, to show frames
                         attend within themselves); cases: one_video and
                         image_and_video (golden.json's image1 then the clip):
                         the rendered text, the processor's input_ids and
                         mm_token_type_ids, get_rope_index's streams over the
                         prompt plus the greedy ids, 8 greedy ids and the
                         logits before each (use_cache=False re-runs)
and OUT/sources.txt: the reference's processor and video sources.

Usage (repository root, on the device machine, with
testdata/models/chat-tiny/tokenizer.json there: the tokenizer is built from
it):
  python3 tools/oracle/make_qwen_video_goldens.py --out DIR --expect-digest HEX
where HEX is what --digest prints for the committed model.safetensors.
Needs: torch, numpy, safetensors, transformers 5.17, tokenizers, Pillow,
torchvision.
"""

import argparse
import hashlib
import inspect
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SCRIPT = "tools/oracle/make_qwen_video_goldens.py"
NAME = "qwen3_5_vision-f32"
SEED = 41002
STEPS = 8
CLIP_W, CLIP_H, CLIP_N, CLIP_FPS = 50, 30, 8, 4
VIDEO_SIZE = {"shortest_edge": 16 * 16, "longest_edge": 16384}

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
    dict(name="one_video", images=[], videos=[0],
         content=[{"type": "video"}, {"type": "text", "text": "What happens in this clip?"}]),
    dict(name="image_and_video", images=[1], videos=[0],
         content=[{"type": "text", "text": "Compare"}, {"type": "image"}, {"type": "text", "text": "with"},
                  {"type": "video"}, {"type": "text", "text": "please."}]),
]


def log(msg):
    print(msg, flush=True)


def clip_frames():
    """The clip's CLIP_N frames as rgb24 bytes, rows top to bottom."""
    out = []
    for t in range(CLIP_N):
        b = bytearray()
        for y in range(CLIP_H):
            for x in range(CLIP_W):
                b += bytes(((x * 5 + t * 23) % 256, (y * 8 + x * t) % 256,
                            ((x // 7 + y // 5 + t) % 2) * 170 + 40 + t * 5))
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


def tensor_digest(path):
    """sha256 over the safetensors file's tensors (name, dtype, shape, bytes)
    in name order: the weights, whatever the header's metadata."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    h = hashlib.sha256()
    for name in sorted(k for k in header if k != "__metadata__"):
        e = header[name]
        a, b = e["data_offsets"]
        h.update(f"{name}|{e['dtype']}|{e['shape']}|".encode())
        h.update(data[a:b])
    return h.hexdigest()


# --- reference --------------------------------------------------------------


def build(out_dir, expect_digest, args_list):
    import numpy as np
    import torch
    import transformers
    import make_qwen_vision_goldens as mq

    fmt, flat, cls, ID = mq.fmt, mq.flat, mq.cls, mq.ID
    tok = mq.make_tokenizer()
    size = {"shortest_edge": mq.MIN_PIXELS, "longest_edge": mq.MAX_PIXELS}
    ip = cls("Qwen2VLImageProcessor")(size=size, patch_size=mq.PATCH, temporal_patch_size=mq.TEMPORAL,
                                      merge_size=mq.MERGE)
    vp = cls("Qwen3VLVideoProcessor")(size=VIDEO_SIZE, patch_size=mq.PATCH, temporal_patch_size=mq.TEMPORAL,
                                      merge_size=mq.MERGE)
    proc = cls("Qwen3VLProcessor")(image_processor=ip, tokenizer=tok, video_processor=vp,
                                   chat_template=CHAT_TEMPLATE)
    images = mq.make_images()
    frames = np.stack([np.frombuffer(f, dtype=np.uint8).reshape(CLIP_H, CLIP_W, 3) for f in clip_frames()])
    meta = {"total_num_frames": CLIP_N, "fps": float(CLIP_FPS), "width": CLIP_W, "height": CLIP_H,
            "duration": CLIP_N / CLIP_FPS}
    want_idx = [int(i) for i in np.linspace(0, CLIP_N - 1, max(int(CLIP_N / CLIP_FPS * 2), 4)).round().astype(int)]
    try:
        from transformers.video_utils import VideoMetadata
        idx = vp.sample_frames(VideoMetadata(**meta))
        log(f"Qwen3VLVideoProcessor.sample_frames: {list(idx)} (want {want_idx})")
    except Exception:  # noqa: BLE001
        log("sample_frames FAILED:\n" + traceback.format_exc())

    def encode(text, case):
        kw = dict(text=text, return_tensors="pt")
        if case["images"]:
            kw["images"] = [images[i] for i in case["images"]]
        try:
            enc = proc(videos=[frames], video_metadata=[dict(meta)], do_sample_frames=True, **kw)
            how = "the processor sampled the clip"
        except Exception:  # noqa: BLE001
            log("processor with do_sample_frames FAILED:\n" + traceback.format_exc())
            enc = proc(videos=[frames[want_idx]], video_metadata=[dict(meta, frames_indices=want_idx)],
                       do_sample_frames=False, **kw)
            how = "frames sampled here, metadata given"
        log(f"  {case['name']}: {how}; outputs {sorted(enc.keys())}")
        return enc

    cases = []
    for case in CASES:
        messages = [{"role": "user", "content": case["content"]}]
        text = proc.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        enc = encode(text, case)
        ids = enc["input_ids"][0].tolist()
        vgrid = enc["video_grid_thw"]
        if vgrid.tolist() != [[2, 4, 6]]:
            raise RuntimeError(f"{case['name']}: video_grid_thw {vgrid.tolist()}, want [[2, 4, 6]]")
        mt = enc["mm_token_type_ids"][0].tolist() if "mm_token_type_ids" in enc else None
        want_mt = [1 if i == ID["<|image_pad|>"] else 2 if i == ID["<|video_pad|>"] else 0 for i in ids]
        if mt is None:
            log(f"  {case['name']}: no mm_token_type_ids from the processor; made from the ids")
            mt = want_mt
        elif mt != want_mt:
            raise RuntimeError(f"{case['name']}: mm_token_type_ids {mt} are not the media-token positions")
        c = dict(case, messages=messages, text=text, ids=ids, mm=mt, vgrid=vgrid,
                 pvv=enc["pixel_values_videos"].to(torch.float32))
        if case["images"]:
            c["igrid"], c["pv"] = enc["image_grid_thw"], enc["pixel_values"].to(torch.float32)
        c["expanded"] = tok.decode(ids, skip_special_tokens=False)
        log(f"case {case['name']}: {len(ids)} ids {ids}\n  text {text!r}\n  expanded {c['expanded']!r}")
        cases.append(c)

    try:
        alone = vp(videos=[frames], video_metadata=[dict(meta)], do_sample_frames=True, return_tensors="pt",
                   return_metadata=True)
    except Exception:  # noqa: BLE001
        log("video processor with do_sample_frames FAILED:\n" + traceback.format_exc())
        alone = vp(videos=[frames[want_idx]], video_metadata=[dict(meta, frames_indices=want_idx)],
                   do_sample_frames=False, return_tensors="pt", return_metadata=True)
    pvv, vgrid = alone["pixel_values_videos"].to(torch.float32), alone["video_grid_thw"]
    md = alone.get("video_metadata")
    log(f"video processor alone: {sorted(alone.keys())} pixel_values_videos {list(pvv.shape)} grid "
        f"{vgrid.tolist()} metadata {md}")
    for c in cases:
        if not torch.equal(c["pvv"], pvv):
            raise RuntimeError(f"{c['name']}: the processor's pixel_values_videos differ from the video processor's")
    sampled = want_idx
    try:
        sampled = [int(i) for i in md[0].frames_indices]
    except Exception:  # noqa: BLE001
        log("no frames_indices in the metadata; using linspace's")
    if sampled != want_idx:
        raise RuntimeError(f"sampled {sampled}, want {want_idx}")
    stamps = proc._calculate_timestamps(list(sampled), float(CLIP_FPS), mq.TEMPORAL)
    log(f"sampled {sampled}, timestamps {stamps}")

    # the model, rebuilt
    config = mq.make_config()
    model = mq.new_model(config)
    mq.init_weights(model, SEED)
    entry = os.path.join(out_dir, NAME)
    shutil.rmtree(entry, ignore_errors=True)
    os.makedirs(entry)
    tmp = tempfile.mkdtemp()
    model.save_pretrained(tmp)
    digest = tensor_digest(os.path.join(tmp, "model.safetensors"))
    log(f"rebuilt weights digest {digest}, want {expect_digest}")
    if digest != expect_digest:
        log("WARNING: the rebuilt weights are not the committed ones: writing model.safetensors")
        shutil.copy(os.path.join(tmp, "model.safetensors"), os.path.join(entry, "model.safetensors"))

    def kwargs_for(c, n_new, pvv_override=None):
        kw = dict(pixel_values_videos=c["pvv"] if pvv_override is None else pvv_override,
                  video_grid_thw=c["vgrid"].clone())
        if "pv" in c:
            kw.update(pixel_values=c["pv"], image_grid_thw=c["igrid"].clone())
        if mq.accepts(model.forward, "mm_token_type_ids") or mq.accepts(model.model.forward, "mm_token_type_ids"):
            kw["mm_token_type_ids"] = torch.tensor([c["mm"] + [0] * n_new], dtype=torch.long)
        return kw

    def logits_of(c, seq, pvv_override=None, plain=False):
        t = torch.tensor([seq], dtype=torch.long)
        kw = kwargs_for(c, len(seq) - len(c["ids"]), pvv_override)
        if plain:
            kw["position_ids"] = torch.arange(len(seq)).view(1, 1, -1).expand(3, 1, -1)
        model.model.rope_deltas = None
        with torch.no_grad():
            out = model(input_ids=t, attention_mask=torch.ones_like(t), use_cache=False, **kw)
        return out.logits[0, -1].to(torch.float32).clone()

    golden = {
        "script": SCRIPT, "args": args_list, "transformers": transformers.__version__, "torch": torch.__version__,
        "numpy": np.__version__, "name": NAME, "model_type": "qwen3_5", "variant": "f32", "seed": SEED,
        "weights_digest": digest,
        "tolerance": {"max_abs_logit": 1e-4, "max_abs_tower": 1e-4,
                      "why": "the reference runs in float32 on the F32 weights as saved, so only float32 "
                             "summation order differs"},
        "special_tokens": ID, "videos": [], "cases": [],
    }
    rec = {"file": "clip.mov", "width": CLIP_W, "height": CLIP_H, "frames": CLIP_N, "fps": CLIP_FPS,
           "sampled_indices": sampled, "timestamps": [fmt(s) for s in stamps],
           "pixel_values_shape": list(pvv.shape), "pixel_values": flat(pvv), "grid_thw": vgrid[0].tolist()}
    with torch.no_grad():
        out = model.model.visual(pvv, grid_thw=vgrid)
        hidden, merged = out.last_hidden_state, out.pooler_output
        n0 = int(vgrid[0, 1] * vgrid[0, 2])
        first = model.model.visual(pvv[:n0], grid_thw=torch.tensor([[1, int(vgrid[0, 1]), int(vgrid[0, 2])]]))
        d_first = float((first.last_hidden_state - hidden[:n0]).abs().max())
    log(f"video tower: hidden {list(hidden.shape)} std {float(hidden.std()):.3g}, merged {list(merged.shape)}; "
        f"the first temporal patch alone differs by {d_first:.3g}")
    rec.update({"vision_last_hidden_state_shape": list(hidden.shape), "vision_last_hidden_state": flat(hidden),
                "video_features_shape": list(merged.shape), "video_features": flat(merged),
                "first_patch_alone_max_diff": fmt(d_first)})
    golden["videos"].append(rec)

    for c in cases:
        seq = list(c["ids"])
        logits, greedy, margins = [], [], []
        for _ in range(STEPS):
            lg = logits_of(c, seq)
            top2 = torch.topk(lg, 2)
            logits.append(lg)
            greedy.append(int(top2.indices[0]))
            margins.append(float(top2.values[0] - top2.values[1]))
            seq.append(greedy[-1])
        n0 = c["pvv"].shape[0] // 2
        other = torch.cat([c["pvv"][n0:], c["pvv"][:n0]])
        d_vid = float((logits_of(c, c["ids"], pvv_override=other) - logits[0]).abs().max())
        d_pos = float((logits_of(c, c["ids"], plain=True) - logits[0]).abs().max())
        fn = model.model.get_rope_index
        t = torch.tensor([seq], dtype=torch.long)
        kw = dict(video_grid_thw=c["vgrid"].clone(), attention_mask=torch.ones_like(t),
                  mm_token_type_ids=torch.tensor([c["mm"] + [0] * STEPS], dtype=torch.long))
        if "igrid" in c:
            kw["image_grid_thw"] = c["igrid"].clone()
        with torch.no_grad():
            pos, delta = fn(t, **kw)
        pos, delta = pos[:, 0, :].tolist(), int(delta.reshape(-1)[0])
        golden["cases"].append({
            "name": c["name"], "images": c["images"], "videos": c["videos"], "messages": c["messages"],
            "prompt_text": c["text"], "expanded_text": c["expanded"], "prompt_ids": c["ids"],
            "mm_token_type_ids": c["mm"], "position_ids": pos, "rope_delta": delta, "greedy_ids": greedy,
            "logits": [[fmt(v) for v in lg.tolist()] for lg in logits], "min_margin": fmt(min(margins)),
            "margins": [fmt(m) for m in margins],
        })
        log(f"case {c['name']}: greedy {greedy} margins {[round(m, 4) for m in margins]}; swapping the clip's "
            f"two temporal patches moves step 0 by {d_vid:.3g}, plain positions by {d_pos:.3g}; rope delta "
            f"{delta}; positions {pos}")

    proc.save_pretrained(tmp)
    for fn in ("processor_config.json", "chat_template.jinja"):
        shutil.copy(os.path.join(tmp, fn), os.path.join(entry, fn))
        with open(os.path.join(entry, fn)) as f:
            log(f"{fn}: {f.read()}")
    with open(os.path.join(entry, "video_golden.json"), "w") as f:
        f.write(json.dumps(golden, separators=(",", ":")) + "\n")
    log(f"written: { {f: os.path.getsize(os.path.join(entry, f)) for f in sorted(os.listdir(entry))} }")


def dump_sources(path):
    import importlib
    with open(path, "w") as out:
        for mod in ["transformers.video_processing_utils", "transformers.video_utils", "transformers.processing_utils",
                    "transformers.models.qwen3_vl.video_processing_qwen3_vl"]:
            try:
                out.write(f"# ===== {mod} =====\n{inspect.getsource(importlib.import_module(mod))}\n")
            except Exception as e:  # noqa: BLE001
                log(f"source {mod}: {type(e).__name__}: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="output folder (the files go in OUT/" + NAME + ")")
    ap.add_argument("--expect-digest", default="", help="tensor_digest of the committed model.safetensors")
    ap.add_argument("--clip", help="write the clip here (development machine, needs ffmpeg) and stop")
    ap.add_argument("--digest", help="print tensor_digest of this safetensors file and stop")
    args = ap.parse_args()
    if args.clip:
        write_clip(args.clip)
        return
    if args.digest:
        print(tensor_digest(args.digest))
        return
    if not args.out:
        ap.error("--out is required")
    import numpy as np
    import torch
    import transformers
    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    log(f"python {sys.version.split()[0]} torch {torch.__version__} transformers {transformers.__version__} "
        f"numpy {np.__version__}")
    os.makedirs(args.out, exist_ok=True)
    try:
        dump_sources(os.path.join(args.out, "sources.txt"))
    except Exception:  # noqa: BLE001
        log("sources FAILED:\n" + traceback.format_exc())
    build(args.out, args.expect_digest, sys.argv[1:])


if __name__ == "__main__":
    main()
