package toolcall

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// call is a Call without its ID, for comparison.
type call struct{ Name, Arguments string }

func strip(calls []Call) []call {
	var out []call
	for _, c := range calls {
		out = append(out, call{c.Name, c.Arguments})
	}
	return out
}

var parseTests = []struct {
	name      string
	f         Format
	in        string
	content   string
	calls     []call
	malformed bool
}{
	// Hermes / Qwen.
	{name: "hermes one call", f: Hermes,
		in:    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>",
		calls: []call{{"get_weather", `{"city": "Paris", "unit": "celsius"}`}}},
	{name: "hermes content then two calls", f: Hermes,
		in:      "Let me check both.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
		content: "Let me check both.",
		calls:   []call{{"a", `{"x": 1}`}, {"b", `{}`}}},
	{name: "hermes text after calls", f: Hermes,
		in:      "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>\n\nDone.  ",
		content: "Done.",
		calls:   []call{{"a", `{}`}}},
	{name: "hermes string arguments", f: Hermes,
		in:    `<tool_call>{"name": "a", "arguments": "{\"q\": \"x\"}"}</tool_call>`,
		calls: []call{{"a", `{"q": "x"}`}}},
	{name: "hermes missing arguments", f: Hermes,
		in:    `<tool_call>{"name": "now"}</tool_call>`,
		calls: []call{{"now", `{}`}}},
	{name: "hermes unclosed at end", f: Hermes,
		in:    "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"k\": [1, 2]}}\n",
		calls: []call{{"a", `{"k": [1, 2]}`}}},
	{name: "hermes malformed JSON stays content", f: Hermes,
		in:        "Hi <tool_call>{\"name\": oops}</tool_call> bye",
		content:   "Hi <tool_call>{\"name\": oops}</tool_call> bye",
		malformed: true},
	{name: "hermes no call keeps text exactly", f: Hermes,
		in:      "  plain <tool answer\n\n",
		content: "  plain <tool answer\n\n"},
	{name: "hermes marker-like text", f: Hermes,
		in:      "use <tool_calls> not this",
		content: "use <tool_calls> not this"},

	// Llama 3.
	{name: "llama3 bare JSON", f: Llama3,
		in:    ` {"name": "get_weather", "parameters": {"city": "Paris"}}`,
		calls: []call{{"get_weather", `{"city": "Paris"}`}}},
	{name: "llama3 python_tag", f: Llama3,
		in:    `<|python_tag|>{"name": "search", "parameters": {"q": "x"}}`,
		calls: []call{{"search", `{"q": "x"}`}}},
	{name: "llama3 two calls with semicolon", f: Llama3,
		in:    `{"name": "a", "parameters": {}}; {"name": "b", "arguments": {"z": null}}`,
		calls: []call{{"a", `{}`}, {"b", `{"z": null}`}}},
	{name: "llama3 built-in tool", f: Llama3,
		in:    `<|python_tag|>brave_search.call(query="weather in Paris")`,
		calls: []call{{"brave_search", `{"query":"weather in Paris"}`}}},
	{name: "llama3 content then python_tag", f: Llama3,
		in:      "Searching.\n<|python_tag|>{\"name\": \"s\", \"parameters\": {}}",
		content: "Searching.",
		calls:   []call{{"s", `{}`}}},
	{name: "llama3 JSON answer that is not a call", f: Llama3,
		in:      ` {"answer": 42}`,
		content: ` {"answer": 42}`},
	{name: "llama3 JSON call followed by text is content", f: Llama3,
		in:      `{"name": "a", "parameters": {}} and more`,
		content: `{"name": "a", "parameters": {}} and more`},
	{name: "llama3 plain text", f: Llama3,
		in:      "The answer is {42}.",
		content: "The answer is {42}."},

	// Mistral.
	{name: "mistral JSON list", f: Mistral,
		in:    `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "b", "arguments": {}}]`,
		calls: []call{{"get_weather", `{"city": "Paris"}`}, {"b", `{}`}}},
	{name: "mistral name ARGS form, twice", f: Mistral,
		in:    `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}`,
		calls: []call{{"get_weather", `{"city": "Paris"}`}, {"get_time", `{}`}}},
	{name: "mistral CALL_ID form", f: Mistral,
		in:    `[TOOL_CALLS]f[CALL_ID]abc123XYZ[ARGS]{"a": 1}`,
		calls: []call{{"f", `{"a": 1}`}}},
	{name: "mistral content first", f: Mistral,
		in:      "Sure.[TOOL_CALLS]f[ARGS]{}",
		content: "Sure.",
		calls:   []call{{"f", `{}`}}},
	{name: "mistral truncated arguments", f: Mistral,
		in:        `[TOOL_CALLS]f[ARGS]{"a": `,
		content:   `[TOOL_CALLS]f[ARGS]{"a": `,
		malformed: true},

	// Gemma.
	{name: "gemma tool_code block", f: Gemma,
		in:      "I'll look it up.\n```tool_code\nget_weather(city=\"Paris\", days=2, metric=True)\n```",
		content: "I'll look it up.",
		calls:   []call{{"get_weather", `{"city":"Paris","days":2,"metric":true}`}}},
	{name: "gemma bare list", f: Gemma,
		in:    `[get_product(PID="807ZPKBL9V"), search(q='it\'s', tags=["a", 'b'], opts={"x": None, "y": 1.5})]`,
		calls: []call{{"get_product", `{"PID":"807ZPKBL9V"}`}, {"search", `{"q":"it's","tags":["a","b"],"opts":{"x":null,"y":1.5}}`}}},
	{name: "gemma JSON reply", f: Gemma,
		in:    `{"name": "f", "parameters": {"a": "<b>"}}`,
		calls: []call{{"f", `{"a": "<b>"}`}}},
	{name: "gemma print wrapper, one per line", f: Gemma,
		in:    "```tool_code\nprint(default_api.f(a=1))\ng()\n```",
		calls: []call{{"f", `{"a":1}`}, {"g", `{}`}}},
	{name: "gemma other code block is content", f: Gemma,
		in:      "```python\nprint(1)\n```",
		content: "```python\nprint(1)\n```"},
	{name: "gemma list that is not calls", f: Gemma,
		in:      "[1] First point",
		content: "[1] First point"},
	{name: "gemma positional argument", f: Gemma,
		in:        "```tool_code\nf(1)\n```",
		content:   "```tool_code\nf(1)\n```",
		malformed: true},

	// DeepSeek V3.
	{name: "deepseek two calls", f: DeepSeek,
		in:      "Let me check.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>now\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		content: "Let me check.",
		calls:   []call{{"get_weather", `{"city": "Paris"}`}, {"now", `{}`}}},
	{name: "deepseek malformed", f: DeepSeek,
		in:        "<｜tool▁calls▁begin｜>garbage<｜tool▁calls▁end｜>",
		content:   "<｜tool▁calls▁begin｜>garbage<｜tool▁calls▁end｜>",
		malformed: true},

	// None.
	{name: "none passes everything", f: None,
		in:      "<tool_call>{\"name\": \"a\"}</tool_call>",
		content: "<tool_call>{\"name\": \"a\"}</tool_call>"},
}

func TestParse(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			content, calls, err := Parse(tt.f, tt.in)
			if content != tt.content {
				t.Errorf("content = %q, want %q", content, tt.content)
			}
			if got := strip(calls); !reflect.DeepEqual(got, tt.calls) {
				t.Errorf("calls = %q, want %q", got, tt.calls)
			}
			var me *MalformedError
			if got := errors.As(err, &me); got != tt.malformed || (err != nil && !got) {
				t.Errorf("err = %v, want malformed=%v", err, tt.malformed)
			}
		})
	}
}

// TestStreamChunking feeds each test reply one byte at a time and in two
// pieces at every split point: content and calls must equal Parse's, and no
// Feed may return content that Parse does not.
func TestStreamChunking(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			wantContent, wantCalls, _ := Parse(tt.f, tt.in)
			for split := 0; split <= len(tt.in); split++ {
				checkChunks(t, tt.f, []string{tt.in[:split], tt.in[split:]}, wantContent, wantCalls)
			}
			checkChunks(t, tt.f, strings.Split(tt.in, ""), wantContent, wantCalls)
		})
	}
}

func checkChunks(t *testing.T, f Format, chunks []string, wantContent string, wantCalls []Call) {
	t.Helper()
	s := NewStream(f)
	var content string
	var calls []Call
	for _, c := range chunks {
		got, k := s.Feed(c)
		content += got
		calls = append(calls, k...)
		if !strings.HasPrefix(wantContent, content) {
			t.Fatalf("chunks %q: content so far %q is not a prefix of %q", chunks, content, wantContent)
		}
	}
	got, k, _ := s.Close()
	content += got
	calls = append(calls, k...)
	if content != wantContent || !reflect.DeepEqual(strip(calls), strip(wantCalls)) {
		t.Fatalf("chunks %q: got %q %q, want %q %q", chunks, content, strip(calls), wantContent, strip(wantCalls))
	}
}

func TestStreamHoldsMarker(t *testing.T) {
	s := NewStream(Hermes)
	if c, _ := s.Feed("Checking <tool_"); c != "Checking" {
		t.Errorf("Feed = %q, want %q (the space and marker start held back)", c, "Checking")
	}
	if c, k := s.Feed("call>{\"name\": \"a\", \"arg"); c != "" || k != nil {
		t.Errorf("Feed inside a call = %q, %v; want nothing", c, k)
	}
	c, k := s.Feed("uments\": {}}</tool_call>")
	if c != "" || len(k) != 1 || k[0].Name != "a" {
		t.Errorf("Feed completing the call = %q, %v", c, k)
	}
}

func TestIDs(t *testing.T) {
	_, calls, _ := Parse(Hermes, strings.Repeat(`<tool_call>{"name":"a"}</tool_call>`, 3))
	seen := map[string]bool{}
	for _, c := range calls {
		if !strings.HasPrefix(c.ID, "call_") || len(c.ID) != 29 || seen[c.ID] {
			t.Errorf("ID %q: want a fresh call_ + 24 characters", c.ID)
		}
		seen[c.ID] = true
	}
	_, calls, _ = Parse(Mistral, `[TOOL_CALLS]a[ARGS]{}[TOOL_CALLS][{"name":"b","arguments":{},"id":"given1234"}]`)
	if len(calls) != 2 || len(calls[0].ID) != 9 || calls[1].ID != "given1234" {
		t.Errorf("Mistral IDs = %+v, want 9 characters and the model's own", calls)
	}
}
