package web

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"hearth/engine/pool"
	"hearth/engine/tower/towertest"
)

// TestImageGoldenAnswered: a real server with each tiny vision model
// (tools/oracle/make_*vision_goldens.py) answers the golden picture, sent
// as a PNG data URL, with transformers' greedy answer after the
// processor's expanded prompt; the model lists vision.
func TestImageGoldenAnswered(t *testing.T) {
	for _, entry := range []string{towertest.Gemma3Entry, towertest.Qwen35Entry, towertest.Qwen35MoeEntry, towertest.Gemma4Entry} {
		t.Run(entry, func(t *testing.T) {
			g, err := towertest.Load(entry)
			if err != nil {
				t.Fatal(err)
			}
			m := pool.Model{ID: entry, Dir: towertest.Dir(entry)}
			var c *towertest.Case
			for i := range g.Cases {
				if g.Cases[i].Name == "one_image" {
					c = &g.Cases[i]
				}
			}
			if c == nil {
				t.Fatal("the golden has no one_image case")
			}
			pic, err := os.ReadFile(filepath.Join(m.Dir, g.Images[c.Images[0]].File))
			if err != nil {
				t.Fatal(err)
			}
			ts := startServer(t, func(sc *serverConfig) { sc.model = m })
			body := js(map[string]any{"max_tokens": len(c.GreedyIDs), "temperature": 0, "messages": []any{map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": dataURL("image/png", pic)}},
				map[string]any{"type": "text", "text": "What is in this picture?"}}}}})
			var out chatOut
			ts.postOK(t, "/v1/chat/completions", body, &out)
			var detok struct {
				Text string `json:"text"`
			}
			ts.postOK(t, "/api/detokenize", js(map[string]any{"model": m.ID, "tokens": c.GreedyIDs}), &detok)
			if out.text() != detok.Text || out.Usage.PromptTokens != len(c.PromptIDs) {
				t.Fatalf("answer %q after %d prompt tokens, want %q after %d", out.text(), out.Usage.PromptTokens, detok.Text, len(c.PromptIDs))
			}
			r := ts.do(t, http.MethodGet, "/v1/models", "", nil)
			if !bytes.Contains(r.Body, []byte(`"vision"`)) {
				t.Errorf("/v1/models does not list vision: %s", r.Body)
			}
		})
	}
}
