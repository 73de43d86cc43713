package engine_test

import (
	"encoding/json"
	"errors"
	"testing"

	"hearth/engine"
	"hearth/engine/grammar"
	"hearth/engine/sample"
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
