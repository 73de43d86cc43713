"""Audio goldens for media/: test clips the project synthesizes, and what
transformers 5.17 and torchaudio make of them.

Run on the device (torch, torchaudio, transformers):
    python3 tools/oracle/make_audio_goldens.py OUT_DIR
It writes OUT_DIR/audio.tar.gz holding, for testdata/media/audio/:
  CLIP.wav                 the clip (PCM or float WAV)
  CLIP.resampled.f32.gz    torchaudio.functional.resample(mono, rate, 16000)
  CLIP.whisperN.f32.gz     WhisperFeatureExtractor(feature_size=N) input_features[0] (torch's float32 STFT)
  CLIP.whisperNnp.f32.gz   the same through its numpy path (float64 FFT)
  CLIP.gemma4.f32.gz       the Gemma 4 audio feature extractor's features (+ .json: shapes, mask)
and sources.py, the reference code read to write media/mel.go.
Arrays are little-endian float32, gzipped (the padded frames compress).
"""
import gzip, inspect, io, json, os, sys, tarfile, wave

import numpy as np
import torch
import torchaudio
import transformers

out = sys.argv[1]
rng = np.random.default_rng(20261203)
files = {}


def put(name, data):
    files[name] = data


def f32(a):
    return gzip.compress(np.ascontiguousarray(a, dtype="<f4").tobytes(), mtime=0)


def wav_bytes(x, rate, bits, fmt="pcm"):
    """x: [frames, channels] float64 in [-1, 1]."""
    frames, ch = x.shape
    if fmt == "float":
        data = x.astype("<f4").tobytes()
        code, bits = 3, 32
    elif bits == 8:
        data = (np.round(x * 127) + 128).astype(np.uint8).tobytes()
        code = 1
    elif bits == 16:
        data = np.round(x * 32767).astype("<i2").tobytes()
        code = 1
    elif bits == 24:
        v = np.round(x * 8388607).astype("<i4").reshape(-1)
        b = v.view(np.uint8).reshape(-1, 4)[:, :3]
        data = b.tobytes()
        code = 1
    block = ch * bits // 8
    hdr = b"RIFF" + (36 + len(data)).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
    hdr += code.to_bytes(2, "little") + ch.to_bytes(2, "little") + rate.to_bytes(4, "little")
    hdr += (rate * block).to_bytes(4, "little") + block.to_bytes(2, "little") + bits.to_bytes(2, "little")
    return hdr + b"data" + len(data).to_bytes(4, "little") + data


def decoded(x, bits, fmt):
    """What media.DecodeAudio gives for the file: quantized, then the
    channels averaged, in float64 then rounded to float32."""
    if fmt == "float":
        q = x.astype(np.float32).astype(np.float64)
    elif bits == 8:
        q = (np.round(x * 127)) / 128
    elif bits == 16:
        q = np.round(x * 32767) / 32768
    elif bits == 24:
        q = np.round(x * 8388607) / 8388608
    return q.mean(axis=1).astype(np.float32)


def chirp(rate, secs, f0, f1):
    t = np.arange(int(rate * secs)) / rate
    k = (f1 - f0) / secs
    return 0.6 * np.sin(2 * np.pi * (f0 * t + k * t * t / 2))


def speechy(rate, secs):
    """A voiced-speech-like signal: a wobbling pitch's harmonics under two
    moving formants, in syllable-like bursts."""
    t = np.arange(int(rate * secs)) / rate
    pitch = 120 + 30 * np.sin(2 * np.pi * 3 * t)
    phase = 2 * np.pi * np.cumsum(pitch) / rate
    s = np.zeros_like(t)
    for h in range(1, 30):
        f = h * pitch
        amp = np.exp(-((f - 700 - 200 * np.sin(2 * np.pi * 2 * t)) / 300) ** 2) + 0.5 * np.exp(-((f - 1800) / 400) ** 2)
        s += amp * np.sin(h * phase) * (f < rate / 2)
    env = 0.5 * (1 + np.sin(2 * np.pi * 4 * t)) ** 2
    return 0.25 * s * env / np.max(np.abs(s) + 1e-9)


clips = {
    "chirp16k": (np.stack([chirp(16000, 2.0, 100, 4000)], 1), 16000, 16, "pcm"),
    "speech44k": (np.stack([speechy(44100, 1.5), 0.8 * speechy(44100, 1.5)], 1), 44100, 16, "pcm"),
    "noise48k": (np.stack([0.3 * rng.standard_normal(48000).clip(-3, 3) / 3 + 0.2 * chirp(48000, 1.0, 3000, 200)], 1), 48000, 32, "float"),
    "tone8k": (np.stack([0.5 * np.sin(2 * np.pi * 440 * np.arange(4000) / 8000)], 1), 8000, 8, "pcm"),
    "speech24k3ch": (np.stack([speechy(24000, 0.8), chirp(24000, 0.8, 50, 9000) * 0.3, np.zeros(19200)], 1), 24000, 24, "pcm"),
}

from transformers import WhisperFeatureExtractor

gemma_cls = None
try:
    import transformers.models.gemma4.feature_extraction_gemma4 as g4
    from transformers.feature_extraction_sequence_utils import SequenceFeatureExtractor
    for name, obj in vars(g4).items():
        if inspect.isclass(obj) and issubclass(obj, SequenceFeatureExtractor) and obj is not SequenceFeatureExtractor:
            gemma_cls = obj
    src = inspect.getsource(g4)
except Exception as e:  # the module's name differs: say so in the log
    src = f"# gemma4 feature extractor: {e!r}\n"

meta = {"transformers": transformers.__version__, "torchaudio": torchaudio.__version__, "clips": {}}
for name, (x, rate, bits, fmt) in clips.items():
    put(f"{name}.wav", wav_bytes(x, rate, bits, fmt))
    mono = decoded(x, bits, fmt)
    r16 = torchaudio.functional.resample(torch.from_numpy(mono), rate, 16000).numpy() if rate != 16000 else mono
    info = {"rate": rate, "bits": bits, "format": fmt, "frames": int(x.shape[0]), "channels": int(x.shape[1]), "resampled": int(r16.shape[0])}
    put(f"{name}.resampled.f32.gz", f32(r16))
    for bins in (80, 128):
        fe = WhisperFeatureExtractor(feature_size=bins)
        feats = fe(r16, sampling_rate=16000, return_tensors="np", return_attention_mask=True)
        put(f"{name}.whisper{bins}.f32.gz", f32(feats["input_features"][0].T))  # [frames, bins]
        # The numpy path (a machine without torch): float64 FFT, complex64 kept.
        padded = np.zeros(fe.n_samples, dtype=np.float32)
        padded[: min(len(r16), fe.n_samples)] = r16[: fe.n_samples]
        put(f"{name}.whisper{bins}np.f32.gz", f32(fe._np_extract_fbank_features(padded[None], "cpu")[0].T))
        info[f"whisper{bins}"] = {"shape": list(feats["input_features"][0].T.shape), "valid": int(feats["attention_mask"][0].sum())}
    if gemma_cls is not None:
        fe = gemma_cls()
        res = fe([r16], sampling_rate=16000, return_tensors="np")
        g = {}
        for k, v in res.items():
            v = np.asarray(v)
            g[k] = {"shape": list(v.shape), "dtype": str(v.dtype)}
            if v.dtype.kind == "f":
                put(f"{name}.gemma4.{k}.f32.gz", f32(v[0]))
            else:
                g[k]["values"] = v[0].astype(int).tolist() if v[0].size < 5000 else None
        info["gemma4"] = g
    meta["clips"][name] = info
meta["gemma4_class"] = gemma_cls.__name__ if gemma_cls else None
if gemma_cls:
    meta["gemma4_config"] = {k: (f"ndarray{list(v.shape)}" if isinstance(v, np.ndarray) else v) for k, v in gemma_cls().to_dict().items()}
put("golden.json", json.dumps(meta, indent=1).encode())

srcs = src
for m in ["transformers.models.whisper.feature_extraction_whisper", "transformers.audio_utils"]:
    srcs += f"\n#### {m}\n" + inspect.getsource(__import__(m, fromlist=["x"]))
try:
    s = inspect.getsource(inspect.getmodule(torchaudio.functional.resample))
    i = s.find("def _get_sinc_resample_kernel")
    srcs += "\n#### torchaudio resample\n" + s[i : s.find("\ndef resample", i) + 3000]
except Exception as e:
    srcs += f"\n#### torchaudio resample: {e!r}\n"
for m in ["processing_gemma4", "modeling_gemma4"]:
    try:
        mod = __import__(f"transformers.models.gemma4.{m}", fromlist=["x"])
        srcs += f"\n#### {m}\n" + inspect.getsource(mod)
    except Exception as e:
        srcs += f"\n#### {m}: {e!r}\n"

with tarfile.open(os.path.join(out, "audio.tar.gz"), "w:gz") as tar:
    for name, data in files.items():
        ti = tarfile.TarInfo(name)
        ti.size = len(data)
        tar.addfile(ti, io.BytesIO(data))
with open(os.path.join(out, "sources.py"), "w") as f:
    f.write(srcs)
print("ok", {k: len(v) for k, v in files.items()})
