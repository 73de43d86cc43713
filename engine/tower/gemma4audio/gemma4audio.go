// Package gemma4audio is Gemma 4's audio tower: transformers 5.17's
// Gemma4AudioModel (a USM-style conformer) and the Gemma4MultimodalEmbedder
// that projects its output into the decoder's embedding space, transcribed
// op for op (docs/design/audio.md).
package gemma4audio

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"hearth/engine/config"
	"hearth/engine/nn"
	"hearth/engine/tensor"
	"hearth/engine/tower"
	"hearth/media"
)

// Config is a Gemma4AudioConfig, with transformers' defaults for the keys
// a config.json leaves out.
type Config struct {
	Hidden         int     `json:"hidden_size"`
	Layers         int     `json:"num_hidden_layers"`
	Heads          int     `json:"num_attention_heads"`
	Act            string  `json:"hidden_act"`
	Channels       []int   `json:"subsampling_conv_channels"`
	ConvKernel     int     `json:"conv_kernel_size"`
	ResidualWeight float64 `json:"residual_weight"`
	Chunk          int     `json:"attention_chunk_size"`
	ContextLeft    int     `json:"attention_context_left"`
	ContextRight   int     `json:"attention_context_right"`
	LogitCap       float64 `json:"attention_logit_cap"`
	Clipped        bool    `json:"use_clipped_linears"`
	Eps            float64 `json:"rms_norm_eps"`
	GradClip       float64 `json:"gradient_clipping"`
	OutDims        int     `json:"output_proj_dims"`
}

// ParseConfig reads an audio_config object.
func ParseConfig(raw json.RawMessage) (Config, error) {
	c := Config{Hidden: 1024, Layers: 12, Heads: 8, Act: "silu", Channels: []int{128, 32}, ConvKernel: 5,
		ResidualWeight: 0.5, Chunk: 12, ContextLeft: 13, ContextRight: 0, LogitCap: 50, Clipped: true,
		Eps: 1e-6, GradClip: 1e10, OutDims: 1536}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &c); err != nil {
			return c, fmt.Errorf("audio_config: %w", err)
		}
	}
	if len(c.Channels) != 2 {
		return c, fmt.Errorf("audio_config: subsampling_conv_channels must hold 2 sizes, got %v", c.Channels)
	}
	for _, v := range []struct {
		key string
		v   int
		max int
	}{{"hidden_size", c.Hidden, 1 << 16}, {"num_hidden_layers", c.Layers, 1024}, {"num_attention_heads", c.Heads, 1024},
		{"subsampling_conv_channels[0]", c.Channels[0], 1 << 12}, {"subsampling_conv_channels[1]", c.Channels[1], 1 << 12},
		{"conv_kernel_size", c.ConvKernel, 1 << 10}, {"attention_chunk_size", c.Chunk, 1 << 12},
		{"attention_context_left", c.ContextLeft, 1 << 12}, {"output_proj_dims", c.OutDims, 1 << 16}} {
		if v.v <= 0 || v.v > v.max {
			return c, fmt.Errorf("audio_config: %q must be a positive integer up to %d, got %d", v.key, v.max, v.v)
		}
	}
	if c.Hidden%c.Heads != 0 {
		return c, fmt.Errorf("audio_config: hidden_size %d is not a multiple of num_attention_heads %d", c.Hidden, c.Heads)
	}
	if c.ContextLeft < 2 || c.ContextRight < 0 || c.ContextRight > 1<<12 {
		return c, fmt.Errorf("audio_config: attention_context_left %d (at least 2) and attention_context_right %d", c.ContextLeft, c.ContextRight)
	}
	if c.ConvKernel < 2 {
		return c, fmt.Errorf("audio_config: conv_kernel_size must be at least 2, got %d", c.ConvKernel)
	}
	if !(c.Eps > 0) || !(c.LogitCap >= 0) || !(c.GradClip > 0) {
		return c, fmt.Errorf("audio_config: rms_norm_eps %v, attention_logit_cap %v, gradient_clipping %v", c.Eps, c.LogitCap, c.GradClip)
	}
	return c, nil
}

// The subsampling convolutions are fixed in the reference (3×3, stride
// 2, padding 1) and the features have 128 mel bins.
const (
	melBins = 128
	// defaultEps is the eps of the Gemma4RMSNorms the reference builds
	// without passing one (the layer's and the feed-forwards' norms).
	defaultEps = 1e-6
)

// half is the length of a stride-2, kernel-3, padding-1 convolution's
// output over n: (n + 2 - 3) / 2 + 1.
func half(n int) int { return (n-1)/2 + 1 }

// clipped is a Gemma4ClippableLinear: clamp the input, Linear, clamp the
// output, with bounds read from the checkpoint (they are buffers there).
type clipped struct {
	w              tensor.T
	inLo, inHi     float32
	outLo, outHi   float32
	clipIn, clipOu bool
}

func (c clipped) forward(g *tensor.Graph, x tensor.T) tensor.T {
	if c.clipIn {
		x = g.Clamp(x, c.inLo, c.inHi)
	}
	x = g.MatMul(x, c.w)
	if c.clipOu {
		x = g.Clamp(x, c.outLo, c.outHi)
	}
	return x
}

type feedForward struct {
	pre, post nn.RMSNorm
	up, down  clipped
}

type layer struct {
	ff1, ff2                    feedForward
	preAttn, postAttn, out      nn.RMSNorm
	q, k, v, post               clipped
	relK                        tensor.T // relative_k_proj [hidden, hidden]
	qScale                      tensor.T // softplus(per_dim_scale) [head_dim]
	convPre, convNorm           nn.RMSNorm
	start, end                  clipped
	conv                        tensor.T // depthwise taps [hidden, K]
	convState, convNext         tensor.T // zeros [K-1, hidden] and scratch
	heads, headDim, left, right int
}

// Tower is Gemma 4's audio tower and embedder bound to a checkpoint.
type Tower struct {
	c              Config
	text           int
	act            func(*tensor.Graph, tensor.T) tensor.T
	conv0          tensor.T   // [C0, 9]
	conv1          []tensor.T // per tap (dy, dx): [C1, C0]
	norm0, norm1   tensor.T   // LayerNorm weights (no bias)
	inProj         tensor.T   // [hidden, F1·C1]
	pos            []float32  // the relative position embeddings [P, hidden]
	layers         []layer
	outProj        nn.Linear
	embed          tensor.T // embedding_projection [text hidden, out dims]
	embedEps       float32
	gradClip       float32
	qScale, kScale float32
	ext            *media.Gemma4Extractor
	prompt         tower.Prompt
	maxTokens      int
}

// gemma4Config is what the tower reads of a Gemma4Config's top level.
type gemma4Config struct {
	Audio    json.RawMessage `json:"audio_config"`
	Token    *int32          `json:"audio_token_id"`
	BOA      *int32          `json:"boa_token_id"`
	EOA      *int32          `json:"eoa_token_id"`
	EOAIndex *int32          `json:"eoa_token_index"` // transformers 5.17's name
}

// Where the tensors live: transformers 5's save_pretrained keeps the
// model's own "model." prefix; mlx-vlm drops it.
var prefixes = []string{"model.", ""}

// Load binds a Gemma 4 checkpoint's audio tower and embedder (decided by
// the caller from the tensors present).
func Load(raw []byte, c *config.Config, l *nn.Loader) (tower.Audio, error) {
	gc := gemma4Config{}
	if err := json.Unmarshal(raw, &gc); err != nil {
		return nil, fmt.Errorf("gemma4 audio: config.json: %w", err)
	}
	ac, err := ParseConfig(gc.Audio)
	if err != nil {
		return nil, fmt.Errorf("gemma4 audio: %w", err)
	}
	if gc.EOA == nil {
		gc.EOA = gc.EOAIndex
	}
	// transformers' defaults: the ids of Gemma 4's own vocabulary
	tok, boa, eoa := int32(258881), int32(256000), int32(258883)
	for _, v := range []struct {
		p   *int32
		dst *int32
	}{{gc.Token, &tok}, {gc.BOA, &boa}, {gc.EOA, &eoa}} {
		if v.p != nil {
			*v.dst = *v.p
		}
	}
	for _, id := range []int32{tok, boa, eoa} {
		if id < 0 || int(id) >= c.VocabSize {
			return nil, fmt.Errorf("gemma4 audio: special token %d is outside the vocabulary of %d", id, c.VocabSize)
		}
	}
	prefix := prefixes[0]
	for _, p := range prefixes {
		if l.W.Has(p + "audio_tower.subsample_conv_projection.input_proj_linear.weight") {
			prefix = p
			break
		}
	}
	t, err := bind(l, prefix, ac, c.HiddenSize)
	if err != nil {
		return nil, fmt.Errorf("gemma4 audio: %w", err)
	}
	t.prompt = tower.Prompt{Placeholder: tok, Begin: boa, End: eoa, Image: tok}
	return t, l.Err()
}

func bind(l *nn.Loader, prefix string, c Config, text int) (*Tower, error) {
	act, err := tower.Activation(c.Act)
	if err != nil {
		return nil, err
	}
	h, c0, c1 := c.Hidden, c.Channels[0], c.Channels[1]
	f1 := half(half(melBins))
	if (c0/4)*c1 != f1*c1 {
		// the reference sizes the projection (C0/4)·C1: right only
		// when C0 is the 128 mel bins
		return nil, fmt.Errorf("subsampling_conv_channels[0] is %d; the reference's projection needs the %d mel bins", c0, melBins)
	}
	t := &Tower{c: c, text: text, act: act, gradClip: float32(min(c.GradClip, math.MaxFloat32)),
		embedEps: float32(c.Eps), ext: media.NewGemma4Extractor()}
	hd := h / c.Heads
	t.qScale = float32(math.Pow(float64(hd), -0.5) / math.Ln2)
	t.kScale = float32(math.Log(1+math.E) / math.Ln2)
	a := prefix + "audio_tower."
	s := a + "subsample_conv_projection."
	// transformers' convolution weights are [out, in, kh, kw] ([out, in,
	// K] for the depthwise one); MLX's are channels-last, [out, kh, kw, in]
	// ([out, K, in]), told apart by shape. With one input channel both
	// are the same bytes.
	t.conv0 = dense(l, s+"layer0.conv.weight", []int{c0, 9}, layout{[]int{c0, 1, 3, 3}, nil}, layout{[]int{c0, 3, 3, 1}, nil})
	for tap := range 9 {
		// the tap's [C1, C0] slice
		torch := func(src []byte, size int) []byte {
			out := make([]byte, c1*c0*size)
			for o := range c1 {
				for i := range c0 {
					copy(out[(o*c0+i)*size:(o*c0+i+1)*size], src[((o*c0+i)*9+tap)*size:])
				}
			}
			return out
		}
		mlx := func(src []byte, size int) []byte {
			out := make([]byte, c1*c0*size)
			for o := range c1 {
				copy(out[o*c0*size:(o+1)*c0*size], src[(o*9+tap)*c0*size:])
			}
			return out
		}
		t.conv1 = append(t.conv1, dense(l, s+"layer1.conv.weight", []int{c1, c0}, layout{[]int{c1, c0, 3, 3}, torch}, layout{[]int{c1, 3, 3, c0}, mlx}))
	}
	t.norm0 = l.Tensor(s+"layer0.norm.weight", c0)
	t.norm1 = l.Tensor(s+"layer1.norm.weight", c1)
	t.inProj = l.Linear(s+"input_proj_linear", h, f1*c1, false).W
	t.pos = relPositions(c)
	for i := range c.Layers {
		lp := fmt.Sprintf("%slayers.%d.", a, i)
		ff := func(p string) feedForward {
			return feedForward{
				pre:  nn.RMSNorm{W: l.Tensor(p+"pre_layer_norm.weight", h), Eps: defaultEps},
				post: nn.RMSNorm{W: l.Tensor(p+"post_layer_norm.weight", h), Eps: defaultEps},
				up:   clip(l, c, p+"ffw_layer_1", 4*h, h), down: clip(l, c, p+"ffw_layer_2", h, 4*h),
			}
		}
		at := lp + "self_attn."
		ly := layer{
			ff1: ff(lp + "feed_forward1."), ff2: ff(lp + "feed_forward2."),
			preAttn:  nn.RMSNorm{W: l.Tensor(lp+"norm_pre_attn.weight", h), Eps: defaultEps},
			postAttn: nn.RMSNorm{W: l.Tensor(lp+"norm_post_attn.weight", h), Eps: defaultEps},
			out:      nn.RMSNorm{W: l.Tensor(lp+"norm_out.weight", h), Eps: defaultEps},
			q:        clip(l, c, at+"q_proj", h, h), k: clip(l, c, at+"k_proj", h, h),
			v: clip(l, c, at+"v_proj", h, h), post: clip(l, c, at+"post", h, h),
			relK:     l.Linear(at+"relative_k_proj", h, h, false).W,
			qScale:   perDimScale(l, at+"per_dim_scale", hd),
			convPre:  nn.RMSNorm{W: l.Tensor(lp+"lconv1d.pre_layer_norm.weight", h), Eps: float32(c.Eps)},
			convNorm: nn.RMSNorm{W: l.Tensor(lp+"lconv1d.conv_norm.weight", h), Eps: float32(c.Eps)},
			start:    clip(l, c, lp+"lconv1d.linear_start", 2*h, h), end: clip(l, c, lp+"lconv1d.linear_end", h, h),
			conv: dense(l, lp+"lconv1d.depthwise_conv1d.weight", []int{h, c.ConvKernel},
				layout{[]int{h, 1, c.ConvKernel}, nil}, layout{[]int{h, c.ConvKernel, 1}, nil}),
			heads: c.Heads, headDim: hd, left: c.ContextLeft - 1, right: c.ContextRight,
		}
		// the causal conv starts from zeros each clip: state stays zero,
		// next takes the writes nobody reads
		for _, b := range []*tensor.T{&ly.convState, &ly.convNext} {
			if *b, err = l.B.Alloc([]int{c.ConvKernel - 1, h}); err != nil {
				return nil, err
			}
		}
		t.layers = append(t.layers, ly)
	}
	t.outProj = l.Linear(a+"output_proj", c.OutDims, h, true)
	t.embed = l.Linear(prefix+"embed_audio.embedding_projection", text, c.OutDims, false).W
	// 30 s of audio: the extractor's frames through both convolutions
	t.maxTokens = TokensFor(maxFrames(), maxFrames())
	return t, l.Err()
}

// layout is a checkpoint shape a dense weight may have, and how its bytes
// become the uploaded shape's (nil: as they are).
type layout struct {
	shape []int
	pick  func(src []byte, size int) []byte
}

// dense reads a dense weight in one of the layouts and uploads it as
// shape.
func dense(l *nn.Loader, name string, shape []int, layouts ...layout) tensor.T {
	w := l.W.Tensor(name)
	if w.Data == nil {
		return tensor.T{} // the audit names it
	}
	if w.Quant != nil {
		l.Fail(fmt.Errorf("tensor %q is quantized; Hearth reads it dense only", name))
		return tensor.T{}
	}
	switch w.DType {
	case tensor.F32, tensor.F16, tensor.BF16:
	default:
		l.Fail(fmt.Errorf("tensor %q has dtype %s", name, w.DType))
		return tensor.T{}
	}
	for _, lo := range layouts {
		if slices.Equal(w.Shape, lo.shape) {
			if lo.pick != nil {
				w.Data = lo.pick(w.Data, w.DType.Size())
			}
			w.Shape = shape
			return l.Weight(w, shape...)
		}
	}
	var want []string
	for _, lo := range layouts {
		want = append(want, fmt.Sprint(lo.shape))
	}
	l.Fail(fmt.Errorf("tensor %q has shape %v, want %s", name, w.Shape, strings.Join(want, " or ")))
	return tensor.T{}
}

// scalar reads a one-value tensor (a clip bound), or reports it absent.
func scalar(l *nn.Loader, name string) (float32, bool) {
	w, ok := l.W.Optional(name)
	if !ok {
		return 0, false
	}
	if w.Quant != nil || tensor.Elements(w.Shape) != 1 || len(w.Data) != w.DType.Size() {
		l.Fail(fmt.Errorf("tensor %q has shape %v; want one value", name, w.Shape))
		return 0, false
	}
	v := make([]float32, 1)
	tensor.Float32(w.DType, w.Data, 0, v)
	return v[0], true
}

// clip binds a Gemma4ClippableLinear. Its bounds are buffers of the
// checkpoint; one that is absent or infinite clamps nothing.
func clip(l *nn.Loader, c Config, prefix string, out, in int) clipped {
	m := clipped{w: l.Linear(prefix+".linear", out, in, false).W}
	if !c.Clipped {
		return m
	}
	bound := func(name string, dflt float32) float32 {
		if v, ok := scalar(l, prefix+"."+name); ok {
			return v
		}
		return dflt
	}
	inf := float32(math.Inf(1))
	m.inLo, m.inHi = bound("input_min", -inf), bound("input_max", inf)
	m.outLo, m.outHi = bound("output_min", -inf), bound("output_max", inf)
	m.clipIn = !math.IsInf(float64(m.inLo), -1) || !math.IsInf(float64(m.inHi), 1)
	m.clipOu = !math.IsInf(float64(m.outLo), -1) || !math.IsInf(float64(m.outHi), 1)
	if m.inLo > m.inHi || m.outLo > m.outHi {
		l.Fail(fmt.Errorf("%s: clip bounds input [%v, %v], output [%v, %v]", prefix, m.inLo, m.inHi, m.outLo, m.outHi))
	}
	return m
}

// perDimScale uploads softplus(per_dim_scale) (torch's, threshold 20, in
// float32): a fixed function of a weight.
func perDimScale(l *nn.Loader, name string, hd int) tensor.T {
	w := l.W.Tensor(name)
	if w.Data == nil {
		return tensor.T{}
	}
	if w.Quant != nil || len(w.Shape) != 1 || w.Shape[0] != hd {
		l.Fail(fmt.Errorf("tensor %q has shape %v, want [%d]", name, w.Shape, hd))
		return tensor.T{}
	}
	v := make([]float32, hd)
	tensor.Float32(w.DType, w.Data, 0, v)
	data := make([]byte, 4*hd)
	for i, x := range v {
		if x <= 20 {
			x = float32(math.Log1p(math.Exp(float64(x))))
		}
		b := math.Float32bits(x)
		data[4*i], data[4*i+1], data[4*i+2], data[4*i+3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
	}
	return l.Weight(tensor.Weight{Name: name, DType: tensor.F32, Shape: []int{hd}, Data: data}, hd)
}

// relPositions is Gemma4AudioRelPositionalEncoding's table: for positions
// context/2 down to 0, [sin(p·τ), cos(p·τ)] over the hidden/2 inverse
// timescales τ, computed in float32 as the reference's tensors are.
func relPositions(c Config) []float32 {
	ctx := c.Chunk + c.ContextLeft - 1 + c.ContextRight
	n := c.Hidden / 2
	inc := math.Log(10000) / float64(max(n-1, 1))
	inv := make([]float32, n)
	for i := range inv {
		inv[i] = float32(math.Exp(float64(float32(i) * float32(-inc))))
	}
	p := ctx/2 + 1
	out := make([]float32, p*c.Hidden)
	for r := range p {
		pos := float32(ctx/2 - r)
		for i, f := range inv {
			x := float64(pos * f)
			out[r*c.Hidden+i] = float32(math.Sin(x))
			out[r*c.Hidden+n+i] = float32(math.Cos(x))
		}
	}
	return out
}

// The longest clip Gemma4AudioFeatureExtractor keeps (max_length 480000
// samples at 16 kHz), and its feature frames: 160 zeros in front, frames
// of 321 samples every 160.
const (
	maxSeconds = 30
	maxSamples = maxSeconds * 16000
)

func maxFrames() int { return (160+maxSamples-321)/160 + 1 }

// TokensFor is the soft-token count of features with frames frames, valid
// of them audio: the frame mask through the two stride-2 convolutions
// (mask[::2] twice, as Gemma4Processor counts), whose valid rows the model
// keeps.
func TokensFor(frames, valid int) int {
	return min(half(half(frames)), (max(valid, 0)+3)/4)
}

// Extract is Gemma4AudioFeatureExtractor.
func (t *Tower) Extract(a media.Audio) (media.Features, bool) { return t.ext.Extract(a) }

// Rate is the extractor's sampling rate.
func (t *Tower) Rate() int { return t.ext.Rate() }

// MaxSeconds is the longest clip the extractor keeps.
func (t *Tower) MaxSeconds() float64 { return maxSeconds }

// Tokens is the number of soft tokens of a clip's features.
func (t *Tower) Tokens(f media.Features) int { return TokensFor(f.Frames, f.Valid) }

// MaxTokens bounds Tokens.
func (t *Tower) MaxTokens() int { return t.maxTokens }

// Prompt is Gemma4Processor's: each <|audio|> the chat template writes
// becomes <|audio> + n × <|audio|> + <audio|>.
func (t *Tower) Prompt() tower.Prompt { return t.prompt }

// Encode records the tower and the embedder over one clip's features:
// [Tokens(f), text hidden].
func (t *Tower) Encode(g *tensor.Graph, f media.Features) (tensor.T, error) {
	_, soft, err := t.Forward(g, f)
	return soft, err
}

// Forward records the tower over one clip's features: its last hidden
// state (output_proj's, [Tokens(f), output_proj_dims]) and the embedded
// soft tokens (Gemma4MultimodalEmbedder's, [Tokens(f), text hidden]).
func (t *Tower) Forward(g *tensor.Graph, f media.Features) (hidden, soft tensor.T, err error) {
	if f.Bins != melBins || f.Frames <= 0 || len(f.Data) != f.Frames*f.Bins || f.Valid > f.Frames {
		return hidden, soft, fmt.Errorf("gemma4 audio: features of %d frames (%d valid) × %d bins (%d values); want %d bins", f.Frames, f.Valid, f.Bins, len(f.Data), melBins)
	}
	n := t.Tokens(f)
	if n <= 0 {
		return hidden, soft, fmt.Errorf("%w: the audio clip is too short to hear (%d feature frames)", media.ErrMedia, f.Valid)
	}
	x := t.subsample(g, f, n)
	pos := g.Input(t.pos, len(t.pos)/t.c.Hidden, t.c.Hidden)
	for i := range t.layers {
		x = t.layer(g, &t.layers[i], x, pos)
	}
	hidden = t.outProj.Forward(g, x)
	x = g.RMSNorm(hidden, tensor.T{}, t.embedEps, 0)
	return hidden, g.MatMul(x, t.embed), g.Err()
}

// subsample is Gemma4AudioSubSampleConvProjection over the features,
// keeping the first n time steps (the valid ones: those past them only
// see padding, and the reference drops them).
func (t *Tower) subsample(g *tensor.Graph, f media.Features, n int) tensor.T {
	c1 := t.c.Channels[1]
	t0, f0 := half(f.Frames), half(melBins)
	t1, f1 := half(t0), half(f0)
	// layer 0 (one input channel): the 3×3 patches cut on the host,
	// zero outside the features (padding 1); invalid frames are zero in
	// the features already (the extractor's mask)
	cols := make([]float32, t0*f0*9)
	for y := range t0 {
		for x := range f0 {
			for dy := range 3 {
				for dx := range 3 {
					r, c := 2*y+dy-1, 2*x+dx-1
					if r >= 0 && r < f.Frames && c >= 0 && c < melBins {
						cols[(y*f0+x)*9+dy*3+dx] = f.Data[r*melBins+c]
					}
				}
			}
		}
	}
	h := g.MatMul(g.Input(cols, t0*f0, 9), t.conv0)
	h = g.Clamp(g.LayerNorm(h, t.norm0, tensor.T{}, float32(t.c.Eps)), 0, float32(math.Inf(1)))
	// layer 1: each tap gathers its rows of layer 0's output (a time
	// step past the valid ones is masked to zero, as the reference
	// multiplies by mask[::2]; so is the padding), times the tap's
	// [C1, C0] weight, summed over the taps
	valid0 := (f.Valid + 1) / 2 // mask[::2]: frames 0, 2, 4, … < Valid
	zeros := g.Scale(g.Slice(h, 0, 0, t1*f1), 0)
	var acc tensor.T
	for dy := range 3 {
		for dx := range 3 {
			from := make([]int32, t1*f1)
			for y := range t1 {
				for x := range f1 {
					r, c := 2*y+dy-1, 2*x+dx-1
					from[y*f1+x] = -1
					if r >= 0 && r < t0 && r < valid0 && c >= 0 && c < f0 {
						from[y*f1+x] = int32(r*f0 + c)
					}
				}
			}
			term := g.MatMul(g.Splice(zeros, h, g.InputInts(from, t1*f1)), t.conv1[dy*3+dx])
			if acc.IsNone() {
				acc = term
			} else {
				acc = g.Add(acc, term)
			}
		}
	}
	h = g.Clamp(g.LayerNorm(acc, t.norm1, tensor.T{}, float32(t.c.Eps)), 0, float32(math.Inf(1)))
	// [T1·F1, C1] row-major is [T1, F1·C1]: the reference's permute to
	// (time, frequency, channel) and flatten
	h = g.Slice(g.Reshape(h, t1, f1*c1), 0, 0, n)
	return g.MatMul(h, t.inProj)
}

func (t *Tower) clampGrad(g *tensor.Graph, x tensor.T) tensor.T {
	return g.Clamp(x, -t.gradClip, t.gradClip)
}

// feedForward is Gemma4AudioFeedForward.
func (t *Tower) feedForward(g *tensor.Graph, m *feedForward, x tensor.T) tensor.T {
	res := x
	x = m.pre.Forward(g, t.clampGrad(g, x))
	x = m.down.forward(g, t.act(g, m.up.forward(g, x)))
	x = m.post.Forward(g, t.clampGrad(g, x))
	return g.Add(g.Scale(x, float32(t.c.ResidualWeight)), res)
}

// layer is Gemma4AudioLayer.
func (t *Tower) layer(g *tensor.Graph, ly *layer, x, pos tensor.T) tensor.T {
	n, hid := g.Shape(x)[0], t.c.Hidden
	x = t.feedForward(g, &ly.ff1, x)
	res := x
	h := ly.preAttn.Forward(g, t.clampGrad(g, x))
	// Gemma4AudioAttention: q scaled by q_scale then softplus(per_dim_scale),
	// k by k_scale; the relative keys are relative_k_proj of the table
	q := g.Mul(g.Scale(g.Reshape(ly.q.forward(g, h), n, ly.heads, ly.headDim), t.qScale), ly.qScale)
	k := g.Scale(g.Reshape(ly.k.forward(g, h), n, ly.heads, ly.headDim), t.kScale)
	v := g.Reshape(ly.v.forward(g, h), n, ly.heads, ly.headDim)
	rel := g.MatMul(pos, ly.relK)
	rel = g.Reshape(rel, g.Shape(rel)[0], ly.heads, ly.headDim)
	a := g.RelAttention(q, k, v, rel, ly.left, ly.right, float32(t.c.LogitCap))
	h = ly.post.forward(g, g.Reshape(a, n, hid))
	h = ly.postAttn.Forward(g, t.clampGrad(g, h))
	x = g.Add(h, res)
	// Gemma4AudioLightConv1d
	res = x
	h = ly.start.forward(g, ly.convPre.Forward(g, x))
	h = g.Mul(g.Slice(h, -1, 0, hid), g.Sigmoid(g.Slice(h, -1, hid, 2*hid)))
	h = g.CausalConv1d(h, ly.conv, ly.convState, ly.convNext)
	h = ly.convNorm.Forward(g, t.clampGrad(g, h))
	h = ly.end.forward(g, t.act(g, h))
	x = g.Add(h, res)
	x = t.feedForward(g, &ly.ff2, x)
	return ly.out.Forward(g, t.clampGrad(g, x))
}
