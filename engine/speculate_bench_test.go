package engine_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"hearth/engine"
	"hearth/engine/draft"
)

// BenchmarkSpeculative decodes the same requests with and without prompt
// lookup on the starter model (the project's own trained weights: random
// ones would make acceptance meaningless), and reports decode tokens/s
// and the share of drafted tokens accepted, for a prompt whose answer
// copies from it (editing a text) and for a question.
//
//	go test ./engine -run '^$' -bench Speculative -benchtime 5x
//	HEARTH_DRAFT_MODEL=DIR go test ./engine -run '^$' -bench Speculative -benchtime 5x
func BenchmarkSpeculative(b *testing.B) {
	dir := filepath.Join("..", "assets", "starter")
	plain, err := engine.Open(dir, engine.RunnerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Close()
	spec, err := engine.Open(dir, engine.RunnerOptions{Draft: draft.DefaultNGram})
	if err != nil {
		b.Fatal(err)
	}
	defer spec.Close()
	runners := []struct {
		name string
		r    *engine.Runner
	}{{"plain", plain}, {"ngram", spec}}
	// HEARTH_DRAFT_MODEL names a draft model for the starter (e.g. its
	// own weights at 4 bits: docs/benchmarks.md says how it was made).
	if dd := os.Getenv("HEARTH_DRAFT_MODEL"); dd != "" {
		dm, err := engine.Load(dd, engine.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer dm.Close()
		withModel, err := engine.Open(dir, engine.RunnerOptions{DraftModel: dm})
		if err != nil {
			b.Fatal(err)
		}
		defer withModel.Close()
		if note := withModel.Info().DraftNote; note != "" {
			b.Fatal(note)
		}
		runners = append(runners, struct {
			name string
			r    *engine.Runner
		}{"model", withModel})
	}
	prompts := map[string]string{
		"edit": `Fix the typo in this sentence and write it out again: "Hearth runs models from the Hugging Face cache on your own machine, and the web chat stremas answers as they are generated."`,
		"ask":  "How do I pull a bigger model with Hearth?",
	}
	for name, p := range prompts {
		msgs, _ := json.Marshal([]map[string]string{{"role": "user", "content": p}})
		for _, r := range runners {
			b.Run(name+"/"+r.name, func(b *testing.B) {
				var tokens, drafted, accepted int
				var decode time.Duration
				for b.Loop() {
					u, err := r.r.Generate(b.Context(), engine.Request{Messages: msgs, MaxTokens: 128}, func(engine.Delta) error { return nil })
					if err != nil {
						b.Fatal(err)
					}
					tokens += u.CompletionTokens - 1
					decode += u.DecodeDuration
					drafted += u.Drafted
					accepted += u.Accepted
				}
				b.ReportMetric(float64(tokens)/decode.Seconds(), "decode-tok/s")
				if drafted > 0 {
					b.ReportMetric(float64(accepted)/float64(drafted), "accepted")
				}
			})
		}
	}
}
