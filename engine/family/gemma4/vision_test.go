package gemma4_test

import (
	"testing"

	"hearth/engine/backend/cpu"
	"hearth/engine/cache"
	"hearth/engine/family"
	"hearth/engine/tensor"
	"hearth/engine/tower/towertest"
)

// TestPictureMask checks Gemma 4's attention rule for image tokens
// (create_masks_for_vision_model) in the graph Forward records: a
// picture's rows are one span on the sliding layers and none on the full
// layers, which stay causal; media without a grid (audio) make no span.
// The golden entry cannot see the full layers' rule: its full layers'
// keys and values come before their attention (layer 3 shares layer 1's),
// so only this check holds it.
func TestPictureMask(t *testing.T) {
	b := cpu.New(cpu.Options{})
	defer b.Close()
	bd, err := towertest.Bind(towertest.Dir(towertest.Gemma4Entry), b)
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close()
	c := bd.Checkpoint.Config
	caches, err := bd.Model.NewCaches(b, 64, 32)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.FreeAll(caches)
	for _, tc := range []struct {
		name  string
		grid  [3]int
		spans bool
	}{{"picture", [3]int{1, 2, 2}, true}, {"audio", [3]int{}, false}} {
		g := tensor.NewGraph(b)
		tokens := make([]int32, 10)
		batch := &family.Batch{Tokens: tokens, Pos: 0, Caches: caches,
			Media: []family.Media{{Row: 3, Embeds: g.Input(make([]float32, 4*c.HiddenSize), 4, c.HiddenSize), Grid: tc.grid}}}
		if _, err := bd.Model.Forward(g, batch); err != nil {
			t.Fatal(err)
		}
		layer := 0
		for _, n := range g.Nodes {
			if n.Op != tensor.OpAttention {
				continue
			}
			sliding := c.LayerTypes[layer] == "sliding_attention"
			want := []tensor.Span(nil)
			if tc.spans && sliding {
				want = []tensor.Span{{Start: 3, End: 7}}
			}
			if len(n.Attn.Spans) != len(want) || len(want) == 1 && n.Attn.Spans[0] != want[0] {
				t.Errorf("%s: layer %d (%s): spans %v, want %v", tc.name, layer, c.LayerTypes[layer], n.Attn.Spans, want)
			}
			layer++
		}
		if layer != c.NumHiddenLayers {
			t.Fatalf("%s: %d attention nodes for %d layers", tc.name, layer, c.NumHiddenLayers)
		}
	}
}
