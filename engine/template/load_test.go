package template

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeDir creates a checkpoint directory holding the given files.
func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoad(t *testing.T) {
	const user = `[{"role":"user","content":"hi"}]`
	tests := []struct {
		name    string
		files   map[string]string
		tools   string
		want    string // rendered output
		wantErr string // substring of the load error
		noTmpl  bool   // the error wraps ErrNoTemplate
	}{
		{
			name:  "string template with AddedToken specials",
			files: map[string]string{"tokenizer_config.json": `{"chat_template":"{{ bos_token }}|{{ eos_token }}|{{ unk_token is defined }}","bos_token":{"__type":"AddedToken","content":"<B>"},"eos_token":"<E>","unk_token":null}`},
			want:  "<B>|<E>|False",
		},
		{
			name: "chat_template.jinja wins over tokenizer_config.json",
			files: map[string]string{
				"tokenizer_config.json": `{"chat_template":"config","bos_token":"<s>"}`,
				"chat_template.jinja":   "jinja {{ bos_token }}\n",
			},
			want: "jinja <s>",
		},
		{
			name:  "chat_template.jinja without tokenizer_config.json",
			files: map[string]string{"chat_template.jinja": "{{ messages[0].content }}"},
			want:  "hi",
		},
		{
			name:  "named templates pick default without tools",
			files: map[string]string{"tokenizer_config.json": `{"chat_template":[{"name":"default","template":"D"},{"name":"tool_use","template":"T"}]}`},
			want:  "D",
		},
		{
			name:  "named templates pick tool_use with tools",
			files: map[string]string{"tokenizer_config.json": `{"chat_template":[{"name":"default","template":"D"},{"name":"tool_use","template":"T{{ tools|length }}"}]}`},
			tools: `[{"type":"function"}]`,
			want:  "T1",
		},
		{
			name:    "named templates without default",
			files:   map[string]string{"tokenizer_config.json": `{"chat_template":[{"name":"rag","template":"R"}]}`},
			wantErr: `"chat_template" has no "default" template (has: rag)`,
		},
		{
			name:    "no template",
			files:   map[string]string{"tokenizer_config.json": `{"bos_token":"<s>"}`},
			wantErr: "no chat template",
			noTmpl:  true,
		},
		{
			name:    "no files",
			files:   map[string]string{},
			wantErr: "no chat template",
			noTmpl:  true,
		},
		{
			name:    "malformed template names the file and line",
			files:   map[string]string{"chat_template.jinja": "ok\n{# c\n#}\n{% if %}x{% endif %}\n{% bogus %}\n"},
			wantErr: `chat_template.jinja: jinja parse: line 5: unknown statement "bogus"`,
		},
		{
			name:    "unclosed tag names the file and line",
			files:   map[string]string{"tokenizer_config.json": `{"chat_template":"a\n\n{{ x "}`},
			wantErr: `tokenizer_config.json: line 3: missing end of print tag`,
		},
		{
			name:    "bad tokenizer_config.json",
			files:   map[string]string{"tokenizer_config.json": `{"chat_template": 3}`},
			wantErr: `tokenizer_config.json: "chat_template": want a string or a list of {name, template}`,
		},
		{
			name:    "bad special token",
			files:   map[string]string{"tokenizer_config.json": `{"chat_template":"x","bos_token":{"lstrip":true}}`},
			wantErr: `"bos_token": want a string or an object with "content"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Load(writeDir(t, tt.files))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load error = %v, want it to contain %q", err, tt.wantErr)
				}
				if got := errors.Is(err, ErrNoTemplate); got != tt.noTmpl {
					t.Errorf("errors.Is(err, ErrNoTemplate) = %v, want %v", got, tt.noTmpl)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.Render(context.Background(), json.RawMessage(user), Options{Tools: json.RawMessage(tt.tools)})
			if err != nil || got != tt.want {
				t.Errorf("Render = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	yes := true
	tests := []struct {
		name       string
		template   string
		messages   string
		opt        Options
		wantRaised bool
		wantMsg    string // substring of Error.Message
	}{
		{name: "raise_exception", template: `{{ raise_exception("Roles must alternate") }}`, messages: `[]`, wantRaised: true, wantMsg: "Roles must alternate"},
		{name: "raise inside a macro", template: `{% macro m() %}{{ raise_exception('in macro') }}{% endmacro %}{{ m() }}`, messages: `[]`, wantRaised: true, wantMsg: "in macro"},
		{name: "messages not JSON", template: `x`, messages: `[{`, wantMsg: "messages:"},
		{name: "messages not an array", template: `x`, messages: `{"role":"user"}`, wantMsg: "messages: not a JSON array"},
		{name: "tools not JSON", template: `x`, messages: `[]`, opt: Options{Tools: json.RawMessage(`[`)}, wantMsg: "tools:"},
		{name: "reserved kwarg", template: `x`, messages: `[]`, opt: Options{Extra: map[string]json.RawMessage{"messages": json.RawMessage(`1`)}}, wantMsg: `"messages" cannot be set`},
		{name: "kwarg not JSON", template: `x`, messages: `[]`, opt: Options{Extra: map[string]json.RawMessage{"k": json.RawMessage(`tru`)}}, wantMsg: `"k"`},
		{name: "tojson of undefined", template: `{{ nope | tojson }}`, messages: `[]`, wantMsg: "not JSON serializable"},
		{name: "enable_thinking set", template: `{{ raise_exception(enable_thinking | string) }}`, messages: `[]`, opt: Options{EnableThinking: &yes, Extra: map[string]json.RawMessage{"enable_thinking": json.RawMessage(`false`)}}, wantRaised: true, wantMsg: "True"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.template, Special{})
			if err != nil {
				t.Fatal(err)
			}
			out, err := tmpl.Render(context.Background(), json.RawMessage(tt.messages), tt.opt)
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("Render = %q, %v; want a *Error", out, err)
			}
			if te.Raised != tt.wantRaised || !strings.Contains(te.Message, tt.wantMsg) {
				t.Errorf("Error = %+v, want Raised=%v and a message containing %q", te, tt.wantRaised, tt.wantMsg)
			}
		})
	}
}

func TestRenderKeepsRequestOrderAndNumbers(t *testing.T) {
	tmpl, err := Parse(`{{ messages[0].tool_calls[0].function.arguments | tojson }}|{{ tools | tojson }}|{{ extra }}`, Special{})
	if err != nil {
		t.Fatal(err)
	}
	msgs := `[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{"z":1,"a":1.5,"m":1.0,"big":12345678901234,"s":"x"}}}]}]`
	opt := Options{
		Tools: json.RawMessage(`[{"zeta":{"b":2,"a":1},"alpha":[3,2,1]}]`),
		Extra: map[string]json.RawMessage{"extra": json.RawMessage(`{"y":1,"x":2}`)},
	}
	got, err := tmpl.Render(context.Background(), json.RawMessage(msgs), opt)
	want := `{"z": 1, "a": 1.5, "m": 1.0, "big": 12345678901234, "s": "x"}|[{"zeta": {"b": 2, "a": 1}, "alpha": [3, 2, 1]}]|{'y': 1, 'x': 2}`
	if err != nil || got != want {
		t.Errorf("Render = %q, %v\nwant %q", got, err, want)
	}
}

func TestStartsWithBOS(t *testing.T) {
	tests := []struct {
		bos, rendered string
		want          bool
	}{
		{"<s>", "<s>[INST] hi", true},
		{"<s>", "[INST] hi", false},
		{"<s>", " <s>", false},
		{"", "<s>hi", false},
		{"<|begin_of_text|>", "<|begin_of_text|><|start_header_id|>", true},
	}
	for _, tt := range tests {
		tmpl, err := Parse("x", Special{BOS: tt.bos})
		if err != nil {
			t.Fatal(err)
		}
		if got := tmpl.StartsWithBOS(tt.rendered); got != tt.want {
			t.Errorf("StartsWithBOS(%q) with BOS %q = %v, want %v", tt.rendered, tt.bos, got, tt.want)
		}
	}
}

func TestRenderDeepJSON(t *testing.T) {
	tmpl, err := Parse("{{ messages | length }}", Special{})
	if err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	_, err = tmpl.Render(context.Background(), json.RawMessage(deep), Options{})
	var te *Error
	if !errors.As(err, &te) || !strings.Contains(te.Message, "nested deeper") {
		t.Errorf("Render(20000 nested arrays) = %v, want a *Error about nesting", err)
	}
}
