package jinja

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestLimits runs the library's own built-ins (which chat templates reach
// only when a caller does not replace them) into each limit.
func TestLimits(t *testing.T) {
	small := Limits{AllocBytes: 1 << 20, OutputBytes: 1 << 20, Time: 5 * time.Second}
	const dag = `{% set ns = namespace(l=[1]) %}{% for i in range(60) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}`
	loops := Limits{Iterations: 100000}
	out := Limits{OutputBytes: 100000}
	tests := []struct {
		name, src string
		limit     string
		lim       *Limits
	}{
		{"recursive macro", `{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(0) }}`, "call depth", nil},
		{"repeat", `{{ 'x' * 1000000000 }}`, "allocated bytes", nil},
		{"range", `{{ range(1000000000) }}`, "allocated bytes", nil},
		{"range over int64", `{{ range(-9223372036854775807, 9223372036854775807) }}`, "allocated bytes", nil},
		{"nested loops", `{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}`, "loop iterations", &loops},
		{"output", `{% for i in range(10000) %}{{ 'x' * 200 }}{% endfor %}`, "output bytes", &out},
		{"join", `{% set s = 'x' * 100000 %}{{ [s, s, s, s, s, s, s, s, s, s, s, s]|join }}`, "allocated bytes", nil},
		{"replace", `{{ ('ab' * 10000)|replace('a', 'a' * 200) }}`, "allocated bytes", nil},
		{"indent", `{{ ('x\n' * 10000)|indent(1000) }}`, "allocated bytes", nil},
		{"upper", `{{ ('x' * 600000)|upper|upper }}`, "allocated bytes", nil},
		{"title", `{{ ('x' * 300000)|title }}`, "allocated bytes", nil},
		{"list", `{{ ('x' * 100000)|list }}`, "allocated bytes", nil},
		{"reverse", `{{ ('é' * 100000)|reverse }}`, "allocated bytes", nil},
		{"fromjson", `{{ ('[' ~ ('1,' * 100000) ~ '1]')|fromjson }}`, "allocated bytes", nil},
		{"tojson indent", dag + `{{ ns.l|tojson(indent=4) }}`, "allocated bytes", nil},
		{"tojson", dag + `{{ ns.l|tojson }}`, "allocated bytes", nil},
		{"print", dag + `{{ ns.l }}`, "allocated bytes", nil},
		{"unique", dag + `{{ [ns.l, ns.l]|unique }}`, "allocated bytes", nil},
		{"self-containing list", `{% set l = [] %}{{ l.append(l) }}{{ l|tojson }}`, "nesting", nil},
		{"self-equal list", `{% set l = [] %}{{ l.append(l) }}{{ l is eq(l) }}`, "nesting", nil},
		{"long chain", `{{ ` + strings.Repeat("1~", 20000) + `1 }}`, "nesting", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Compile(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			lim := small
			if tt.lim != nil {
				lim = *tt.lim
			}
			_, err = tmpl.Execute(NewBudget(context.Background(), lim), nil)
			var le *LimitError
			if !errors.As(err, &le) || le.Limit != tt.limit {
				t.Fatalf("err = %v, want the %q limit", err, tt.limit)
			}
		})
	}
}

// TestCancel: a render stops soon after its context ends, with the
// context's error.
func TestCancel(t *testing.T) {
	tmpl, err := Compile(`{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = tmpl.Execute(NewBudget(ctx, Limits{Iterations: 1 << 50, Time: time.Hour}), nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestDefaultsRender: the default limits leave ordinary templates alone.
func TestDefaultsRender(t *testing.T) {
	tmpl, err := Compile(`{% for m in messages %}{{ m.role }}: {{ m.content|tojson(indent=2) }}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tmpl.Render(map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if err != nil || out != `user: "hi"` {
		t.Errorf("Render = %q, %v", out, err)
	}
}
