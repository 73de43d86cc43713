package template

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzRender renders every test template with arbitrary messages JSON: it
// must return output or an error, never panic, and every error must be an
// *Error.
func FuzzRender(f *testing.F) {
	for _, c := range readConversations(f) {
		f.Add([]byte(c.Messages), []byte(c.Tools))
	}
	f.Add([]byte(`[{"role":"user","content":null}]`), []byte(`null`))
	f.Add([]byte(`[{"role":"assistant","tool_calls":[{"function":{"arguments":[1,{"a":null}]}}]}]`), []byte(`[1,"x"]`))
	f.Add([]byte(`[{"role":"tool"},{"role":"tool","content":{"x":1}}]`), []byte(`{}`))
	f.Add([]byte(`[1, "x", null, [], {"role": 5}]`), []byte(``))
	var tmpls []*Template
	dirs, _ := os.ReadDir("testdata/templates")
	for _, d := range dirs {
		if tmpl, err := Load(filepath.Join("testdata", "templates", d.Name())); err == nil {
			tmpls = append(tmpls, tmpl)
		}
	}
	f.Fuzz(func(t *testing.T, messages, tools []byte) {
		yes := true
		for _, tmpl := range tmpls {
			_, err := tmpl.Render(context.Background(), messages, Options{Tools: tools, AddGenerationPrompt: true, EnableThinking: &yes})
			var te *Error
			if err != nil && !errors.As(err, &te) {
				t.Fatalf("Render error %v (%T) is not a *Error", err, err)
			}
		}
	})
}

// fuzzLimits keep each fuzzed render short; a template that reaches one
// must fail with an *Error naming it, never panic or exhaust the process.
var fuzzLimits = Limits{Iterations: 20000, OutputBytes: 1 << 20, AllocBytes: 8 << 20, Time: 2 * time.Second}

// FuzzParse compiles and renders arbitrary template sources under
// fuzzLimits: Parse must return a template or an error and Render must not
// panic, overflow the stack or run past its limits.
func FuzzParse(f *testing.F) {
	var in struct {
		Cases []struct{ Template string }
	}
	readJSON(f, "testdata/snippets.json", &in)
	for _, c := range in.Cases {
		f.Add(c.Template)
	}
	f.Add("{% for m in messages %}{{ m.content | tojson(indent=2) }}{% endfor %}")
	f.Add("{{ 'unterminated }}")
	f.Add("{% raw %}{{ x }}")
	f.Add("{{ ((( }}")
	f.Add("{{ messages|select }}{{ messages|reject }}") // panicked in ardanlabs/jinja's select
	// Issue 20: each of these crashed, exhausted memory or never ended.
	f.Add("{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(0) }}")
	f.Add("{{ 'x' * 1000000000 }}")
	f.Add("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
	f.Add("{% set ns = namespace(l=[1]) %}{% for i in range(60) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l|tojson }}")
	f.Add("{% set l = [] %}{{ l.append(l) }}{{ l }}")
	f.Add("{{ ((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))) }}")
	f.Add("{{ range(10)[0:1000000000000:2] }}{{ ['a']|batch(9223372036854775807) }}")
	f.Add("{{ '%999999999d'|format(1) }}{{ ('x\n' * 1000)|indent(100) }}")
	msgs := json.RawMessage(`[{"role":"user","content":"hi","n":1.5,"l":[1,2],"d":{"k":null}}]`)
	f.Fuzz(func(t *testing.T, source string) {
		tmpl, err := Parse(source, Special{BOS: "<s>", EOS: "</s>"})
		if err != nil {
			return
		}
		_, err = tmpl.Render(context.Background(), msgs, Options{Tools: json.RawMessage(`[{"a":1}]`), AddGenerationPrompt: true, Limits: fuzzLimits})
		var te *Error
		if err != nil && !errors.As(err, &te) {
			t.Fatalf("Render error %v (%T) is not a *Error", err, err)
		}
	})
}
