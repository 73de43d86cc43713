package gpu_test

import (
	"context"
	"math"
	"testing"

	"hearth/engine/backend/gpu"
	"hearth/engine/checkpoint"
	"hearth/engine/families"
	"hearth/engine/family"
	"hearth/engine/nn"
	"hearth/engine/tensor"
	"hearth/engine/tower/siglip"
	"hearth/engine/tower/towertest"
	"hearth/engine/weights"
)

// TestGemma3Vision runs Gemma 3's vision golden through the gpu backend,
// fused and unfused: the tower's last hidden state and the projector's
// output within the tower tolerance, and each image prompt (the soft
// tokens spliced in, the pictures' tokens seeing each other both ways)
// within the logit tolerance with the greedy ids exact.
func TestGemma3Vision(t *testing.T) {
	g, err := towertest.Load(towertest.Gemma3Entry)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name string
		opt  gpu.Options
	}{{"fused", gpu.Options{}}, {"unfused", gpu.Options{NoFusion: true}}} {
		t.Run(v.name, func(t *testing.T) {
			b := newGPU(t, v.opt)
			defer b.Close()
			checkVision(t, g, b)
		})
	}
}

func checkVision(t *testing.T, g *towertest.Golden, backend tensor.Backend) {
	dir := towertest.Dir(towertest.Gemma3Entry)
	b := &tracked{Backend: backend}
	defer b.freeAll()
	ck, err := checkpoint.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	fam, err := families.Resolve(ck.Config)
	if err != nil {
		t.Fatal(err)
	}
	set, err := weights.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	binder := weights.NewBinder(set, ck.Quant)
	l := &nn.Loader{B: b, W: binder}
	impl, err := fam.New(ck.Config, l)
	if err != nil {
		t.Fatal(err)
	}
	v, err := siglip.LoadGemma3(ck.ConfigJSON, ck.Config, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := binder.Audit(impl.AuditIgnore()); err != nil {
		t.Fatal(err)
	}
	tw := v.(*siglip.Gemma3)
	ctx := context.Background()
	feats := make([][]float32, len(g.Images))
	for i, im := range g.Images {
		gr := tensor.NewGraph(b)
		hidden, err := tw.Tower().Forward(gr, im.Pixels())
		if err != nil {
			t.Fatal(err)
		}
		f, err := tw.Encode(gr, im.Pixels())
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Run(ctx, gr, hidden, f); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, len(im.Hidden))
		if err := b.Read(hidden, got); err != nil {
			t.Fatal(err)
		}
		within(t, "image last_hidden_state", got, im.Hidden, g.Tolerance.MaxAbsTower)
		feats[i] = make([]float32, len(im.Features))
		if err := b.Read(f, feats[i]); err != nil {
			t.Fatal(err)
		}
		within(t, "image features", feats[i], im.Features, g.Tolerance.MaxAbsTower)
	}
	hidden := ck.Config.HiddenSize
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			n := len(c.PromptIDs)
			caches, err := impl.NewCaches(b, n+len(c.GreedyIDs)+4, n)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				for _, c := range caches {
					c.Free()
				}
			}()
			step := func(tokens []int32, pos int, media bool) []float32 {
				gr := tensor.NewGraph(b)
				batch := &family.Batch{Tokens: tokens, Pos: pos, Caches: caches}
				if media {
					for k, row := range c.ImageRows() {
						f := feats[c.Images[k]]
						batch.Media = append(batch.Media, family.Media{Row: row, Embeds: gr.Input(f, len(f)/hidden, hidden)})
					}
				}
				logits, err := impl.Forward(gr, batch)
				if err != nil {
					t.Fatal(err)
				}
				if err := b.Run(ctx, gr, logits); err != nil {
					t.Fatal(err)
				}
				out := make([]float32, tensor.Elements(gr.Shape(logits)))
				if err := b.Read(logits, out); err != nil {
					t.Fatal(err)
				}
				return out
			}
			logits := step(c.PromptIDs, 0, true)
			pos := n
			worst := 0.0
			for s, want := range c.Logits {
				worst = max(worst, within(t, "logits", logits, want, g.Tolerance.MaxAbsLogit))
				id := argmax(logits)
				if id != c.GreedyIDs[s] {
					t.Fatalf("step %d: greedy id %d, want %d", s, id, c.GreedyIDs[s])
				}
				if s+1 < len(c.Logits) {
					logits = step([]int32{id}, pos, false)
					pos++
				}
			}
			t.Logf("%s: %d steps, max |Δlogit| %.3g", c.Name, len(c.Logits), worst)
		})
	}
}

// within fails t when got and want differ by more than tol anywhere, and
// returns the largest difference.
func within(t *testing.T, what string, got, want []float32, tol float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	worst := 0.0
	for i := range want {
		d := math.Abs(float64(got[i] - want[i]))
		if !(d <= tol) {
			t.Fatalf("%s[%d] = %v, want %v (|Δ| %.3g > %.3g)", what, i, got[i], want[i], d, tol)
		}
		worst = max(worst, d)
	}
	return worst
}
