package grammar

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestSchemaAccepts(t *testing.T) {
	tests := []struct {
		schema string
		yes    []string
		no     []string
	}{
		{`{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}`,
			[]string{`{"name": "Ann", "age": 31}`, `{"name":"","age":-4}`, "{\n  \"name\": \"A\\n\\u00e9\",\n  \"age\": 0\n}", `{"name": "é日本🙂", "age": 7}`},
			[]string{`{"age": 31, "name": "Ann"}`, `{"name": "Ann"}`, `{"name": "Ann", "age": 31, "x": 1}`, `{"name": "Ann", "age": 01}`, `{"name": "Ann", "age": 1.5}`, `{"name": "a"b", "age": 1}`, "{\"name\": \"\x01\", \"age\": 1}", `{"name": "Ann", "age": 31,}`, `[1]`}},
		{`{"properties": {"a": {"type": "boolean"}, "b": {"type": "null"}, "c": {"enum": ["x", 2, null]}}}`,
			[]string{`{}`, `{"a": true}`, `{"b": null}`, `{"a": false, "c": 2}`, `{"c": "x"}`, `{"a":true,"b":null,"c":null}`},
			[]string{`{"c": "y"}`, `{,"a": true}`, `{"b": null, "a": true}`, `{"a": true "b": null}`}},
		{`{"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 3}`,
			[]string{`[1]`, `[1, 2.5, -3e10]`, `[0.0,1E+2]`},
			[]string{`[]`, `[1,2,3,4]`, `[1,]`, `[.5]`, `[1e]`, `["1"]`}},
		{`{"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}`,
			[]string{`[]`, `["a"]`, `["a", 1]`},
			[]string{`["a", 1, 2]`, `[1]`}},
		{`{"type": "string", "minLength": 2, "maxLength": 3}`,
			[]string{`"ab"`, `"abc"`, `"日本"`, `"\n\t"`},
			[]string{`"a"`, `"abcd"`, `""`}},
		{`{"type": "string", "pattern": "^[a-z]+-\\d{2}$"}`,
			[]string{`"abc-12"`},
			[]string{`"abc-1"`, `"Abc-12"`, `"abc-123"`}},
		{`{"type": "string", "format": "date-time"}`,
			[]string{`"2026-12-03T07:30:00Z"`, `"2026-12-03T07:30:00.123+01:00"`},
			[]string{`"2026-13-03T07:30:00Z"`, `"2026-12-03"`}},
		{`{"type": "integer", "minimum": 5, "exclusiveMaximum": 120}`,
			[]string{`5`, `9`, `10`, `99`, `100`, `119`},
			[]string{`4`, `-5`, `120`, `1000`, `05`}},
		{`{"type": "integer", "minimum": -20, "maximum": -3}`,
			[]string{`-3`, `-9`, `-10`, `-20`},
			[]string{`-2`, `-21`, `0`, `3`, `-0`}},
		{`{"anyOf": [{"type": "string"}, {"type": "integer"}]}`,
			[]string{`"x"`, `12`},
			[]string{`true`, `1.5`}},
		{`{"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}, "required": ["v", "next"]}}, "$ref": "#/$defs/node"}`,
			[]string{`{"v": 1, "next": null}`, `{"v": 1, "next": {"v": 2, "next": {"v": 3, "next": null}}}`},
			[]string{`{"v": 1, "next": {"v": 2}}`, `{"v": 1}`}},
		{`{"type": "object", "additionalProperties": {"type": "integer"}}`,
			[]string{`{}`, `{"a": 1, "b": 2}`},
			[]string{`{"a": "x"}`}},
		{`{"const": {"k": [1, true]}}`,
			[]string{`{"k":[1,true]}`},
			[]string{`{"k": [1, true]}`}},
		{`true`,
			[]string{`1`, `"s"`, `{"a": [null, {"b": {}}]}`, `[ ]`},
			[]string{`{`, `nul`, `{'a': 1}`, ` 1`, `1 `}},
	}
	for _, tt := range tests {
		g, err := Schema([]byte(tt.schema))
		if err != nil {
			t.Errorf("%s: %v", tt.schema, err)
			continue
		}
		for _, s := range tt.yes {
			if !g.Accepts(s) {
				t.Errorf("%s\n  refuses %s", tt.schema, s)
			}
		}
		for _, s := range tt.no {
			if g.Accepts(s) {
				t.Errorf("%s\n  accepts %s", tt.schema, s)
			}
		}
	}
}

func TestJSONObject(t *testing.T) {
	g := JSONObject()
	for _, s := range []string{`{}`, `{"a": 1}`, `{"a": {"b": [1, "x", null, true, false, -0.5e3]}}`} {
		if !g.Accepts(s) {
			t.Errorf("refuses %s", s)
		}
	}
	for _, s := range []string{`[]`, `1`, ` {}`, `{} `, `{"a"}`, `{"a": 1,}`, `{"a": 01}`, "{\"a\": \"\xff\"}", `{"a": "\ud800"}x`} {
		if g.Accepts(s) {
			t.Errorf("accepts %s", s)
		}
	}
}

func TestSchemaErrors(t *testing.T) {
	tests := []struct{ schema, keyword string }{
		{`{"type": "string", "pattern": "a\\bb"}`, "pattern"},
		{`{"type": "object", "patternProperties": {"x": {}}}`, "patternProperties"},
		{`{"type": "number", "minimum": 0.5}`, "minimum"},
		{`{"type": "string", "format": "hostname"}`, "format"},
		{`{"$ref": "https://example.com/s.json"}`, "$ref"},
		{`{"$ref": "#/$defs/missing"}`, "$ref"},
		{`{"type": "array", "maxItems": 100000}`, "maxItems"},
		{`{"type": "integer", "minimum": 10, "maximum": 2}`, "minimum"},
		{`{"type": "object", "properties": {"a": {}}, "required": ["b"]}`, "required"},
		{`{"allOf": [{"type": "string"}, {"minLength": 1}]}`, "allOf"},
		{`{"type": "wat"}`, "type"},
		{`{"not": {}}`, "not"},
		{`[1]`, "schema"},
		{`{"a":`, "schema"},
		{`false`, "false"},
		{strings.Repeat(`{"items":`, 100) + `{}` + strings.Repeat(`}`, 100), "schema"},
	}
	for _, tt := range tests {
		_, err := Schema([]byte(tt.schema))
		var se *SchemaError
		if !errors.As(err, &se) || se.Keyword != tt.keyword {
			t.Errorf("%.60s: %v, want a SchemaError about %q", tt.schema, err, tt.keyword)
		}
	}
}

// TestGenerateValid walks random paths through schema grammars, one byte
// at a time among those the matcher allows, and checks that every text it
// can finish is valid JSON that decodes into the schema's shape.
func TestGenerateValid(t *testing.T) {
	schema := `{"type": "object", "properties": {"id": {"type": "integer", "minimum": 0}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 3}, "kind": {"enum": ["a", "b"]}, "score": {"type": "number"}}, "required": ["id", "kind"]}`
	g, err := Schema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(1)
	rnd := func(n int) int {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return int(seed % uint64(n))
	}
	finished := 0
	for range 300 {
		m := NewMatcher(g)
		var text []byte
		for len(text) < 400 {
			if m.CanEnd() && (m.Done() || rnd(8) == 0) {
				break
			}
			var next []byte
			for b := 0; b < 256; b++ {
				save := m.cur
				if m.Advance([]byte{byte(b)}) == nil {
					next = append(next, byte(b))
				}
				m.cur = save
			}
			if len(next) == 0 {
				t.Fatalf("stuck after %q", text)
			}
			b := next[rnd(len(next))]
			if err := m.Advance([]byte{b}); err != nil {
				t.Fatal(err)
			}
			text = append(text, b)
		}
		if !m.CanEnd() {
			continue
		}
		finished++
		var out struct {
			ID    *float64 `json:"id"`
			Tags  []string `json:"tags"`
			Kind  string   `json:"kind"`
			Score *float64 `json:"score"`
		}
		dec := json.NewDecoder(strings.NewReader(string(text)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out); err != nil || out.ID == nil || (out.Kind != "a" && out.Kind != "b") || len(out.Tags) > 3 {
			t.Fatalf("generated %q: %v %+v", text, err, out)
		}
	}
	if finished < 30 {
		t.Errorf("only %d of 300 random walks finished", finished)
	}
}
