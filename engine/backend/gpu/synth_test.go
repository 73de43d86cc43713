package gpu_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"hearth/engine/tensor"
	"hearth/engine/weights"
)

// llamaShape is a Llama checkpoint's geometry.
type llamaShape struct {
	Name                                  string
	Hidden, Inter, Layers, Heads, KVHeads int
	HeadDim, Vocab                        int
	Tied                                  bool
}

var (
	llama1B   = llamaShape{"llama-3.2-1b", 2048, 8192, 16, 32, 8, 64, 128256, true}
	llama8B   = llamaShape{"llama-3.1-8b", 4096, 14336, 32, 32, 8, 128, 128256, false}
	llamaTiny = llamaShape{"tiny", 256, 512, 2, 4, 2, 64, 1024, false}
)

// layerMatMulFLOPs is the arithmetic (2 FLOP a multiply-add) of the
// layers' matrix products for n tokens.
func (s llamaShape) layerMatMulFLOPs(n int) float64 {
	h, q, kv := s.Hidden, s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	return 2 * float64(n) * float64(s.Layers) * float64(h*(q+2*kv)+q*h+3*h*s.Inter)
}

// prefillFLOPs is the arithmetic of a prefill of n tokens into an empty
// sequence: the layers' matrix products, causal attention (scores and
// values over keys 0..p for the token at p) and the LM head of the last
// token.
func (s llamaShape) prefillFLOPs(n int) float64 {
	attn := 4 * float64(s.Heads*s.HeadDim) * float64(n) * float64(n+1) / 2
	return s.layerMatMulFLOPs(n) + float64(s.Layers)*attn + 2*float64(s.Vocab*s.Hidden)
}

// writeSynth writes a random MLX-quantized (bits, group 64, BF16 scales)
// Llama checkpoint of shape s into dir: config.json and model.safetensors
// with the Hugging Face tensor names, so families.Resolve and the universal
// family load it like a real one. The weights are random levels with a
// small scale: fine for timing, meaningless as a model.
func writeSynth(dir string, s llamaShape, bitsPer int) error {
	const group = 64
	cfg := map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama",
		"hidden_size": s.Hidden, "intermediate_size": s.Inter, "num_hidden_layers": s.Layers,
		"num_attention_heads": s.Heads, "num_key_value_heads": s.KVHeads, "head_dim": s.HeadDim,
		"vocab_size": s.Vocab, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "hidden_act": "silu",
		"rope_scaling": map[string]any{"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
			"original_max_position_embeddings": 8192, "rope_type": "llama3"},
		"max_position_embeddings": 131072, "tie_word_embeddings": s.Tied,
		"quantization": map[string]any{"group_size": group, "bits": bitsPer},
	}
	raw, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644); err != nil {
		return err
	}
	var ws []tensor.Weight
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.NumCPU())
	seed := uint64(1)
	quant := func(name string, rows, cols int) {
		seed++
		sd := seed
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			w := randomQuant(name, rows, cols, bitsPer, group, sd)
			mu.Lock()
			ws = append(ws, w)
			mu.Unlock()
		}()
	}
	ones := func(name string, n int) {
		data := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint16(data[2*i:], tensor.FloatToBF16(1))
		}
		ws = append(ws, tensor.Weight{Name: name, DType: tensor.BF16, Shape: []int{n}, Data: data})
	}
	h, q, kv := s.Hidden, s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	quant("model.embed_tokens", s.Vocab, h)
	if !s.Tied {
		quant("lm_head", s.Vocab, h)
	}
	mu.Lock()
	ones("model.norm.weight", h)
	for l := 0; l < s.Layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		ones(p+"input_layernorm.weight", h)
		ones(p+"post_attention_layernorm.weight", h)
	}
	mu.Unlock()
	for l := 0; l < s.Layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		quant(p+"self_attn.q_proj", q, h)
		quant(p+"self_attn.k_proj", kv, h)
		quant(p+"self_attn.v_proj", kv, h)
		quant(p+"self_attn.o_proj", h, q)
		quant(p+"mlp.gate_proj", s.Inter, h)
		quant(p+"mlp.up_proj", s.Inter, h)
		quant(p+"mlp.down_proj", h, s.Inter)
	}
	wg.Wait()
	return weights.Write(filepath.Join(dir, "model.safetensors"), ws, map[string]string{"format": "mlx"})
}

// randomQuant makes a quantized weight of random levels with scale
// 0.02/2^bits and bias -0.01, so values stay within ±0.01.
func randomQuant(name string, rows, cols, bitsPer, group int, seed uint64) tensor.Weight {
	data := make([]byte, rows*cols*bitsPer/8)
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := 0; i+8 <= len(data); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(data[i:], x)
	}
	groups := rows * cols / group
	scales := make([]byte, 2*groups)
	biases := make([]byte, 2*groups)
	s := tensor.FloatToBF16(0.02 / float32(uint(1)<<bitsPer))
	b := tensor.FloatToBF16(-0.01)
	for g := 0; g < groups; g++ {
		// vary the scale a little so no two groups are alike
		binary.LittleEndian.PutUint16(scales[2*g:], s+uint16(bits.OnesCount(uint(g))&3))
		binary.LittleEndian.PutUint16(biases[2*g:], b)
	}
	return tensor.Weight{Name: name, DType: tensor.U32, Shape: []int{rows, cols}, Data: data,
		Quant: &tensor.Quant{Bits: bitsPer, GroupSize: group}, Scales: scales, Biases: biases, ScaleDType: tensor.BF16}
}
