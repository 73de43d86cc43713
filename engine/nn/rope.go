package nn

import (
	"encoding/json"
	"fmt"
	"math"

	"hearth/engine/config"
	"hearth/engine/tensor"
)

// RopeTypes lists the rope_type values NewRope computes.
var RopeTypes = []string{"default", "linear", "llama3", "longrope"}

// Rope is a layer's rotary embedding. Most types have one table; LongRoPE
// switches to its long table once a pass reaches past the original context,
// as transformers' dynamic update does.
type Rope struct {
	short, long *tensor.Rope
	switchAt    int // positions ≥ switchAt use long
}

// Table returns the table for a forward pass whose last position is end-1.
func (r *Rope) Table(end int) *tensor.Rope {
	if r.long != nil && end > r.switchAt {
		return r.long
	}
	return r.short
}

// WithTraditional returns a copy of r that rotates adjacent pairs (2i,
// 2i+1) instead of (i, i+dims/2), as GLM and MLX's traditional rope do.
func (r *Rope) WithTraditional() *Rope {
	cp := *r
	for _, t := range []**tensor.Rope{&cp.short, &cp.long} {
		if *t != nil {
			tt := **t
			tt.Traditional = true
			*t = &tt
		}
	}
	return &cp
}

// NewRope computes the rotary tables for heads of headDim, exactly as
// transformers' modeling_rope_utils does (float32 throughout).
// maxPositions is the config's max_position_embeddings.
func NewRope(c config.Rope, headDim, maxPositions int) (*Rope, error) {
	dims := int(float64(headDim) * c.PartialRotaryFactor)
	dims -= dims % 2
	if dims <= 0 {
		return nil, fmt.Errorf("rope: %d rotary dimensions for head_dim %d", dims, headDim)
	}
	inv := defaultInvFreq(c.Theta, dims)
	table := func(inv []float32, scale float32) *tensor.Rope {
		return &tensor.Rope{InvFreq: inv, Dims: dims, Scale: scale}
	}
	switch c.Type {
	case "default", "":
	case "linear":
		f := float32(c.Factor)
		for i := range inv {
			inv[i] /= f
		}
	case "llama3":
		if err := llama3(inv, c); err != nil {
			return nil, err
		}
	case "longrope", "su":
		return longrope(c, dims, maxPositions)
	default:
		return nil, fmt.Errorf("unsupported rope type %q (supported: %v)", c.Type, RopeTypes)
	}
	return &Rope{short: table(inv, 1)}, nil
}

// defaultInvFreq is 1 / theta^(2i/dims), with the exponent formed in
// float32 as torch.arange(0, dim, 2).float() / dim is.
func defaultInvFreq(theta float64, dims int) []float32 {
	inv := make([]float32, dims/2)
	for i := range inv {
		e := float32(2*i) / float32(dims)
		p := float32(math.Pow(theta, float64(e)))
		inv[i] = 1 / p
	}
	return inv
}

// llama3 applies Llama 3.1's frequency-dependent scaling: long wavelengths
// divided by factor, short ones kept, the band between smoothed.
func llama3(inv []float32, c config.Rope) error {
	if c.OriginalMaxPositionEmbeddings <= 0 || c.Factor <= 0 || c.HighFreqFactor == c.LowFreqFactor {
		return fmt.Errorf("rope llama3: needs factor, low_freq_factor < high_freq_factor and original_max_position_embeddings (got %v, %v, %v, %d)",
			c.Factor, c.LowFreqFactor, c.HighFreqFactor, c.OriginalMaxPositionEmbeddings)
	}
	factor := float32(c.Factor)
	low, high := float32(c.LowFreqFactor), float32(c.HighFreqFactor)
	old := float32(c.OriginalMaxPositionEmbeddings)
	lowWavelen := old / low
	highWavelen := old / high
	for i, f := range inv {
		wavelen := 2 * float32(math.Pi) / f
		scaled := f
		if wavelen > lowWavelen {
			scaled = f / factor
		}
		if !(wavelen < highWavelen) && !(wavelen > lowWavelen) {
			smooth := (old/wavelen - low) / (high - low)
			scaled = (1-smooth)*scaled/factor + smooth*scaled
		}
		inv[i] = scaled
	}
	return nil
}

// longrope is Phi-3's LongRoPE: per-frequency factors (short below the
// original context, long beyond) and an attention factor on cos and sin.
func longrope(c config.Rope, dims, maxPositions int) (*Rope, error) {
	var short, long []float64
	for _, f := range []struct {
		key string
		dst *[]float64
	}{{"short_factor", &short}, {"long_factor", &long}} {
		raw, ok := c.Params[f.key]
		if !ok {
			return nil, fmt.Errorf("rope longrope: missing %q", f.key)
		}
		if err := json.Unmarshal(raw, f.dst); err != nil || len(*f.dst) != dims/2 {
			return nil, fmt.Errorf("rope longrope: %q must list %d numbers", f.key, dims/2)
		}
	}
	orig := c.OriginalMaxPositionEmbeddings
	factor := c.Factor
	if orig > 0 {
		factor = float64(maxPositions) / float64(orig)
	} else {
		orig = maxPositions
	}
	attn := 1.0
	if raw, ok := c.Params["attention_factor"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &attn); err != nil {
			return nil, fmt.Errorf("rope longrope: attention_factor: %w", err)
		}
	} else if factor > 1 {
		attn = math.Sqrt(1 + math.Log(factor)/math.Log(float64(orig)))
	}
	build := func(ext []float64) *tensor.Rope {
		inv := make([]float32, dims/2)
		for i := range inv {
			e := float32(2*i) / float32(dims)
			p := float32(math.Pow(c.Theta, float64(e)))
			inv[i] = 1 / (float32(ext[i]) * p)
		}
		return &tensor.Rope{InvFreq: inv, Dims: dims, Scale: float32(attn)}
	}
	return &Rope{short: build(short), long: build(long), switchAt: orig}, nil
}
