package engine_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hearth/engine"
	"hearth/engine/sample"
)

// TestPromptCacheTurns: the second turn of a chat reads the first turn's
// prompt from the cache, and answers exactly as a runner without the
// cache does, greedy and sampled with a seed.
func TestPromptCacheTurns(t *testing.T) {
	open := func(bytes int64) *engine.Runner {
		r, err := engine.Open(filepath.Join("..", "assets", "starter"), engine.RunnerOptions{PromptCacheBytes: bytes})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	cached, plain := open(0), open(-1)
	seed := uint64(3)
	for _, opt := range []struct {
		name string
		req  engine.Request
	}{
		{"greedy", engine.Request{MaxTokens: 48}},
		{"sampled", engine.Request{MaxTokens: 48, Sample: sample.Options{Temperature: 0.8, Seed: &seed}}},
	} {
		turn := []map[string]string{{"role": "user", "content": "What is Hearth?"}}
		var prevPrompt int
		for i := range 3 {
			msgs, _ := json.Marshal(turn)
			req := opt.req
			req.Messages = msgs
			got, gu, _ := collect(t, cached, req)
			want, wu, _ := collect(t, plain, req)
			if got != want || gu.CompletionTokens != wu.CompletionTokens {
				t.Fatalf("%s turn %d: cached %q, plain %q", opt.name, i, got, want)
			}
			if wu.CachedTokens != 0 {
				t.Errorf("the cache-off runner reused %d tokens", wu.CachedTokens)
			}
			if i > 0 && gu.CachedTokens < prevPrompt {
				t.Errorf("%s turn %d: %d of %d prompt tokens from the cache, want at least the last turn's %d", opt.name, i, gu.CachedTokens, gu.PromptTokens, prevPrompt)
			}
			prevPrompt = gu.PromptTokens
			turn = append(turn, map[string]string{"role": "assistant", "content": got}, map[string]string{"role": "user", "content": "Tell me more."})
		}
	}
	if l, h, tok, b := cached.PromptCacheStats(); h == 0 || tok == 0 || b == 0 {
		t.Errorf("stats: %d lookups, %d hits, %d tokens, %d bytes", l, h, tok, b)
	}
}

// BenchmarkPromptCacheTTFT measures the time to the first token of a
// follow-up turn after a long first one (a ~1,500-token system prompt),
// with the prompt cache and without, on the starter model.
//
//	go test ./engine -run '^$' -bench PromptCacheTTFT -benchtime 5x
func BenchmarkPromptCacheTTFT(b *testing.B) {
	system := strings.Repeat("Hearth runs language models on your own machine and serves them over the OpenAI, Anthropic and Ollama APIs. ", 80)
	for _, c := range []struct {
		name  string
		bytes int64
	}{{"cache", 0}, {"no-cache", -1}} {
		b.Run(c.name, func(b *testing.B) {
			r, err := engine.Open(filepath.Join("..", "assets", "starter"), engine.RunnerOptions{PromptCacheBytes: c.bytes})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			first, _ := json.Marshal([]map[string]string{{"role": "system", "content": system}, {"role": "user", "content": "What is Hearth?"}})
			var ttft time.Duration
			for b.Loop() {
				_, u1, err := generate(b, r, engine.Request{Messages: first, MaxTokens: 16})
				if err != nil {
					b.Fatal(err)
				}
				_ = u1
				next, _ := json.Marshal([]map[string]string{{"role": "system", "content": system}, {"role": "user", "content": "What is Hearth?"},
					{"role": "assistant", "content": "A local engine."}, {"role": "user", "content": "And the web chat?"}})
				_, u2, err := generate(b, r, engine.Request{Messages: next, MaxTokens: 1})
				if err != nil {
					b.Fatal(err)
				}
				ttft += u2.TimeToFirstToken
				b.ReportMetric(float64(u2.PromptTokens), "prompt-tokens")
				b.ReportMetric(float64(u2.CachedTokens), "cached-tokens")
			}
			b.ReportMetric(float64(ttft.Microseconds())/float64(b.N)/1000, "turn2-ttft-ms")
		})
	}
}

func generate(tb testing.TB, r *engine.Runner, req engine.Request) (string, engine.Usage, error) {
	var sb strings.Builder
	u, err := r.Generate(context.Background(), req, func(d engine.Delta) error { sb.WriteString(d.Content); return nil })
	return sb.String(), u, err
}
