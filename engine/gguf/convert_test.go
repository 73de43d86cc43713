package gguf_test

import (
	"encoding/binary"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"hearth/engine/config"
	"hearth/engine/gguf"
	"hearth/engine/tensor"
	"hearth/engine/weights"
	"hearth/internal/testmodels"
)

// This file is a test-side transcription of llama.cpp's
// convert_hf_to_gguf.py (and gguf-py's tensor_mapping.py) for the
// committed tiny checkpoints: it writes the GGUF file llama.cpp's
// converter would write from testdata/models/<name>, so that the loader
// is held to the converter's own conventions rather than to its inverse.

// hfToGGUF is gguf-py's tensor_mapping for the names the test checkpoints
// hold, per layer ("model.layers.N." → "blk.N.").
var hfToGGUF = map[string]string{
	"input_layernorm":          "attn_norm",
	"self_attn.q_proj":         "attn_q",
	"self_attn.k_proj":         "attn_k",
	"self_attn.v_proj":         "attn_v",
	"self_attn.o_proj":         "attn_output",
	"self_attn.q_norm":         "attn_q_norm",
	"self_attn.k_norm":         "attn_k_norm",
	"post_attention_layernorm": "ffn_norm", // MODEL_TENSOR.FFN_NORM (llama, qwen)
	"mlp.gate_proj":            "ffn_gate",
	"mlp.up_proj":              "ffn_up",
	"mlp.down_proj":            "ffn_down",
	"self_attn.qkv_proj":       "attn_qkv", // Phi-3
	"mlp.gate_up_proj":         "ffn_up",   // Phi-3, GLM-4
	"mlp.c_fc":                 "ffn_up",   // StarCoder2
	"mlp.c_proj":               "ffn_down", // StarCoder2
	// MODEL_TENSOR.FFN_GATE_INP (the router) and Qwen2-MoE's shared expert
	"mlp.gate":                    "ffn_gate_inp",
	"block_sparse_moe.gate":       "ffn_gate_inp",
	"mlp.shared_expert.gate_proj": "ffn_gate_shexp",
	"mlp.shared_expert.up_proj":   "ffn_up_shexp",
	"mlp.shared_expert.down_proj": "ffn_down_shexp",
	"mlp.shared_expert_gate":      "ffn_gate_inp_shexp",
}

// archToGGUF overrides hfToGGUF where an architecture's MODEL_TENSORS
// list changes which MODEL_TENSOR a name maps to.
var archToGGUF = map[string]map[string]string{
	"gemma2": sandwichToGGUF,
	"gemma3": sandwichToGGUF,
	// OLMO2 has ATTN_POST_NORM and FFN_POST_NORM, no FFN_NORM
	"olmo2": {"post_attention_layernorm": "post_attention_norm", "post_feedforward_layernorm": "post_ffw_norm"},
	// GLM4 has all three: post_attention_layernorm stays FFN_NORM (listed
	// after ATTN_POST_NORM in tensor_mapping, so it wins)
	"glm4": {"post_self_attn_layernorm": "post_attention_norm", "post_mlp_layernorm": "post_ffw_norm"},
}

// sandwichToGGUF overrides hfToGGUF for Gemma 2 and 3: their
// post_attention_layernorm is MODEL_TENSOR.ATTN_POST_NORM, and
// pre_feedforward_layernorm FFN_PRE_NORM (which is "ffn_norm").
var sandwichToGGUF = map[string]string{
	"post_attention_layernorm":   "post_attention_norm",
	"pre_feedforward_layernorm":  "ffn_norm",
	"post_feedforward_layernorm": "post_ffw_norm",
}

// ggufName is the GGUF name of a transformers tensor name.
func ggufName(t testing.TB, arch, name string) string {
	switch name {
	case "model.embed_tokens.weight":
		return "token_embd.weight"
	case "model.norm.weight":
		return "output_norm.weight"
	case "model.norm.bias":
		return "output_norm.bias"
	case "lm_head.weight":
		return "output.weight"
	}
	rest, ok := strings.CutPrefix(name, "model.layers.")
	if !ok {
		t.Fatalf("no GGUF name for %q", name)
	}
	num, rest, _ := strings.Cut(rest, ".")
	dot := strings.LastIndex(rest, ".")
	base, suffix := rest[:dot], rest[dot+1:]
	to, ok := hfToGGUF[base]
	if s, over := archToGGUF[arch][base]; over {
		to, ok = s, true
	}
	if !ok {
		t.Fatalf("no GGUF name for %q", name)
	}
	return "blk." + num + "." + to + "." + suffix
}

// permute is LlamaModel.permute: (w.reshape(n_head, 2, rows/n_head/2, …)
// .swapaxes(1, 2).reshape(w.shape)), with n_head_kv taking n_head's place
// when given and different.
func permute(w []float32, rows, cols, nHead, nHeadKV int) []float32 {
	if nHeadKV != 0 && nHead != nHeadKV {
		nHead = nHeadKV
	}
	out := make([]float32, len(w))
	d := rows / nHead
	for h := range nHead {
		for half := range 2 {
			for i := range d / 2 {
				from := h*d + half*d/2 + i // [h, half, i] of the reshape
				to := h*d + 2*i + half     // [h, i, half] after swapaxes
				copy(out[to*cols:(to+1)*cols], w[from*cols:(from+1)*cols])
			}
		}
	}
	return out
}

// expertName parses a per-expert tensor name: Qwen2MoeModel's and
// OlmoeModel's model.layers.N.mlp.experts.X.{gate,up,down}_proj.weight and
// LlamaModel's model.layers.N.block_sparse_moe.experts.X.w{1,2,3}.weight
// (Mixtral). merged is the GGUF name of the stacked tensor the converter
// writes ("blk.N.ffn_gate_exps.weight"); tensor_mapping maps w1, w2 and w3
// to FFN_GATE_EXP, FFN_DOWN_EXP and FFN_UP_EXP.
func expertName(name string) (merged string, expert int, ok bool) {
	rest, ok := strings.CutPrefix(name, "model.layers.")
	if !ok {
		return "", 0, false
	}
	num, rest, _ := strings.Cut(rest, ".")
	for _, prefix := range []string{"mlp.experts.", "block_sparse_moe.experts."} {
		if r, found := strings.CutPrefix(rest, prefix); found {
			x, w, _ := strings.Cut(r, ".")
			e, err := strconv.Atoi(x)
			to := map[string]string{"gate_proj.weight": "ffn_gate_exps", "up_proj.weight": "ffn_up_exps", "down_proj.weight": "ffn_down_exps",
				"w1.weight": "ffn_gate_exps", "w2.weight": "ffn_down_exps", "w3.weight": "ffn_up_exps"}[w]
			if err != nil || to == "" {
				return "", 0, false
			}
			return "blk." + num + "." + to + ".weight", e, true
		}
	}
	return "", 0, false
}

// quantizable is llama-quantize's choice (llama-quant.cpp): tensors of
// two or more non-unit dimensions (ggml_n_dims ≥ 2), but not the expert
// routers (ffn_gate_inp.weight), which stay F32.
func quantizable(wt gguf.WriteTensor) bool {
	nDims := 0
	for i, d := range wt.Dims {
		if d > 1 {
			nDims = i + 1
		}
	}
	return nDims >= 2 && !strings.HasSuffix(wt.Name, "ffn_gate_inp.weight")
}

// quantizeQ8_0 is ggml's quantize_row_q8_0_ref.
func quantizeQ8_0(x []float32) []byte {
	var out []byte
	for b := 0; b < len(x); b += 32 {
		blk := x[b : b+32]
		var amax float32
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		out = binary.LittleEndian.AppendUint16(out, tensor.FloatToHalf(d))
		for _, v := range blk {
			out = append(out, byte(int8(math.Round(float64(v*id))))) // roundf: half away from zero
		}
	}
	return out
}

// quantizeQ4_0 is ggml's quantize_row_q4_0_ref.
func quantizeQ4_0(x []float32) []byte {
	var out []byte
	for b := 0; b < len(x); b += 32 {
		blk := x[b : b+32]
		var amax, mx float32
		for _, v := range blk {
			if a := float32(math.Abs(float64(v))); amax < a {
				amax, mx = a, v
			}
		}
		d := mx / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		out = binary.LittleEndian.AppendUint16(out, tensor.FloatToHalf(d))
		for j := range 16 {
			x0, x1 := blk[j]*id, blk[j+16]*id
			xi0 := min(15, uint8(int8(x0+8.5))) // (int8_t) truncates toward zero
			xi1 := min(15, uint8(int8(x1+8.5)))
			out = append(out, xi0|xi1<<4)
		}
	}
	return out
}

// quantizeQ4_1 is ggml's quantize_row_q4_1_ref.
func quantizeQ4_1(x []float32) []byte {
	var out []byte
	for b := 0; b < len(x); b += 32 {
		blk := x[b : b+32]
		lo, hi := blk[0], blk[0]
		for _, v := range blk {
			lo, hi = min(lo, v), max(hi, v)
		}
		d := (hi - lo) / 15
		var id float32
		if d != 0 {
			id = 1 / d
		}
		out = binary.LittleEndian.AppendUint16(out, tensor.FloatToHalf(d))
		out = binary.LittleEndian.AppendUint16(out, tensor.FloatToHalf(lo))
		for j := range 16 {
			x0, x1 := (blk[j]-lo)*id, (blk[j+16]-lo)*id
			xi0 := min(15, uint8(int8(x0+0.5)))
			xi1 := min(15, uint8(int8(x1+0.5)))
			out = append(out, xi0|xi1<<4)
		}
	}
	return out
}

// quantizeQ5 is ggml's quantize_row_q5_0_ref (offset false) and
// quantize_row_q5_1_ref (offset true: a minimum instead of a signed
// scale).
func quantizeQ5(x []float32, offset bool) []byte {
	var out []byte
	for b := 0; b < len(x); b += 32 {
		blk := x[b : b+32]
		var d, lo, bias float32
		if offset {
			hi := blk[0]
			lo = blk[0]
			for _, v := range blk {
				lo, hi = min(lo, v), max(hi, v)
			}
			d = (hi - lo) / 31
		} else {
			var amax, mx float32
			for _, v := range blk {
				if a := float32(math.Abs(float64(v))); amax < a {
					amax, mx = a, v
				}
			}
			d, bias = mx/-16, 16.5
		}
		var id float32
		if d != 0 {
			id = 1 / d
		}
		out = binary.LittleEndian.AppendUint16(out, tensor.FloatToHalf(d))
		if offset {
			out = binary.LittleEndian.AppendUint16(out, tensor.FloatToHalf(lo))
			bias = 0.5
		}
		var qh uint32
		var qs [16]byte
		for j := range 16 {
			x0, x1 := (blk[j]-lo)*id, (blk[j+16]-lo)*id
			var xi0, xi1 uint8
			if offset {
				xi0, xi1 = uint8(x0+bias), uint8(x1+bias) // (uint8_t)(x0 + 0.5f)
			} else {
				xi0, xi1 = min(31, uint8(int8(x0+bias))), min(31, uint8(int8(x1+bias)))
			}
			qs[j] = xi0&0xf | (xi1&0xf)<<4
			qh |= uint32(xi0&0x10) >> 4 << j
			qh |= uint32(xi1&0x10) >> 4 << (j + 16)
		}
		out = binary.LittleEndian.AppendUint32(out, qh)
		out = append(out, qs[:]...)
	}
	return out
}

func f32Bytes(x []float32) []byte {
	out := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

func u32(key string, v int) gguf.KV {
	return gguf.KV{Key: key, Value: gguf.Value{Type: gguf.TypeUint32, V: uint64(v)}}
}

func f32(key string, v float64) gguf.KV {
	return gguf.KV{Key: key, Value: gguf.Value{Type: gguf.TypeFloat32, V: v}}
}

func str(key, v string) gguf.KV {
	return gguf.KV{Key: key, Value: gguf.Value{Type: gguf.TypeString, V: v}}
}

// converted is a test checkpoint written as GGUF.
type converted struct {
	arch    string
	kv      []gguf.KV
	tensors []gguf.WriteTensor
}

// convert writes what convert_hf_to_gguf.py writes for the checkpoint
// testdata/models/<model> with --outtype typ (F32, or a quantization
// llama-quantize would make: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1): the
// hyperparameters of TextModel.set_gguf_parameters and the architecture's
// own (LlamaModel, Qwen2Model, Qwen3Model, GemmaModel, Gemma2Model,
// Gemma3Model, Phi3MiniModel, Qwen2MoeModel, Qwen3MoeModel, OlmoeModel,
// Olmo2Model, Glm4Model, StarCoder2Model, GraniteModel, SmolLM3Model),
// tensors renamed by tensor_mapping, experts stacked into one 3-D tensor
// per layer and projection (Qwen2MoeModel, OlmoeModel, LlamaModel for
// Mixtral), Q/K rows permuted by LlamaModel and its subclasses
// (LlamaModel.modify_tensors), Gemma's norms stored plus one
// (GemmaModel.modify_tensors: data_torch + 1), Llama 3's rope scaling
// as the rope_freqs tensor (LlamaModel.generate_extra_tensors), 1-D
// tensors kept F32 and matrices quantized row by row. The token ids come
// from config.json (the converter takes them from the tokenizer; these
// tests have none).
func convert(t testing.TB, model string, typ gguf.GGMLType) converted {
	t.Helper()
	return convertDir(t, filepath.Join(testmodels.Root(), model), typ)
}

// convertDir is convert for the checkpoint in dir, whose weights may be
// F32, F16 or BF16 (a synthetic bench model's).
func convertDir(t testing.TB, dir string, typ gguf.GGMLType) converted {
	t.Helper()
	model := filepath.Base(dir)
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	var hp map[string]any // the hparams the converter reads by key
	if err := json.Unmarshal(raw, &hp); err != nil {
		t.Fatal(err)
	}
	// gguf-py's MODEL_ARCH_NAMES; Mistral and Mixtral are converted by
	// LlamaModel
	arch := map[string]string{"gemma3_text": "gemma3", "mistral": "llama", "mixtral": "llama", "qwen2_moe": "qwen2moe", "qwen3_moe": "qwen3moe"}[c.ModelType]
	if arch == "" {
		arch = c.ModelType
	}
	a := arch + "."
	kv := []gguf.KV{
		str("general.architecture", arch),
		u32(a+"block_count", c.NumHiddenLayers),
		u32(a+"context_length", c.MaxPositionEmbeddings),
		u32(a+"embedding_length", c.HiddenSize),
		u32(a+"feed_forward_length", c.IntermediateSize),
		u32(a+"attention.head_count", c.NumAttentionHeads),
		u32(a+"attention.head_count_kv", c.NumKeyValueHeads),
		f32(a+"rope.freq_base", c.Rope.Theta),
		f32(a+"attention.layer_norm_rms_epsilon", c.RMSNormEps),
		u32("general.file_type", map[gguf.GGMLType]int{gguf.F32: 0, gguf.Q8_0: 7, gguf.Q4_0: 2, gguf.Q4_1: 3, gguf.Q5_0: 8, gguf.Q5_1: 9}[typ]),
	}
	// TextModel writes them when config.json has head_dim; Phi3MiniModel
	// does not, and GraniteModel drops head_dim first
	if _, ok := hp["head_dim"]; ok && arch != "phi3" && arch != "granite" {
		kv = append(kv, u32(a+"attention.key_length", c.HeadDim), u32(a+"attention.value_length", c.HeadDim))
	}
	llamaModel := arch == "llama" || arch == "granite" || arch == "smollm3" // LlamaModel and its subclasses
	if llamaModel {
		dim := c.HiddenSize / c.NumAttentionHeads
		if _, ok := hp["head_dim"]; ok && arch != "granite" {
			dim = c.HeadDim
		}
		kv = append(kv, u32(a+"vocab_size", c.VocabSize), u32(a+"rope.dimension_count", dim))
	}
	for _, k := range []string{"layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"} { // TextModel: the first present
		if v, ok := hp[k].(float64); ok {
			kv = append(kv, f32(a+"attention.layer_norm_epsilon", v))
			break
		}
	}
	for _, k := range []string{"num_local_experts", "num_experts"} { // TextModel
		if v, ok := hp[k].(float64); ok {
			kv = append(kv, u32(a+"expert_count", int(v)))
			break
		}
	}
	if v, ok := hp["num_experts_per_tok"].(float64); ok {
		kv = append(kv, u32(a+"expert_used_count", int(v)))
	}
	if arch == "qwen2moe" || arch == "qwen3moe" { // Qwen2MoeModel.set_gguf_parameters
		if v, ok := hp["moe_intermediate_size"].(float64); ok {
			kv = append(kv, u32(a+"expert_feed_forward_length", int(v)))
		}
		if v, ok := hp["shared_expert_intermediate_size"].(float64); ok {
			kv = append(kv, u32(a+"expert_shared_feed_forward_length", int(v)))
		}
	}
	if arch == "glm4" { // Glm4Model.set_gguf_parameters: the rotary part of the head
		partial := 0.5
		if p, ok := c.Rope.Params["partial_rotary_factor"]; ok {
			if err := json.Unmarshal(p, &partial); err != nil {
				t.Fatal(err)
			}
		}
		kv = append(kv, u32(a+"rope.dimension_count", int(float64(c.HeadDim)*partial)))
	}
	if arch == "granite" { // GraniteModel.set_gguf_parameters, each when non-zero
		for hk, gk := range map[string]string{"attention_multiplier": "attention.scale", "embedding_multiplier": "embedding_scale",
			"residual_multiplier": "residual_scale", "logits_scaling": "logit_scale"} {
			if v, ok := hp[hk].(float64); ok && v != 0 {
				kv = append(kv, f32(a+gk, v))
			}
		}
	}
	if c.Rope.Type == "linear" {
		// LlamaModel and Gemma3Model write linear scaling; llama.cpp reads
		// these keys for every architecture, so Qwen 2's are written too.
		kv = append(kv, str(a+"rope.scaling.type", "linear"), f32(a+"rope.scaling.factor", c.Rope.Factor))
	}
	if arch == "gemma2" || arch == "gemma3" {
		kv = append(kv, u32(a+"attention.sliding_window", c.SlidingWindow))
	}
	if arch == "gemma2" {
		var caps struct {
			Attn  float64 `json:"attn_logit_softcapping"`
			Final float64 `json:"final_logit_softcapping"`
		}
		json.Unmarshal(raw, &caps)
		kv = append(kv, f32(a+"attn_logit_softcapping", caps.Attn), f32(a+"final_logit_softcapping", caps.Final))
	}
	var extra []gguf.WriteTensor
	if arch == "phi3" {
		// Phi3MiniModel.set_gguf_parameters and generate_extra_tensors
		orig := c.Rope.OriginalMaxPositionEmbeddings
		scale := float64(c.MaxPositionEmbeddings) / float64(orig)
		attn := 1.0
		if scale > 1 {
			attn = math.Sqrt(1 + math.Log(scale)/math.Log(float64(orig)))
		}
		kv = append(kv,
			u32(a+"rope.scaling.original_context_length", orig),
			u32(a+"rope.dimension_count", int(c.Rope.PartialRotaryFactor*float64(c.HiddenSize))/c.NumAttentionHeads),
			u32(a+"attention.sliding_window", 0),
			f32(a+"rope.scaling.attn_factor", attn))
		for _, k := range []string{"long", "short"} {
			var fs []float32
			if err := json.Unmarshal(c.Rope.Params[k+"_factor"], &fs); err != nil {
				t.Fatal(err)
			}
			extra = append(extra, gguf.WriteTensor{Name: "rope_factors_" + k + ".weight", Dims: []uint64{uint64(len(fs))}, Type: gguf.F32, Data: f32Bytes(fs)})
		}
	}
	if c.BOSTokenID != nil {
		kv = append(kv, u32("tokenizer.ggml.bos_token_id", *c.BOSTokenID))
	}
	if len(c.EOSTokenIDs) > 0 {
		kv = append(kv, u32("tokenizer.ggml.eos_token_id", c.EOSTokenIDs[0]))
	}

	set, err := weights.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	out := converted{arch: arch, kv: kv, tensors: extra}
	if c.Rope.Type == "llama3" {
		out.tensors = append(out.tensors, gguf.WriteTensor{Name: "rope_freqs.weight", Dims: []uint64{uint64(c.HeadDim / 2)}, Type: gguf.F32, Data: f32Bytes(llama3Factors(c))})
	}
	experts := map[string][][]float32{} // stacked name → per-expert values
	expertShape := map[string][]int{}
	for _, name := range set.Names() {
		in, _ := set.Info(name)
		if in.DType != tensor.F32 && in.DType != tensor.F16 && in.DType != tensor.BF16 {
			t.Fatalf("%s: %s is %s; the converter test reads dense checkpoints", model, name, in.DType)
		}
		b, _ := set.Bytes(name)
		w := make([]float32, tensor.Elements(in.Shape))
		tensor.Float32(in.DType, b, 0, w)
		rows, cols := in.Shape[0], 1
		if len(in.Shape) == 2 {
			cols = in.Shape[1]
		}
		if llamaModel { // LlamaModel.modify_tensors, undo_permute
			switch {
			case strings.HasSuffix(name, "q_proj.weight"), strings.HasSuffix(name, "q_proj.bias"):
				w = permute(w, rows, cols, c.NumAttentionHeads, c.NumAttentionHeads)
			case strings.HasSuffix(name, "k_proj.weight"), strings.HasSuffix(name, "k_proj.bias"):
				w = permute(w, rows, cols, c.NumAttentionHeads, c.NumKeyValueHeads)
			}
		}
		if merged, e, ok := expertName(name); ok { // merged into one 3-D tensor below
			for len(experts[merged]) <= e {
				experts[merged] = append(experts[merged], nil)
			}
			experts[merged][e], expertShape[merged] = w, in.Shape
			continue
		}
		if strings.HasPrefix(arch, "gemma") && strings.HasSuffix(name, "norm.weight") {
			for i := range w {
				w[i] += 1
			}
		}
		out.tensors = append(out.tensors, quantized(ggufName(t, arch, name), in.Shape, w, typ))
	}
	// torch.stack(datas, dim=0): [n_expert, out, in], experts in order
	for _, merged := range slices.Sorted(maps.Keys(experts)) {
		var w []float32
		for e, x := range experts[merged] {
			if x == nil {
				t.Fatalf("%s: expert %d of %s missing", model, e, merged)
			}
			w = append(w, x...)
		}
		shape := append([]int{len(experts[merged])}, expertShape[merged]...)
		out.tensors = append(out.tensors, quantized(merged, shape, w, typ))
	}
	return out
}

// quantized is the F32 tensor of the given transformers shape (GGUF dims
// reversed), quantized to typ where llama-quantize would (quantizable),
// row by row.
func quantized(name string, shape []int, w []float32, typ gguf.GGMLType) gguf.WriteTensor {
	wt := gguf.WriteTensor{Name: name, Type: gguf.F32, Data: f32Bytes(w)}
	for i := len(shape) - 1; i >= 0; i-- {
		wt.Dims = append(wt.Dims, uint64(shape[i]))
	}
	if !quantizable(wt) {
		return wt
	}
	switch typ {
	case gguf.Q8_0:
		wt.Type, wt.Data = typ, quantizeQ8_0(w)
	case gguf.Q4_0:
		wt.Type, wt.Data = typ, quantizeQ4_0(w)
	case gguf.Q4_1:
		wt.Type, wt.Data = typ, quantizeQ4_1(w)
	case gguf.Q5_0:
		wt.Type, wt.Data = typ, quantizeQ5(w, false)
	case gguf.Q5_1:
		wt.Type, wt.Data = typ, quantizeQ5(w, true)
	}
	return wt
}

// llama3Factors is LlamaModel.generate_extra_tensors: one factor per
// rotary frequency, which llama.cpp divides the frequency by; torch's
// float32 steps in float32.
func llama3Factors(c *config.Config) []float32 {
	dim := c.HeadDim
	factor := float32(c.Rope.Factor)
	low, high := float32(c.Rope.LowFreqFactor), float32(c.Rope.HighFreqFactor)
	old := float32(c.Rope.OriginalMaxPositionEmbeddings)
	lowWavelen, highWavelen := old/low, old/high
	var out []float32
	for i := 0; i < dim; i += 2 {
		freq := 1 / float32(math.Pow(c.Rope.Theta, float64(float32(i)/float32(dim))))
		wavelen := float32(2*math.Pi) / freq
		switch {
		case wavelen < highWavelen:
			out = append(out, 1)
		case wavelen > lowWavelen:
			out = append(out, factor)
		default:
			smooth := (old/wavelen - low) / (high - low)
			out = append(out, 1/((1-smooth)/factor+smooth))
		}
	}
	return out
}

// dequantized is the same file with every quantized tensor decoded to
// F32 by gguf.Dequantize (held bit for bit to gguf-py): the weights a
// quantized load must compute with.
func (c converted) dequantized(t *testing.T) converted {
	out := converted{arch: c.arch, kv: c.kv}
	for _, wt := range c.tensors {
		if wt.Type != gguf.F32 {
			n := 1
			for _, d := range wt.Dims {
				n *= int(d)
			}
			vals, err := gguf.Dequantize(wt.Type, wt.Data, n)
			if err != nil {
				t.Fatal(err)
			}
			wt.Type, wt.Data = gguf.F32, f32Bytes(vals)
		}
		out.tensors = append(out.tensors, wt)
	}
	return out
}

// write writes the file into a new folder of t and returns its path.
func (c converted) write(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := gguf.Write(f, c.kv, c.tensors); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// with returns c with the metadata key replaced (or added).
func (c converted) with(kv gguf.KV) converted {
	out := c
	out.kv = nil
	done := false
	for _, x := range c.kv {
		if x.Key == kv.Key {
			x, done = kv, true
		}
		out.kv = append(out.kv, x)
	}
	if !done {
		out.kv = append(out.kv, kv)
	}
	return out
}

// editTensors returns c with its tensors passed through edit.
func (c converted) editTensors(edit func([]gguf.WriteTensor) []gguf.WriteTensor) converted {
	out := c
	out.tensors = edit(append([]gguf.WriteTensor(nil), c.tensors...))
	return out
}

// TestRefQuantizers keeps the test quantizers honest: each block decodes
// (gguf.Dequantize) to within one quantization step of its input.
func TestRefQuantizers(t *testing.T) {
	x := make([]float32, 256)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.37)) * float32(1+i%7) / 7
	}
	for _, q := range []struct {
		typ    gguf.GGMLType
		levels float32 // steps across a block's range
		f      func([]float32) []byte
	}{
		{gguf.Q8_0, 254, quantizeQ8_0},
		{gguf.Q4_0, 15, quantizeQ4_0},
		{gguf.Q4_1, 15, quantizeQ4_1},
		{gguf.Q5_0, 31, func(x []float32) []byte { return quantizeQ5(x, false) }},
		{gguf.Q5_1, 31, func(x []float32) []byte { return quantizeQ5(x, true) }},
	} {
		got, err := gguf.Dequantize(q.typ, q.f(x), len(x))
		if err != nil {
			t.Fatal(err)
		}
		for b := 0; b < len(x); b += 32 {
			lo, hi := x[b], x[b]
			for _, v := range x[b : b+32] {
				lo, hi = min(lo, v), max(hi, v)
			}
			step := (hi - lo) / q.levels * 1.01
			if q.typ == gguf.Q4_0 || q.typ == gguf.Q5_0 || q.typ == gguf.Q8_0 {
				step = 2 * max(-lo, hi) / q.levels * 1.01 // symmetric about 0
			}
			for i := b; i < b+32; i++ {
				if d := float32(math.Abs(float64(got[i] - x[i]))); d > step {
					t.Fatalf("%s: value %d: %v decodes to %v (step %v)", q.typ, i, x[i], got[i], step)
				}
			}
		}
	}
}
