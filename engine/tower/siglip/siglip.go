// Package siglip is the SigLIP vision transformer (transformers'
// SiglipVisionModel, without its pooling head) and the Gemma 3 projector
// that turns its patches into the decoder's image soft tokens.
package siglip

import (
	"encoding/json"
	"fmt"
	"math"

	"hearth/engine/nn"
	"hearth/engine/tensor"
	"hearth/engine/tower"
	"hearth/media"
)

// Config is a SiglipVisionConfig, with transformers' defaults for the keys
// a config.json leaves out.
type Config struct {
	Hidden       int     `json:"hidden_size"`
	Intermediate int     `json:"intermediate_size"`
	Layers       int     `json:"num_hidden_layers"`
	Heads        int     `json:"num_attention_heads"`
	Channels     int     `json:"num_channels"`
	ImageSize    int     `json:"image_size"`
	PatchSize    int     `json:"patch_size"`
	Eps          float64 `json:"layer_norm_eps"`
	Act          string  `json:"hidden_act"`
}

// ParseConfig reads a vision_config object.
func ParseConfig(raw json.RawMessage) (Config, error) {
	c := Config{Hidden: 768, Intermediate: 3072, Layers: 12, Heads: 12, Channels: 3, ImageSize: 224, PatchSize: 16,
		Eps: 1e-6, Act: "gelu_pytorch_tanh"}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &c); err != nil {
			return c, fmt.Errorf("vision_config: %w", err)
		}
	}
	for _, v := range []struct {
		key string
		v   int
		max int
	}{{"hidden_size", c.Hidden, 1 << 16}, {"intermediate_size", c.Intermediate, 1 << 18}, {"num_hidden_layers", c.Layers, 1024},
		{"num_attention_heads", c.Heads, 1024}, {"num_channels", c.Channels, 16}, {"image_size", c.ImageSize, 1 << 14},
		{"patch_size", c.PatchSize, 1 << 10}} {
		if v.v <= 0 || v.v > v.max {
			return c, fmt.Errorf("vision_config: %q must be a positive integer up to %d, got %d", v.key, v.max, v.v)
		}
	}
	if c.Hidden%c.Heads != 0 {
		return c, fmt.Errorf("vision_config: hidden_size %d is not a multiple of num_attention_heads %d", c.Hidden, c.Heads)
	}
	if c.ImageSize%c.PatchSize != 0 {
		return c, fmt.Errorf("vision_config: image_size %d is not a multiple of patch_size %d", c.ImageSize, c.PatchSize)
	}
	if !(c.Eps > 0) {
		return c, fmt.Errorf("vision_config: layer_norm_eps must be positive, got %v", c.Eps)
	}
	return c, nil
}

// Side is the number of patches along each side of a picture.
func (c Config) Side() int { return c.ImageSize / c.PatchSize }

// Tower is a SigLIP vision transformer bound to a checkpoint.
type Tower struct {
	c Config
	// patch is the patch embedding as a matrix [hidden, C·p·p] over a
	// patch flattened in the order the checkpoint's convolution weight
	// has: channel, row, column (transformers' [out, C, p, p]) or row,
	// column, channel (MLX's [out, p, p, C]).
	patch      nn.Linear
	channelsIn bool // MLX order: channels innermost
	pos        tensor.T
	layers     []layer
	post       ln
	act        func(*tensor.Graph, tensor.T) tensor.T
}

type ln struct{ w, b tensor.T }

type layer struct {
	ln1, ln2      ln
	q, k, v, o    nn.Linear
	fc1, fc2      nn.Linear
	heads, headDm int
}

// Bind binds a SigLIP vision model's tensors under prefix (e.g.
// "vision_tower.vision_model."): embeddings, encoder layers and the
// post layernorm. Linear weights may be MLX-quantized; the patch
// embedding is dense.
func Bind(l *nn.Loader, prefix string, c Config) (*Tower, error) {
	t := &Tower{c: c}
	act, err := tower.Activation(c.Act)
	if err != nil {
		return nil, fmt.Errorf("siglip: %w", err)
	}
	t.act = act
	h, p, ch := c.Hidden, c.PatchSize, c.Channels
	e := prefix + "embeddings."
	if l.W.Has(e + "patch_embedding.scales") {
		return nil, fmt.Errorf("siglip: %spatch_embedding is quantized; Hearth reads it dense only", e)
	}
	w := l.W.Tensor(e + "patch_embedding.weight")
	switch {
	case w.Data == nil: // the audit names it
	case len(w.Shape) == 4 && w.Shape[0] == h && w.Shape[1] == ch && w.Shape[2] == p && w.Shape[3] == p:
	case len(w.Shape) == 4 && w.Shape[0] == h && w.Shape[1] == p && w.Shape[2] == p && w.Shape[3] == ch:
		t.channelsIn = true
	default:
		return nil, fmt.Errorf("siglip: %spatch_embedding.weight has shape %v, want [%d, %d, %d, %d] (or MLX's [%d, %d, %d, %d])", e, w.Shape, h, ch, p, p, h, p, p, ch)
	}
	if w.Data != nil {
		switch w.DType {
		case tensor.F32, tensor.F16, tensor.BF16:
		default:
			return nil, fmt.Errorf("siglip: %spatch_embedding.weight has dtype %s", e, w.DType)
		}
		w.Shape = []int{h, ch * p * p}
	}
	t.patch = nn.Linear{W: l.Weight(w, h, ch*p*p), B: l.Tensor(e+"patch_embedding.bias", h)}
	side := c.Side()
	t.pos = l.Linear(e+"position_embedding", side*side, h, false).W
	lnorm := func(name string) ln { return ln{w: l.Tensor(name+".weight", h), b: l.Tensor(name+".bias", h)} }
	for i := 0; i < c.Layers; i++ {
		lp := fmt.Sprintf("%sencoder.layers.%d.", prefix, i)
		a := lp + "self_attn."
		t.layers = append(t.layers, layer{
			ln1: lnorm(lp + "layer_norm1"), ln2: lnorm(lp + "layer_norm2"),
			q: l.Linear(a+"q_proj", h, h, true), k: l.Linear(a+"k_proj", h, h, true),
			v: l.Linear(a+"v_proj", h, h, true), o: l.Linear(a+"out_proj", h, h, true),
			fc1: l.Linear(lp+"mlp.fc1", c.Intermediate, h, true), fc2: l.Linear(lp+"mlp.fc2", h, c.Intermediate, true),
			heads: c.Heads, headDm: h / c.Heads,
		})
	}
	t.post = lnorm(prefix + "post_layernorm")
	return t, l.Err()
}

// Config is the tower's configuration.
func (t *Tower) Config() Config { return t.c }

// patches flattens pixel values [C, H, W] into one row per patch, patches
// in row-major order, each in the order of the patch embedding's weight.
func (t *Tower) patches(px media.Pixels) ([]float32, error) {
	c := t.c
	if len(px.Shape) != 3 || px.Shape[0] != c.Channels || px.Shape[1] != c.ImageSize || px.Shape[2] != c.ImageSize || len(px.Data) != c.Channels*c.ImageSize*c.ImageSize {
		return nil, fmt.Errorf("siglip: pixel values %v (%d values), want [%d, %d, %d]", px.Shape, len(px.Data), c.Channels, c.ImageSize, c.ImageSize)
	}
	p, side, s := c.PatchSize, c.Side(), c.ImageSize
	row := c.Channels * p * p
	out := make([]float32, side*side*row)
	for py := 0; py < side; py++ {
		for pxi := 0; pxi < side; pxi++ {
			dst := out[(py*side+pxi)*row:]
			for ch := 0; ch < c.Channels; ch++ {
				for ky := 0; ky < p; ky++ {
					src := px.Data[(ch*s+py*p+ky)*s+pxi*p:]
					for kx := 0; kx < p; kx++ {
						if t.channelsIn {
							dst[(ky*p+kx)*c.Channels+ch] = src[kx]
						} else {
							dst[(ch*p+ky)*p+kx] = src[kx]
						}
					}
				}
			}
		}
	}
	return out, nil
}

// Forward records the tower over one picture and returns its
// last_hidden_state [patches, hidden] (after the post layernorm).
func (t *Tower) Forward(g *tensor.Graph, px media.Pixels) (tensor.T, error) {
	c := t.c
	data, err := t.patches(px)
	if err != nil {
		return tensor.T{}, err
	}
	n := c.Side() * c.Side()
	x := t.patch.Forward(g, g.Input(data, n, c.Channels*c.PatchSize*c.PatchSize))
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	x = g.Add(x, g.Embed(t.pos, g.InputInts(ids, n)))
	eps := float32(c.Eps)
	for i := range t.layers {
		ly := &t.layers[i]
		h := g.LayerNorm(x, ly.ln1.w, ly.ln1.b, eps)
		q := g.Reshape(ly.q.Forward(g, h), n, ly.heads, ly.headDm)
		k := g.Reshape(ly.k.Forward(g, h), n, ly.heads, ly.headDm)
		v := g.Reshape(ly.v.Forward(g, h), n, ly.heads, ly.headDm)
		a := g.Attention(q, k, v, tensor.AttnSpec{Scale: float32(1 / math.Sqrt(float64(ly.headDm))), KeyLen: n, Bidirectional: true})
		x = g.Add(x, ly.o.Forward(g, g.Reshape(a, n, c.Hidden)))
		h = g.LayerNorm(x, ly.ln2.w, ly.ln2.b, eps)
		x = g.Add(x, ly.fc2.Forward(g, t.act(g, ly.fc1.Forward(g, h))))
	}
	return g.LayerNorm(x, t.post.w, t.post.b, eps), g.Err()
}
