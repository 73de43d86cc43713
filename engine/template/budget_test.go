package template

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"hearth/engine/template/jinja"
)

// renderSource parses src and renders it for one user message under lim.
func renderSource(t *testing.T, ctx context.Context, src string, lim Limits) (string, error) {
	t.Helper()
	tmpl, err := Parse(src, Special{})
	if err != nil {
		t.Fatalf("Parse(%.60q): %v", src, err)
	}
	return tmpl.Render(ctx, json.RawMessage(`[{"role":"user","content":"hi"}]`), Options{AddGenerationPrompt: true, Limits: lim})
}

// wantLimit fails unless err is an *Error for the named limit.
func wantLimit(t *testing.T, err error, limit string) {
	t.Helper()
	var te *Error
	if !errors.As(err, &te) || te.Limit != limit {
		t.Fatalf("err = %v (%T), want an *Error for the %q limit", err, err, limit)
	}
	if !strings.HasPrefix(te.Error(), "chat template: exceeded ") {
		t.Errorf("message %q does not say which limit was exceeded", te.Error())
	}
}

// TestRecursiveMacro is issue 20's first defect: a macro that calls itself
// without end overflowed the Go stack and killed the process. It is now a
// render error naming the call depth limit, in this process.
func TestRecursiveMacro(t *testing.T) {
	for _, src := range []string{
		`{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(0) }}`,
		`{% macro f() %}{% call f() %}x{% endcall %}{% endmacro %}{{ f() }}`,
		`{% macro f() %}{{ caller() }}{% endmacro %}{% macro g() %}{% call f() %}{{ g() }}{% endcall %}{% endmacro %}{{ g() }}`,
	} {
		_, err := renderSource(t, context.Background(), src, Limits{})
		wantLimit(t, err, "call depth")
		if want := fmt.Sprint(DefaultLimits().CallDepth); !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %q does not give the limit %s", src, err, want)
		}
	}
}

// TestHugeStringRepeat is issue 20's second defect, memory: 'x' *
// 1000000000 grew the server past 20 GB. The size is now charged before
// the string is built, so the render fails without allocating it.
func TestHugeStringRepeat(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := renderSource(t, context.Background(), `{{ 'x' * 1000000000 }}`, Limits{})
	runtime.ReadMemStats(&after)
	wantLimit(t, err, "allocated bytes")
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("the refused repeat still allocated %d MB", grew>>20)
	}
}

// TestNestedRangeLoops is issue 20's second defect, time: two nested
// range(100000) loops pinned a core forever and ignored a disconnected
// client. They now stop at the iteration limit, at the time limit, and as
// soon as the request's context is cancelled.
func TestNestedRangeLoops(t *testing.T) {
	const src = `{% for i in range(100000) %}{% for j in range(100000) %}{{ '' }}{% endfor %}{% endfor %}`

	_, err := renderSource(t, context.Background(), src, Limits{})
	wantLimit(t, err, "loop iterations")

	_, err = renderSource(t, context.Background(), src, Limits{Iterations: 1 << 50, Time: 50 * time.Millisecond})
	wantLimit(t, err, "time")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := renderSource(t, ctx, src, Limits{Iterations: 1 << 50, Time: time.Hour})
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		var te *Error
		if !errors.Is(err, context.Canceled) || errors.As(err, &te) {
			t.Errorf("cancelled render = %v, want an error wrapping context.Canceled (not the template's fault)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the render did not stop after its context was cancelled")
	}
}

// TestBudgets covers each limit and the constructs that could outrun one:
// every case must fail with its limit's error, quickly, never panic.
func TestBudgets(t *testing.T) {
	// dag is a list of 2^60 leaves in 60 shared nodes: printing,
	// comparing or encoding it naively never ends.
	const dag = `{% set ns = namespace(l=[1]) %}{% for i in range(60) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}`
	small := Limits{AllocBytes: 4 << 20, OutputBytes: 1 << 20, Time: 2 * time.Second}
	quick := Limits{AllocBytes: 4 << 20, OutputBytes: 1 << 20, Time: 100 * time.Millisecond}
	tests := []struct {
		name, src string
		lim       Limits
		limit     string
	}{
		{"output", `{% for i in range(20000) %}{{ 'x' * 100 }}{% endfor %}`, small, "output bytes"},
		{"macro output", `{% macro m() %}{{ 'x' * 1000 }}{% endmacro %}{% for i in range(20000) %}{{ m() }}{% endfor %}`, small, "output bytes"},
		{"concat doubling", `{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}`, small, "allocated bytes"},
		{"plus doubling", `{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}`, small, "allocated bytes"},
		{"list doubling", `{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}`, small, "allocated bytes"},
		{"join", `{% set s = 'x' * 100000 %}{{ [s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s]|join }}`, small, "allocated bytes"},
		{"string to list", `{{ ('ab' * 1000000)|list|length }}`, small, "allocated bytes"},
		{"loop over a string", `{% for c in 'ab' * 1000000 %}{% endfor %}`, small, "allocated bytes"},
		{"replace", `{{ ('ab' * 100000)|replace('a', 'a' * 100) }}`, small, "allocated bytes"},
		{"str.replace", `{{ ('ab' * 100000).replace('a', 'a' * 100) }}`, small, "allocated bytes"},
		{"str.format", `{{ '{0}{0}{0}{0}{0}{0}{0}{0}'.format('x' * 1000000) }}`, small, "allocated bytes"},
		{"indent", `{{ ('x\n' * 1000000)|indent(100) }}`, small, "allocated bytes"},
		{"format width", `{{ '%999999999d'|format(1) }}`, small, "allocated bytes"},
		{"format precision", `{{ '%.999999999f'|format(1.5) }}`, small, "allocated bytes"},
		{"strftime", `{{ strftime_now('%c' * 1000000) }}`, small, "allocated bytes"},
		{"print shared list", dag + `{{ ns.l }}`, small, "allocated bytes"},
		{"tojson shared list", dag + `{{ ns.l|tojson }}`, small, "allocated bytes"},
		{"tojson indent shared list", dag + `{{ ns.l|tojson(indent=2) }}`, small, "allocated bytes"},
		{"string filter shared list", dag + `{{ [ns.l]|map('string')|list }}`, small, "allocated bytes"},
		{"raise shared list", dag + `{{ raise_exception(ns.l) }}`, small, "allocated bytes"},
		{"compare shared lists", dag + `{{ ns.l == [ns.l[0], ns.l[1]] }}`, quick, "time"},
		{"in shared lists", dag + `{{ ns.l in [ns.l] }}`, quick, "time"},
		{"sort shared lists", dag + `{{ [ns.l, ns.l]|sort }}`, quick, "time"},
		{"unique shared lists", dag + `{{ [ns.l, ns.l]|unique|list }}`, quick, "time"},
		{"self-containing list", `{% set l = [] %}{{ l.append(l) }}{{ l }}`, Limits{}, "nesting"},
		{"self-containing namespace", `{% set ns = namespace() %}{% set ns.x = ns %}{{ ns|tojson }}`, Limits{}, "nesting"},
		{"self-equal list", `{% set l = [] %}{{ l.append(l) }}{{ l == l }}`, Limits{}, "nesting"},
		{"deep list", `{% set ns = namespace(l=1) %}{% for i in range(20000) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}`, Limits{}, "nesting"},
		{"long sum", `{{ ` + strings.Repeat("1+", 20000) + `1 }}`, Limits{}, "nesting"},
		{"long attribute chain", `{{ x` + strings.Repeat(".a", 20000) + ` }}`, Limits{}, "nesting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := renderSource(t, context.Background(), tt.src, tt.lim)
			wantLimit(t, err, tt.limit)
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %v to stop", d)
			}
		})
	}
}

// TestDeepSource: a template nested past the parser's depth is refused at
// load, before its recursion can reach the Go stack's limit.
func TestDeepSource(t *testing.T) {
	for _, src := range []string{
		`{{ ` + strings.Repeat("(", 100000) + `1` + strings.Repeat(")", 100000) + ` }}`,
		`{{ ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + ` }}`,
		`{{ ` + strings.Repeat("not ", 100000) + `1 }}`,
		`{{ ` + strings.Repeat("-", 100000) + `1 }}`,
		strings.Repeat("{% if true %}", 100000) + strings.Repeat("{% endif %}", 100000),
	} {
		if _, err := Parse(src, Special{}); err == nil || !strings.Contains(err.Error(), "levels deep") {
			t.Errorf("Parse(%.40q…) = %v, want a nesting error", src, err)
		}
	}
}

// TestSliceBounds: slices with huge bounds clamp as Python's do instead of
// sizing a buffer by them.
func TestSliceBounds(t *testing.T) {
	tests := []struct{ src, want string }{
		{`{{ range(10)[0:1000000000000:2] }}`, "[0, 2, 4, 6, 8]"},
		{`{{ range(10)[-1000000000000:3] }}`, "[0, 1, 2]"},
		{`{{ range(5)[1000000000000:-1000000000000:-2] }}`, "[4, 2, 0]"},
		{`{{ 'abc'[-100000000000:100000000000:2] }}`, "ac"},
		{`{{ 'ééé'[::-1] }}`, "ééé"},
		{`{{ 'aé'[-1] }}{{ 'aé'[5] }}`, "é"},
		{`{{ ['a']|batch(9223372036854775807)|list }}`, "[['a']]"},
	}
	for _, tt := range tests {
		got, err := renderSource(t, context.Background(), tt.src, Limits{})
		if err != nil || got != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.src, got, err, tt.want)
		}
	}
}

// TestLimitsHeadroom renders every test template with every test
// conversation, and with a conversation of 2000 messages, and checks that
// none comes within a tenth of a default limit: real templates never
// meet them.
func TestLimitsHeadroom(t *testing.T) {
	convs := readConversations(t)
	var long []string
	for i := range 1000 {
		long = append(long,
			fmt.Sprintf(`{"role":"user","content":"question %d: %s"}`, i, strings.Repeat("words ", 40)),
			fmt.Sprintf(`{"role":"assistant","content":"answer %d"}`, i))
	}
	convs["long"] = conversation{Name: "long", Messages: json.RawMessage("[" + strings.Join(long, ",") + "]"), AddGenerationPrompt: true}

	dirs, err := os.ReadDir("testdata/templates")
	if err != nil {
		t.Fatal(err)
	}
	var most Limits
	n := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		tmpl, err := Load(filepath.Join("testdata", "templates", d.Name()))
		if errors.Is(err, ErrNoTemplate) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		for _, c := range convs {
			opt := c.options()
			data, jt, err := tmpl.context(c.Messages, opt)
			if err != nil {
				continue
			}
			b := jinja.NewBudget(context.Background(), opt.limits(len(c.Messages)+len(c.Tools)))
			lim := b.Limits()
			if _, err := jt.Execute(b, data); err != nil {
				var le *jinja.LimitError
				if errors.As(err, &le) {
					t.Errorf("%s/%s: %v", d.Name(), c.Name, err)
				}
				continue
			}
			u := b.Used()
			most.CallDepth = max(most.CallDepth, u.CallDepth)
			most.Iterations = max(most.Iterations, u.Iterations)
			most.OutputBytes = max(most.OutputBytes, u.OutputBytes)
			most.AllocBytes = max(most.AllocBytes, u.AllocBytes)
			most.Time = max(most.Time, u.Time)
			if u.CallDepth*10 > lim.CallDepth || u.Iterations*10 > lim.Iterations ||
				u.OutputBytes*10 > lim.OutputBytes || u.AllocBytes*10 > lim.AllocBytes {
				t.Errorf("%s/%s used %+v of %+v", d.Name(), c.Name, u, lim)
			}
		}
	}
	t.Logf("most any render used: %+v", most)
	if n == 0 {
		t.Error("no templates in testdata/templates")
	}
}
