package whisper

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"hearth/engine/nn"
	"hearth/engine/tensor"
	"hearth/engine/tokenizer"
	"hearth/engine/tower"
	"hearth/engine/weights"
	"hearth/media"
)

// eps is nn.LayerNorm's default, which every Whisper norm uses.
const eps = 1e-5

type norm struct{ w, b tensor.T }

func (n norm) forward(g *tensor.Graph, x tensor.T) tensor.T { return g.LayerNorm(x, n.w, n.b, eps) }

type attn struct{ q, k, v, o nn.Linear }

type encLayer struct {
	ln1, ln2 norm
	self     attn
	fc1, fc2 nn.Linear
}

type decLayer struct {
	ln1, lnX, ln2 norm
	self, cross   attn
	fc1, fc2      nn.Linear
}

// Model is a Whisper checkpoint bound to a backend.
type Model struct {
	Config     Config
	Generation Generation
	Features   Features
	Tok        *tokenizer.Tokenizer

	b   tensor.Backend
	set *weights.Set
	act func(*tensor.Graph, tensor.T) tensor.T
	// conv1 is the first convolution as a matrix [d, 3·mels] over rows of
	// three frames (k-major: frame t-1, t, t+1, each of mels); conv2 is
	// the second's taps 1 and 2 [d, 2d] and its tap 0 [d, d] (stride 2:
	// output t reads frames 2t-1, 2t, 2t+1).
	conv1, conv2, conv2Tap0 nn.Linear
	encPos                  tensor.T
	enc                     []encLayer
	encNorm                 norm
	embed, decPos, out      tensor.T
	dec                     []decLayer
	decNorm                 norm

	// Per-transcription state: the cross-attention keys and values of the
	// last encoded clip and the decoder's self-attention cache, one pair
	// per decoder layer.
	crossK, crossV []tensor.T
	selfK, selfV   []tensor.T
	extract        *media.WhisperExtractor
}

// Load reads the Whisper checkpoint in dir onto b. The weight audit names
// any tensor the model does not use or misses.
func Load(dir string, b tensor.Backend) (*Model, error) {
	c, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	gen, err := ReadGeneration(dir, c)
	if err != nil {
		return nil, err
	}
	feat, err := ReadFeatures(dir, c)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, err
	}
	act, err := tower.Activation(c.Act)
	if err != nil {
		return nil, fmt.Errorf("whisper: %w", err)
	}
	set, err := weights.Open(dir)
	if err != nil {
		return nil, err
	}
	m := &Model{Config: c, Generation: gen, Features: feat, Tok: tok, b: b, set: set, act: act,
		extract: media.NewWhisperExtractor(feat.Size, feat.Samples)}
	// Dense weights only: Hearth has no quantized Whisper layout to read.
	binder := weights.NewBinder(set, weights.QuantConfig{})
	l := &nn.Loader{B: b, W: binder}
	m.bind(l)
	if err := l.Err(); err != nil {
		m.Close()
		return nil, fmt.Errorf("whisper: %w", err)
	}
	if err := binder.Audit(nil); err != nil {
		m.Close()
		return nil, fmt.Errorf("whisper: %w", err)
	}
	if err := m.alloc(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

func (m *Model) bind(l *nn.Loader) {
	c := m.Config
	d := c.Hidden
	ln := func(p string) norm { return norm{w: l.Tensor(p+".weight", d), b: l.Tensor(p+".bias", d)} }
	at := func(p string) attn {
		return attn{q: l.Linear(p+".q_proj", d, d, true), k: l.Linear(p+".k_proj", d, d, false),
			v: l.Linear(p+".v_proj", d, d, true), o: l.Linear(p+".out_proj", d, d, true)}
	}
	e := "model.encoder."
	m.conv1 = nn.Linear{W: m.convWeight(l, e+"conv1.weight", c.Mels, 0, 3), B: l.Tensor(e+"conv1.bias", d)}
	m.conv2 = nn.Linear{W: m.convWeight(l, e+"conv2.weight", d, 1, 2), B: l.Tensor(e+"conv2.bias", d)}
	m.conv2Tap0 = nn.Linear{W: m.convWeight(l, e+"conv2.weight", d, 0, 1)}
	m.encPos = l.Tensor(e+"embed_positions.weight", c.SourcePos, d)
	for i := 0; i < c.EncoderLayers; i++ {
		p := fmt.Sprintf("%slayers.%d.", e, i)
		m.enc = append(m.enc, encLayer{ln1: ln(p + "self_attn_layer_norm"), ln2: ln(p + "final_layer_norm"),
			self: at(p + "self_attn"), fc1: l.Linear(p+"fc1", c.EncoderFFN, d, true), fc2: l.Linear(p+"fc2", d, c.EncoderFFN, true)})
	}
	m.encNorm = ln(e + "layer_norm")
	dp := "model.decoder."
	m.embed = l.Tensor(dp+"embed_tokens.weight", c.Vocab, d)
	m.decPos = l.Tensor(dp+"embed_positions.weight", c.TargetPos, d)
	for i := 0; i < c.DecoderLayers; i++ {
		p := fmt.Sprintf("%slayers.%d.", dp, i)
		m.dec = append(m.dec, decLayer{ln1: ln(p + "self_attn_layer_norm"), lnX: ln(p + "encoder_attn_layer_norm"),
			ln2: ln(p + "final_layer_norm"), self: at(p + "self_attn"), cross: at(p + "encoder_attn"),
			fc1: l.Linear(p+"fc1", c.DecoderFFN, d, true), fc2: l.Linear(p+"fc2", d, c.DecoderFFN, true)})
	}
	m.decNorm = ln(dp + "layer_norm")
	// proj_out is tied to embed_tokens (transformers does not save it);
	// a checkpoint that stores it anyway is read.
	m.out = l.Optional("proj_out.weight", c.Vocab, d)
	if m.out.IsNone() {
		m.out = m.embed
	}
}

// convWeight reads taps [from, from+n) of a Conv1d weight [d, in, 3]
// (PyTorch's layout) as a matrix [d, n·in], tap-major, the order the
// graph lays the input frames out in.
func (m *Model) convWeight(l *nn.Loader, name string, in, from, n int) tensor.T {
	d := m.Config.Hidden
	w := l.W.Tensor(name)
	if w.Data == nil {
		return tensor.T{} // the audit names it
	}
	if w.Quantized() || len(w.Shape) != 3 || w.Shape[0] != d || w.Shape[1] != in || w.Shape[2] != 3 {
		l.Fail(fmt.Errorf("%s: shape %v (%s), want dense [%d, %d, 3]", name, w.Shape, w.DType, d, in))
		return tensor.T{}
	}
	switch w.DType {
	case tensor.F32, tensor.F16, tensor.BF16:
	default:
		l.Fail(fmt.Errorf("%s: dtype %s", name, w.DType))
		return tensor.T{}
	}
	src := make([]float32, d*in*3)
	tensor.Float32(w.DType, w.Data, 0, src)
	out := make([]byte, d*n*in*4)
	for o := 0; o < d; o++ {
		for k := 0; k < n; k++ {
			for c := 0; c < in; c++ {
				v := src[(o*in+c)*3+from+k]
				binary.LittleEndian.PutUint32(out[((o*n+k)*in+c)*4:], math.Float32bits(v))
			}
		}
	}
	return l.Weight(tensor.Weight{Name: fmt.Sprintf("%s[taps %d:%d]", name, from, from+n), DType: tensor.F32,
		Shape: []int{d, n * in}, Data: out}, d, n*in)
}

// alloc makes the persistent buffers: cross-attention K/V per decoder
// layer [source, heads, head dim] and the self-attention cache
// [target, heads, head dim].
func (m *Model) alloc() error {
	c := m.Config
	h, hd := c.DecoderHeads, c.Hidden/c.DecoderHeads
	for range m.dec {
		for _, pair := range []struct {
			dst  *[]tensor.T
			rows int
		}{{&m.crossK, c.SourcePos}, {&m.crossV, c.SourcePos}, {&m.selfK, c.TargetPos}, {&m.selfV, c.TargetPos}} {
			t, err := m.b.Alloc([]int{pair.rows, h, hd})
			if err != nil {
				return err
			}
			*pair.dst = append(*pair.dst, t)
		}
	}
	return nil
}

// Close frees the model's buffers and unmaps its weights. The backend is
// the caller's.
func (m *Model) Close() {
	for _, ts := range [][]tensor.T{m.crossK, m.crossV, m.selfK, m.selfV} {
		for _, t := range ts {
			m.b.Free(t)
		}
	}
	m.crossK, m.crossV, m.selfK, m.selfV = nil, nil, nil, nil
	if m.set != nil {
		m.set.Close()
		m.set = nil
	}
}

// Extract is the model's feature extractor: 16 kHz audio padded or cut to
// the chunk the encoder takes (cut reports that it was cut).
func (m *Model) Extract(a media.Audio) (f media.Features, cut bool) { return m.extract.Extract(a) }

// ChunkSeconds is the longest clip the encoder takes whole.
func (m *Model) ChunkSeconds() float64 { return float64(m.Features.Samples) / float64(m.Features.Rate) }

func (m *Model) attention(g *tensor.Graph, a attn, x tensor.T, n, heads int) (q, k, v tensor.T) {
	hd := m.Config.Hidden / heads
	q = g.Reshape(a.q.Forward(g, x), n, heads, hd)
	k = g.Reshape(a.k.Forward(g, x), n, heads, hd)
	v = g.Reshape(a.v.Forward(g, x), n, heads, hd)
	return q, k, v
}

// encodeGraph records the encoder over features f ([2·source frames] of
// mels) and the cross-attention keys and values of every decoder layer,
// stored into their buffers. It returns the encoder's last_hidden_state.
func (m *Model) encodeGraph(g *tensor.Graph, f media.Features) (tensor.T, error) {
	c := m.Config
	frames, mels, d, s := 2*c.SourcePos, c.Mels, c.Hidden, c.SourcePos
	if f.Bins != mels || f.Frames != frames || len(f.Data) != frames*mels {
		return tensor.T{}, fmt.Errorf("whisper: features of %d frames × %d bins, the encoder takes %d × %d", f.Frames, f.Bins, frames, mels)
	}
	// conv1 (kernel 3, padding 1) as one product over rows of three
	// frames; the rows are laid out here, from host data.
	rows := make([]float32, frames*3*mels)
	for t := 0; t < frames; t++ {
		for k := 0; k < 3; k++ {
			if src := t + k - 1; src >= 0 && src < frames {
				copy(rows[(t*3+k)*mels:(t*3+k+1)*mels], f.Data[src*mels:(src+1)*mels])
			}
		}
	}
	x := m.act(g, m.conv1.Forward(g, g.Input(rows, frames, 3*mels)))
	// conv2 (kernel 3, stride 2, padding 1): output t is taps 1, 2 over
	// frames 2t, 2t+1 (a row of pairs) plus tap 0 over frame 2t-1, the
	// previous pair's odd frame: that product shifted down one row, with a
	// zero row first.
	pairs := g.Reshape(x, s, 2*d)
	y := m.conv2.Forward(g, pairs)
	prev := g.MatMul(g.Slice(pairs, -1, d, 2*d), m.conv2Tap0.W)
	from := make([]int32, s)
	for i := range from {
		from[i] = int32(i - 1)
	}
	y = g.Add(y, g.Splice(g.Scale(prev, 0), prev, g.InputInts(from, s)))
	x = m.act(g, y)
	ids := make([]int32, s)
	for i := range ids {
		ids[i] = int32(i)
	}
	x = g.Add(x, g.Embed(m.encPos, g.InputInts(ids, s)))
	hd := d / c.EncoderHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	for i := range m.enc {
		ly := &m.enc[i]
		q, k, v := m.attention(g, ly.self, ly.ln1.forward(g, x), s, c.EncoderHeads)
		a := g.Attention(q, k, v, tensor.AttnSpec{Scale: scale, KeyLen: s, Bidirectional: true})
		x = g.Add(x, ly.self.o.Forward(g, g.Reshape(a, s, d)))
		x = g.Add(x, ly.fc2.Forward(g, m.act(g, ly.fc1.Forward(g, ly.ln2.forward(g, x)))))
	}
	x = m.encNorm.forward(g, x)
	dh := d / c.DecoderHeads
	for i := range m.dec {
		a := m.dec[i].cross
		m.crossK[i] = g.Store(m.crossK[i], g.Reshape(a.k.Forward(g, x), s, c.DecoderHeads, dh), 0)
		m.crossV[i] = g.Store(m.crossV[i], g.Reshape(a.v.Forward(g, x), s, c.DecoderHeads, dh), 0)
	}
	return x, g.Err()
}

// Encode runs the encoder over f and keeps the cross-attention keys and
// values for the decoding that follows. With hidden non-nil it also reads
// the encoder's output into it ([source, d]).
func (m *Model) Encode(ctx context.Context, f media.Features, hidden []float32) error {
	g := tensor.NewGraph(m.b)
	x, err := m.encodeGraph(g, f)
	if err != nil {
		return err
	}
	if err := m.b.Run(ctx, g, x); err != nil {
		return err
	}
	if hidden != nil {
		return m.b.Read(x, hidden)
	}
	return nil
}

// decodeGraph records the decoder over ids at positions [pos, pos+n),
// writing their self-attention keys and values into the cache, and
// returns the logits of the last one [1, vocab].
func (m *Model) decodeGraph(g *tensor.Graph, ids []int32, pos int) (tensor.T, error) {
	c := m.Config
	n, d := len(ids), c.Hidden
	if n == 0 || pos < 0 || pos+n > c.TargetPos {
		return tensor.T{}, fmt.Errorf("whisper: %d tokens at position %d, the decoder holds %d", n, pos, c.TargetPos)
	}
	for _, id := range ids {
		if id < 0 || int(id) >= c.Vocab {
			return tensor.T{}, fmt.Errorf("whisper: token %d is outside the vocabulary of %d", id, c.Vocab)
		}
	}
	positions := make([]int32, n)
	for i := range positions {
		positions[i] = int32(pos + i)
	}
	x := g.Embed(m.embed, g.InputInts(ids, n))
	if c.ScaleEmbedding {
		x = g.Scale(x, float32(math.Sqrt(float64(d))))
	}
	x = g.Add(x, g.Embed(m.decPos, g.InputInts(positions, n)))
	heads := c.DecoderHeads
	hd := d / heads
	scale := float32(1 / math.Sqrt(float64(hd)))
	for i := range m.dec {
		ly := &m.dec[i]
		q, k, v := m.attention(g, ly.self, ly.ln1.forward(g, x), n, heads)
		m.selfK[i] = g.Store(m.selfK[i], k, pos)
		m.selfV[i] = g.Store(m.selfV[i], v, pos)
		a := g.Attention(q, m.selfK[i], m.selfV[i], tensor.AttnSpec{Scale: scale, QueryPos: pos, KeyLen: pos + n})
		x = g.Add(x, ly.self.o.Forward(g, g.Reshape(a, n, d)))
		h := ly.lnX.forward(g, x)
		qx := g.Reshape(ly.cross.q.Forward(g, h), n, heads, hd)
		a = g.Attention(qx, m.crossK[i], m.crossV[i], tensor.AttnSpec{Scale: scale, KeyLen: c.SourcePos, Bidirectional: true})
		x = g.Add(x, ly.cross.o.Forward(g, g.Reshape(a, n, d)))
		x = g.Add(x, ly.fc2.Forward(g, m.act(g, ly.fc1.Forward(g, ly.ln2.forward(g, x)))))
	}
	if n > 1 {
		x = g.Slice(x, 0, n-1, n)
	}
	x = m.decNorm.forward(g, x)
	return g.MatMul(x, m.out), g.Err()
}

// Step runs the decoder over ids at positions [pos, pos+len(ids)) (the
// cache holds positions before pos) and reads the last one's logits into
// logits [vocab].
func (m *Model) Step(ctx context.Context, ids []int32, pos int, logits []float32) error {
	g := tensor.NewGraph(m.b)
	out, err := m.decodeGraph(g, ids, pos)
	if err != nil {
		return err
	}
	if err := m.b.Run(ctx, g, out); err != nil {
		return err
	}
	return m.b.Read(out, logits)
}
