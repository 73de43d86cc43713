package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type fakeLive []ModelStats

func (f fakeLive) LiveStats() []ModelStats { return f }

func TestScrape(t *testing.T) {
	m := New(fakeLive{{Model: "hearth/starter", Queued: 2, Running: 1, BatchSize: 1, PromptCacheBytes: 4096, PromptLookups: 5, PromptHits: 3, PromptHitToken: 900}})
	m.Request("hearth/starter", "/v1/chat/completions", 200)
	m.Generation("hearth/starter", Usage{PromptTokens: 30, CompletionTokens: 11,
		TimeToFirstToken: 120 * time.Millisecond, Decode: 500 * time.Millisecond, Drafted: 8, Accepted: 5})
	m.Request("hearth/starter", "/v1/chat/completions", 400)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		`hearth_requests_total{code="200",model="hearth/starter",route="/v1/chat/completions"} 1`,
		`hearth_requests_total{code="400",model="hearth/starter",route="/v1/chat/completions"} 1`,
		`hearth_prompt_tokens_total{model="hearth/starter"} 30`,
		`hearth_completion_tokens_total{model="hearth/starter"} 11`,
		`hearth_time_to_first_token_seconds_count{model="hearth/starter"} 1`,
		`hearth_time_per_output_token_seconds_sum{model="hearth/starter"} 0.05`,
		`hearth_speculative_accepted_tokens_total{model="hearth/starter"} 5`,
		`hearth_queue_requests{model="hearth/starter"} 2`,
		`hearth_prompt_cache_bytes{model="hearth/starter"} 4096`,
		`hearth_prompt_cache_hits_total{model="hearth/starter"} 3`,
		`process_resident_memory_bytes`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %s in\n%s", want, text)
		}
	}
}
