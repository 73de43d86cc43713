package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"hearth/engine/pool"
	"hearth/engine/registry"
	"hearth/internal/testmodels"
)

// TestTemplateLimits is issue 20's first two defects over HTTP: a model
// whose chat template recurses without end, builds a gigantic string or
// loops 10^10 times used to crash the server or hang it; now the request
// gets a 400 template_error naming the limit, and the server answers the
// next request.
func TestTemplateLimits(t *testing.T) {
	models := map[string]string{
		"recursive-macro": testmodels.WithTemplate(t, "chat-tiny", "{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(0) }}"),
		"huge-repeat":     testmodels.WithTemplate(t, "chat-tiny", "{{ 'x' * 1000000000 }}"),
		"nested-loops":    testmodels.WithTemplate(t, "chat-tiny", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
	}
	ts := startServer(t, func(c *serverConfig) {
		c.pool.Resolve = func(name string) (pool.Model, error) {
			if dir, ok := models[name]; ok {
				return pool.Model{ID: name, Dir: dir}, nil
			}
			return pool.Model{}, registry.ErrNotFound
		}
	})
	tests := []struct{ model, limit string }{
		{"recursive-macro", "nested macro calls"},
		{"huge-repeat", "bytes of strings and lists built"},
		{"nested-loops", "loop iterations"},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`, tt.model)
			r := ts.post(t, "/v1/chat/completions", body)
			var e struct {
				Error struct{ Message, Code string }
			}
			if err := json.Unmarshal(r.Body, &e); err != nil {
				t.Fatalf("%d %s: %v", r.Status, r.Body, err)
			}
			if r.Status != http.StatusBadRequest || e.Error.Code != "template_error" || !strings.Contains(e.Error.Message, tt.limit) {
				t.Errorf("POST /v1/chat/completions = %d %s, want 400 template_error naming %q", r.Status, r.Body, tt.limit)
			}

			r = ts.post(t, "/api/chat", fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}],"stream":false}`, tt.model))
			if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), tt.limit) {
				t.Errorf("POST /api/chat = %d %s, want 400 naming %q", r.Status, r.Body, tt.limit)
			}

			// The server goes on: the default model answers a chat.
			var ok struct {
				Choices []struct{ Message struct{ Content string } }
			}
			ts.postOK(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`, &ok)
			if len(ok.Choices) != 1 {
				t.Errorf("the next chat answered %+v", ok)
			}
		})
	}
}
