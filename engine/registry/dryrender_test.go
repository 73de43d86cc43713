package registry

import (
	"strings"
	"testing"

	"hearth/internal/testmodels"
)

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
		{"nested loops", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "exceeded"}, // the iteration or the time limit, whichever a busy machine reaches first
		{"raises", "{{ raise_exception('no') }}", "chat template: no"},
		{"does not parse", "{% for %}", "load chat template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testmodels.WithTemplate(t, "chat-tiny", tt.tmpl)
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
