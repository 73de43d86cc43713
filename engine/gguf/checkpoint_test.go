package gguf_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/backend/gpu"
	"hearth/engine/checkpoint"
	"hearth/engine/family"
	"hearth/engine/gguf"
	"hearth/engine/tensor"
	"hearth/engine/weights"
	"hearth/internal/testenv"
	"hearth/internal/testmodels"
)

// decode loads the checkpoint at path on the CPU, runs prompt and then
// steps greedy steps, and returns each step's logits and greedy id.
func decode(t *testing.T, path string, prompt []int32, steps int) ([][]float32, []int32) {
	t.Helper()
	return decodeOn(t, "cpu", path, prompt, steps)
}

// decodeOn is decode on the named backend.
func decodeOn(t *testing.T, backend, path string, prompt []int32, steps int) ([][]float32, []int32) {
	t.Helper()
	m, err := engine.Load(path, engine.Options{Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	seq, err := m.NewSequence(len(prompt) + steps + 1)
	if err != nil {
		t.Fatal(err)
	}
	defer seq.Close()
	ctx := context.Background()
	logits, err := seq.Forward(ctx, prompt, false)
	if err != nil {
		t.Fatal(err)
	}
	var all [][]float32
	var ids []int32
	for step := range steps {
		id := argmax(logits)
		all, ids = append(all, logits), append(ids, id)
		if step+1 < steps {
			if logits, err = seq.Forward(ctx, []int32{id}, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	return all, ids
}

func argmax(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}

// compare holds got to want: the same greedy ids and every logit within
// tol; it returns the largest difference.
func compare(t *testing.T, what string, got, want [][]float32, gotIDs, wantIDs []int32, tol float64) float64 {
	t.Helper()
	worst := 0.0
	for step := range want {
		if len(got[step]) != len(want[step]) {
			t.Fatalf("%s step %d: %d logits, want %d", what, step, len(got[step]), len(want[step]))
		}
		for i := range want[step] {
			d := math.Abs(float64(got[step][i] - want[step][i]))
			if !(d <= tol) {
				t.Fatalf("%s step %d: logit[%d] = %v, want %v (|Δ| %.3g > %.3g)", what, step, i, got[step][i], want[step][i], d, tol)
			}
			worst = max(worst, d)
		}
		if gotIDs[step] != wantIDs[step] {
			t.Fatalf("%s step %d: greedy id %d, want %d (reference margin %.3g)", what, step, gotIDs[step], wantIDs[step], testmodels.Margin(want[step]))
		}
	}
	return worst
}

// ggufModels are the committed checkpoints a GGUF file can carry whole:
// the hyperparameters llama.cpp's converter writes say all transformers
// needs. (Not gemma2-f32, whose query_pre_attn_scalar of 32 is not the
// head size GGUF implies, nor gemma3-f32, whose full-attention layer 2 is
// not on llama.cpp's fixed one-in-six pattern: TestGGUFGemmaSandwich
// holds those two to their own safetensors under llama.cpp's reading.)
var ggufModels = []string{"llama-f32", "qwen2-f32", "qwen3-f32", "gemma-f32", "phi3-f32",
	"qwen2_moe-f32", "qwen3_moe-f32", "olmoe-f32", "olmo2-f32", "glm4-f32", "starcoder2-f32", "granite-f32"}

// readAsLlamaCpp are the committed checkpoints whose GGUF file llama.cpp
// reads otherwise than transformers reads their config.json (see
// TestGGUFLlamaCppReading); they are held to copies whose config says
// what llama.cpp reads.
var readAsLlamaCpp = map[string]func(map[string]any){
	// LlamaModel writes no sliding window for Mixtral, and llama.cpp's
	// llama graph has none
	"mixtral-f32": func(c map[string]any) { delete(c, "sliding_window") },
	// llama.cpp skips rope on every fourth layer (n_no_rope_layer_step),
	// which no key sets; this checkpoint's layer 1 is NoPE
	"smollm3-f32": func(c map[string]any) { c["no_rope_layers"] = []int{1, 1, 1} },
}

// quantModels are the checkpoints TestGGUFQuantized converts: all whose
// rows are whole blocks of 32 (every matrix's width is 64 or 128).
var quantModels = append(slices.Clone(ggufModels), "mixtral-f32", "smollm3-f32")

// TestGGUFF32 converts each checkpoint to an F32 GGUF file and holds its
// logits to the same checkpoint loaded from safetensors, and to the
// transformers golden within the manifest's tolerance, greedy ids exact.
func TestGGUFF32(t *testing.T) {
	man, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range ggufModels {
		t.Run(name, func(t *testing.T) {
			e, ok := man.Find(name)
			if !ok {
				t.Fatalf("no manifest entry %q", name)
			}
			g, err := e.Golden()
			if err != nil {
				t.Fatal(err)
			}
			path := convert(t, name, gguf.F32).write(t, name+".gguf")
			got, gotIDs := decode(t, path, g.PromptIDs, len(g.Logits))
			want, wantIDs := decode(t, e.Path(), g.PromptIDs, len(g.Logits))
			// Llama 3's rope is the one thing computed differently: the
			// file holds its scaling as per-frequency factors, which could
			// round apart from transformers' formula in the last bit (here
			// they do not).
			same := compare(t, "vs safetensors", got, want, gotIDs, wantIDs, 1e-6)
			golden := compare(t, "vs transformers", got, g.Logits, gotIDs, g.GreedyIDs, e.Tolerance.MaxAbsLogit)
			t.Logf("max |Δlogit| vs safetensors %.3g, vs transformers %.3g (tolerance %.3g)", same, golden, e.Tolerance.MaxAbsLogit)
			if name != "llama-f32" && same != 0 {
				t.Errorf("logits differ from the safetensors load by up to %.3g; the same weights should give the same bits", same)
			}
		})
	}
}

// TestGGUFQuantized converts each checkpoint to Q8_0 and Q4_0 (quantized
// by ggml's reference quantizers) and holds the quantized load to the
// same weights decoded to F32 (gguf.Dequantize, bit for bit gguf-py's)
// and loaded as an F32 file: the quantized kernels compute with exactly
// those values, so only float32 summation order differs (the manifest's
// tolerance for MLX-quantized entries, for the same reason).
func TestGGUFQuantized(t *testing.T) {
	man, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range quantModels {
		for _, typ := range []gguf.GGMLType{gguf.Q8_0, gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1} {
			t.Run(name+"/"+typ.String(), func(t *testing.T) {
				e, _ := man.Find(name)
				g, err := e.Golden()
				if err != nil {
					t.Fatal(err)
				}
				q := convert(t, name, typ)
				path := q.write(t, name+".gguf")
				ref := q.dequantized(t).write(t, name+"-dequantized.gguf")
				ck, err := checkpoint.Read(path)
				if err != nil {
					t.Fatal(err)
				}
				if l := ck.Quantization(); l != strings.ToLower(typ.String()) {
					t.Errorf("quantization label %q, want %q", l, strings.ToLower(typ.String()))
				}
				checkSummary(t, ck)
				checkExperts(t, q, ck)
				got, gotIDs := decode(t, path, g.PromptIDs, len(g.Logits))
				want, wantIDs := decode(t, ref, g.PromptIDs, len(g.Logits))
				worst := compare(t, "vs dequantized", got, want, gotIDs, wantIDs, 1e-4)
				t.Logf("max |Δlogit| vs the dequantized weights %.3g", worst)
			})
		}
	}
}

// checkExperts holds a quantized MoE file's stacked experts to their
// repacked form: each ffn_*_exps tensor a 3-D quantized switch_mlp weight
// [experts, out, in·bits/32] with its per-path quantization, and each
// router (kept F32 by llama-quantize) dense.
func checkExperts(t *testing.T, c converted, ck *checkpoint.Checkpoint) {
	t.Helper()
	for _, wt := range c.tensors {
		blk, base, _ := strings.Cut(strings.TrimPrefix(wt.Name, "blk."), ".")
		hf := map[string]string{"ffn_gate_exps.weight": "mlp.switch_mlp.gate_proj", "ffn_up_exps.weight": "mlp.switch_mlp.up_proj",
			"ffn_down_exps.weight": "mlp.switch_mlp.down_proj", "ffn_gate_inp.weight": "mlp.gate"}[base]
		if hf == "" {
			continue
		}
		prefix := "model.layers." + blk + "." + hf
		var got *weights.Info
		for i := range ck.Weights.Tensors {
			if ck.Weights.Tensors[i].Name == prefix+".weight" {
				got = &ck.Weights.Tensors[i]
			}
		}
		switch {
		case got == nil:
			t.Errorf("%s: no %s.weight in the checkpoint", wt.Name, prefix)
		case base == "ffn_gate_inp.weight":
			if got.DType != tensor.F32 || ck.Quant.For(prefix) != nil {
				t.Errorf("router %s: %s, quantization %v; want F32 as stored", prefix, got.DType, ck.Quant.For(prefix))
			}
		case got.DType != tensor.U32 || len(got.Shape) != 3 || got.Shape[0] != int(wt.Dims[2]) || ck.Quant.For(prefix) == nil:
			t.Errorf("experts %s: %s %v, quantization %v; want U32 [%d experts, …] quantized", prefix, got.DType, got.Shape, ck.Quant.For(prefix), wt.Dims[2])
		}
	}
}

// TestGGUFFolder loads a folder holding one GGUF model, and refuses one
// holding two with a message naming them.
func TestGGUFFolder(t *testing.T) {
	c := convert(t, "qwen3-f32", gguf.F32)
	path := c.write(t, "qwen3.gguf")
	dir := filepath.Dir(path)
	if err := os.WriteFile(filepath.Join(dir, "mmproj-qwen3.gguf"), []byte("not read"), 0o644); err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ck.GGUF == nil || ck.Config.ModelType != "qwen3" || ck.Weights == nil || ck.Quantization() != "f32" {
		t.Fatalf("checkpoint %+v", ck)
	}
	m, err := engine.Load(dir, engine.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if err := os.Link(path, filepath.Join(dir, "other.gguf")); err != nil {
		t.Fatal(err)
	}
	_, err = checkpoint.Read(dir)
	if !errors.Is(err, checkpoint.ErrNoConfig) || !strings.Contains(err.Error(), "other.gguf") {
		t.Fatalf("two models: %v", err)
	}
}

// loadErr loads c written to a file and returns the error, which must
// not be nil.
func loadErr(t *testing.T, c converted) error {
	t.Helper()
	_, err := engine.Load(c.write(t, "bad.gguf"), engine.Options{Backend: "cpu"})
	if err == nil {
		t.Fatal("loaded")
	}
	return err
}

func TestGGUFErrors(t *testing.T) {
	base := convert(t, "llama-f32", gguf.F32)
	wants := func(t *testing.T, err error, parts ...string) {
		t.Helper()
		for _, p := range parts {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not say %q", err, p)
			}
		}
	}
	t.Run("unknown architecture", func(t *testing.T) {
		err := loadErr(t, base.with(str("general.architecture", "mamba")))
		if !errors.Is(err, family.ErrUnsupported) || !errors.Is(err, gguf.ErrUnsupportedArch) {
			t.Errorf("error %q does not wrap family.ErrUnsupported and gguf.ErrUnsupportedArch", err)
		}
		wants(t, err, `"mamba"`, "llama", "qwen3")
	})
	t.Run("missing key", func(t *testing.T) {
		c := base
		c.kv = nil
		for _, kv := range base.kv {
			if kv.Key != "llama.embedding_length" {
				c.kv = append(c.kv, kv)
			}
		}
		wants(t, loadErr(t, c), "llama.embedding_length", "missing")
	})
	t.Run("missing tensor", func(t *testing.T) {
		c := base.editTensors(func(ts []gguf.WriteTensor) []gguf.WriteTensor {
			var out []gguf.WriteTensor
			for _, wt := range ts {
				if wt.Name != "blk.1.ffn_down.weight" {
					out = append(out, wt)
				}
			}
			return out
		})
		wants(t, loadErr(t, c), "missing", "model.layers.1.mlp.down_proj.weight")
	})
	t.Run("Q8_K tensor", func(t *testing.T) {
		// Q8_K is llama.cpp's intermediate type for dot products, never a
		// stored weight Hearth runs
		c := base.editTensors(func(ts []gguf.WriteTensor) []gguf.WriteTensor {
			for i, wt := range ts {
				if wt.Name == "blk.0.ffn_down.weight" {
					// [128 in, 64 out]: no row is whole 256-value blocks; make
					// the row 256 long to be a valid Q8_K header
					ts[i] = gguf.WriteTensor{Name: wt.Name, Dims: []uint64{256, 32}, Type: gguf.Q8_K, Data: make([]byte, 32*gguf.Q8_K.BlockBytes())}
				}
			}
			return ts
		})
		path := c.write(t, "q8k.gguf")
		ck, err := checkpoint.Read(path)
		if err == nil || ck == nil || ck.Weights != nil {
			t.Fatalf("Read: %v, %+v", err, ck)
		}
		wants(t, err, "Q8_K", `"blk.0.ffn_down.weight"`)
		_, err = engine.Load(path, engine.Options{Backend: "cpu"})
		if err == nil {
			t.Fatal("loaded")
		}
		wants(t, err, "Q8_K", `"blk.0.ffn_down.weight"`)
	})
	t.Run("wrong shape", func(t *testing.T) {
		c := base.editTensors(func(ts []gguf.WriteTensor) []gguf.WriteTensor {
			for i, wt := range ts {
				if wt.Name == "blk.0.ffn_gate.weight" { // [64 in, 128 out] read as [128 in, 64 out]
					ts[i].Dims = []uint64{wt.Dims[1], wt.Dims[0]}
				}
			}
			return ts
		})
		wants(t, loadErr(t, c), "model.layers.0.mlp.gate_proj", "shape [64 128]", "[128 64]")
	})
	t.Run("heads do not split rows", func(t *testing.T) {
		// 64 heads: the 64 Q rows cannot hold two halves of each
		err := loadErr(t, base.with(u32("llama.attention.head_count", 64)))
		wants(t, err, `"blk.0.attn_q.weight"`, "64 heads")
	})
	t.Run("more experts used than there are", func(t *testing.T) {
		c := convert(t, "olmoe-f32", gguf.F32).with(u32("olmoe.expert_used_count", 9))
		wants(t, loadErr(t, c), "olmoe.expert_used_count 9", "olmoe.expert_count 8")
	})
	t.Run("missing expert count", func(t *testing.T) {
		c := convert(t, "qwen2_moe-f32", gguf.F32)
		c.kv = slices.DeleteFunc(slices.Clone(c.kv), func(kv gguf.KV) bool { return kv.Key == "qwen2moe.expert_count" })
		wants(t, loadErr(t, c), "qwen2moe.expert_count", "missing")
	})
	t.Run("missing expert tensor", func(t *testing.T) {
		c := convert(t, "mixtral-f32", gguf.F32).editTensors(func(ts []gguf.WriteTensor) []gguf.WriteTensor {
			return slices.DeleteFunc(ts, func(wt gguf.WriteTensor) bool { return wt.Name == "blk.1.ffn_up_exps.weight" })
		})
		wants(t, loadErr(t, c), "missing", "model.layers.1.mlp.switch_mlp.up_proj")
	})
	t.Run("missing LayerNorm epsilon", func(t *testing.T) {
		c := convert(t, "starcoder2-f32", gguf.F32)
		c.kv = slices.DeleteFunc(slices.Clone(c.kv), func(kv gguf.KV) bool { return kv.Key == "starcoder2.attention.layer_norm_epsilon" })
		wants(t, loadErr(t, c), "starcoder2.attention.layer_norm_epsilon", "missing")
	})
	t.Run("missing logit scale", func(t *testing.T) {
		c := convert(t, "granite-f32", gguf.F32)
		c.kv = slices.DeleteFunc(slices.Clone(c.kv), func(kv gguf.KV) bool { return kv.Key == "granite.logit_scale" })
		wants(t, loadErr(t, c), "granite.logit_scale", "missing")
	})
	t.Run("GLM-4V's M-RoPE", func(t *testing.T) {
		sections := gguf.KV{Key: "glm4.rope.dimension_sections", Value: gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeInt32, V: []int64{2, 1, 1, 0}}}
		wants(t, loadErr(t, convert(t, "glm4-f32", gguf.F32).with(sections)), "glm4.rope.dimension_sections", "M-RoPE")
	})
	t.Run("per-layer heads", func(t *testing.T) {
		c := base.with(gguf.KV{Key: "llama.attention.head_count_kv", Value: gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeUint32, V: []uint64{2, 1}}})
		wants(t, loadErr(t, c), "llama.attention.head_count_kv", "differs between layers")
	})
}

// TestGGUFGemmaSandwich holds Gemma 2 and 3 files (sandwich norms under
// their GGUF names, the +1 norms, softcaps, sliding layers) to their
// safetensors checkpoints. A GGUF file has no query_pre_attn_scalar and
// llama.cpp fixes Gemma 3's sliding pattern, so gemma2-f32 (scalar 32)
// is held to a copy whose config says what llama.cpp reads (the head
// size, 16), and gemma3-f32 (layer 2 full) carries its pattern in
// gemma3.attention.sliding_window_pattern, which makes its golden apply;
// without the key, the file reads as llama.cpp's five-in-six pattern.
func TestGGUFGemmaSandwich(t *testing.T) {
	man, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("gemma2", func(t *testing.T) {
		e, _ := man.Find("gemma2-f32")
		g, err := e.Golden()
		if err != nil {
			t.Fatal(err)
		}
		dir := testmodels.Copy(t, "gemma2-f32")
		editConfig(t, dir, func(c map[string]any) { c["query_pre_attn_scalar"] = 16 })
		path := convert(t, "gemma2-f32", gguf.F32).write(t, "gemma2.gguf")
		got, gotIDs := decode(t, path, g.PromptIDs, len(g.Logits))
		want, wantIDs := decode(t, dir, g.PromptIDs, len(g.Logits))
		if d := compare(t, "vs safetensors", got, want, gotIDs, wantIDs, 0); d != 0 {
			t.Errorf("max |Δlogit| %.3g", d)
		}
	})
	t.Run("gemma3", func(t *testing.T) {
		e, _ := man.Find("gemma3-f32")
		g, err := e.Golden()
		if err != nil {
			t.Fatal(err)
		}
		c := convert(t, "gemma3-f32", gguf.F32)
		pattern := gguf.KV{Key: "gemma3.attention.sliding_window_pattern", Value: gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeBool, V: []bool{true, true, false}}}
		path := c.with(pattern).write(t, "gemma3.gguf")
		got, gotIDs := decode(t, path, g.PromptIDs, len(g.Logits))
		want, wantIDs := decode(t, e.Path(), g.PromptIDs, len(g.Logits))
		if d := compare(t, "vs safetensors", got, want, gotIDs, wantIDs, 0); d != 0 {
			t.Errorf("max |Δlogit| %.3g", d)
		}
		d := compare(t, "vs transformers", got, g.Logits, gotIDs, g.GreedyIDs, e.Tolerance.MaxAbsLogit)
		t.Logf("max |Δlogit| vs transformers %.3g", d)

		ck, err := checkpoint.Read(c.write(t, "gemma3-default.gguf"))
		if err != nil {
			t.Fatal(err)
		}
		for i, typ := range ck.Config.LayerTypes {
			if typ != "sliding_attention" {
				t.Errorf("without the pattern key, layer %d of 3 is %s; llama.cpp's pattern slides all but every sixth", i, typ)
			}
		}
		if ck.Config.SlidingRope == nil || ck.Config.SlidingRope.Theta != 10000 {
			t.Errorf("sliding rope %+v, want base 10000", ck.Config.SlidingRope)
		}
	})
}

// TestGGUFLlamaCppReading holds the files of checkpoints that llama.cpp
// reads otherwise than transformers (readAsLlamaCpp) bit for bit to their
// safetensors under llama.cpp's reading: Mixtral (converted as "llama",
// experts stacked, Q/K permuted) without the sliding window of 6 its
// config.json has and its golden uses, and SmolLM3 with rope skipped on
// every fourth layer, not on the layer 1 its config.json names.
func TestGGUFLlamaCppReading(t *testing.T) {
	man, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(readAsLlamaCpp)) {
		t.Run(name, func(t *testing.T) {
			e, _ := man.Find(name)
			g, err := e.Golden()
			if err != nil {
				t.Fatal(err)
			}
			dir := testmodels.Copy(t, name)
			editConfig(t, dir, readAsLlamaCpp[name])
			path := convert(t, name, gguf.F32).write(t, name+".gguf")
			got, gotIDs := decode(t, path, g.PromptIDs, len(g.Logits))
			want, wantIDs := decode(t, dir, g.PromptIDs, len(g.Logits))
			if d := compare(t, "vs safetensors", got, want, gotIDs, wantIDs, 0); d != 0 {
				t.Errorf("max |Δlogit| %.3g", d)
			}
			// the reading differs from the checkpoint's own: its golden
			// must not match, or this test holds nothing
			orig, _ := decode(t, e.Path(), g.PromptIDs, len(g.Logits))
			if d := maxDiff(got, orig); d < 1e-3 {
				t.Errorf("the GGUF file gives the checkpoint's own logits (max |Δ| %.3g): llama.cpp's reading should differ here", d)
			}
		})
	}
}

// TestGGUFGraniteNoRope holds a Granite file whose
// granite.rope.scaling.finetuned is false (llama.cpp's switch that turns
// rope off on every layer) bit for bit to its checkpoint with
// no_rope_layers all 0.
func TestGGUFGraniteNoRope(t *testing.T) {
	man, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	e, _ := man.Find("granite-f32")
	g, err := e.Golden()
	if err != nil {
		t.Fatal(err)
	}
	dir := testmodels.Copy(t, "granite-f32")
	editConfig(t, dir, func(c map[string]any) { c["no_rope_layers"] = []int{0, 0} })
	off := gguf.KV{Key: "granite.rope.scaling.finetuned", Value: gguf.Value{Type: gguf.TypeBool, V: false}}
	path := convert(t, "granite-f32", gguf.F32).with(off).write(t, "granite.gguf")
	got, gotIDs := decode(t, path, g.PromptIDs, len(g.Logits))
	want, wantIDs := decode(t, dir, g.PromptIDs, len(g.Logits))
	if d := compare(t, "vs safetensors without rope", got, want, gotIDs, wantIDs, 0); d != 0 {
		t.Errorf("max |Δlogit| %.3g", d)
	}
	if d := maxDiff(got, g.Logits); d < 1e-3 {
		t.Errorf("without rope the logits are the golden's (max |Δ| %.3g): the switch did nothing", d)
	}
}

// maxDiff is the largest |a-b| over every step's logits.
func maxDiff(a, b [][]float32) float64 {
	worst := 0.0
	for s := range a {
		for i := range a[s] {
			worst = max(worst, math.Abs(float64(a[s][i]-b[s][i])))
		}
	}
	return worst
}

// editConfig rewrites dir/config.json through edit.
func editConfig(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	edit(c)
	if raw, err = json.Marshal(c); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGGUFSplit loads a model split over two files (gguf-split's
// NAME-0000K-of-0000N.gguf, metadata in the first), named by its first
// split or by its folder, with the logits of the single file.
func TestGGUFSplit(t *testing.T) {
	c := convert(t, "qwen2-f32", gguf.F32)
	dir := t.TempDir()
	half := len(c.tensors) / 2
	for k, part := range [][]gguf.WriteTensor{c.tensors[:half], c.tensors[half:]} {
		kv := []gguf.KV{
			{Key: "split.no", Value: gguf.Value{Type: gguf.TypeUint16, V: uint64(k)}},
			{Key: "split.count", Value: gguf.Value{Type: gguf.TypeUint16, V: uint64(2)}},
			{Key: "split.tensors.count", Value: gguf.Value{Type: gguf.TypeInt32, V: int64(len(c.tensors))}},
		}
		if k == 0 {
			kv = append(slices.Clone(c.kv), kv...)
		}
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("qwen2-%05d-of-00002.gguf", k+1)))
		if err != nil {
			t.Fatal(err)
		}
		if err := gguf.Write(f, kv, part); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	man, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	e, _ := man.Find("qwen2-f32")
	g, err := e.Golden()
	if err != nil {
		t.Fatal(err)
	}
	want, wantIDs := decode(t, c.write(t, "qwen2.gguf"), g.PromptIDs, 3)
	for _, path := range []string{filepath.Join(dir, "qwen2-00001-of-00002.gguf"), dir} {
		got, gotIDs := decode(t, path, g.PromptIDs, 3)
		if d := compare(t, "split vs single", got, want, gotIDs, wantIDs, 0); d != 0 {
			t.Errorf("%s: max |Δlogit| %.3g", path, d)
		}
	}
}

// kBlocks returns n random k-quant super-blocks of typ whose d (and dmin)
// are small, so the weights stay under about 0.5: any bytes are a valid
// block, and the test compares a load with the same blocks decoded, so
// the values need only be tame, not a good quantization. d and dmin use
// a half's whole mantissa, as a quantizer's do, so their products with
// the sub-block scales are not halves (the repack keeps them F32).
func kBlocks(rng *rand.Rand, typ gguf.GGMLType, n int) []byte {
	// where each type keeps d and dmin (-1: none), and their divisors:
	// |w| ≤ d·max|sc·q| is 4096·d for Q6_K, 128·d for Q3_K (held to
	// 0.25: the random Q3_K model's logits grow large otherwise), 45·d
	// for Q2_K, 945·d for Q4_K
	at := map[gguf.GGMLType][2]int{gguf.Q2_K: {80, 82}, gguf.Q3_K: {108, -1}, gguf.Q4_K: {0, 2}, gguf.Q5_K: {0, 2}, gguf.Q6_K: {208, -1}}[typ]
	scale := map[gguf.GGMLType][2]float64{gguf.Q2_K: {128, 256}, gguf.Q3_K: {1024, 0}, gguf.Q4_K: {4096, 8192}, gguf.Q5_K: {8192, 8192}, gguf.Q6_K: {16384, 0}}[typ]
	out := make([]byte, n*typ.BlockBytes())
	rng.Read(out)
	for b := 0; b < len(out); b += typ.BlockBytes() {
		for i, off := range at {
			if off >= 0 {
				binary.LittleEndian.PutUint16(out[b+off:], tensor.FloatToHalf(float32((1+rng.Float64())/scale[i])))
			}
		}
	}
	return out
}

// kMix is a llama.cpp k-quant file type as llama_model_quantize mixes
// it (llama-quant.cpp's llama_tensor_get_type for a small Llama): the
// type of most matrices, of token_embd, of attn_v and ffn_down in the
// layers use_more_bits picks and in the others, and of output.
type kMix struct {
	name                string
	fileType            uint32
	most, embd          gguf.GGMLType
	moreBits, fewerBits gguf.GGMLType // attn_v and ffn_down
	output              gguf.GGMLType
}

var kMixes = []kMix{
	{"q4_k_m", 15, gguf.Q4_K, gguf.Q4_K, gguf.Q6_K, gguf.Q4_K, gguf.Q6_K},
	{"q5_k_m", 17, gguf.Q5_K, gguf.Q5_K, gguf.Q6_K, gguf.Q5_K, gguf.Q6_K},
	{"q3_k_m", 12, gguf.Q3_K, gguf.Q3_K, gguf.Q5_K, gguf.Q4_K, gguf.Q6_K},
	{"q2_k", 10, gguf.Q2_K, gguf.Q2_K, gguf.Q4_K, gguf.Q3_K, gguf.Q6_K},
	{"q6_k", 18, gguf.Q6_K, gguf.Q6_K, gguf.Q6_K, gguf.Q6_K, gguf.Q6_K},
}

// TestGGUFKQuants loads Llama-shaped files whose rows are whole 256-value
// super-blocks, their matrices mixed as llama.cpp's Q4_K_M, Q5_K_M,
// Q3_K_M, Q2_K and Q6_K files mix them (Q6_K's, Q3_K's and Q2_K's
// sub-blocks of 16 repacked in groups of 16), and holds each to the same
// blocks decoded to F32: the k-quants' F32 group scales, per-path bits
// and group sizes, and Q/K rows un-permuted as whole super-blocks.
func TestGGUFKQuants(t *testing.T) {
	const hidden, inter, vocab, layers, heads, kvHeads = 256, 512, 256, 2, 4, 2
	for _, mix := range kMixes {
		t.Run(mix.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(mix.fileType)))
			kv := []gguf.KV{
				str("general.architecture", "llama"),
				u32("llama.block_count", layers),
				u32("llama.context_length", 64),
				u32("llama.embedding_length", hidden),
				u32("llama.feed_forward_length", inter),
				u32("llama.attention.head_count", heads),
				u32("llama.attention.head_count_kv", kvHeads),
				f32("llama.attention.layer_norm_rms_epsilon", 1e-5),
				u32("general.file_type", int(mix.fileType)),
			}
			var ts []gguf.WriteTensor
			types := map[gguf.GGMLType]int{}
			matrix := func(name string, typ gguf.GGMLType, rows, cols int) {
				ts = append(ts, gguf.WriteTensor{Name: name, Dims: []uint64{uint64(cols), uint64(rows)}, Type: typ, Data: kBlocks(rng, typ, rows*cols/256)})
				types[typ]++
			}
			norm := func(name string) {
				w := make([]float32, hidden)
				for i := range w {
					w[i] = 1 + float32(rng.NormFloat64()*0.1)
				}
				ts = append(ts, gguf.WriteTensor{Name: name, Dims: []uint64{hidden}, Type: gguf.F32, Data: f32Bytes(w)})
			}
			matrix("token_embd.weight", mix.embd, vocab, hidden)
			for i := range layers {
				p := fmt.Sprintf("blk.%d.", i)
				more := mix.fewerBits
				if i == layers-1 { // use_more_bits: the last eighth of the layers, among others
					more = mix.moreBits
				}
				norm(p + "attn_norm.weight")
				norm(p + "ffn_norm.weight")
				matrix(p+"attn_q.weight", mix.most, hidden, hidden)
				matrix(p+"attn_k.weight", mix.most, kvHeads*hidden/heads, hidden)
				matrix(p+"attn_v.weight", more, kvHeads*hidden/heads, hidden)
				matrix(p+"attn_output.weight", mix.most, hidden, hidden)
				matrix(p+"ffn_gate.weight", mix.most, inter, hidden)
				matrix(p+"ffn_up.weight", mix.most, inter, hidden)
				matrix(p+"ffn_down.weight", more, hidden, inter)
			}
			norm("output_norm.weight")
			matrix("output.weight", mix.output, vocab, hidden)
			c := converted{arch: "llama", kv: kv, tensors: ts}
			path := c.write(t, "k.gguf")
			ck, err := checkpoint.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if l := ck.Quantization(); l != mix.name {
				t.Errorf("label %q, want %s", l, mix.name)
			}
			for _, m := range []struct {
				path string
				typ  gguf.GGMLType
			}{{"lm_head", mix.output}, {"model.layers.1.mlp.down_proj", mix.moreBits}, {"model.layers.0.self_attn.v_proj", mix.fewerBits}} {
				want := tensor.Quant{Bits: map[gguf.GGMLType]int{gguf.Q2_K: 2, gguf.Q3_K: 3, gguf.Q4_K: 4, gguf.Q5_K: 5, gguf.Q6_K: 6}[m.typ], GroupSize: 32}
				if m.typ == gguf.Q2_K || m.typ == gguf.Q3_K || m.typ == gguf.Q6_K { // sub-blocks of 16
					want.GroupSize = 16
				}
				if q := ck.Quant.For(m.path); q == nil || *q != want {
					t.Errorf("%s (%s): quantization %v, want %+v", m.path, m.typ, q, want)
				}
			}
			checkSummary(t, ck)
			prompt := []int32{1, 17, 200, 3, 99, 45, 12, 250}
			got, gotIDs := decode(t, path, prompt, 6)
			want, wantIDs := decode(t, c.dequantized(t).write(t, "k-dequantized.gguf"), prompt, 6)
			d := compare(t, "vs dequantized", got, want, gotIDs, wantIDs, 1e-4)
			t.Logf("%v: max |Δlogit| vs the dequantized weights %.3g, greedy %v", types, d, gotIDs)
			t.Run("gpu", func(t *testing.T) {
				_, err := gpu.Probe()
				testenv.Need(t, "a gpu adapter", err == nil)
				got, gotIDs := decodeOn(t, "gpu", path, prompt, 6)
				d := compare(t, "gpu vs dequantized on the cpu", got, want, gotIDs, wantIDs, 1e-4)
				t.Logf("gpu: max |Δlogit| %.3g", d)
			})
		})
	}
}

// checkSummary holds the header-only weight summary of a GGUF checkpoint
// to the Set its load makes: the same tensors, dtypes, shapes and bytes.
func checkSummary(t *testing.T, ck *checkpoint.Checkpoint) {
	t.Helper()
	set, err := ck.OpenWeights(weights.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	var names []string
	var bytes int64
	for _, in := range ck.Weights.Tensors {
		names = append(names, in.Name)
		got, ok := set.Info(in.Name)
		data, _ := set.Bytes(in.Name)
		if !ok || got.DType != in.DType || !slices.Equal(got.Shape, in.Shape) || int64(len(data)) != in.Length {
			t.Errorf("%s: summary says %s %v (%d bytes), the load %s %v (%d bytes)", in.Name, in.DType, in.Shape, in.Length, got.DType, got.Shape, len(data))
		}
		bytes += in.Length
	}
	if !slices.Equal(names, set.Names()) {
		t.Errorf("summary lists %v, the load %v", names, set.Names())
	}
	if bytes != ck.Weights.Bytes {
		t.Errorf("summary Bytes %d, its tensors %d", ck.Weights.Bytes, bytes)
	}
}
