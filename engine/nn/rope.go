package nn

import (
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"hearth/engine/config"
	"hearth/engine/tensor"
)

// RopeTypes lists the rope_type values NewRope computes.
var RopeTypes = []string{"default", "linear", "llama3", "longrope", "su", "yarn", "dynamic", "proportional"}

// Rope is a layer's rotary embedding. Most types have one table; LongRoPE
// switches to its long table once a pass reaches past the original context,
// as transformers' dynamic update does; dynamic NTK recomputes its table
// for every sequence length past max_position_embeddings.
type Rope struct {
	short, long *tensor.Rope
	switchAt    int // positions ≥ switchAt use long
	dyn         *dynamicNTK
}

// Table returns the table for a forward pass whose last position is end-1.
func (r *Rope) Table(end int) *tensor.Rope {
	if r.dyn != nil && end > r.dyn.maxPos {
		return r.dyn.table(end)
	}
	if r.long != nil && end > r.switchAt {
		return r.long
	}
	return r.short
}

// SwitchAt is the position from which LongRoPE uses its long table (a
// pass whose end reaches past it takes the long table for all its
// positions), 0 for a rope with one table.
func (r *Rope) SwitchAt() int {
	if r.long == nil {
		return 0
	}
	return r.switchAt
}

// CheckPass refuses a pass over positions [start, end) whose table differs
// from the one the cached positions before start were rotated with. Only
// dynamic NTK does that: past max_position_embeddings transformers
// recomputes the frequencies for the whole sequence at every length, so a
// cached key would need rotating again. Hearth's runner caps the context
// at max_position_embeddings, where dynamic is the default table; a single
// pass from position 0 is exact at any length.
func (r *Rope) CheckPass(start, end int) error {
	if r.dyn != nil && start > 0 && end > r.dyn.maxPos {
		return fmt.Errorf("rope dynamic: positions up to %d pass max_position_embeddings %d, where transformers re-derives the frequencies of every cached position; start a new sequence within %d tokens",
			end, r.dyn.maxPos, r.dyn.maxPos)
	}
	return nil
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
	if c.Type == "proportional" {
		return proportional(c, headDim)
	}
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
	case "yarn":
		return yarn(c, dims, maxPositions)
	case "dynamic":
		if _, ok := c.Params["factor"]; !ok || c.Factor <= 0 || maxPositions <= 0 || dims <= 2 {
			return nil, fmt.Errorf("rope dynamic: needs factor > 0, max_position_embeddings and more than 2 rotary dims (got %v, %d, %d)", c.Factor, maxPositions, dims)
		}
		d := &dynamicNTK{theta: c.Theta, factor: c.Factor, dims: dims, maxPos: maxPositions, tables: map[int]*tensor.Rope{}}
		return &Rope{short: table(inv, 1), dyn: d}, nil
	default:
		return nil, fmt.Errorf("unsupported rope type %q (supported: %v)", c.Type, RopeTypes)
	}
	return &Rope{short: table(inv, 1)}, nil
}

// proportional is Gemma 4's rope: the first partial_rotary_factor of the
// head's frequency pairs are 1/theta^(2i/head_dim) (exponents over the whole
// head, unlike partial rotary), the rest 0 — they rotate by nothing — and the
// pairs are (i, i + head_dim/2) across the whole head; all divided by
// factor.
func proportional(c config.Rope, headDim int) (*Rope, error) {
	angles := int(math.Floor(c.PartialRotaryFactor * float64(headDim) / 2))
	if headDim < 2 || headDim%2 != 0 || angles < 0 || angles > headDim/2 {
		return nil, fmt.Errorf("rope proportional: partial_rotary_factor %v for head_dim %d", c.PartialRotaryFactor, headDim)
	}
	factor := float32(1)
	if _, ok := c.Params["factor"]; ok {
		if c.Factor <= 0 {
			return nil, fmt.Errorf("rope proportional: factor %v must be positive", c.Factor)
		}
		factor = float32(c.Factor)
	}
	inv := make([]float32, headDim/2)
	copy(inv, defaultInvFreq(c.Theta, headDim)[:angles])
	for i := range inv {
		inv[i] /= factor
	}
	return &Rope{short: &tensor.Rope{InvFreq: inv, Dims: headDim, Scale: 1}}, nil
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

// yarn is transformers' _compute_yarn_parameters (5.x): frequencies below
// the correction range keep the original (extrapolated) value, those above
// it are divided by factor (interpolated), a linear ramp blends the band
// between, and attention_factor scales cos and sin. Tensor steps are
// float32 as in torch; the correction range is float64 as in Python.
func yarn(c config.Rope, dims, maxPositions int) (*Rope, error) {
	p := config.NewFields(c.Params)
	orig := c.OriginalMaxPositionEmbeddings
	if orig <= 0 {
		orig = maxPositions // transformers' standardize_rope_params default
	}
	factor := p.Float("factor", 0)
	if factor == 0 && orig > 0 {
		factor = float64(maxPositions) / float64(orig)
	}
	attn := p.Float("attention_factor", 0)
	if attn == 0 {
		ms, msAll := p.Float("mscale", 0), p.Float("mscale_all_dim", 0)
		if ms != 0 && msAll != 0 {
			attn = yarnMscale(factor, ms) / yarnMscale(factor, msAll)
		} else {
			attn = yarnMscale(factor, 1)
		}
	}
	betaFast, betaSlow := p.Float("beta_fast", 0), p.Float("beta_slow", 0)
	if betaFast == 0 {
		betaFast = 32
	}
	if betaSlow == 0 {
		betaSlow = 1
	}
	truncate := p.Bool("truncate", true)
	if err := p.Err(); err != nil {
		return nil, fmt.Errorf("rope yarn: %w", err)
	}
	if factor <= 0 || orig <= 0 || c.Theta <= 1 {
		return nil, fmt.Errorf("rope yarn: needs factor > 0, original_max_position_embeddings and rope_theta > 1 (got %v, %d, %v)", factor, orig, c.Theta)
	}
	corr := func(rot float64) float64 {
		return float64(dims) * math.Log(float64(orig)/(rot*2*math.Pi)) / (2 * math.Log(c.Theta))
	}
	low, high := corr(betaFast), corr(betaSlow)
	if truncate {
		low, high = math.Floor(low), math.Ceil(high)
	}
	low, high = max(low, 0), min(high, float64(dims-1))
	if low == high {
		high += 0.001 // transformers' guard against a zero-width ramp
	}
	lowF, span := float32(low), float32(high-low)
	f := float32(factor)
	inv := make([]float32, dims/2)
	for i := range inv {
		e := float32(2*i) / float32(dims)
		pos := float32(math.Pow(c.Theta, float64(e)))
		extra := 1 / pos
		inter := 1 / (f * pos)
		ramp := min(max((float32(i)-lowF)/span, 0), 1)
		keep := 1 - ramp // transformers' inv_freq_extrapolation_factor
		// Each product is rounded on its own (no fused multiply-add), as torch does.
		inv[i] = float32(inter*(1-keep)) + float32(extra*keep)
	}
	return &Rope{short: &tensor.Rope{InvFreq: inv, Dims: dims, Scale: float32(attn)}}, nil
}

// yarnMscale is transformers' get_mscale.
func yarnMscale(scale, m float64) float64 {
	if scale <= 1 {
		return 1
	}
	return 0.1*m*math.Log(scale) + 1
}

// dynamicNTK is transformers' dynamic NTK-aware rope: within
// max_position_embeddings the default table; past it, rope_theta grows
// with the sequence length L as theta·(factor·L/max − (factor−1))^(d/(d−2)).
type dynamicNTK struct {
	theta, factor float64
	dims, maxPos  int
	mu            sync.Mutex
	tables        map[int]*tensor.Rope
}

func (d *dynamicNTK) table(end int) *tensor.Rope {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.tables[end]; ok {
		return t
	}
	// The sequence length reaches torch as an int64 tensor, so the new base
	// is formed in float32.
	x := float32(d.factor)*float32(end)/float32(d.maxPos) - float32(d.factor-1)
	exp := float32(float64(d.dims) / float64(d.dims-2))
	base := float32(d.theta) * float32(math.Pow(float64(x), float64(exp)))
	inv := make([]float32, d.dims/2)
	for i := range inv {
		e := float32(2*i) / float32(d.dims)
		inv[i] = 1 / float32(math.Pow(float64(base), float64(e)))
	}
	t := &tensor.Rope{InvFreq: inv, Dims: d.dims, Scale: 1}
	if len(d.tables) > 64 {
		clear(d.tables) // one pass per length at most; keep the memo small
	}
	d.tables[end] = t
	return t
}
