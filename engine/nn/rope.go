package nn

import (
	"fmt"
	"math"

	"hearth/engine/config"
	"hearth/engine/tensor"
)

// RopeTypes lists the rope_type values NewRope computes.
var RopeTypes = []string{"default", "linear", "llama3"}

// NewRope computes the rotary frequency table for heads of headDim, exactly
// as transformers' modeling_rope_utils does (float32 throughout).
func NewRope(c config.Rope, headDim int) (*tensor.Rope, error) {
	dims := int(float64(headDim) * c.PartialRotaryFactor)
	dims -= dims % 2
	if dims <= 0 {
		return nil, fmt.Errorf("rope: %d rotary dimensions for head_dim %d", dims, headDim)
	}
	inv := defaultInvFreq(c.Theta, dims)
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
	default:
		return nil, fmt.Errorf("unsupported rope type %q (supported: %v)", c.Type, RopeTypes)
	}
	return &tensor.Rope{InvFreq: inv, Dims: dims, Scale: 1}, nil
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
