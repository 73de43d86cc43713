package grammar

import (
	"testing"
)

// FuzzSchema compiles arbitrary schemas (outside input: a request carries
// one) and runs the matcher over arbitrary text: errors are fine, panics
// and unbounded work are not.
func FuzzSchema(f *testing.F) {
	for _, s := range []string{
		`{"type": "object", "properties": {"a": {"type": "string", "pattern": "^x+$"}, "b": {"type": "integer", "minimum": -5, "maximum": 500}}, "required": ["a"]}`,
		`{"$defs": {"t": {"type": "array", "items": {"$ref": "#/$defs/t"}, "maxItems": 2}}, "$ref": "#/$defs/t"}`,
		`{"$ref": "#"}`,
		`{"anyOf": [{"type": "null"}, {"enum": [1, "a", {"b": []}]}]}`,
		`{"type": ["string", "number"], "maxLength": 3, "format": "date"}`,
		`{"type": "array", "prefixItems": [{"const": 1}], "items": {"type": "boolean"}, "minItems": 2, "maxItems": 4}`,
		`{"type": "object", "additionalProperties": {"type": "number"}}`,
		`true`,
	} {
		f.Add([]byte(s), []byte(`{"a": "xx", "b": 7}`))
	}
	f.Fuzz(func(t *testing.T, schema, text []byte) {
		g, err := Schema(schema)
		if err != nil {
			return
		}
		m := NewMatcher(g)
		for i := range text {
			if m.Advance(text[i:i+1]) != nil {
				break
			}
		}
		m.CanEnd()
	})
}
