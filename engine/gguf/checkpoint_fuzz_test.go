package gguf_test

import (
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"hearth/engine/checkpoint"
	"hearth/engine/gguf"
	"hearth/engine/weights"
)

// tinyLlama is a small Llama file of every kind of tensor the loader
// converts (F32 norms, permuted Q8_0 and Q4_1 rows, F16, a rope_freqs
// tensor), for fuzzing: a few kilobytes.
func tinyLlama(t testing.TB) []byte {
	rng := rand.New(rand.NewSource(2))
	const hidden, vocab = 32, 16
	kv := []gguf.KV{
		str("general.architecture", "llama"),
		u32("llama.block_count", 1),
		u32("llama.context_length", 32),
		u32("llama.embedding_length", hidden),
		u32("llama.feed_forward_length", hidden),
		u32("llama.attention.head_count", 2),
		u32("llama.attention.head_count_kv", 1),
		f32("llama.attention.layer_norm_rms_epsilon", 1e-5),
		u32("tokenizer.ggml.eos_token_id", 2),
	}
	vals := func(n int) []float32 {
		w := make([]float32, n)
		for i := range w {
			w[i] = float32(rng.NormFloat64() * 0.1)
		}
		return w
	}
	mat := func(name string, rows int, typ gguf.GGMLType) gguf.WriteTensor {
		w := vals(rows * hidden)
		wt := gguf.WriteTensor{Name: name, Dims: []uint64{hidden, uint64(rows)}, Type: typ}
		switch typ {
		case gguf.Q8_0:
			wt.Data = quantizeQ8_0(w)
		case gguf.Q4_1:
			wt.Data = quantizeQ4_1(w)
		default:
			wt.Data = f32Bytes(w)
		}
		return wt
	}
	norm := func(name string) gguf.WriteTensor {
		return gguf.WriteTensor{Name: name, Dims: []uint64{hidden}, Type: gguf.F32, Data: f32Bytes(vals(hidden))}
	}
	c := converted{arch: "llama", kv: kv, tensors: []gguf.WriteTensor{
		{Name: "rope_freqs.weight", Dims: []uint64{8}, Type: gguf.F32, Data: f32Bytes([]float32{1, 1, 2, 2, 4, 4, 8, 8})},
		mat("token_embd.weight", vocab, gguf.Q8_0),
		norm("blk.0.attn_norm.weight"), norm("blk.0.ffn_norm.weight"), norm("output_norm.weight"),
		mat("blk.0.attn_q.weight", hidden, gguf.Q8_0),
		mat("blk.0.attn_k.weight", hidden/2, gguf.Q4_1),
		mat("blk.0.attn_v.weight", hidden/2, gguf.F32),
		mat("blk.0.attn_output.weight", hidden, gguf.Q8_0),
		mat("blk.0.ffn_gate.weight", hidden, gguf.Q4_1),
		mat("blk.0.ffn_up.weight", hidden, gguf.Q8_0),
		mat("blk.0.ffn_down.weight", hidden, gguf.F32),
	}}
	raw, err := os.ReadFile(c.write(t, "tiny.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// FuzzRead feeds arbitrary files to the GGUF checkpoint reader: a file is
// refused with an error or read into a config that config.Parse takes,
// and its weights are then placed without a panic or an allocation by a
// declared size.
func FuzzRead(f *testing.F) {
	f.Add(tinyLlama(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "x.gguf")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ck, err := checkpoint.Read(path)
		if err != nil {
			return
		}
		if ck.GGUF == nil || ck.Weights == nil {
			t.Fatalf("read without error, but GGUF %v, Weights %v", ck.GGUF, ck.Weights)
		}
		set, err := ck.OpenWeights(weights.OpenOptions{})
		if err == nil {
			set.Close()
		}
	})
}
