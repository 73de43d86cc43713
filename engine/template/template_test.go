package template

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// goldenNow is the instant tools/tmplgold/gold.py gives strftime_now.
var goldenNow = time.Date(2024, 7, 26, 9, 5, 3, 0, time.Local)

type conversation struct {
	Name                string                     `json:"name"`
	Messages            json.RawMessage            `json:"messages"`
	Tools               json.RawMessage            `json:"tools"`
	AddGenerationPrompt bool                       `json:"add_generation_prompt"`
	EnableThinking      *bool                      `json:"enable_thinking"`
	Extra               map[string]json.RawMessage `json:"extra"`
}

func (c conversation) options() Options {
	return Options{Tools: c.Tools, AddGenerationPrompt: c.AddGenerationPrompt, EnableThinking: c.EnableThinking, Extra: c.Extra}
}

type golden struct {
	Template string `json:"template"`
	Cases    []struct {
		Name      string  `json:"name"`
		Output    *string `json:"output"`
		Error     string  `json:"error"`
		ErrorType string  `json:"error_type"`
	} `json:"cases"`
}

func readConversations(t testing.TB) map[string]conversation {
	t.Helper()
	data, err := os.ReadFile("testdata/conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ Cases []conversation }
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	out := map[string]conversation{}
	for _, c := range file.Cases {
		out[c.Name] = c
	}
	return out
}

func loadTestTemplate(t testing.TB, name string) *Template {
	t.Helper()
	tmpl, err := Load(filepath.Join("testdata", "templates", name))
	if err != nil {
		t.Fatal(err)
	}
	tmpl.now = func() time.Time { return goldenNow }
	return tmpl
}

// knownDivergent lists template/case pairs where Python raises and the Go
// renderer, built on ardanlabs/jinja, renders instead: the library treats
// None and missing values leniently where Python raises TypeError or
// UndefinedError. Each entry must still diverge, so the list stays honest.
var knownDivergent = map[string]string{
	"deepseek_v3/content_parts":      "str + list is a TypeError in Python; the library concatenates the list's repr",
	"gpt-oss/content_parts":          "str + list is a TypeError in Python; the library concatenates the list's repr",
	"gpt-oss/tool_call_null_content": "'x' in None is a TypeError in Python; the library answers false",
	"qwen3/tool_call_null_content":   "'x' in None is a TypeError in Python; the library answers false",
	"gemma3/empty_messages":          "messages[0]['role'] on [] is an UndefinedError in Python; the library yields undefined",
	"gpt-oss/empty_messages":         "messages[0].role on [] is an UndefinedError in Python; the library yields undefined",
	"llama2-chat/empty_messages":     "messages[0]['role'] on [] is an UndefinedError in Python; the library yields undefined",
	"llama3_2/empty_messages":        "messages[0]['role'] on [] is an UndefinedError in Python; the library yields undefined",
	"ministral3/empty_messages":      "messages[0]['role'] on [] is an UndefinedError in Python; the library yields undefined",
	"qwen3/empty_messages":           "messages[0].role on [] is an UndefinedError in Python; the library yields undefined",
}

func TestGolden(t *testing.T) {
	convs := readConversations(t)
	for _, name := range templateNames(t) {
		var g golden
		readJSON(t, filepath.Join("testdata", "golden", name+".json"), &g)
		tmpl := loadTestTemplate(t, name)
		for _, want := range g.Cases {
			key := name + "/" + want.Name
			t.Run(key, func(t *testing.T) {
				conv, ok := convs[want.Name]
				if !ok {
					t.Fatalf("golden case %q is not in conversations.json (regenerate the goldens)", want.Name)
				}
				got, err := tmpl.Render(context.Background(), conv.Messages, conv.options())
				reason, divergent := knownDivergent[key]
				matches := false
				switch {
				case want.Output != nil:
					matches = err == nil && got == *want.Output
				default:
					var te *Error
					matches = errors.As(err, &te) &&
						(want.ErrorType != "TemplateError" || (te.Raised && te.Message == want.Error))
				}
				switch {
				case divergent && matches:
					t.Errorf("listed in knownDivergent (%s) but now matches Python; remove the entry", reason)
				case divergent:
					t.Skipf("known divergence: %s", reason)
				case matches:
				case want.Output != nil && err != nil:
					t.Errorf("Render: %v\nwant:\n%s", err, *want.Output)
				case want.Output != nil:
					t.Errorf("Render mismatch\n got: %q\nwant: %q\n%s", got, *want.Output, firstDiff(got, *want.Output))
				default:
					t.Errorf("Render = %q, %v; want %s %q", got, err, want.ErrorType, want.Error)
				}
			})
		}
	}
}

// firstDiff describes where two strings first differ.
func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-40)
	return "first difference at byte " + itoa(i) + ":\n got: " + quoteSnippet(a, lo, i+40) + "\nwant: " + quoteSnippet(b, lo, i+40)
}

func quoteSnippet(s string, lo, hi int) string {
	hi = min(hi, len(s))
	lo = min(lo, hi)
	b, _ := json.Marshal(s[lo:hi])
	return string(b)
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestNoDoubleBOS checks that no golden output starts with two BOS tokens
// and that StartsWithBOS agrees with the text.
func TestNoDoubleBOS(t *testing.T) {
	convs := readConversations(t)
	for _, name := range templateNames(t) {
		tmpl := loadTestTemplate(t, name)
		bos := tmpl.Special().BOS
		for _, conv := range convs {
			out, err := tmpl.Render(context.Background(), conv.Messages, conv.options())
			if err != nil {
				continue
			}
			if bos != "" && strings.HasPrefix(out, bos+bos) {
				t.Errorf("%s/%s: output starts with two BOS tokens %q", name, conv.Name, bos)
			}
			if got, want := tmpl.StartsWithBOS(out), bos != "" && strings.HasPrefix(out, bos); got != want {
				t.Errorf("%s/%s: StartsWithBOS = %v, want %v", name, conv.Name, got, want)
			}
		}
	}
}

// templateNames lists the directories under testdata/templates that ship a
// chat template, and checks that the others fail to load with
// ErrNoTemplate.
func templateNames(t testing.TB) []string {
	t.Helper()
	dirs, err := os.ReadDir("testdata/templates")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		_, err := Load(filepath.Join("testdata", "templates", d.Name()))
		switch {
		case err == nil:
			names = append(names, d.Name())
		case !errors.Is(err, ErrNoTemplate):
			t.Errorf("Load(%s): %v", d.Name(), err)
		}
	}
	if len(names) == 0 {
		t.Fatal("no templates in testdata/templates")
	}
	return names
}
