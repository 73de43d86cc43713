package towertest

import (
	"context"
	"fmt"
	"math"
	"slices"

	"hearth/engine/cache"
	"hearth/engine/checkpoint"
	"hearth/engine/config"
	"hearth/engine/families"
	"hearth/engine/family"
	"hearth/engine/nn"
	"hearth/engine/tensor"
	"hearth/engine/tower"
	"hearth/engine/tower/gemma4vision"
	"hearth/engine/tower/qwenvl"
	"hearth/engine/tower/siglip"
	"hearth/engine/weights"
	"hearth/media"
)

// Bound is a vision entry's decoder and vision tower bound on one backend
// the way the engine binds them (one loader, then the weight audit), for
// tests that drive the family and the tower directly.
type Bound struct {
	Checkpoint *checkpoint.Checkpoint
	Model      family.Model
	Vision     tower.Vision
	b          tensor.Backend
	set        *weights.Set
}

// Bind reads the entry in dir and binds it on b.
func Bind(dir string, b tensor.Backend) (*Bound, error) {
	ck, m, v, set, err := bindTower(dir, b, "vision", func(c *config.Config) loader[tower.Vision] {
		if l := families.VisionTower(c); l != nil {
			return loader[tower.Vision](l)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Bound{Checkpoint: ck, Model: m, Vision: v, b: b, set: set}, nil
}

// loader binds a tower of type T (families.VisionLoader, AudioLoader).
type loader[T any] func(raw []byte, c *config.Config, l *nn.Loader) (T, error)

// bindTower reads the entry in dir and binds its decoder and the tower
// towerFor gives for it on b, then audits the weights, as the engine does.
func bindTower[T any](dir string, b tensor.Backend, what string, towerFor func(*config.Config) loader[T]) (*checkpoint.Checkpoint, family.Model, T, *weights.Set, error) {
	var none T
	ck, err := checkpoint.Read(dir)
	if err != nil {
		return nil, nil, none, nil, err
	}
	fam, err := families.Resolve(ck.Config)
	if err != nil {
		return nil, nil, none, nil, err
	}
	load := towerFor(ck.Config)
	if load == nil {
		return nil, nil, none, nil, fmt.Errorf("%s: no %s tower for model_type %q", dir, what, ck.Config.ModelType)
	}
	set, err := weights.Open(dir)
	if err != nil {
		return nil, nil, none, nil, err
	}
	binder := weights.NewBinder(set, ck.Quant)
	l := &nn.Loader{B: b, W: binder}
	m, err := fam.New(ck.Config, l)
	t := none
	if err == nil {
		if t, err = load(ck.ConfigJSON, ck.Config, l); err == nil {
			err = binder.Audit(m.AuditIgnore())
		}
	}
	if err != nil {
		set.Close()
		return nil, nil, none, nil, err
	}
	return ck, m, t, set, nil
}

// Close closes the weights (the backend stays the caller's).
func (bd *Bound) Close() error { return bd.set.Close() }

// Grid is the soft-token grid of picture im, zero for a tower without.
func (bd *Bound) Grid(im Image) [3]int {
	if gv, ok := bd.Vision.(tower.Gridded); ok {
		return gv.Grid(im.Pixels())
	}
	return [3]int{}
}

// Decode runs case c through the decoder: the prompt in one pass with
// each picture's soft tokens (feats[i] for golden picture i) spliced in,
// then one pass per golden greedy id. It returns the logits before each
// greedy id.
func (bd *Bound) Decode(ctx context.Context, g *Golden, c Case, feats [][]float32) ([][]float32, error) {
	n := len(c.PromptIDs)
	caches, err := bd.Model.NewCaches(bd.b, n+len(c.GreedyIDs)+4, n)
	if err != nil {
		return nil, err
	}
	defer cache.FreeAll(caches)
	hidden := bd.Checkpoint.Config.HiddenSize
	rows := c.ImageRows()
	if len(rows) != len(c.Images) {
		return nil, fmt.Errorf("%s: %d image runs for %d images", c.Name, len(rows), len(c.Images))
	}
	var grids [][3]int
	step := func(tokens []int32, pos int, media bool) ([]float32, error) {
		gr := tensor.NewGraph(bd.b)
		batch := &family.Batch{Tokens: tokens, Pos: pos, Caches: caches}
		if media {
			for k, row := range rows {
				f := feats[c.Images[k]]
				grid := bd.Grid(g.Images[c.Images[k]])
				batch.Media = append(batch.Media, family.Media{Row: row, Embeds: gr.Input(f, len(f)/hidden, hidden), Grid: grid})
			}
		} else {
			batch.PastGrids = grids
		}
		logits, err := bd.Model.Forward(gr, batch)
		if err != nil {
			return nil, err
		}
		if err := bd.b.Run(ctx, gr, logits); err != nil {
			return nil, err
		}
		out := make([]float32, tensor.Elements(gr.Shape(logits)))
		return out, bd.b.Read(logits, out)
	}
	logits, err := step(c.PromptIDs, 0, true)
	if err != nil {
		return nil, err
	}
	for _, i := range c.Images {
		grids = append(grids, bd.Grid(g.Images[i]))
	}
	out := [][]float32{logits}
	for s := 0; s+1 < len(c.GreedyIDs); s++ {
		if logits, err = step(c.GreedyIDs[s:s+1], n+s, false); err != nil {
			return nil, err
		}
		out = append(out, logits)
	}
	return out, nil
}

// Outputs records the tower over one picture: its last hidden state
// (before the projector or merger) and the soft tokens.
func (bd *Bound) Outputs(g *tensor.Graph, px media.Pixels) (hidden, feats tensor.T, err error) {
	switch v := bd.Vision.(type) {
	case *siglip.Gemma3:
		if hidden, err = v.Tower().Forward(g, px); err != nil {
			return hidden, feats, err
		}
		feats, err = v.Encode(g, px)
		return hidden, feats, err
	case *qwenvl.Tower:
		return v.Forward(g, px)
	case *gemma4vision.Tower:
		_, pooled, out, err := v.Forward(g, px)
		return pooled, out, err
	}
	return hidden, feats, fmt.Errorf("no tower outputs for %T", bd.Vision)
}

// Run runs the tower over picture im on the backend and reads back its
// last hidden state and soft tokens.
func (bd *Bound) Run(ctx context.Context, im Image) (hidden, feats []float32, err error) {
	gr := tensor.NewGraph(bd.b)
	h, f, err := bd.Outputs(gr, im.Pixels())
	if err != nil {
		return nil, nil, err
	}
	if err := bd.b.Run(ctx, gr, h, f); err != nil {
		return nil, nil, err
	}
	for _, o := range []struct {
		t     tensor.T
		shape []int
		dst   *[]float32
	}{{h, im.HiddenShape, &hidden}, {f, im.FeatureShape, &feats}} {
		if s := gr.Shape(o.t); !slices.Equal(s, o.shape) {
			return nil, nil, fmt.Errorf("%s: tower output of shape %v, want %v", im.File, s, o.shape)
		}
		*o.dst = make([]float32, tensor.Elements(o.shape))
		if err := bd.b.Read(o.t, *o.dst); err != nil {
			return nil, nil, err
		}
	}
	return hidden, feats, nil
}

// Compare is the largest |got - want|, or an error naming the first value
// further off than tol.
func Compare(got, want []float32, tol float64) (float64, error) {
	if len(got) != len(want) {
		return 0, fmt.Errorf("%d values, want %d", len(got), len(want))
	}
	worst := 0.0
	for i := range want {
		d := math.Abs(float64(got[i] - want[i]))
		if !(d <= tol) {
			return d, fmt.Errorf("[%d] = %v, want %v (|Δ| %.3g > %.3g)", i, got[i], want[i], d, tol)
		}
		worst = max(worst, d)
	}
	return worst, nil
}
