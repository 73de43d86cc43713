#!/usr/bin/env python3
"""Builds Hearth's parity goldens with Hugging Face transformers.

For each entry <arch>-<variant> (archs llama, mistral, qwen2, qwen3; variants
f32, bf16, q4g64, q8g32) this builds a small random-weight model of the real
architecture from its transformers config class, writes what an engine loads
(config.json, generation_config.json, model.safetensors) and golden.json
(explicit prompt ids, 8 greedy ids, the logits before each greedy choice),
and finally DIR/manifest.json.

The reference always runs transformers' own model in float32 on the CPU with
eager attention and deterministic algorithms, re-running the whole sequence
at every step (no KV cache), on exactly the weights the engine will load:
  f32    the weights as saved (F32);
  bf16   the BF16 weights upcast to float32 (not bf16 arithmetic);
  q4g64, q8g32
         an MLX-format quantized checkpoint (see mlxquant.py for the scheme);
         the reference uses the dequantized weights, float32(q)*scale+bias
         with the BF16 scales/biases upcast, and the BF16 non-quantized
         tensors upcast.

Usage: python3 make_goldens.py --out DIR [--only NAME[,NAME...]] [--archs ARCH[,ARCH...]]
Needs: python3 with torch, numpy, safetensors, transformers (stdlib otherwise).
"""

import argparse
import copy
import json
import os
import random
import shutil
import sys
import traceback
import zlib

import numpy as np
import torch
import transformers
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlxquant  # noqa: E402

SCRIPT = "tools/oracle/make_goldens.py"
STEPS = 8
PROMPT_LEN = 16
MAX_ATTEMPTS = 100
MIN_MARGIN = 0.01
MIN_DISTINCT = 5  # the brief's floor is 3; 5 keeps random models from looping on one id
TOLERANCE = 1e-4
VARIANTS = ("f32", "bf16", "q4g64", "q8g32")

COMMON = dict(
    vocab_size=512,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
    rms_norm_eps=1e-5,
    bos_token_id=1,
    eos_token_id=2,
    hidden_act="silu",
)

# Each arch: config class, model class, config overrides, base seed.
ARCHS = {
    "llama": dict(
        config="LlamaConfig",
        model="LlamaForCausalLM",
        seed=1000,
        kwargs=dict(
            head_dim=16,
            tie_word_embeddings=False,
            attention_bias=False,
            mlp_bias=False,
            # original_max_position_embeddings is small on purpose: at head_dim 16
            # it puts one frequency in each llama3 regime (kept, smoothed, divided).
            rope_parameters={
                "rope_type": "llama3",
                "rope_theta": 10000.0,
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 32,
            },
        ),
    ),
    "mistral": dict(
        config="MistralConfig",
        model="MistralForCausalLM",
        seed=2000,
        kwargs=dict(
            num_hidden_layers=3,
            head_dim=16,
            tie_word_embeddings=False,
            sliding_window=6,  # shorter than the prompt, so the window is exercised
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        ),
    ),
    "qwen2": dict(
        config="Qwen2Config",
        model="Qwen2ForCausalLM",
        seed=3000,
        kwargs=dict(
            rms_norm_eps=1e-6,
            tie_word_embeddings=True,
            use_sliding_window=False,
            max_window_layers=2,
            rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 1000000.0},
        ),
    ),
    "qwen3": dict(
        config="Qwen3Config",
        model="Qwen3ForCausalLM",
        seed=4000,
        kwargs=dict(
            rms_norm_eps=1e-6,
            head_dim=32,  # heads*head_dim = 128 != hidden 64
            tie_word_embeddings=True,
            attention_bias=False,
            use_sliding_window=False,
            max_window_layers=2,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        ),
    ),
}

# --- the generic tier's breadth (issue 8): dense archs with one quantized
# variant each. Config values exercise each arch's special paths: softcaps on,
# sliding windows shorter than the prompt, partial rotary, multipliers.
GENERIC_VARIANTS = ("f32", "q4g64")
ARCHS.update({
    "gemma": dict(
        embed_std=0.05, config="GemmaConfig", model="GemmaForCausalLM", seed=5000, variants=GENERIC_VARIANTS, norm_offset=True,
        kwargs=dict(head_dim=16, hidden_act="gelu_pytorch_tanh", tie_word_embeddings=True, pad_token_id=0,
                    rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    ),
    "gemma2": dict(
        embed_std=0.05, config="Gemma2Config", model="Gemma2ForCausalLM", seed=6000, variants=GENERIC_VARIANTS, norm_offset=True,
        kwargs=dict(num_hidden_layers=3, head_dim=16, hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True,
                    pad_token_id=0, rms_norm_eps=1e-6, query_pre_attn_scalar=32, attn_logit_softcapping=3.0,
                    final_logit_softcapping=8.0, sliding_window=6,
                    rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    ),
    "gemma3": dict(
        embed_std=0.05, config="Gemma3TextConfig", model="Gemma3ForCausalLM", seed=7000, variants=GENERIC_VARIANTS, norm_offset=True,
        kwargs=dict(num_hidden_layers=3, head_dim=16, hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True,
                    pad_token_id=0, rms_norm_eps=1e-6, query_pre_attn_scalar=16, sliding_window=6,
                    layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                    rope_theta=1000000.0, rope_local_base_freq=10000.0,
                    rope_scaling={"rope_type": "linear", "factor": 8.0}),
    ),
    "phi3": dict(
        config="Phi3Config", model="Phi3ForCausalLM", seed=8000, variants=GENERIC_VARIANTS,
        kwargs=dict(head_dim=16, tie_word_embeddings=False, pad_token_id=0, partial_rotary_factor=0.5,
                    sliding_window=None, original_max_position_embeddings=32,
                    rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                     "short_factor": [1.0, 1.3, 2.1, 4.5], "long_factor": [1.1, 2.0, 4.0, 9.0],
                                     "original_max_position_embeddings": 32}),
    ),
    "olmo2": dict(
        config="Olmo2Config", model="Olmo2ForCausalLM", seed=9000, variants=GENERIC_VARIANTS,
        kwargs=dict(tie_word_embeddings=False, pad_token_id=0, rms_norm_eps=1e-6,
                    rope_parameters={"rope_type": "default", "rope_theta": 500000.0}),
    ),
    "glm4": dict(
        config="Glm4Config", model="Glm4ForCausalLM", seed=10000, variants=GENERIC_VARIANTS,
        kwargs=dict(head_dim=16, tie_word_embeddings=False, pad_token_id=0, attention_bias=True,
                    partial_rotary_factor=0.5, rms_norm_eps=1e-5,
                    rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    ),
    # Untied head: with a tied one the small embedding (std 0.1, times the
    # multiplier 3) also makes small logits, and logits_scaling shrinks them
    # further; the random models then loop on one id. attention_multiplier
    # 0.2 differs from 1/sqrt(head_dim) = 0.25.
    "granite": dict(
        embed_std=0.1, config="GraniteConfig", model="GraniteForCausalLM", seed=11000, variants=GENERIC_VARIANTS,
        kwargs=dict(head_dim=16, tie_word_embeddings=False, pad_token_id=0, embedding_multiplier=3.0,
                    attention_multiplier=0.2, residual_multiplier=0.5, logits_scaling=1.5,
                    rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    ),
    "starcoder2": dict(
        config="Starcoder2Config", model="Starcoder2ForCausalLM", seed=12000, variants=GENERIC_VARIANTS,
        kwargs=dict(tie_word_embeddings=True, pad_token_id=0, use_bias=True, norm_epsilon=1e-5,
                    hidden_act="gelu_pytorch_tanh", sliding_window=None,
                    rope_parameters={"rope_type": "default", "rope_theta": 100000.0}),
    ),
    "smollm3": dict(
        config="SmolLM3Config", model="SmolLM3ForCausalLM", seed=13000, variants=GENERIC_VARIANTS,
        kwargs=dict(num_hidden_layers=3, head_dim=16, tie_word_embeddings=True, pad_token_id=0,
                    no_rope_layers=[1, 0, 1], use_sliding_window=False,
                    rope_parameters={"rope_type": "default", "rope_theta": 2000000.0}),
    ),
})

# --- rope variants (issue 8): one f32 entry each on an arch where users meet
# them. yarn: Qwen3 with factor 4 over an original context of 1024 at
# head_dim 32 and theta 1e4 puts the correction range at dims [2, 9], so the
# table has extrapolated, blended and interpolated frequencies, and the
# attention factor 0.1*ln(4)+1 scales cos/sin (yarn's table does not depend
# on the sequence length). dynamic: NTK-aware rope equals the default table
# within max_position_embeddings, the only range where a cached decode can
# match transformers' whole-sequence recompute; the entry holds that claim.
ROPE_VARIANTS = ("f32",)
ARCHS.update({
    "qwen3_yarn": dict(
        config="Qwen3Config", model="Qwen3ForCausalLM", seed=14000, variants=ROPE_VARIANTS,
        kwargs=dict(rms_norm_eps=1e-6, head_dim=32, tie_word_embeddings=True, attention_bias=False,
                    use_sliding_window=False, max_window_layers=2, max_position_embeddings=4096,
                    rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                     "original_max_position_embeddings": 1024}),
    ),
    "llama_dynamic": dict(
        config="LlamaConfig", model="LlamaForCausalLM", seed=15000, variants=ROPE_VARIANTS,
        kwargs=dict(head_dim=16, tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
                    max_position_embeddings=32,
                    rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}),
    ),
})


def check_rope_variant(model, config):
    """For yarn and dynamic: the rotary module's inv_freq and attention_scaling
    against the formulas worked in float64 (so a transformers change shows)."""
    rp = config.rope_parameters
    kind = rp.get("rope_type")
    if kind not in ("yarn", "dynamic"):
        return []
    hd = config.head_dim
    theta = float(rp["rope_theta"])
    ext = 1.0 / (theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
    scale = 1.0
    if kind == "yarn":
        factor, orig = float(rp["factor"]), float(rp["original_max_position_embeddings"])

        def corr(rot):
            return hd * np.log(orig / (rot * 2 * np.pi)) / (2 * np.log(theta))

        low, high = max(np.floor(corr(32)), 0), min(np.ceil(corr(1)), hd - 1)
        ramp = np.clip((np.arange(hd // 2) - low) / (high - low), 0, 1)
        want = ext / factor * ramp + ext * (1 - ramp)
        scale = 0.1 * np.log(factor) + 1.0
        regimes = (int(np.sum(ramp == 0)), int(np.sum((ramp > 0) & (ramp < 1))), int(np.sum(ramp == 1)))
        if min(regimes) == 0:
            raise RuntimeError(f"yarn regimes (extrapolated, blended, interpolated) = {regimes}: one is empty")
    else:
        want = ext
        regimes = None
    mods = [m for m in model.modules() if isinstance(getattr(m, "inv_freq", None), torch.Tensor)]
    if not mods:
        raise RuntimeError("no module with an inv_freq buffer")
    for m in mods:
        got = m.inv_freq.detach().to(torch.float64).numpy()
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=0):
            raise RuntimeError(f"{kind} inv_freq {got} != expected {want}")
        if abs(float(m.attention_scaling) - scale) > 1e-6:
            raise RuntimeError(f"{kind} attention_scaling {m.attention_scaling} != expected {scale}")
    return [f"{kind} inv_freq and attention_scaling {scale:.6g} match the formulas"
            + (f"; regimes (extrapolated, blended, interpolated) = {regimes}" if regimes else
               f"; default table within max_position_embeddings {config.max_position_embeddings}")]


# --- mixture-of-experts archs (issue 8): small routers (4-8 experts, top 2)
# and every MoE option the generic tier reads. qwen3_moe: mlp_only_layers
# makes the middle layer dense, norm_topk_prob on. qwen2_moe: a shared expert
# with its sigmoid gate, q/k/v biases, norm_topk_prob off. mixtral: a sliding
# window shorter than the prompt (checked to matter), always-normalised
# top-k. olmoe: full-width q/k norms, norm_topk_prob off. f32 is what
# transformers saves; q4g64 is the MLX layout mlx-lm's sanitize writes
# (experts stacked in <moe>.switch_mlp.{gate,up,down}_proj, routers 8-bit as
# mlx-lm's quant_predicate keeps them).
MOE_VARIANTS = ("f32", "q4g64")
MIN_ROUTE_GAP = 5e-4  # between the k-th and (k+1)-th router logit, at every token, layer and step
ARCHS.update({
    "qwen3_moe": dict(
        config="Qwen3MoeConfig", model="Qwen3MoeForCausalLM", seed=16000, variants=MOE_VARIANTS,
        moe=dict(mlx="mlp", k=2),
        kwargs=dict(num_hidden_layers=3, head_dim=16, rms_norm_eps=1e-6, tie_word_embeddings=False,
                    num_experts=8, num_experts_per_tok=2, moe_intermediate_size=64, norm_topk_prob=True,
                    decoder_sparse_step=1, mlp_only_layers=[1], use_sliding_window=False,
                    rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
    ),
    "qwen2_moe": dict(
        config="Qwen2MoeConfig", model="Qwen2MoeForCausalLM", seed=17000, variants=MOE_VARIANTS,
        moe=dict(mlx="mlp", k=2),
        kwargs=dict(rms_norm_eps=1e-6, tie_word_embeddings=False, num_experts=6, num_experts_per_tok=2,
                    moe_intermediate_size=64, shared_expert_intermediate_size=128, norm_topk_prob=False,
                    decoder_sparse_step=1, mlp_only_layers=[], use_sliding_window=False, qkv_bias=True,
                    rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
    ),
    "mixtral": dict(
        config="MixtralConfig", model="MixtralForCausalLM", seed=18000, variants=MOE_VARIANTS,
        moe=dict(mlx="block_sparse_moe", k=2),
        kwargs=dict(head_dim=16, intermediate_size=64, tie_word_embeddings=False, num_local_experts=4,
                    num_experts_per_tok=2, sliding_window=6,
                    rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
    ),
    "olmoe": dict(
        config="OlmoeConfig", model="OlmoeForCausalLM", seed=19000, variants=MOE_VARIANTS,
        moe=dict(mlx="mlp", k=2),
        kwargs=dict(intermediate_size=64, tie_word_embeddings=False, pad_token_id=0, num_experts=8,
                    num_experts_per_tok=2, norm_topk_prob=False, clip_qkv=None,
                    rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    ),
})

# --- the flagship ports (issue 23): Gemma 4 text and Qwen 3.5, every
# structural switch on in some entry. gemma4: per-layer input embeddings
# (PLE, its table 4x16 = 64 wide so q4g64 quantizes it), the last two layers
# sharing the KV of the last earlier layer of their type, double-wide MLPs
# on the shared layers, sliding (window 6, default rope) and full layers
# (head_dim 32, proportional rope on a quarter of it), final softcap.
# gemma4_kv: attention_k_eq_v full layers (values are the keys' projection,
# one global KV head). gemma4_moe: the MoE block beside the dense MLP
# (router with its scale and per-expert scales, fused experts). qwen3_5:
# Gated DeltaNet layers (conv 4, 2 key heads, 4 value heads) and a gated
# full-attention layer with partial rope; the prompt crosses the reference's
# delta-rule chunk of 64. qwen3_5_moe: the same stack with routed experts and
# a gated shared expert.
FLAGSHIP_VARIANTS = ("f32", "bf16", "q4g64")
GEMMA4_COMMON = dict(
    num_hidden_layers=4, head_dim=16, global_head_dim=32, hidden_activation="gelu_pytorch_tanh",
    tie_word_embeddings=True, pad_token_id=0, rms_norm_eps=1e-6, sliding_window=6,
    layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
    vocab_size_per_layer_input=512,
    rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                     "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                        "rope_theta": 1000000.0}},
)
ARCHS.update({
    "gemma4": dict(
        embed_std=0.05, config="Gemma4TextConfig", model="Gemma4ForCausalLM", seed=20000,
        variants=FLAGSHIP_VARIANTS, buffers=("layer_scalar",),
        kwargs=dict(GEMMA4_COMMON, hidden_size_per_layer_input=16, num_kv_shared_layers=2,
                    use_double_wide_mlp=True, final_logit_softcapping=8.0),
    ),
    "gemma4_kv": dict(
        embed_std=0.05, config="Gemma4TextConfig", model="Gemma4ForCausalLM", seed=21000,
        variants=GENERIC_VARIANTS, buffers=("layer_scalar",),
        kwargs=dict(GEMMA4_COMMON, hidden_size_per_layer_input=0, attention_k_eq_v=True,
                    num_global_key_value_heads=1),
    ),
    "gemma4_moe": dict(
        embed_std=0.05, config="Gemma4TextConfig", model="Gemma4ForCausalLM", seed=22000,
        variants=GENERIC_VARIANTS, buffers=("layer_scalar",), moe=dict(mlx="experts", k=2, gemma4=True),
        kwargs=dict(GEMMA4_COMMON, hidden_size_per_layer_input=0, attention_k_eq_v=True,
                    num_global_key_value_heads=1, enable_moe_block=True, num_experts=4,
                    top_k_experts=2, moe_intermediate_size=64),
    ),
    "qwen3_5": dict(
        config="Qwen3_5TextConfig", model="Qwen3_5ForCausalLM", seed=23000, variants=FLAGSHIP_VARIANTS,
        norm_offset=True, prompt_len=80,
        kwargs=dict(num_hidden_layers=4, head_dim=16, rms_norm_eps=1e-6, tie_word_embeddings=False,
                    layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"],
                    linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=16,
                    linear_num_key_heads=2, linear_num_value_heads=4,
                    rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                                     "partial_rotary_factor": 0.25, "mrope_section": [1, 1, 0]}),
    ),
    "qwen3_5_moe": dict(
        config="Qwen3_5MoeTextConfig", model="Qwen3_5MoeForCausalLM", seed=24000, variants=GENERIC_VARIANTS,
        norm_offset=True, prompt_len=80, moe=dict(mlx="mlp", k=2),
        kwargs=dict(num_hidden_layers=4, head_dim=16, rms_norm_eps=1e-6, tie_word_embeddings=False,
                    layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"],
                    linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=16,
                    linear_num_key_heads=2, linear_num_value_heads=4,
                    num_experts=4, num_experts_per_tok=2, moe_intermediate_size=64,
                    shared_expert_intermediate_size=64,
                    rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                                     "partial_rotary_factor": 0.25, "mrope_section": [1, 1, 0]}),
    ),
})

# Per-expert module names (gate, up, down) in Hugging Face checkpoints.
MOE_HF_NAMES = {"mixtral": ("w1", "w3", "w2")}
MOE_ROUTER_QUANT = {"group_size": 64, "bits": 8}


def moe_layers(model, arch):
    """Each sparse block: (layer prefix "model.layers.N.", block path, expert
    count, layout), layout "fused" (experts.gate_up_proj [E, 2I, H] and
    experts.down_proj [E, H, I]) or "list" (one module per expert)."""
    params = dict(model.named_parameters())
    out = []
    for path, mod in model.named_modules():
        if not hasattr(mod, "experts") or not isinstance(mod.experts, nn.Module) or path.endswith(".experts"):
            continue
        # Gemma 4 keeps experts and router on the decoder layer itself.
        layer = path + "." if ARCHS[arch]["moe"].get("gemma4") else path[: path.rindex(".") + 1]
        if path + ".experts.gate_up_proj" in params:
            e = params[path + ".experts.gate_up_proj"].shape[0]
            out.append((layer, path, e, "fused"))
        else:
            e = len(mod.experts)
            out.append((layer, path, e, "list"))
    if not out:
        raise RuntimeError(f"{arch}: no sparse block found")
    return out


def router_path(arch, path):
    """The module holding a block's router weight [experts, hidden]."""
    return path + (".router.proj" if ARCHS[arch]["moe"].get("gemma4") else ".gate")


def moe_expert_stacks(arch, master, path, e, layout):
    """The stacked float32 (gate [E, I, H], up [E, I, H], down [E, H, I])
    of one block, and the parameter names they come from."""
    if layout == "fused":
        gu, down = master[path + ".experts.gate_up_proj"], master[path + ".experts.down_proj"]
        inter = gu.shape[1] // 2
        if down.shape[2] != inter or gu.shape[2] != down.shape[1]:
            raise RuntimeError(f"{path}: gate_up_proj {tuple(gu.shape)} and down_proj {tuple(down.shape)} "
                               "are not [E, 2I, H] and [E, H, I]")
        return (gu[:, :inter], gu[:, inter:], down), [path + ".experts.gate_up_proj", path + ".experts.down_proj"]
    names = MOE_HF_NAMES.get(arch, ("gate_proj", "up_proj", "down_proj"))
    stacks, used = [], []
    for n in names:
        ps = [f"{path}.experts.{i}.{n}.weight" for i in range(e)]
        stacks.append(torch.stack([master[p] for p in ps]))
        used += ps
    return tuple(stacks), used


def moe_to_mlx(arch, model, master, tensors, ref, qconf, stats, group_size, bits):
    """Rewrites an MoE model's quantized checkpoint into mlx-lm's layout: the
    experts of each block stacked as <block>.switch_mlp.{gate,up,down}_proj
    (quantized), routers (and qwen2_moe's shared_expert_gate) at 8 bits
    group 64 under per-path quantization entries. ref gets the dequantized
    values in the model's own parameter layout."""
    mlx = ARCHS[arch]["moe"]["mlx"]
    for layer, path, e, layout in moe_layers(model, arch):
        mp = layer + mlx
        (gate, up, down), used = moe_expert_stacks(arch, master, path, e, layout)
        for name in list(tensors):
            if name.startswith(path + ".experts.") or name.startswith(path + ".gate.") or \
                    name.startswith(path + ".shared_expert_gate."):
                del tensors[name]
        deq = {}
        for proj, w in (("gate_proj", gate), ("up_proj", up), ("down_proj", down)):
            q, s, b, st = mlxquant.quantize_affine(w.numpy(), group_size, bits)
            stats["ties"] += st["ties"]
            stats["all_negative_groups"] += st["all_negative_groups"]
            words, sb, bb = mlxquant.pack(q, bits), mlxquant.f32_to_bf16_bits(s), mlxquant.f32_to_bf16_bits(b)
            tensors[f"{mp}.switch_mlp.{proj}.weight"] = ("U32", words)
            tensors[f"{mp}.switch_mlp.{proj}.scales"] = ("BF16", sb)
            tensors[f"{mp}.switch_mlp.{proj}.biases"] = ("BF16", bb)
            deq[proj] = torch.from_numpy(mlxquant.dequantize(
                words, mlxquant.bf16_bits_to_f32(sb), mlxquant.bf16_bits_to_f32(bb), group_size, bits).copy())
            stats["quantized"].append(f"{mp}.switch_mlp.{proj}:g{group_size}b{bits}")
        if layout == "fused":
            ref[used[0]] = torch.cat([deq["gate_proj"], deq["up_proj"]], dim=1).contiguous()
            ref[used[1]] = deq["down_proj"].contiguous()
        else:
            names = MOE_HF_NAMES.get(arch, ("gate_proj", "up_proj", "down_proj"))
            for n, proj in zip(names, ("gate_proj", "up_proj", "down_proj")):
                for i in range(e):
                    ref[f"{path}.experts.{i}.{n}.weight"] = deq[proj][i].contiguous()
        for src, dst in ((path + ".gate", mp + ".gate"), (path + ".shared_expert_gate", mp + ".shared_expert_gate")):
            if src + ".weight" not in master:
                continue
            g, b = MOE_ROUTER_QUANT["group_size"], MOE_ROUTER_QUANT["bits"]
            q, s, bi, st = mlxquant.quantize_affine(master[src + ".weight"].numpy(), g, b)
            stats["ties"] += st["ties"]
            words, sb, bb = mlxquant.pack(q, b), mlxquant.f32_to_bf16_bits(s), mlxquant.f32_to_bf16_bits(bi)
            tensors[dst + ".weight"] = ("U32", words)
            tensors[dst + ".scales"] = ("BF16", sb)
            tensors[dst + ".biases"] = ("BF16", bb)
            ref[src + ".weight"] = torch.from_numpy(mlxquant.dequantize(
                words, mlxquant.bf16_bits_to_f32(sb), mlxquant.bf16_bits_to_f32(bb), g, b).copy())
            qconf[dst] = dict(MOE_ROUTER_QUANT)
            stats["quantized"].append(f"{dst}:g{g}b{b}")
        # anything else of the block (shared expert) keeps the model's path;
        # mlx-lm's names differ only where the block's name does (Mixtral)
        if mp != path and not ARCHS[arch]["moe"].get("gemma4"):
            for name in list(tensors):
                if name.startswith(path + "."):
                    tensors[mp + name[len(path):]] = tensors.pop(name)


def moe_from_mlx(arch, loaded, ref_weights, model):
    """Inverts moe_to_mlx on a read-back checkpoint ({name: float32 array},
    quantized ones dequantized): the model's parameter names again."""
    mlx = ARCHS[arch]["moe"]["mlx"]
    out = dict(loaded)
    for layer, path, e, layout in moe_layers(model, arch):
        mp = layer + mlx
        st = {p: out.pop(f"{mp}.switch_mlp.{p}.weight") for p in ("gate_proj", "up_proj", "down_proj")}
        if layout == "fused":
            out[path + ".experts.gate_up_proj"] = np.concatenate([st["gate_proj"], st["up_proj"]], axis=1)
            out[path + ".experts.down_proj"] = st["down_proj"]
        else:
            names = MOE_HF_NAMES.get(arch, ("gate_proj", "up_proj", "down_proj"))
            for n, proj in zip(names, ("gate_proj", "up_proj", "down_proj")):
                for i in range(e):
                    out[f"{path}.experts.{i}.{n}.weight"] = np.ascontiguousarray(st[proj][i])
        if mp != path and not ARCHS[arch]["moe"].get("gemma4"):
            for name in list(out):
                if name.startswith(mp + "."):
                    out[path + name[len(mp):]] = out.pop(name)
    return out


class RouteGaps:
    """Records, while a reference runs, the smallest gap between the k-th
    and (k+1)-th router logit over every token of every sparse layer: a
    near-tie there would let float32 summation order pick another expert."""

    def __init__(self, model, arch):
        self.min = float("inf")
        self.hooks = []
        spec = ARCHS[arch].get("moe")
        if not spec:
            return
        self.k = spec["k"]
        for layer, path, e, layout in moe_layers(model, arch):
            gate = model.get_submodule(router_path(arch, path))
            self.hooks.append(gate.register_forward_pre_hook(self._hook))

    def _hook(self, mod, args):
        x = args[0].detach().to(torch.float64).reshape(-1, args[0].shape[-1])
        logits = x @ mod.weight.detach().to(torch.float64).T
        top = torch.topk(logits, self.k + 1, dim=-1).values
        self.min = min(self.min, float((top[:, self.k - 1] - top[:, self.k]).min()))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for h in self.hooks:
            h.remove()
        return False


def moe_saved_names(entry_dir):
    """The tensor names of the last layer of a saved checkpoint, for the log."""
    files = mlxquant.read_safetensors(os.path.join(entry_dir, "model.safetensors"))
    return sorted(f"{n} {list(a.shape)}" for n, (dt, a) in files.items() if ".layers.1." in n)


# Quantized variants: (group_size, bits).
QUANT = {"q4g64": (64, 4), "q8g32": (32, 8)}
# In qwen3-q4g64 the tied embedding (which is also the output head) is 8-bit group 32.
QUANT_OVERRIDES = {("qwen3", "q4g64"): {"model.embed_tokens": {"group_size": 32, "bits": 8}}}


def log(msg):
    print(msg, flush=True)


def make_config(arch, **overrides):
    spec = ARCHS[arch]
    kwargs = dict(COMMON)
    kwargs.update(copy.deepcopy(spec["kwargs"]))
    kwargs.update(overrides)
    config = getattr(transformers, spec["config"])(**kwargs)
    config._attn_implementation = "eager"
    if spec.get("moe"):
        config._experts_implementation = "eager"  # the per-expert loop, not a fused kernel
    return config


def new_model(arch, config):
    model = getattr(transformers, ARCHS[arch]["model"])(config)
    model = model.to(dtype=torch.float32, device="cpu")
    model.eval()
    for name, p in model.named_parameters():
        if p.dtype != torch.float32:
            raise RuntimeError(f"parameter {name} is {p.dtype}, want float32")
    if model.config._attn_implementation != "eager":
        raise RuntimeError(f"attention is {model.config._attn_implementation!r}, want eager")
    return model


def is_tied(model):
    return model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()


def param_seed(seed, name):
    return (seed * 1000003 + zlib.crc32(name.encode("utf-8"))) % (2**63 - 1)


def init_weights(model, seed, norm_offset=False, embed_std=None, buffers=()):
    """Returns fresh float32 master weights {name: tensor} for every unique parameter.

    Linear weights N(0, 1/sqrt(in)), doubled for the residual-stream outputs
    (o_proj, down_proj) so the embedding does not dominate the stream; lm_head
    N(0, 0.3) and untied embeddings N(0, 0.3), so last-step logits have a std of
    about 2.4; a tied embedding N(0, 0.2) (std about 1.6: with a tied head a
    larger embedding makes random models repeat their last token); every norm
    weight 1 + 0.1*N(0,1); biases 0.1*N(0,1).  Each parameter has its own
    generator, seeded from (seed, name), so the values do not depend on order.
    """
    tied = is_tied(model)
    master = {}
    for name, p in model.named_parameters():
        g = torch.Generator(device="cpu").manual_seed(param_seed(seed, name))
        z = torch.randn(tuple(p.shape), generator=g, dtype=torch.float32)
        if name.endswith("linear_attn.norm.weight"):
            w = 1.0 + 0.1 * z  # Qwen 3.5's gated norm multiplies by w, unlike its other norms
        elif name.endswith("norm.weight") and norm_offset:
            w = 0.1 * z  # Gemma stores (scale - 1): the norm multiplies by 1 + w
        elif name.endswith("norm.weight"):
            w = 1.0 + 0.1 * z
        elif name.endswith(".bias"):
            w = 0.1 * z
        elif name.endswith("embed_tokens.weight"):
            # Archs that scale the embedding up (Gemma's sqrt(hidden), Granite's
            # multiplier) need a smaller one, or the token embedding swamps the
            # residual stream and a tied head repeats the last token.
            w = (embed_std or (0.2 if tied else 0.3)) * z
        elif name == "lm_head.weight":
            w = 0.3 * z
        elif name.endswith(("o_proj.weight", "down_proj.weight", "c_proj.weight")):
            w = 2.0 * z / float(p.shape[1]) ** 0.5
        elif p.ndim == 2:
            w = z / float(p.shape[1]) ** 0.5
        elif name.endswith("A_log"):
            w = torch.log(1.0 + 7.0 * torch.rand(tuple(p.shape), generator=g))  # A in [1, 8)
        elif name.endswith("dt_bias"):
            w = 0.5 * z
        elif p.ndim == 1 and "layernorm_" in name:  # Gemma 4's numbered MoE norms (post_feedforward_layernorm_1)
            w = 1.0 + 0.1 * z
        elif name.endswith(("router.scale", "per_expert_scale")):
            w = 1.0 + 0.2 * z
        elif name.endswith("conv1d.weight"):  # depthwise [C, 1, K]
            w = z / float(p.shape[2]) ** 0.5
        elif p.ndim == 3 and ".experts." in name:  # stacked experts [E, out, in], as for Linear
            w = (2.0 if name.endswith("down_proj") else 1.0) * z / float(p.shape[2]) ** 0.5
        else:
            raise RuntimeError(f"no init rule for parameter {name} {tuple(p.shape)}")
        master[name] = w.contiguous()
    for name, b in model.named_buffers():
        if name.rsplit(".", 1)[-1] in buffers:  # persistent ones a checkpoint carries (Gemma 4's layer_scalar)
            g = torch.Generator(device="cpu").manual_seed(param_seed(seed, name))
            master[name] = (1.0 + 0.2 * torch.randn(tuple(b.shape), generator=g, dtype=torch.float32)).contiguous()
    return master


def load_weights(model, weights):
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(weights[name])
        for name, b in model.named_buffers():
            if name in weights:
                b.copy_(weights[name])


def make_prompt(seed, vocab, length=PROMPT_LEN):
    rng = random.Random(seed)
    return [COMMON["bos_token_id"]] + [rng.randrange(3, vocab) for _ in range(length - 1)]


def logits_of(model, ids):
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids], dtype=torch.long), use_cache=False)
    return out.logits[0, -1].to(torch.float32).clone()


def run_reference(model, prompt):
    """Greedy decode with a full re-run each step; returns (logits list, greedy ids, margins)."""
    seq = list(prompt)
    all_logits, greedy, margins = [], [], []
    for _ in range(STEPS):
        lg = logits_of(model, seq)
        top2 = torch.topk(lg, 2)
        nxt = int(top2.indices[0])
        all_logits.append(lg)
        greedy.append(nxt)
        margins.append(float(top2.values[0] - top2.values[1]))
        seq.append(nxt)
    return all_logits, greedy, margins


# --- variants -----------------------------------------------------------------


def bf16_round_t(t):
    return t.to(torch.bfloat16).to(torch.float32)


def quantize_weights(model, master, arch, variant):
    """Builds an MLX quantized checkpoint from the float32 master weights.

    Quantizing from float32 (not from bf16-rounded values, whose few mantissa
    bits make exact .5 ties common) keeps the stored levels independent of the
    rounding rule.  Tensors left unquantized (norms, biases) are stored BF16.

    Returns (reference weights {param: f32 tensor}, safetensors tensors
    {name: (dtype, ndarray)}, quantization config dict, stats).
    """
    group_size, bits = QUANT[variant]
    overrides = QUANT_OVERRIDES.get((arch, variant), {})
    tied = is_tied(model)
    ref = {n: bf16_round_t(w) for n, w in master.items()}
    tensors = {}
    stats = {"ties": 0, "all_negative_groups": 0, "quantized": []}
    handled = set()
    for path, mod in model.named_modules():
        if not isinstance(mod, (nn.Linear, nn.Embedding)):
            continue
        if tied and path == "lm_head":
            continue  # the tied head is the embedding; mlx-lm stores no lm_head
        wname = path + ".weight"
        qcfg = overrides.get(path, {"group_size": group_size, "bits": bits})
        g, b = qcfg["group_size"], qcfg["bits"]
        w = master[wname].numpy()
        if w.shape[-1] % g != 0:
            continue  # stays BF16, like mlx-lm's class predicate
        q, scales, biases, st = mlxquant.quantize_affine(w, g, b)
        stats["ties"] += st["ties"]
        stats["all_negative_groups"] += st["all_negative_groups"]
        # Cross-check the numpy bf16 rounding against torch's on real data.
        s_bits = mlxquant.f32_to_bf16_bits(scales)
        b_bits = mlxquant.f32_to_bf16_bits(biases)
        if not np.array_equal(mlxquant.bf16_bits_to_f32(s_bits), bf16_round_t(torch.from_numpy(scales)).numpy()):
            raise RuntimeError("numpy and torch disagree on bf16 rounding")
        words = mlxquant.pack(q, b)
        deq = mlxquant.dequantize(
            words, mlxquant.bf16_bits_to_f32(s_bits), mlxquant.bf16_bits_to_f32(b_bits), g, b
        )
        tensors[wname] = ("U32", words)
        tensors[path + ".scales"] = ("BF16", s_bits)
        tensors[path + ".biases"] = ("BF16", b_bits)
        ref[wname] = torch.from_numpy(deq.copy())
        handled.add(wname)
        stats["quantized"].append(f"{path}:g{g}b{b}")
    for name, w in ref.items():
        if name in handled:
            continue
        tensors[name] = ("BF16", mlxquant.f32_to_bf16_bits(w.numpy()))
    qconf = {"group_size": group_size, "bits": bits}
    qconf.update(copy.deepcopy(overrides))
    if ARCHS[arch].get("moe"):
        moe_to_mlx(arch, model, master, tensors, ref, qconf, stats, group_size, bits)
    return ref, tensors, qconf, stats


# --- checks -----------------------------------------------------------------


def expected_inv_freq(config):
    rp = config.rope_parameters
    hd = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    theta = float(rp["rope_theta"])
    inv = 1.0 / (theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
    kind = rp.get("rope_type", "default")
    if kind == "default":
        return inv, inv
    if kind == "linear":
        return inv / float(rp["factor"]), inv
    if kind == "llama3":
        factor = float(rp["factor"])
        lo, hi = float(rp["low_freq_factor"]), float(rp["high_freq_factor"])
        old = float(rp["original_max_position_embeddings"])
        wavelen = 2 * np.pi / inv
        out = np.where(wavelen > old / lo, inv / factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        mid = (wavelen >= old / hi) & (wavelen <= old / lo)
        out = np.where(mid, (1 - smooth) * out / factor + smooth * out, out)
        regimes = (int(np.sum(wavelen < old / hi)), int(np.sum(mid)), int(np.sum(wavelen > old / lo)))
        if min(regimes) == 0:
            raise RuntimeError(f"llama3 regimes (kept, smoothed, divided) = {regimes}: one is empty")
        return out, inv
    raise RuntimeError(f"no expected inv_freq for rope_type {kind!r}")


def check_rope(model, config):
    want, default = expected_inv_freq(config)
    found = [m.inv_freq for m in model.modules() if isinstance(getattr(m, "inv_freq", None), torch.Tensor)]
    if not found:
        raise RuntimeError("no module with an inv_freq buffer")
    for got in found:
        got = got.detach().to(torch.float64).numpy()
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=0):
            raise RuntimeError(f"inv_freq {got} != expected {want}")
    kind = config.rope_parameters.get("rope_type", "default")
    if kind != "default" and np.allclose(want, default, rtol=1e-3):
        raise RuntimeError(f"{kind} inv_freq does not differ from the default one")
    return [float(x) for x in want]


def check_sliding_window(arch, weights, seq, windowed_logits):
    full = new_model(arch, make_config(arch, sliding_window=None))
    if getattr(full.config, "sliding_window", None) is not None:
        raise RuntimeError("could not build the windowless twin")
    load_weights(full, weights)
    diff = float((logits_of(full, seq) - windowed_logits).abs().max())
    if diff < 1e-3:
        raise RuntimeError(f"sliding window has no effect (max diff {diff})")
    return diff


def check_reload_hf(entry_dir, prompt, golden0):
    m = transformers.AutoModelForCausalLM.from_pretrained(entry_dir, dtype=torch.float32, attn_implementation="eager")
    m.eval()
    return float((logits_of(m, prompt) - golden0).abs().max())


def check_reload_quant(arch, entry_dir, ref_weights, prompt, golden0):
    files = mlxquant.read_safetensors(os.path.join(entry_dir, "model.safetensors"))
    with open(os.path.join(entry_dir, "config.json")) as f:
        cfgd = json.load(f)
    qconf = cfgd["quantization"]
    loaded = {}
    for name, (dtype, arr) in files.items():
        if name.endswith(".scales") or name.endswith(".biases"):
            continue
        if dtype == "U32":
            path = name[: -len(".weight")]
            spec = qconf.get(path, qconf)
            g, b = spec["group_size"], spec["bits"]
            s = mlxquant.as_f32(*files[path + ".scales"])
            bb = mlxquant.as_f32(*files[path + ".biases"])
            loaded[name] = mlxquant.dequantize(arr, s, bb, g, b)
        else:
            loaded[name] = mlxquant.as_f32(dtype, arr)
    if ARCHS[arch].get("moe"):
        loaded = moe_from_mlx(arch, loaded, ref_weights, new_model(arch, make_config(arch)))
    for name, w in ref_weights.items():
        if name not in loaded:
            raise RuntimeError(f"{name} missing from the written checkpoint")
        if not np.array_equal(loaded[name], w.numpy()):
            raise RuntimeError(f"{name} read back differs from the reference weights")
    extra = set(loaded) - set(ref_weights)
    if extra:
        raise RuntimeError(f"unexpected tensors in checkpoint: {sorted(extra)}")
    # Rebuild the model from the written config.json (quantization keys dropped).
    for k in ("quantization", "quantization_config"):
        cfgd.pop(k)
    config = getattr(transformers, ARCHS[arch]["config"]).from_dict(cfgd)
    config._attn_implementation = "eager"
    model = new_model(arch, config)
    load_weights(model, {n: torch.from_numpy(loaded[n].copy()) for n in ref_weights})
    return float((logits_of(model, prompt) - golden0).abs().max())


# --- entries ----------------------------------------------------------------


def fmt(x):
    return float(f"{float(x):.9g}")


def build_entry(arch, variant, out_dir, args_list):
    name = f"{arch}-{variant}"
    entry_dir = os.path.join(out_dir, name)
    checks = []
    for attempt in range(MAX_ATTEMPTS):
        seed = ARCHS[arch]["seed"] + attempt
        config = make_config(arch)
        model = new_model(arch, config)
        tied = is_tied(model)
        if tied != bool(config.tie_word_embeddings):
            raise RuntimeError(f"tied={tied} but tie_word_embeddings={config.tie_word_embeddings}")
        master = init_weights(model, seed, ARCHS[arch].get("norm_offset", False), ARCHS[arch].get("embed_std"),
                              ARCHS[arch].get("buffers", ()))
        prompt = make_prompt(seed, config.vocab_size, ARCHS[arch].get("prompt_len", PROMPT_LEN))
        tensors = qconf = qstats = None
        if variant == "f32":
            ref = master
        elif variant == "bf16":
            ref = {n: bf16_round_t(w) for n, w in master.items()}
        else:
            ref, tensors, qconf, qstats = quantize_weights(model, master, arch, variant)
            if qstats["ties"] or qstats["all_negative_groups"]:
                log(f"  {name} seed {seed}: quantization stats {qstats}, retrying")
                continue
        load_weights(model, ref)
        with RouteGaps(model, arch) as gaps:
            logits, greedy, margins = run_reference(model, prompt)
        std0 = float(logits[0].std())
        if min(margins) < MIN_MARGIN or len(set(greedy)) < MIN_DISTINCT or gaps.min < MIN_ROUTE_GAP:
            log(f"  {name} seed {seed}: margin {min(margins):.4g}, {len(set(greedy))} distinct, "
                f"route gap {gaps.min:.3g}; retrying")
            continue
        break
    else:
        raise RuntimeError(f"{name}: no seed in {MAX_ATTEMPTS} attempts met the margin/distinct rules")

    # Checks on the accepted model.
    if arch not in ("llama", "mistral", "qwen2", "qwen3"):
        for mname, mod in model.named_modules():
            if isinstance(getattr(mod, "inv_freq", None), torch.Tensor):
                log(f"  {name} {mname}.inv_freq = {[float('%.8g' % v) for v in mod.inv_freq.tolist()]}"
                    f" attention_scaling={getattr(mod, 'attention_scaling', None)}")
            for attr in ("sliding_window", "scaling", "attn_logit_softcapping", "is_sliding", "use_rope"):
                if attr in vars(mod) and not isinstance(getattr(mod, attr), nn.Module):
                    log(f"  {name} {mname}.{attr} = {getattr(mod, attr)}")
    if arch in ("llama", "mistral", "qwen2", "qwen3"):
        inv = check_rope(model, config)
        checks.append(f"inv_freq matches {config.rope_parameters.get('rope_type')}: {['%.6g' % v for v in inv]}")
    checks += check_rope_variant(model, config)
    if not 1.0 <= std0 <= 4.0:
        log(f"  WARNING {name}: step-0 logit std {std0:.3g} outside [1, 4]")
    if ARCHS[arch].get("moe"):
        checks.append(f"smallest router top-k gap {gaps.min:.4g} (>= {MIN_ROUTE_GAP})")
    if arch in ("mistral", "mixtral"):
        final_seq = prompt + greedy[:-1]
        diff = check_sliding_window(arch, ref, final_seq, logits[-1])
        checks.append(f"sliding window changes last-step logits by {diff:.4g}")

    # Write the files (into an emptied folder, so nothing stale survives a re-run).
    shutil.rmtree(entry_dir, ignore_errors=True)
    os.makedirs(entry_dir)
    if variant == "f32":
        model.save_pretrained(entry_dir)
    else:
        copy.deepcopy(model).to(torch.bfloat16).save_pretrained(entry_dir)
    written = sorted(os.listdir(entry_dir))
    if variant in QUANT:
        os.remove(os.path.join(entry_dir, "model.safetensors"))
        mlxquant.write_safetensors(os.path.join(entry_dir, "model.safetensors"), tensors, {"format": "mlx"})
        cpath = os.path.join(entry_dir, "config.json")
        with open(cpath) as f:
            cfgd = json.load(f)
        cfgd["quantization"] = copy.deepcopy(qconf)
        cfgd["quantization_config"] = copy.deepcopy(qconf)
        with open(cpath, "w") as f:
            f.write(json.dumps(cfgd, indent=2, sort_keys=True) + "\n")
        checks.append("quantized: " + ", ".join(qstats["quantized"]))

    # Read back what was written.
    if variant in QUANT:
        d = check_reload_quant(arch, entry_dir, ref, prompt, logits[0])
    else:
        d = check_reload_hf(entry_dir, prompt, logits[0])
    if d > 1e-5:
        raise RuntimeError(f"reloaded {name} gives step-0 logits off by {d}")
    checks.append(f"reloaded from disk: step-0 max abs diff {d:.3g}")
    if ARCHS[arch].get("moe"):
        checks.append("layer 1 tensors: " + ", ".join(moe_saved_names(entry_dir)))
    if arch not in ("llama", "mistral", "qwen2", "qwen3"):
        with open(os.path.join(entry_dir, "config.json")) as f:
            log(f"  {name} config.json: {json.dumps(json.load(f), sort_keys=True)}")

    golden = {
        "script": SCRIPT,
        "args": args_list,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "name": name,
        "model_type": config.model_type,
        "variant": variant,
        "seed": seed,
        "prompt_ids": prompt,
        "greedy_ids": greedy,
        "logits": [[fmt(v) for v in lg.tolist()] for lg in logits],
        "min_margin": fmt(min(margins)),
        "logit_std_step0": fmt(std0),
    }
    with open(os.path.join(entry_dir, "golden.json"), "w") as f:
        f.write(json.dumps(golden, separators=(",", ":")) + "\n")
    size = sum(os.path.getsize(os.path.join(entry_dir, x)) for x in os.listdir(entry_dir))
    log(f"{name}: seed {seed} attempt {attempt} min_margin {min(margins):.4g} std0 {std0:.3g} "
        f"greedy {greedy} files {written} -> {size} bytes")
    for c in checks:
        log(f"  check: {c}")
    return {
        "name": name,
        "model_type": config.model_type,
        "variant": variant,
        "dir": name,
        "tolerance": {
            "max_abs_logit": TOLERANCE,
            "why": "the reference runs in float32 on exactly the weights the engine loads "
            + ("(F32 as saved)" if variant == "f32" else
               "(BF16 upcast)" if variant == "bf16" else "(dequantized in float32 from the stored q/scales/biases)")
            + ", so only float32 summation order differs",
        },
        "steps": STEPS,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--only", help="build only these entries, comma-separated, e.g. llama-f32,granite-q4g64 "
                    "(merged into an existing manifest)")
    ap.add_argument("--archs", help="build only these archs, comma-separated (merged into an existing manifest)")
    args = ap.parse_args()
    args_list = sys.argv[1:]

    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    log(f"python {sys.version.split()[0]} torch {torch.__version__} transformers {transformers.__version__} "
        f"numpy {np.__version__}")

    names = [f"{a}-{v}" for a in ARCHS for v in ARCHS[a].get("variants", VARIANTS)]
    if args.archs:
        names = [n for n in names if n.split("-")[0] in args.archs.split(",")]
    if args.only:
        only = args.only.split(",")
        unknown = [n for n in only if n not in names]
        if unknown:
            ap.error(f"unknown entries {unknown}; entries: {', '.join(names)}")
        names = only
    os.makedirs(args.out, exist_ok=True)
    mpath = os.path.join(args.out, "manifest.json")
    entries = {}
    if (args.only or args.archs) and os.path.exists(mpath):
        with open(mpath) as f:
            entries = {e["name"]: e for e in json.load(f)["entries"]}
    failed = []
    for name in names:
        arch, variant = name.split("-")
        try:
            entries[name] = build_entry(arch, variant, args.out, args_list)
        except Exception:
            failed.append(name)
            log(f"FAILED {name}:\n{traceback.format_exc()}")
    order = [f"{a}-{v}" for a in ARCHS for v in ARCHS[a].get("variants", VARIANTS)]
    manifest = {
        "oracle": f"transformers {transformers.__version__}",
        "torch": torch.__version__,
        "script": SCRIPT,
        "entries": [entries[n] for n in order if n in entries],
    }
    with open(mpath, "w") as f:
        f.write(json.dumps(manifest, indent=2) + "\n")
    if failed:
        log(f"{len(failed)} entries failed: {', '.join(failed)}")
        sys.exit(1)
    log(f"wrote {len(manifest['entries'])} entries to {args.out}")


if __name__ == "__main__":
    main()
