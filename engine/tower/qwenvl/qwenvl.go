// Package qwenvl is the Qwen-VL vision tower as Qwen 3.5 has it
// (transformers 5.17's Qwen3_5VisionModel): a conv3d patch embedding, a
// learned position grid resampled bilinearly to each picture's patch grid,
// 2-D rotary attention blocks, and the patch merger that turns each 2×2
// block of patches into one of the decoder's soft tokens. It takes the
// pixel values of media's Qwen-VL image or video processor (patches in
// merge-block order, with their grid_thw); a clip's temporal patches
// attend each within itself.
package qwenvl

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

// Config is a Qwen3_5VisionConfig, with its defaults.
type Config struct {
	Depth        int    `json:"depth"`
	Hidden       int    `json:"hidden_size"`
	Act          string `json:"hidden_act"`
	Intermediate int    `json:"intermediate_size"`
	Heads        int    `json:"num_heads"`
	Channels     int    `json:"in_channels"`
	PatchSize    int    `json:"patch_size"`
	Merge        int    `json:"spatial_merge_size"`
	Temporal     int    `json:"temporal_patch_size"`
	OutHidden    int    `json:"out_hidden_size"`
	NumPos       int    `json:"num_position_embeddings"`
	// Deepstack is Qwen3-VL's deepstack_visual_indexes; Qwen 3.5 has none
	// and this tower runs none.
	Deepstack []int `json:"deepstack_visual_indexes"`
	Rope      struct {
		Type  string  `json:"rope_type"` // "axial" (5.17 writes it) or absent
		Theta float64 `json:"rope_theta"`
	} `json:"rope_parameters"`
}

// ParseConfig reads a vision_config object.
func ParseConfig(raw json.RawMessage) (Config, error) {
	c := Config{Depth: 27, Hidden: 1152, Act: "gelu_pytorch_tanh", Intermediate: 4304, Heads: 16, Channels: 3,
		PatchSize: 16, Merge: 2, Temporal: 2, OutHidden: 3584, NumPos: 2304}
	c.Rope.Theta = 10000
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &c); err != nil {
			return c, fmt.Errorf("vision_config: %w", err)
		}
	}
	for _, v := range []struct {
		key    string
		v, max int
	}{{"depth", c.Depth, 1024}, {"hidden_size", c.Hidden, 1 << 16}, {"intermediate_size", c.Intermediate, 1 << 18},
		{"num_heads", c.Heads, 1024}, {"in_channels", c.Channels, 16}, {"patch_size", c.PatchSize, 1 << 10},
		{"spatial_merge_size", c.Merge, 64}, {"temporal_patch_size", c.Temporal, 64}, {"out_hidden_size", c.OutHidden, 1 << 18},
		{"num_position_embeddings", c.NumPos, 1 << 24}} {
		if v.v <= 0 || v.v > v.max {
			return c, fmt.Errorf("vision_config: %q must be a positive integer up to %d, got %d", v.key, v.max, v.v)
		}
	}
	hd := c.Hidden / c.Heads
	if c.Hidden%c.Heads != 0 || hd%4 != 0 {
		return c, fmt.Errorf("vision_config: hidden_size %d over num_heads %d must give a head size that is a multiple of 4", c.Hidden, c.Heads)
	}
	if s := c.side(); s*s != c.NumPos {
		return c, fmt.Errorf("vision_config: num_position_embeddings %d is not a square", c.NumPos)
	}
	if len(c.Deepstack) > 0 {
		return c, fmt.Errorf("vision_config: deepstack_visual_indexes %v are not supported (Qwen 3.5 has none)", c.Deepstack)
	}
	if c.Rope.Type != "" && c.Rope.Type != "axial" {
		return c, fmt.Errorf("vision_config: rope_type %q is not supported (axial is)", c.Rope.Type)
	}
	if !(c.Rope.Theta > 0) {
		return c, fmt.Errorf("vision_config: rope_theta must be positive, got %v", c.Rope.Theta)
	}
	return c, nil
}

// side is the learned position grid's size per side.
func (c Config) side() int { return int(math.Round(math.Sqrt(float64(c.NumPos)))) }

// patchDim is one patch's values: channels × temporal × patch × patch.
func (c Config) patchDim() int { return c.Channels * c.Temporal * c.PatchSize * c.PatchSize }

// Tower is a Qwen 3.5 vision model bound to a checkpoint.
type Tower struct {
	c     Config
	patch nn.Linear // the conv3d as [hidden, C·T·p·p]
	// channelsLast: the patch weight is MLX's [out, T, p, p, C]; the host
	// reorders each patch to match
	channelsLast bool
	pos          []float32 // the learned position grid [NumPos, hidden], on the host
	rows, cols   *tensor.Rope
	blocks       []block
	merger       merger
	act          func(*tensor.Graph, tensor.T) tensor.T
	prompt       tower.Prompt
	video        tower.VideoPrompt
}

type ln struct{ w, b tensor.T }

func (l ln) forward(g *tensor.Graph, x tensor.T) tensor.T { return g.LayerNorm(x, l.w, l.b, 1e-6) }

type block struct {
	norm1, norm2 ln
	qkv, proj    nn.Linear
	fc1, fc2     nn.Linear
}

type merger struct {
	norm     ln
	fc1, fc2 nn.Linear
}

// topConfig is what Qwen3_5Config adds around its two models.
type topConfig struct {
	Vision json.RawMessage `json:"vision_config"`
	Image  int32           `json:"image_token_id"`
	Video  int32           `json:"video_token_id"`
	Start  int32           `json:"vision_start_token_id"`
	End    int32           `json:"vision_end_token_id"`
}

// prefixes are where the vision model's tensors live: transformers'
// save_pretrained, a save of the vision model's own parent, and mlx-vlm's.
var prefixes = []string{"model.visual.", "visual.", "vision_tower."}

// Load binds a Qwen 3.5 checkpoint's vision tower (its config.json is raw,
// its decoder config c).
func Load(raw []byte, c *config.Config, l *nn.Loader) (tower.Vision, error) {
	tc := topConfig{Image: 248056, Video: 248057, Start: 248053, End: 248054}
	if err := json.Unmarshal(raw, &tc); err != nil {
		return nil, fmt.Errorf("qwen3_5 vision: config.json: %w", err)
	}
	vc, err := ParseConfig(tc.Vision)
	if err != nil {
		return nil, fmt.Errorf("qwen3_5 vision: %w", err)
	}
	if vc.OutHidden != c.HiddenSize {
		return nil, fmt.Errorf("qwen3_5 vision: out_hidden_size %d is not the decoder's hidden_size %d", vc.OutHidden, c.HiddenSize)
	}
	for _, id := range []int32{tc.Image, tc.Video, tc.Start, tc.End} {
		if id < 0 || int(id) >= c.VocabSize {
			return nil, fmt.Errorf("qwen3_5 vision: special token %d is outside the vocabulary of %d", id, c.VocabSize)
		}
	}
	p := prefixes[0]
	for _, pre := range prefixes {
		if l.W.Has(pre + "patch_embed.proj.weight") {
			p = pre
			break
		}
	}
	t, err := Bind(l, p, vc)
	if err != nil {
		return nil, fmt.Errorf("qwen3_5 vision: %w", err)
	}
	// The chat template writes <|vision_start|><|image_pad|><|vision_end|>;
	// the processor repeats <|image_pad|> once per soft token.
	t.prompt = tower.Prompt{Placeholder: tc.Image, Begin: -1, End: -1, Image: tc.Image}
	// A clip's <|video_pad|> becomes, per temporal patch, its time and
	// <|vision_start|>, one <|video_pad|> per soft token, <|vision_end|>.
	t.video = tower.VideoPrompt{Placeholder: tc.Video, Begin: tc.Start, End: tc.End, Video: tc.Video}
	return t, nil
}

// Bind binds the vision model's tensors under prefix (e.g. "model.visual.").
func Bind(l *nn.Loader, prefix string, c Config) (*Tower, error) {
	t := &Tower{c: c}
	act, err := tower.Activation(c.Act)
	if err != nil {
		return nil, fmt.Errorf("%w", err)
	}
	t.act = act
	h, in := c.Hidden, c.patchDim()
	pe := prefix + "patch_embed.proj."
	if l.W.Has(pe + "scales") {
		return nil, fmt.Errorf("%sweight is quantized; Hearth reads it dense only", pe)
	}
	w := l.W.Tensor(pe + "weight")
	if w.Data != nil {
		ch, tp, p := c.Channels, c.Temporal, c.PatchSize
		switch s := w.Shape; {
		case len(s) == 5 && s[0] == h && s[1] == ch && s[2] == tp && s[3] == p && s[4] == p:
		case len(s) == 5 && s[0] == h && s[1] == tp && s[2] == p && s[3] == p && s[4] == ch:
			t.channelsLast = true
		default:
			return nil, fmt.Errorf("%sweight has shape %v, want [%d, %d, %d, %d, %d] (or MLX's [%d, %d, %d, %d, %d])", pe, s, h, ch, tp, p, p, h, tp, p, p, ch)
		}
		switch w.DType {
		case tensor.F32, tensor.F16, tensor.BF16:
		default:
			return nil, fmt.Errorf("%sweight has dtype %s", pe, w.DType)
		}
		w.Shape = []int{h, in}
	}
	t.patch = nn.Linear{W: l.Weight(w, h, in), B: l.Tensor(pe+"bias", h)}

	// The position grid is resampled per picture on the host (a fixed
	// four-row blend per patch), so it stays there, in float32.
	pw := l.W.Tensor(prefix + "pos_embed.weight")
	if pw.Data != nil {
		if len(pw.Shape) != 2 || pw.Shape[0] != c.NumPos || pw.Shape[1] != h || pw.Quantized() || pw.DType.Size()*c.NumPos*h != len(pw.Data) {
			return nil, fmt.Errorf("%spos_embed.weight has shape %v (%s), want dense [%d, %d]", prefix, pw.Shape, pw.DType, c.NumPos, h)
		}
		t.pos = make([]float32, c.NumPos*h)
		tensor.Float32(pw.DType, pw.Data, 0, t.pos)
	}
	if l.W.Has(prefix + "pos_embed.scales") {
		return nil, fmt.Errorf("%spos_embed is quantized; Hearth reads it dense only", prefix)
	}

	// The vision rotary: the first quarter of each head's frequency pairs
	// turn with the patch's row, the second with its column
	// (Qwen3_5VisionRotaryEmbedding over head_dim/2, rows then columns).
	hd := h / c.Heads
	r, err := nn.NewRope(config.Rope{Type: "default", Theta: c.Rope.Theta, PartialRotaryFactor: 1}, hd/2, 0)
	if err != nil {
		return nil, err
	}
	inv := r.Table(1).InvFreq // hd/4 frequencies
	rows, cols := make([]float32, hd/2), make([]float32, hd/2)
	copy(rows, inv)
	copy(cols[hd/4:], inv)
	t.rows = &tensor.Rope{InvFreq: rows, Dims: hd, Scale: 1}
	t.cols = &tensor.Rope{InvFreq: cols, Dims: hd, Scale: 1}

	lnorm := func(name string, dim int) ln {
		return ln{w: l.Tensor(name+".weight", dim), b: l.Tensor(name+".bias", dim)}
	}
	for i := 0; i < c.Depth; i++ {
		bp := fmt.Sprintf("%sblocks.%d.", prefix, i)
		t.blocks = append(t.blocks, block{
			norm1: lnorm(bp+"norm1", h), norm2: lnorm(bp+"norm2", h),
			qkv: l.Linear(bp+"attn.qkv", 3*h, h, true), proj: l.Linear(bp+"attn.proj", h, h, true),
			fc1: l.Linear(bp+"mlp.linear_fc1", c.Intermediate, h, true), fc2: l.Linear(bp+"mlp.linear_fc2", h, c.Intermediate, true),
		})
	}
	mh := h * c.Merge * c.Merge
	mp := prefix + "merger."
	t.merger = merger{norm: lnorm(mp+"norm", h), fc1: l.Linear(mp+"linear_fc1", mh, mh, true), fc2: l.Linear(mp+"linear_fc2", c.OutHidden, mh, true)}
	return t, l.Err()
}

// Config is the tower's configuration.
func (t *Tower) Config() Config { return t.c }

// Prompt is Qwen3VLProcessor's: each <|image_pad|> the chat template
// writes becomes one <|image_pad|> per soft token (Grid).
func (t *Tower) Prompt() tower.Prompt { return t.prompt }

// VideoPrompt is Qwen3VLProcessor's for clips (tower.VideoPrompt).
func (t *Tower) VideoPrompt() tower.VideoPrompt { return t.video }

// Grid is the picture's soft tokens as a (t, h, w) grid: its patch grid
// with each merge×merge block made one token.
func (t *Tower) Grid(px media.Pixels) [3]int {
	m := t.c.Merge
	return [3]int{px.Grid[0], px.Grid[1] / m, px.Grid[2] / m}
}

// check validates the processor's output for this tower.
func (t *Tower) check(px media.Pixels) error {
	c := t.c
	gt, gh, gw := px.Grid[0], px.Grid[1], px.Grid[2]
	n := gt * gh * gw
	if gt <= 0 || gh <= 0 || gw <= 0 || gh%c.Merge != 0 || gw%c.Merge != 0 || len(px.Shape) != 2 || px.Shape[0] != n || px.Shape[1] != c.patchDim() || len(px.Data) != n*c.patchDim() {
		return fmt.Errorf("qwen3_5 vision: pixel values %v (%d values) with grid %v, want [t·h·w, %d] with h and w multiples of %d", px.Shape, len(px.Data), px.Grid, c.patchDim(), c.Merge)
	}
	return nil
}

// Encode records the tower and the merger over one picture or clip:
// [tokens, out_hidden_size], tokens = grid t·h·w / merge².
func (t *Tower) Encode(g *tensor.Graph, px media.Pixels) (tensor.T, error) {
	_, merged, err := t.Forward(g, px)
	return merged, err
}

// Forward records the tower over one picture or clip and returns the
// blocks' output [patches, hidden] (last_hidden_state) and the merger's
// [patches/merge², out_hidden_size] (pooler_output).
func (t *Tower) Forward(g *tensor.Graph, px media.Pixels) (hidden, merged tensor.T, err error) {
	if err := t.check(px); err != nil {
		return tensor.T{}, tensor.T{}, err
	}
	if px.Grid[0] == 1 {
		return t.frame(g, px)
	}
	// A clip's temporal patches attend only within themselves (the
	// reference's cu_seqlens: one segment of h·w patches each), and every
	// other op works row by row: each patch runs alone, and the outputs
	// are stacked in order.
	c := t.c
	gt, hw := px.Grid[0], px.Grid[1]*px.Grid[2]
	n, m := gt*hw, hw/(c.Merge*c.Merge)
	hidden = g.Input(make([]float32, n*c.Hidden), n, c.Hidden)
	merged = g.Input(make([]float32, gt*m*c.OutHidden), gt*m, c.OutHidden)
	for f := 0; f < gt; f++ {
		one := media.Pixels{Data: px.Data[f*hw*c.patchDim() : (f+1)*hw*c.patchDim()], Shape: []int{hw, c.patchDim()}, Grid: [3]int{1, px.Grid[1], px.Grid[2]}}
		h, y, err := t.frame(g, one)
		if err != nil {
			return tensor.T{}, tensor.T{}, fmt.Errorf("temporal patch %d: %w", f, err)
		}
		hidden = g.Splice(hidden, h, g.InputInts(rowsAt(n, f*hw, hw), n))
		merged = g.Splice(merged, y, g.InputInts(rowsAt(gt*m, f*m, m), gt*m))
	}
	return hidden, merged, g.Err()
}

// rowsAt is Splice's from for a source of k rows landing at rows [at,
// at+k) of n: -1 elsewhere.
func rowsAt(n, at, k int) []int32 {
	from := make([]int32, n)
	for i := range from {
		from[i] = -1
		if i >= at && i < at+k {
			from[i] = int32(i - at)
		}
	}
	return from
}

// frame records the tower over one temporal patch (a picture is one).
func (t *Tower) frame(g *tensor.Graph, px media.Pixels) (hidden, merged tensor.T, err error) {
	c := t.c
	n, h := px.Shape[0], c.Hidden
	data := px.Data
	if t.channelsLast {
		data = channelsLast(px.Data, n, c.Channels, c.Temporal*c.PatchSize*c.PatchSize)
	}
	x := t.patch.Forward(g, g.Input(data, n, c.patchDim()))
	rows, cols := t.positions(px.Grid)
	x = g.Add(x, g.Input(t.posEmbed(px.Grid), n, h))
	rowT, colT := g.InputInts(rows, n), g.InputInts(cols, n)
	hd := h / c.Heads
	spec := tensor.AttnSpec{Scale: float32(1 / math.Sqrt(float64(hd))), KeyLen: n, Bidirectional: true}
	for i := range t.blocks {
		b := &t.blocks[i]
		qkv := b.qkv.Forward(g, b.norm1.forward(g, x))
		q := g.Reshape(g.Slice(qkv, -1, 0, h), n, c.Heads, hd)
		k := g.Reshape(g.Slice(qkv, -1, h, 2*h), n, c.Heads, hd)
		v := g.Reshape(g.Slice(qkv, -1, 2*h, 3*h), n, c.Heads, hd)
		// two rotations, by row then by column: each leaves the other's
		// frequency pairs alone (angle 0), so together they are the
		// reference's one rotation
		q = g.RoPE(g.RoPE(q, rowT, t.rows), colT, t.cols)
		k = g.RoPE(g.RoPE(k, rowT, t.rows), colT, t.cols)
		a := g.Attention(q, k, v, spec)
		x = g.Add(x, b.proj.Forward(g, g.Reshape(a, n, h)))
		x = g.Add(x, b.fc2.Forward(g, t.act(g, b.fc1.Forward(g, b.norm2.forward(g, x)))))
	}
	mh := h * c.Merge * c.Merge
	y := g.Reshape(t.merger.norm.forward(g, x), n/(c.Merge*c.Merge), mh)
	y = t.merger.fc2.Forward(g, g.GELU(t.merger.fc1.Forward(g, y)))
	return x, y, g.Err()
}

// channelsLast reorders each of n patches from (channel, rest) to (rest,
// channel), the order of MLX's channels-last conv3d weight.
func channelsLast(src []float32, n, ch, rest int) []float32 {
	out := make([]float32, len(src))
	for p := 0; p < n; p++ {
		s, d := src[p*ch*rest:], out[p*ch*rest:]
		for c := 0; c < ch; c++ {
			for r := 0; r < rest; r++ {
				d[r*ch+c] = s[c*rest+r]
			}
		}
	}
	return out
}

// positions are each patch's row and column in the picture, patches in
// the processor's order (frame, block row, block column, row in block,
// column in block).
func (t *Tower) positions(grid [3]int) (rows, cols []int32) {
	m := t.c.Merge
	for it := 0; it < grid[0]; it++ {
		for bh := 0; bh < grid[1]/m; bh++ {
			for bw := 0; bw < grid[2]/m; bw++ {
				for mh := 0; mh < m; mh++ {
					for mw := 0; mw < m; mw++ {
						rows = append(rows, int32(bh*m+mh))
						cols = append(cols, int32(bw*m+mw))
					}
				}
			}
		}
	}
	return rows, cols
}

// posEmbed is the learned position grid resampled to the picture's patch
// grid, as fast_pos_embed_interpolate does: bilinear with aligned corners
// (torch.linspace over the grid), the four neighbours' rows weighted and
// summed in float32, patches in the processor's order.
func (t *Tower) posEmbed(grid [3]int) []float32 {
	c := t.c
	side, h := c.side(), c.Hidden
	hs, ws := linspace(float32(side-1), grid[1]), linspace(float32(side-1), grid[2])
	rows, cols := t.positions(grid)
	out := make([]float32, len(rows)*h)
	var idx [4]int
	var wt [4]float32
	for p := range rows {
		y, x := hs[rows[p]], ws[cols[p]]
		y0, x0 := int(y), int(x)
		y1, x1 := min(y0+1, side-1), min(x0+1, side-1)
		dy, dx := y-float32(y0), x-float32(x0)
		idx = [4]int{y0*side + x0, y0*side + x1, y1*side + x0, y1*side + x1}
		wt = [4]float32{(1 - dy) * (1 - dx), (1 - dy) * dx, dy * (1 - dx), dy * dx}
		dst := out[p*h : (p+1)*h]
		for k := 0; k < 4; k++ {
			src := t.pos[idx[k]*h : (idx[k]+1)*h]
			for j := range dst {
				if k == 0 {
					dst[j] = src[j] * wt[k]
				} else {
					dst[j] += src[j] * wt[k]
				}
			}
		}
	}
	return out
}

// linspace is torch.linspace(0, end, steps) in float32: the first half
// counted up from 0, the second down from end, as ATen computes it.
func linspace(end float32, steps int) []float32 {
	out := make([]float32, steps)
	if steps == 1 {
		return out
	}
	step := end / float32(steps-1)
	for i := range out {
		if i < steps/2 {
			out[i] = step * float32(i)
		} else {
			out[i] = end - step*float32(steps-i-1)
		}
	}
	return out
}
