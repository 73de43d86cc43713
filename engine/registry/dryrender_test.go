package registry

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/internal/testmodels"
)

// withTemplate copies chat-tiny to a temporary directory with its
// tokenizer_config.json's chat_template replaced (deleted when tmpl is
// "").
func withTemplate(t *testing.T, tmpl string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "model")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(testmodels.Root(), "chat-tiny"))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tokenizer_config.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if tmpl == "" {
		delete(cfg, "chat_template")
	} else {
		cfg["chat_template"] = tmpl
	}
	if raw, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDryRender: a model whose chat template cannot render a one-message
// conversation, under the limits a request renders under, is listed as
// unsupported with the reason (issue 20); a model without a template, or
// with one that renders, keeps its tier.
func TestDryRender(t *testing.T) {
	tests := []struct {
		name, tmpl string
		reason     string // "" when the model stays supported
	}{
		{"renders", "{% for m in messages %}{{ m.content }}{% endfor %}", ""},
		{"no template", "", ""},
		{"recursive macro", "{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(0) }}", "nested macro calls"},
		{"huge repeat", "{{ 'x' * 1000000000 }}", "bytes of strings and lists"},
		{"nested loops", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "loop iterations"},
		{"raises", "{{ raise_exception('no') }}", "chat template: no"},
		{"does not parse", "{% for %}", "load chat template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := withTemplate(t, tt.tmpl)
			rec := classify(dir, dir, "", nil, nil)
			if tt.reason == "" {
				if rec.Tier == TierUnsupported || !rec.Servable() {
					t.Fatalf("tier %q, reason %q: want supported", rec.Tier, rec.Reason)
				}
				return
			}
			if rec.Tier != TierUnsupported || rec.Servable() || !strings.Contains(rec.Reason, tt.reason) {
				t.Fatalf("tier %q, reason %q: want unsupported because of %q", rec.Tier, rec.Reason, tt.reason)
			}
		})
	}
}
