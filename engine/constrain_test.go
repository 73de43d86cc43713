package engine_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"hearth/engine"
	"hearth/engine/grammar"
	"hearth/engine/sample"
	"hearth/internal/testmodels"
)

// TestFormatJSON: with an output format, every answer parses and has the
// schema's shape, greedy and sampled, whatever the tiny model would say
// freely (it was never trained to write JSON), and ends on its own.
func TestFormatJSON(t *testing.T) {
	r := openTiny(t, engine.RunnerOptions{})
	schema := json.RawMessage(`{"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "count": {"type": "integer", "minimum": 0, "maximum": 99}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2}}, "required": ["name", "count", "tags"]}`)
	for i, opt := range []sample.Options{{Temperature: 0}, {Temperature: 1, Seed: seed(1)}, {Temperature: 1.3, TopP: 0.95, Seed: seed(2)}, {Temperature: 0.7, Seed: seed(3)}} {
		text, u, _ := collect(t, r, engine.Request{Messages: hello, MaxTokens: 120, Sample: opt, Format: &engine.Format{Schema: schema}})
		var out struct {
			Name  *string  `json:"name"`
			Count *int     `json:"count"`
			Tags  []string `json:"tags"`
		}
		if err := json.Unmarshal([]byte(text), &out); err != nil || out.Name == nil || out.Count == nil || *out.Count > 99 || len(out.Tags) > 2 {
			t.Fatalf("sampling %d: %q (finish %s): %v %+v", i, text, u.FinishReason, err, out)
		}
		if u.FinishReason != "stop" {
			t.Errorf("sampling %d: finished by %s", i, u.FinishReason)
		}
		// Any object: strings are unbounded, so the untrained model may
		// run out of tokens inside one; what it wrote is then a prefix
		// of an object, and a whole one when it stopped by itself.
		text, u, _ = collect(t, r, engine.Request{Messages: hello, MaxTokens: 120, Sample: opt, Format: &engine.Format{JSONObject: true}})
		m := grammar.NewMatcher(grammar.JSONObject())
		var obj map[string]any
		switch {
		case m.Advance([]byte(text)) != nil:
			t.Errorf("json_object %d: %q is no object's prefix", i, text)
		case u.FinishReason == "stop" && json.Unmarshal([]byte(text), &obj) != nil:
			t.Errorf("json_object %d: stopped at %q", i, text)
		}
	}
}

func TestFormatRefusesSchema(t *testing.T) {
	r := openTiny(t, engine.RunnerOptions{})
	_, err := r.Generate(t.Context(), engine.Request{Messages: hello, Format: &engine.Format{Schema: json.RawMessage(`{"type": "string", "pattern": "\\bx"}`)}}, func(engine.Delta) error { return nil })
	var re *engine.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("%v, want a RequestError", err)
	}
}

func seed(s uint64) *uint64 { return &s }

// hermesTemplate is ChatML with Hermes tool calls (what Qwen's templates
// write), enough for the runner to parse <tool_call> blocks.
const hermesTemplate = `{% for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}{% if tools %}<tool_call>{% endif %}<|im_start|>assistant
`

// TestForceTool: with a tool call forced, the tiny model's answer is one
// call of an offered tool whose arguments follow its schema, parsed by the
// runner into a tool call.
func TestForceTool(t *testing.T) {
	dir := testmodels.WithTemplate(t, "chat-tiny", hermesTemplate)
	r, err := engine.Open(dir, engine.RunnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tools := json.RawMessage(`[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":8},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"]}}},
		{"type":"function","function":{"name":"now","parameters":{"type":"object","properties":{},"additionalProperties":false}}}]`)
	for _, tc := range []struct {
		force *engine.ForceTool
		names []string
	}{{&engine.ForceTool{}, []string{"get_weather", "now"}}, {&engine.ForceTool{Name: "get_weather"}, []string{"get_weather"}}} {
		for _, opt := range []sample.Options{{Temperature: 0}, {Temperature: 1, Seed: seed(5)}} {
			_, u, deltas := collect(t, r, engine.Request{Messages: hello, Tools: tools, ForceTool: tc.force, MaxTokens: 200, Sample: opt})
			var calls []string
			for _, d := range deltas {
				for _, c := range d.ToolCalls {
					calls = append(calls, c.Name)
					var args map[string]any
					if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
						t.Errorf("arguments %q: %v", c.Arguments, err)
					}
					if c.Name == "get_weather" {
						if city, ok := args["city"].(string); !ok || len([]rune(city)) > 8 {
							t.Errorf("city %v", args["city"])
						}
						if d, ok := args["days"].(float64); !ok || d < 1 || d > 7 {
							t.Errorf("days %v", args["days"])
						}
					}
				}
			}
			if len(calls) != 1 || !slices.Contains(tc.names, calls[0]) || u.FinishReason != "tool_calls" {
				t.Errorf("force %+v: calls %v, finish %s", tc.force, calls, u.FinishReason)
			}
		}
	}
	_, err = r.Generate(t.Context(), engine.Request{Messages: hello, Tools: tools, ForceTool: &engine.ForceTool{Name: "nope"}}, func(engine.Delta) error { return nil })
	var re *engine.RequestError
	if !errors.As(err, &re) {
		t.Errorf("an unknown forced tool: %v", err)
	}
}
