package gguf

import (
	"strconv"
	"strings"
)

// globalNames are the tensors outside the layers (gguf-py's
// MODEL_TENSOR.TOKEN_EMBD, OUTPUT_NORM and OUTPUT) by their transformers
// names in a ForCausalLM save.
var globalNames = map[string]string{
	"token_embd.weight":  "model.embed_tokens.weight",
	"output_norm.weight": "model.norm.weight",
	"output_norm.bias":   "model.norm.bias", // LayerNorm's (StarCoder2)
	"output.weight":      "lm_head.weight",
}

// configTensors are read into the config, not bound as weights.
var configTensors = map[string]bool{"rope_freqs.weight": true, "rope_factors_long.weight": true, "rope_factors_short.weight": true}

// hfName is the transformers name of the GGUF tensor name under a, and
// the layer it belongs to (-1 for none). ok is false for a name the
// architecture does not map: such a tensor is placed under its GGUF name,
// where the weight audit reports it as unused.
func (a arch) hfName(name string) (hf string, layer int, ok bool) {
	if hf, ok := globalNames[name]; ok {
		return hf, -1, true
	}
	rest, isBlk := strings.CutPrefix(name, "blk.")
	if !isBlk {
		return name, -1, false
	}
	num, rest, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || strconv.Itoa(n) != num {
		return name, -1, false
	}
	base, suffix, _ := strings.Cut(rest, ".")
	if suffix != "weight" && suffix != "bias" {
		return name, -1, false
	}
	to, ok := a.layer[base]
	if !ok {
		return name, -1, false
	}
	return "model.layers." + num + "." + to + "." + suffix, n, true
}

// permuted reports whether llama.cpp's converter permuted the rows of the
// tensor named hf (LlamaModel.modify_tensors: q_proj and k_proj weights
// and biases), and over how many heads: num_attention_heads for q, and
// for k num_key_value_heads (LlamaModel.permute takes n_head_kv when it
// differs).
func (a arch) permuted(hf string, heads, kvHeads int) int {
	if !a.permuteQK {
		return 0
	}
	switch {
	case strings.HasSuffix(hf, ".self_attn.q_proj.weight"), strings.HasSuffix(hf, ".self_attn.q_proj.bias"):
		return heads
	case strings.HasSuffix(hf, ".self_attn.k_proj.weight"), strings.HasSuffix(hf, ".self_attn.k_proj.bias"):
		return kvHeads
	}
	return 0
}

// unpermuteRows undoes LlamaModel.permute on rows of rowBytes bytes:
// the converter wrote w.reshape(heads, 2, d/2, …).swapaxes(1, 2), which
// puts row h·d + half·d/2 + i of the original (d rows a head) at row
// h·d + 2i + half. Rows move whole, so a quantized tensor (whose rows are
// whole blocks) is un-permuted before it is decoded.
func unpermuteRows(dst, src []byte, rows, heads int) {
	rowBytes := len(src) / rows
	d := rows / heads
	for h := range heads {
		for half := range 2 {
			for i := range d / 2 {
				to := h*d + half*d/2 + i
				from := h*d + 2*i + half
				copy(dst[to*rowBytes:(to+1)*rowBytes], src[from*rowBytes:(from+1)*rowBytes])
			}
		}
	}
}
