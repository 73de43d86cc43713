#!/usr/bin/env python3
"""Builds Hearth's embedding golden: testdata/models/qwen3_embed-f32/golden.json.

The model is the committed tiny Qwen3 checkpoint testdata/models/qwen3-f32
(hidden 64, 2 layers, vocab 512), read as transformers' Qwen3Model: the
decoder without its head, whose last_hidden_state (after the final norm)
is what sentence-transformers pools for a Qwen3-Embedding checkpoint
(modules.json: Transformer -> Pooling -> Normalize).

sentence-transformers is not installed on the device machine, so the
pooling is computed here with torch exactly as its modules do for one
unpadded sequence (attention mask all ones):

  Pooling(pooling_mode_lasttoken): the hidden state of the last token
      whose attention mask is 1, here token_embeddings[:, -1];
  Pooling(pooling_mode_mean_tokens): sum(token_embeddings * mask) /
      clamp(sum(mask), min=1e-9), here the mean over the tokens;
  Normalize: torch.nn.functional.normalize(x, p=2, dim=1).

For each input (token ids; odd lengths and one of length 1) golden.json
holds the last_hidden_state, the normalized last-token and mean embeddings,
and the last-token embedding cut to its first 16 dimensions and normalized
again (the OpenAI API's `dimensions`, Matryoshka-style).

Usage (repository root, on the device machine):
  python3 tools/oracle/make_embedding_goldens.py --model DIR --out DIR
where --model holds qwen3-f32's config.json and model.safetensors.
Needs: torch, transformers 5.17, safetensors.
"""

import argparse
import json
import os

import torch
import torch.nn.functional as F
import transformers
from transformers import AutoModelForCausalLM

INPUTS = [
    [7],
    [1, 212, 508, 216, 462],
    [3, 99, 140, 200, 17, 33, 402, 88, 5, 250, 301, 12, 77],
    [450, 2, 19, 260, 311, 123, 44],
]
DIMS = 16


def floats(t):
    return [float(x) for x in t.reshape(-1).tolist()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.manual_seed(0)
    # The checkpoint is saved as Qwen3ForCausalLM; its .model is the
    # Qwen3Model sentence-transformers' Transformer module runs.
    lm = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    lm.eval()
    base = lm.model
    assert type(base).__name__ == "Qwen3Model", type(base).__name__
    cases = []
    with torch.no_grad():
        for ids in INPUTS:
            x = torch.tensor([ids], dtype=torch.long)
            mask = torch.ones_like(x)
            h = base(input_ids=x, attention_mask=mask).last_hidden_state  # [1, n, hidden]
            # Pooling(lasttoken): the last position whose mask is 1.
            last_idx = mask.sum(dim=1) - 1
            last = h[torch.arange(h.shape[0]), last_idx]
            # Pooling(mean_tokens)
            m = mask.unsqueeze(-1).to(h.dtype)
            mean = (h * m).sum(dim=1) / torch.clamp(m.sum(dim=1), min=1e-9)
            last_n = F.normalize(last, p=2, dim=1)
            mean_n = F.normalize(mean, p=2, dim=1)
            cut = F.normalize(last_n[:, :DIMS], p=2, dim=1)
            cases.append({
                "input_ids": ids,
                "last_hidden_state": floats(h[0]),
                "lasttoken": floats(last_n[0]),
                "mean": floats(mean_n[0]),
                "lasttoken_dims": DIMS,
                "lasttoken_cut": floats(cut[0]),
            })
            print(len(ids), "tokens: last[:4]", floats(last_n[0])[:4], "mean[:4]", floats(mean_n[0])[:4])
    os.makedirs(args.out, exist_ok=True)
    golden = {
        "script": "tools/oracle/make_embedding_goldens.py",
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "name": "qwen3_embed-f32",
        "base": "qwen3-f32",
        "hidden_size": base.config.hidden_size,
        "cases": cases,
    }
    with open(os.path.join(args.out, "golden.json"), "w") as f:
        json.dump(golden, f)
    print("wrote", os.path.join(args.out, "golden.json"))


if __name__ == "__main__":
    main()
