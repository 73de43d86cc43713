// Package parity holds every model family to the oracle: each entry of
// testdata/models/manifest.json is loaded through the normal loader and
// decoded greedily; ids must match exactly and logits within the entry's
// stated tolerance.
package parity

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/family/universal"
	"hearth/internal/testmodels"
)

func TestManifest(t *testing.T) {
	m, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Entries) == 0 {
		t.Fatal("manifest has no entries")
	}
	for _, e := range m.Entries {
		t.Run(e.Name, func(t *testing.T) { checkEntry(t, e, engine.Options{Backend: "cpu"}) })
	}
}

// TestChunkedPrefill runs every entry with a prefill chunk of 3 tokens, so
// the prompt crosses chunk boundaries (and rotating caches wrap mid-prompt).
func TestChunkedPrefill(t *testing.T) {
	m, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.Entries {
		if e.Variant != "f32" {
			continue
		}
		t.Run(e.Name, func(t *testing.T) { checkEntry(t, e, engine.Options{Backend: "cpu", ChunkTokens: 3}) })
	}
}

func checkEntry(t *testing.T, e testmodels.Entry, opt engine.Options) {
	checkDir(t, e, e.Path(), opt)
}

// checkDir holds the checkpoint in dir to entry e's golden.
func checkDir(t *testing.T, e testmodels.Entry, dir string, opt engine.Options) {
	g, err := e.Golden()
	if err != nil {
		t.Fatal(err)
	}
	model, err := engine.Load(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	seq, err := model.NewSequence(len(g.PromptIDs) + len(g.GreedyIDs) + 4)
	if err != nil {
		t.Fatal(err)
	}
	defer seq.Close()
	ctx := context.Background()
	logits, err := seq.Forward(ctx, g.PromptIDs, false)
	if err != nil {
		t.Fatal(err)
	}
	tol := e.Tolerance.MaxAbsLogit
	worst := 0.0
	for step, want := range g.Logits {
		worst = max(worst, testmodels.CheckStep(t, step, logits, want, tol))
		id := argmax(logits)
		if id != g.GreedyIDs[step] {
			t.Fatalf("step %d: greedy id %d, want %d", step, id, g.GreedyIDs[step])
		}
		if step+1 < len(g.Logits) {
			if logits, err = seq.Forward(ctx, []int32{id}, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%s: %d steps, max |Δlogit| %.3g (tolerance %.3g), min oracle margin %.3g", e.Name, len(g.Logits), worst, tol, g.MinMargin)
}

func argmax(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}

// TestEveryDescriptorIsGreen keeps "supported" honest: every model_type the
// generic tier accepts has f32 and quantized entries in the manifest.
func TestEveryDescriptorIsGreen(t *testing.T) {
	m, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]map[string]bool{}
	for _, e := range m.Entries {
		if have[e.ModelType] == nil {
			have[e.ModelType] = map[string]bool{}
		}
		have[e.ModelType][e.Variant] = true
	}
	for _, typ := range universal.Types() {
		v := have[typ]
		quant := false
		for name := range v {
			quant = quant || name == "q4g64" || name == "q8g32"
		}
		if !v["f32"] || !quant {
			t.Errorf("model_type %q is accepted by the generic tier but has no f32 and quantized manifest entries (has %v)", typ, v)
		}
	}
}

// TestModelsDoc keeps docs/models.md in step with the generic tier.
func TestModelsDoc(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testmodels.Root(), "..", "..", "docs", "models.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range universal.Types() {
		if !strings.Contains(string(raw), "| `"+typ+"` |") {
			t.Errorf("docs/models.md has no row for model_type %q", typ)
		}
	}
}
