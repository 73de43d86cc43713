#!/usr/bin/env python3
"""Builds the goldens of Hearth's media package (image decoding and the
vision processors) with Pillow and Hugging Face transformers.

For every picture in testdata/media/ it records what a Hugging Face user's
code sees: Image.open, then PIL.ImageOps.exif_transpose (transformers itself
does not apply EXIF orientation; Hearth promises it does), then
transformers.image_transforms.convert_to_rgb, the RGB conversion the
processors run. That RGB array is the "decoded" golden.

Then it feeds that RGB array (as a PIL RGB image) to each processor config
below through AutoImageProcessor.from_pretrained(dir) with its default
settings (the backend a user gets), and records pixel_values (and
image_grid_thw). Where transformers also has the PIL backend, it records that
too, marked backend "pil". Qwen-VL videos go through AutoVideoProcessor with
do_sample_frames=False on three frames cut from rgb_640x481.png.

Goldens are stored compactly in OUT/:
  manifest.json      versions, the configs, one entry per picture and per case
  pixels.f32.gz      the stored float32 values of all cases, little-endian,
                     concatenated (each case's offset/count in the manifest):
                     all of an array up to FULL_MAX values, else every
                     stride-th value; each case also has the float64 sum, a
                     position-weighted sum and the SHA-256 of the whole array,
                     so a single changed value is still seen
  decoded.u8.gz      decoded RGB bytes of the pictures that keep them (lossy
                     ones, whose decoders legitimately differ, and small
                     ones); every picture has the SHA-256 of its RGB
  floatresize.f32.gz only where torchvision resizes bilinear through float32
                     (no native uint8 kernel on that CPU): the unrounded
                     float32 output of that resize for a few pictures

Usage: python3 make_media_goldens.py --images testdata/media --out DIR
Needs: python3 with numpy, Pillow, torch, torchvision, transformers.

On the device machine (its image has all of them; CPU only, about 20 s),
from the repository root through the device tool's `run`:

  set -o pipefail; export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=; \
  python3 tools/oracle/make_media_goldens.py --images testdata/media \
    --out /tmp/golden 2>&1 | tee $OUT/log; tar czf $OUT/golden.tgz -C /tmp golden

then, here, unpack golden.tgz over testdata/media/golden/ and run
`go test ./media -run 'Golden' -v`. The pictures themselves come from
`go run ./media/testdata/mkimages` (Go, plus Debian's cwebp for the WebP
ones); regenerate the goldens whenever they change. The committed goldens
were made with transformers 5.17.0, torch 2.11.0, torchvision 0.26.0,
Pillow 12.3.0 on an x86-64 CPU whose torch capability is AVX512 (so
torchvision resized bilinear and bicubic through torch's native uint8
kernel); manifest.json records these.
"""

import argparse
import glob
import gzip
import hashlib
import io
import json
import math
import os
import platform
import sys
import tempfile
import traceback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import PIL  # noqa: E402
from PIL import Image, ImageOps  # noqa: E402

FULL_MAX = 4096  # arrays up to this many values are stored whole
SAMPLE = 2048  # bigger ones: about this many, every stride-th
KEEP_DECODED = 16384  # decoded RGB kept whole up to this many bytes (lossy ones always)

CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]

GEMMA3 = {
    "do_convert_rgb": None,
    "do_normalize": True,
    "do_pan_and_scan": None,
    "do_rescale": True,
    "do_resize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_processor_type": "Gemma3ImageProcessor",
    "image_seq_length": 256,
    "image_std": [0.5, 0.5, 0.5],
    "pan_and_scan_max_num_crops": None,
    "pan_and_scan_min_crop_size": None,
    "pan_and_scan_min_ratio_to_activate": None,
    "processor_class": "Gemma3Processor",
    "resample": 2,
    "rescale_factor": 0.00392156862745098,
    "size": {"height": 896, "width": 896},
}

QWEN25 = {
    "min_pixels": 3136,
    "max_pixels": 12845056,
    "patch_size": 14,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": CLIP_MEAN,
    "image_std": CLIP_STD,
    "image_processor_type": "Qwen2VLImageProcessor",
    "processor_class": "Qwen2_5_VLProcessor",
}

QWEN3 = {
    "size": {"longest_edge": 16777216, "shortest_edge": 65536},
    "patch_size": 16,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "processor_class": "Qwen3VLProcessor",
    "image_processor_type": "Qwen2VLImageProcessorFast",
}

QWEN3_VIDEO = {
    "size": {"longest_edge": 25165824, "shortest_edge": 4096},
    "patch_size": 16,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "processor_class": "Qwen3VLProcessor",
    "video_processor_type": "Qwen3VLVideoProcessor",
}

# name -> (preprocessor_config.json, video_preprocessor_config.json or None, pil variant too)
CONFIGS = {
    "gemma3_64": (dict(GEMMA3, size={"height": 64, "width": 64}), None, True),
    "gemma3_896": (GEMMA3, None, False),
    "siglip_48x40": (
        {
            "image_processor_type": "SiglipImageProcessor",
            "processor_class": "SiglipProcessor",
            "do_resize": True,
            "size": {"height": 40, "width": 48},
            "resample": 3,
            "do_rescale": True,
            "rescale_factor": 0.00392156862745098,
            "do_normalize": True,
            "image_mean": [0.5, 0.5, 0.5],
            "image_std": [0.5, 0.5, 0.5],
        },
        None,
        True,
    ),
    "qwen25_small": (
        dict(QWEN25, min_pixels=3136, max_pixels=12544),
        {
            "video_processor_type": "Qwen2VLVideoProcessor",
            "min_pixels": 3136,
            "max_pixels": 12544,
            "patch_size": 14,
            "temporal_patch_size": 2,
            "merge_size": 2,
            "image_mean": CLIP_MEAN,
            "image_std": CLIP_STD,
            "processor_class": "Qwen2_5_VLProcessor",
        },
        True,
    ),
    "qwen25": (QWEN25, None, False),
    "qwen3": (QWEN3, QWEN3_VIDEO, False),
}

# Pictures the processors see (the eight orientation JPEGs only test decoding).
FLOAT_DEBUG = ("rgb_7x3.png", "rgba_31x17.png", "rgb_640x481.png")


class Store:
    def __init__(self):
        self.buf = io.BytesIO()
        self.n = 0

    def add(self, arr):
        a = np.ascontiguousarray(arr)
        off = self.n
        self.buf.write(a.tobytes())
        self.n += a.size
        return off


def summarize(arr, store):
    """Stores (part of) a float32 array; returns its manifest fields."""
    a = np.ascontiguousarray(np.asarray(arr, dtype=np.float32))
    flat = a.reshape(-1)
    n = flat.size
    if n <= FULL_MAX:
        stride = 1
    else:
        stride = -(-n // SAMPLE)
        if stride % 2 == 0:
            stride += 1
    sample = flat[::stride]
    f64 = flat.astype(np.float64)
    weights = (np.arange(n) % 13 + 1).astype(np.float64)
    return dict(
        shape=list(a.shape),
        n=int(n),
        stride=int(stride),
        offset=store.add(sample),
        count=int(sample.size),
        sum=float(f64.sum()),
        wsum=float((f64 * weights).sum()),
        sha256=hashlib.sha256(flat.tobytes()).hexdigest(),
        min=float(flat.min()) if n else 0.0,
        max=float(flat.max()) if n else 0.0,
    )


def decode(path):
    """What Hearth promises DecodeImage returns: exif_transpose, then HF's convert_to_rgb."""
    from transformers.image_transforms import convert_to_rgb

    im = Image.open(path)
    info = dict(format=im.format, mode=im.mode, size=list(im.size))
    if "transparency" in im.info:
        t = im.info["transparency"]
        info["transparency"] = t if isinstance(t, int) else list(t) if isinstance(t, tuple) else "bytes"
    try:
        exif = im.getexif()
        info["orientation"] = int(exif.get(0x0112, 0))
    except Exception as e:  # noqa: BLE001
        info["orientation_error"] = repr(e)
    im.load()
    t = ImageOps.exif_transpose(im)
    if t is None:
        t = im
    info["transposed_mode"] = t.mode
    try:
        plain = np.asarray(t.convert("RGB"), dtype=np.uint8)
        info["pil_convert_rgb_sha256"] = hashlib.sha256(plain.tobytes()).hexdigest()
    except Exception as e:  # noqa: BLE001
        info["pil_convert_rgb_error"] = repr(e)
    rgb = convert_to_rgb(t)
    arr = np.asarray(rgb, dtype=np.uint8)
    if arr.ndim != 3 or arr.shape[2] != 3:
        raise ValueError(f"convert_to_rgb gave shape {arr.shape}")
    return arr, info


def make_dir(root, name, cfg, vcfg):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "preprocessor_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    if vcfg is not None:
        with open(os.path.join(d, "video_preprocessor_config.json"), "w") as f:
            json.dump(vcfg, f, indent=2)
    return d


def load_pil_backend(d):
    from transformers import AutoImageProcessor

    tries = [dict(backend="pil"), dict(use_fast=False)]
    errs = []
    for kw in tries:
        try:
            p = AutoImageProcessor.from_pretrained(d, **kw)
        except Exception as e:  # noqa: BLE001
            errs.append(f"{kw}: {e!r}")
            continue
        b = getattr(p, "backend", None)
        if b == "pil" or (b is None and not type(p).__name__.endswith("Fast")):
            return p, kw
        errs.append(f"{kw}: got {type(p).__name__} backend {b}")
    raise RuntimeError("; ".join(errs))


def run_processor(proc, rgb):
    out = proc(images=Image.fromarray(rgb), return_tensors="np")
    pv = np.asarray(out["pixel_values"], dtype=np.float32)
    grid = None
    if "image_grid_thw" in out:
        grid = [int(x) for x in np.asarray(out["image_grid_thw"]).reshape(-1)]
    return pv, grid


def video_frames(rgb640):
    return [np.ascontiguousarray(rgb640[k * 7 : k * 7 + 150, k * 13 : k * 13 + 200]) for k in range(3)]


def processor_layout(root):
    """What save_pretrained writes: an image processor alone, and a whole
    Qwen2.5-VL processor (with a stand-in tokenizer)."""
    import transformers
    from transformers import AutoImageProcessor

    res = {}
    d = make_dir(root, "layout_src", dict(QWEN25, min_pixels=3136, max_pixels=12544), None)
    ip = AutoImageProcessor.from_pretrained(d)
    s1 = os.path.join(root, "saved_image_processor")
    ip.save_pretrained(s1)
    res["image_processor_save"] = {f: open(os.path.join(s1, f)).read()[:4000] for f in sorted(os.listdir(s1))}
    try:
        from tokenizers import Tokenizer, models, pre_tokenizers

        vocab = {"[UNK]": 0, "<|image_pad|>": 1, "<|video_pad|>": 2, "<|vision_start|>": 3, "<|vision_end|>": 4, "a": 5}
        tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
        tk.pre_tokenizer = pre_tokenizers.Whitespace()
        tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]")
        from transformers import AutoVideoProcessor

        vp = AutoVideoProcessor.from_pretrained(d)
        proc = transformers.Qwen2_5_VLProcessor(image_processor=ip, tokenizer=tok, video_processor=vp)
        s2 = os.path.join(root, "saved_processor")
        proc.save_pretrained(s2)
        res["processor_save"] = {
            f: (open(os.path.join(s2, f)).read()[:6000] if f.endswith(".json") else "<file>")
            for f in sorted(os.listdir(s2))
        }
        # and loading the image processor back from that directory alone
        ip2 = AutoImageProcessor.from_pretrained(s2)
        res["reload_from_processor_dir"] = type(ip2).__name__
    except Exception:  # noqa: BLE001
        res["processor_save_error"] = traceback.format_exc()[-3000:]
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import torch
    import torchvision
    import transformers
    from torchvision.transforms.v2 import functional as tvF
    from transformers import AutoImageProcessor

    torch.use_deterministic_algorithms(True)
    os.makedirs(args.out, exist_ok=True)
    try:
        from torchvision.transforms.v2.functional._geometry import _do_native_uint8_resize_on_cpu

        native_bilinear = bool(_do_native_uint8_resize_on_cpu(tvF.InterpolationMode.BILINEAR))
    except Exception as e:  # noqa: BLE001
        native_bilinear = repr(e)
    man = dict(
        script="tools/oracle/make_media_goldens.py",
        versions=dict(
            python=platform.python_version(),
            numpy=np.__version__,
            pillow=PIL.__version__,
            torch=torch.__version__,
            torchvision=torchvision.__version__,
            transformers=transformers.__version__,
        ),
        cpu_capability=torch.backends.cpu.get_cpu_capability(),
        machine=platform.machine(),
        torch_threads=torch.get_num_threads(),
        native_uint8_bilinear=native_bilinear,
        full_max=FULL_MAX,
        images=[],
        configs={},
        cases=[],
        float_resize=[],
    )
    store, dec, fstore = Store(), io.BytesIO(), Store()
    decoded = {}
    for path in sorted(glob.glob(os.path.join(args.images, "*"))):
        if os.path.isdir(path):
            continue
        name = os.path.basename(path)
        ent = dict(file=name)
        try:
            rgb, info = decode(path)
            ent.update(info)
            ent["height"], ent["width"] = int(rgb.shape[0]), int(rgb.shape[1])
            ent["sha256"] = hashlib.sha256(rgb.tobytes()).hexdigest()
            lossy = name.endswith(".jpg") or name.startswith("lossy")
            if lossy or rgb.size <= KEEP_DECODED:
                ent["decoded_offset"] = dec.tell()
                ent["decoded_len"] = int(rgb.size)
                dec.write(rgb.tobytes())
            decoded[name] = rgb
        except Exception:  # noqa: BLE001
            ent["error"] = traceback.format_exc()[-2000:]
        man["images"].append(ent)
        print("decoded", name, {k: v for k, v in ent.items() if k not in ("sha256", "pil_convert_rgb_sha256")})

    tmp = tempfile.mkdtemp()
    procs = {}
    for cname, (cfg, vcfg, with_pil) in CONFIGS.items():
        d = make_dir(tmp, cname, cfg, vcfg)
        centry = dict(preprocessor_config=cfg, video_preprocessor_config=vcfg)
        try:
            p = AutoImageProcessor.from_pretrained(d)
            centry["class"] = type(p).__name__
            centry["backend"] = getattr(p, "backend", None)
            centry["resample"] = repr(getattr(p, "resample", None))
            centry["size"] = repr(getattr(p, "size", None))
            procs[(cname, "default")] = p
        except Exception:  # noqa: BLE001
            centry["error"] = traceback.format_exc()[-2000:]
        if with_pil:
            try:
                p, kw = load_pil_backend(d)
                centry["pil_class"] = type(p).__name__
                centry["pil_kwargs"] = kw
                procs[(cname, "pil")] = p
            except Exception:  # noqa: BLE001
                centry["pil_error"] = traceback.format_exc()[-2000:]
        man["configs"][cname] = centry
        print("config", cname, {k: v for k, v in centry.items() if "config" not in k})

    for (cname, backend), p in procs.items():
        for name, rgb in decoded.items():
            if name.startswith("orient"):
                continue
            case = dict(image=name, config=cname, backend=backend, kind="image")
            try:
                pv, grid = run_processor(p, rgb)
                case.update(summarize(pv, store))
                case["grid"] = grid
            except Exception:  # noqa: BLE001
                case["error"] = traceback.format_exc()[-1500:]
            man["cases"].append(case)
            print("case", cname, backend, name, case.get("shape"), case.get("grid"), case.get("error", "")[-200:])

    # Videos: Qwen-VL video processors on three frames, no frame sampling.
    if "rgb_640x481.png" in decoded:
        frames = np.stack(video_frames(decoded["rgb_640x481.png"]))
        for cname in ("qwen25_small", "qwen25", "qwen3"):
            case = dict(image="rgb_640x481.png", config=cname, backend="default", kind="video", frames=3)
            try:
                from transformers import AutoVideoProcessor

                vp = AutoVideoProcessor.from_pretrained(os.path.join(tmp, cname))
                case["class"] = type(vp).__name__
                out = vp(videos=[frames], do_sample_frames=False, return_tensors="np")
                pv = np.asarray(out["pixel_values_videos"], dtype=np.float32)
                case.update(summarize(pv, store))
                case["grid"] = [int(x) for x in np.asarray(out["video_grid_thw"]).reshape(-1)]
                case["video_processor"] = json.loads(vp.to_json_string())
            except Exception:  # noqa: BLE001
                case["error"] = traceback.format_exc()[-2000:]
            man["cases"].append(case)
            print("video", cname, case.get("shape"), case.get("grid"), case.get("error", "")[-300:])

    # The unrounded float32 bilinear resize, where torchvision takes that path.
    if native_bilinear is not True:
        for name in FLOAT_DEBUG:
            if name not in decoded:
                continue
            x = tvF.pil_to_tensor(Image.fromarray(decoded[name]))[None].to(torch.float32)
            y = torch.nn.functional.interpolate(x, size=[64, 64], mode="bilinear", align_corners=False, antialias=True)
            a = y[0].contiguous().numpy()
            man["float_resize"].append(dict(image=name, size=[64, 64], offset=fstore.add(a), count=int(a.size)))

    try:
        man["layout"] = processor_layout(tmp)
    except Exception:  # noqa: BLE001
        man["layout_error"] = traceback.format_exc()[-3000:]

    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1, sort_keys=True)
    for fname, data in (
        ("pixels.f32.gz", store.buf.getvalue()),
        ("decoded.u8.gz", dec.getvalue()),
        ("floatresize.f32.gz", fstore.buf.getvalue()),
    ):
        if not data:
            continue
        with open(os.path.join(args.out, fname), "wb") as f:
            f.write(gzip.compress(data, compresslevel=9, mtime=0))
    errs = [c for c in man["cases"] if "error" in c]
    print(f"{len(man['cases'])} cases, {len(errs)} with errors; stored {store.n} floats")


if __name__ == "__main__":
    sys.exit(main())
