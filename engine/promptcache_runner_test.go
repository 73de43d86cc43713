package engine_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

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
