// Package gemma4vision is Gemma 4's vision tower with its projection into
// the decoder (transformers 5.17's Gemma4VisionModel and
// Gemma4MultimodalEmbedder, get_image_features): patches embedded with a
// learned 2-D position table, encoder layers with clippable linears, a 2-D
// rotary and q/k/v norms, the k×k average pool with its √hidden scale,
// the optional standardization, then a scale-free RMSNorm and the
// projection to the decoder's width. It takes the pixel values of media's
// Gemma 4 processor (one row per patch, row-major, with the patch grid).
package gemma4vision

import (
	"encoding/json"
	"fmt"
	"math"

	"hearth/engine/config"
	"hearth/engine/nn"
	"hearth/engine/tensor"
	"hearth/engine/tower"
	"hearth/media"
)

// Config is a Gemma4VisionConfig, with its defaults.
type Config struct {
	Hidden       int     `json:"hidden_size"`
	Intermediate int     `json:"intermediate_size"`
	Layers       int     `json:"num_hidden_layers"`
	Heads        int     `json:"num_attention_heads"`
	KVHeads      int     `json:"num_key_value_heads"`
	HeadDim      int     `json:"head_dim"`
	Act          string  `json:"hidden_activation"`
	Eps          float64 `json:"rms_norm_eps"`
	Pool         int     `json:"pooling_kernel_size"`
	PatchSize    int     `json:"patch_size"`
	PosSize      int     `json:"position_embedding_size"`
	Clipped      bool    `json:"use_clipped_linears"`
	Standardize  bool    `json:"standardize"`
	Rope         struct {
		Type  string  `json:"rope_type"`
		Theta float64 `json:"rope_theta"`
	} `json:"rope_parameters"`
}

// ParseConfig reads a vision_config object.
func ParseConfig(raw json.RawMessage) (Config, error) {
	c := Config{Hidden: 768, Intermediate: 3072, Layers: 16, Heads: 12, KVHeads: 12, HeadDim: 64,
		Act: "gelu_pytorch_tanh", Eps: 1e-6, Pool: 3, PatchSize: 16, PosSize: 10240}
	c.Rope.Type, c.Rope.Theta = "axial", 100
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &c); err != nil {
			return c, fmt.Errorf("vision_config: %w", err)
		}
	}
	for _, v := range []struct {
		key    string
		v, max int
	}{{"hidden_size", c.Hidden, 1 << 16}, {"intermediate_size", c.Intermediate, 1 << 18}, {"num_hidden_layers", c.Layers, 1024},
		{"num_attention_heads", c.Heads, 1024}, {"num_key_value_heads", c.KVHeads, 1024}, {"head_dim", c.HeadDim, 1 << 12},
		{"pooling_kernel_size", c.Pool, 16}, {"patch_size", c.PatchSize, 64}, {"position_embedding_size", c.PosSize, 1 << 20}} {
		if v.v <= 0 || v.v > v.max {
			return c, fmt.Errorf("vision_config: %q must be a positive integer up to %d, got %d", v.key, v.max, v.v)
		}
	}
	switch {
	case c.HeadDim%4 != 0:
		// two halves (x, y), each turned in pairs
		return c, fmt.Errorf("vision_config: head_dim %d is not a multiple of 4", c.HeadDim)
	case c.Heads%c.KVHeads != 0:
		return c, fmt.Errorf("vision_config: %d attention heads are not a multiple of %d KV heads", c.Heads, c.KVHeads)
	case c.Rope.Type != "axial":
		return c, fmt.Errorf("vision_config: rope_type %q is not supported (axial is)", c.Rope.Type)
	case !(c.Rope.Theta > 0):
		return c, fmt.Errorf("vision_config: rope_theta must be positive, got %v", c.Rope.Theta)
	case !(c.Eps > 0):
		return c, fmt.Errorf("vision_config: rms_norm_eps must be positive, got %v", c.Eps)
	}
	return c, nil
}

// MaxSoftTokens is the most soft tokens any Gemma4ImageProcessor setting
// gives a picture (max_soft_tokens is one of 70 … 1120).
const MaxSoftTokens = 1120

// Tower is Gemma 4's vision model and embedder bound to a checkpoint.
type Tower struct {
	c        Config
	patch    nn.Linear // patch_embedder.input_proj [hidden, p·p·3]
	pos      []float32 // position_embedding_table [2, PosSize, hidden], on the host
	rope     *tensor.Rope
	layers   []layer
	act      func(*tensor.Graph, tensor.T) tensor.T
	stdShift []float32 // -std_bias, when standardize
	stdScale tensor.T
	proj     nn.Linear // embed_vision.embedding_projection [text hidden, hidden]
	prompt   tower.Prompt
	video    tower.VideoPrompt
}

type layer struct {
	inNorm, postAttn, preFF, postFF nn.RMSNorm
	qNorm, kNorm                    nn.RMSNorm
	q, k, v, o                      clipped
	gate, up, down                  clipped
}

// clipped is Gemma4ClippableLinear: the input clamped, the linear, the
// output clamped, with bounds the checkpoint holds (±inf: none).
type clipped struct {
	lin                      nn.Linear
	inLo, inHi, outLo, outHi float32
	on                       bool
}

func (c clipped) forward(g *tensor.Graph, x tensor.T) tensor.T {
	if c.on && (c.inLo > -math.MaxFloat32 || c.inHi < math.MaxFloat32) {
		x = g.Clamp(x, c.inLo, c.inHi)
	}
	y := c.lin.Forward(g, x)
	if c.on && (c.outLo > -math.MaxFloat32 || c.outHi < math.MaxFloat32) {
		y = g.Clamp(y, c.outLo, c.outHi)
	}
	return y
}

// topConfig is what Gemma4Config adds around its models, with its
// defaults.
type topConfig struct {
	Vision json.RawMessage `json:"vision_config"`
	BOI    int32           `json:"boi_token_id"`
	EOI    int32           `json:"eoi_token_id"`
	Image  int32           `json:"image_token_id"`
	Video  int32           `json:"video_token_id"`
}

// prefixes are where the vision model and the embedder live: transformers
// 5.17's save_pretrained (model.vision_tower., model.embed_vision.) and a
// save without the leading model.
var prefixes = [][2]string{{"model.vision_tower.", "model.embed_vision."}, {"vision_tower.", "embed_vision."}}

// Load binds a Gemma 4 checkpoint's vision tower and embedder (its
// config.json is raw, its decoder config c).
func Load(raw []byte, c *config.Config, l *nn.Loader) (tower.Vision, error) {
	tc := topConfig{BOI: 255999, EOI: 258882, Image: 258880, Video: 258884}
	if err := json.Unmarshal(raw, &tc); err != nil {
		return nil, fmt.Errorf("gemma4 vision: config.json: %w", err)
	}
	vc, err := ParseConfig(tc.Vision)
	if err != nil {
		return nil, fmt.Errorf("gemma4 vision: %w", err)
	}
	for _, id := range []int32{tc.BOI, tc.EOI, tc.Image, tc.Video} {
		if id < 0 || int(id) >= c.VocabSize {
			return nil, fmt.Errorf("gemma4 vision: special token %d is outside the vocabulary of %d", id, c.VocabSize)
		}
	}
	p := prefixes[0]
	for _, pre := range prefixes {
		if l.W.Has(pre[0] + "patch_embedder.input_proj.weight") {
			p = pre
			break
		}
	}
	t, err := Bind(l, p[0], p[1], vc, c.HiddenSize)
	if err != nil {
		return nil, fmt.Errorf("gemma4 vision: %w", err)
	}
	// The chat template writes <|image|>; Gemma4Processor makes it
	// <|image> + one <|image|> per soft token + <image|>.
	t.prompt = tower.Prompt{Placeholder: tc.Image, Begin: tc.BOI, End: tc.EOI, Image: tc.Image}
	// A clip: <|video|>, each sampled frame then a picture of <|video|>
	// tokens after its time (Gemma4Processor.replace_video_token).
	t.video = tower.VideoPrompt{Placeholder: tc.Video, Begin: tc.BOI, End: tc.EOI, Video: tc.Video, Frames: true}
	return t, nil
}

// Bind binds the vision model under prefix and the embedder under embed,
// projecting to textHidden.
func Bind(l *nn.Loader, prefix, embed string, c Config, textHidden int) (*Tower, error) {
	t := &Tower{c: c}
	act, err := tower.Activation(c.Act)
	if err != nil {
		return nil, err
	}
	t.act = act
	h, hd, eps := c.Hidden, c.HeadDim, float32(c.Eps)
	t.patch = l.Linear(prefix+"patch_embedder.input_proj", h, 3*c.PatchSize*c.PatchSize, false)

	// The position table is a fixed gather per picture: it stays on the
	// host, in float32, and the sum of a patch's two rows is an input.
	name := prefix + "patch_embedder.position_embedding_table"
	if pw := l.W.Tensor(name); pw.Data != nil {
		n := 2 * c.PosSize * h
		if len(pw.Shape) != 3 || pw.Shape[0] != 2 || pw.Shape[1] != c.PosSize || pw.Shape[2] != h || pw.Quantized() || pw.DType.Size()*n != len(pw.Data) {
			return nil, fmt.Errorf("%s has shape %v (%s), want dense [2, %d, %d]", name, pw.Shape, pw.DType, c.PosSize, h)
		}
		t.pos = make([]float32, n)
		tensor.Float32(pw.DType, pw.Data, 0, t.pos)
	}

	// The rotary turns each head's first half by the patch's column and
	// its second half by its row, each half in rotate-half pairs with
	// frequencies 1/θ^(4j/head_dim) (Gemma4VisionRotaryEmbedding).
	r, err := nn.NewRope(config.Rope{Type: "default", Theta: c.Rope.Theta, PartialRotaryFactor: 1}, hd/2, 0)
	if err != nil {
		return nil, err
	}
	t.rope = &tensor.Rope{InvFreq: r.Table(1).InvFreq, Dims: hd / 2, Scale: 1}

	rms := func(name string, dim int) nn.RMSNorm { return nn.RMSNorm{W: l.Tensor(name+".weight", dim), Eps: eps} }
	lin := func(name string, out, in int) clipped {
		cl := clipped{lin: l.Linear(name+".linear", out, in, false), on: c.Clipped}
		if c.Clipped {
			cl.inLo, cl.inHi = scalar(l, name+".input_min"), scalar(l, name+".input_max")
			cl.outLo, cl.outHi = scalar(l, name+".output_min"), scalar(l, name+".output_max")
		}
		return cl
	}
	for i := 0; i < c.Layers; i++ {
		p := fmt.Sprintf("%sencoder.layers.%d.", prefix, i)
		a := p + "self_attn."
		t.layers = append(t.layers, layer{
			inNorm: rms(p+"input_layernorm", h), postAttn: rms(p+"post_attention_layernorm", h),
			preFF: rms(p+"pre_feedforward_layernorm", h), postFF: rms(p+"post_feedforward_layernorm", h),
			qNorm: rms(a+"q_norm", hd), kNorm: rms(a+"k_norm", hd),
			q: lin(a+"q_proj", c.Heads*hd, h), k: lin(a+"k_proj", c.KVHeads*hd, h),
			v: lin(a+"v_proj", c.KVHeads*hd, h), o: lin(a+"o_proj", h, c.Heads*hd),
			gate: lin(p+"mlp.gate_proj", c.Intermediate, h), up: lin(p+"mlp.up_proj", c.Intermediate, h),
			down: lin(p+"mlp.down_proj", h, c.Intermediate),
		})
	}
	if c.Standardize {
		// (x - std_bias) is x + (-std_bias) exactly; the shift is an input
		if bw := l.W.Tensor(prefix + "std_bias"); bw.Data != nil {
			if len(bw.Shape) != 1 || bw.Shape[0] != h || bw.Quantized() || bw.DType.Size()*h != len(bw.Data) {
				return nil, fmt.Errorf("%sstd_bias has shape %v, want [%d]", prefix, bw.Shape, h)
			}
			t.stdShift = make([]float32, h)
			tensor.Float32(bw.DType, bw.Data, 0, t.stdShift)
			for i := range t.stdShift {
				t.stdShift[i] = -t.stdShift[i]
			}
		}
		t.stdScale = l.Tensor(prefix+"std_scale", h)
	}
	t.proj = l.Linear(embed+"embedding_projection", textHidden, h, false)
	return t, l.Err()
}

// scalar reads a one-value tensor (a clip bound) to the host; a missing
// one is the binder's to report.
func scalar(l *nn.Loader, name string) float32 {
	w := l.W.Tensor(name)
	if w.Data == nil {
		return 0
	}
	if tensor.Elements(w.Shape) != 1 || w.Quantized() || len(w.Data) != w.DType.Size() {
		l.Fail(fmt.Errorf("tensor %q has shape %v, want one value", name, w.Shape))
		return 0
	}
	v := make([]float32, 1)
	tensor.Float32(w.DType, w.Data, 0, v)
	return v[0]
}

// Config is the tower's configuration.
func (t *Tower) Config() Config { return t.c }

// Prompt is Gemma4Processor's: each <|image|> the chat template writes
// becomes <|image>, one <|image|> per soft token (Grid) and <image|>.
func (t *Tower) Prompt() tower.Prompt { return t.prompt }

// Grid is the picture's soft tokens as a (1, h, w) grid: its patch grid
// pooled k×k; a clip's (frames, h, w), each frame a picture.
func (t *Tower) Grid(px media.Pixels) [3]int {
	k := t.c.Pool
	return [3]int{px.Grid[0], px.Grid[1] / k, px.Grid[2] / k}
}

// VideoPrompt is Gemma4Processor's for clips (tower.Clips): frame by
// frame, as pictures.
func (t *Tower) VideoPrompt() tower.VideoPrompt { return t.video }

// MaxTokens bounds the soft tokens of one picture.
func (t *Tower) MaxTokens() int { return MaxSoftTokens }

// check validates the processor's output for this tower.
func (t *Tower) check(px media.Pixels) error {
	c := t.c
	gh, gw, dim := px.Grid[1], px.Grid[2], 3*c.PatchSize*c.PatchSize
	n := gh * gw
	if px.Grid[0] != 1 || gh <= 0 || gw <= 0 || gh%c.Pool != 0 || gw%c.Pool != 0 || len(px.Shape) != 2 ||
		px.Shape[0] != n || px.Shape[1] != dim || len(px.Data) != n*dim {
		return fmt.Errorf("gemma4 vision: pixel values %v (%d values) with grid %v, want [h·w, %d] with h and w multiples of %d",
			px.Shape, len(px.Data), px.Grid, dim, c.Pool)
	}
	if gh > c.PosSize || gw > c.PosSize {
		return fmt.Errorf("gemma4 vision: a %d×%d patch grid is past the %d positions of the position table", gh, gw, c.PosSize)
	}
	return nil
}

// Encode records the tower and the embedder over one picture: [soft
// tokens, text hidden].
func (t *Tower) Encode(g *tensor.Graph, px media.Pixels) (tensor.T, error) {
	_, _, out, err := t.Forward(g, px)
	return out, err
}

// Forward records the tower over one picture and returns the encoder's
// output [patches, hidden], the vision model's last_hidden_state (pooled,
// scaled, standardized: [patches/k², hidden]) and the embedder's output
// [patches/k², text hidden].
func (t *Tower) Forward(g *tensor.Graph, px media.Pixels) (enc, pooled, out tensor.T, err error) {
	if err := t.check(px); err != nil {
		return enc, pooled, out, err
	}
	c := t.c
	gh, gw := px.Grid[1], px.Grid[2]
	n, h, hd, dim := gh*gw, c.Hidden, c.HeadDim, 3*c.PatchSize*c.PatchSize
	// the patch embedder's 2·(x - 0.5), in float32 as the reference
	in := make([]float32, len(px.Data))
	for i, v := range px.Data {
		in[i] = 2 * float32(v-0.5)
	}
	x := t.patch.Forward(g, g.Input(in, n, dim))
	x = g.Add(x, g.Input(t.posEmbed(gh, gw), n, h))

	posQ, posK := g.InputInts(halfPositions(gh, gw, c.Heads), 2*n*c.Heads), g.InputInts(halfPositions(gh, gw, c.KVHeads), 2*n*c.KVHeads)
	spec := tensor.AttnSpec{Scale: 1, KeyLen: n, Bidirectional: true}
	eps := float32(c.Eps)
	for i := range t.layers {
		ly := &t.layers[i]
		a := ly.inNorm.Forward(g, x)
		q := t.rotate(g, ly.qNorm.Forward(g, g.Reshape(ly.q.forward(g, a), n, c.Heads, hd)), posQ)
		k := t.rotate(g, ly.kNorm.Forward(g, g.Reshape(ly.k.forward(g, a), n, c.KVHeads, hd)), posK)
		v := g.RMSNorm(g.Reshape(ly.v.forward(g, a), n, c.KVHeads, hd), tensor.T{}, eps, 0) // v_norm has no scale
		att := ly.o.forward(g, g.Reshape(g.Attention(q, k, v, spec), n, c.Heads*hd))
		x = g.Add(x, ly.postAttn.Forward(g, att))
		f := ly.preFF.Forward(g, x)
		f = ly.down.forward(g, g.Mul(t.act(g, ly.gate.forward(g, f)), ly.up.forward(g, f)))
		x = g.Add(x, ly.postFF.Forward(g, f))
	}
	enc = x
	// Gemma4VisionPooler: the k×k mean of the patch grid (row-major, as
	// its one-hot weights order the tokens), times √hidden
	y := g.Scale(g.AvgPool2d(x, gh, gw, c.Pool), float32(math.Sqrt(float64(h))))
	if c.Standardize {
		y = g.Mul(g.Add(y, g.Input(t.stdShift, h)), t.stdScale)
	}
	pooled = y
	// Gemma4MultimodalEmbedder: RMSNorm without a scale, then the projection
	out = t.proj.Forward(g, g.RMSNorm(y, tensor.T{}, eps, 0))
	return enc, pooled, out, g.Err()
}

// rotate applies the 2-D rotary to x [n, heads, hd]: seen as rows of half
// heads [n·heads·2, 1, hd/2], each half turns by its own position (the
// column for the first half, the row for the second), which is the
// reference's apply_multidimensional_rope with no new op.
func (t *Tower) rotate(g *tensor.Graph, x, pos tensor.T) tensor.T {
	s := g.Shape(x)
	y := g.RoPE(g.Reshape(x, s[0]*s[1]*2, 1, s[2]/2), pos, t.rope)
	return g.Reshape(y, s...)
}

// halfPositions are the rotary positions of the half heads of a gh×gw
// patch grid with heads heads: patch p (row-major) at column p%gw and row
// p/gw; for each head the first half takes the column, the second the row.
func halfPositions(gh, gw, heads int) []int32 {
	out := make([]int32, 0, 2*gh*gw*heads)
	for p := 0; p < gh*gw; p++ {
		for range heads {
			out = append(out, int32(p%gw), int32(p/gw))
		}
	}
	return out
}

// posEmbed is each patch's position embedding: the table's x row at its
// column plus its y row at its row, in float32.
func (t *Tower) posEmbed(gh, gw int) []float32 {
	h, size := t.c.Hidden, t.c.PosSize
	out := make([]float32, gh*gw*h)
	for p := 0; p < gh*gw; p++ {
		xr := t.pos[(p%gw)*h : (p%gw+1)*h]
		yr := t.pos[(size+p/gw)*h : (size+p/gw+1)*h]
		dst := out[p*h : (p+1)*h]
		for j := range dst {
			dst[j] = xr[j] + yr[j]
		}
	}
	return out
}
