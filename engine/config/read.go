package config

import (
	"encoding/json"
	"fmt"
	"math"
)

// reader decodes typed values from a JSON object, keeping the first error
// (which names the key) so Parse reads as a list of fields.
type reader struct {
	m   map[string]json.RawMessage
	err error
}

func (r *reader) fail(key string, raw json.RawMessage, want string) {
	if r.err == nil {
		r.err = fmt.Errorf("%q is %s, want %s", key, truncate(string(raw)), want)
	}
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func (r *reader) raw(key string) (json.RawMessage, bool) {
	v, ok := r.m[key]
	if !ok || isNull(v) {
		return nil, false
	}
	return v, true
}

func (r *reader) str(key string) string {
	v, ok := r.raw(key)
	if !ok {
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		r.fail(key, v, "a string")
	}
	return s
}

func (r *reader) float(key string, def float64) float64 {
	v, ok := r.raw(key)
	if !ok {
		return def
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		r.fail(key, v, "a number")
		return def
	}
	return f
}

func (r *reader) int(key string, def int) int {
	v, ok := r.raw(key)
	if !ok {
		return def
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<40 {
		r.fail(key, v, "an integer")
		return def
	}
	return int(f)
}

func (r *reader) optInt(key string) *int {
	if _, ok := r.raw(key); !ok {
		return nil
	}
	if ids := r.ids(key); len(ids) > 0 {
		return &ids[0]
	}
	return nil
}

func (r *reader) bool(key string, def bool) bool {
	v, ok := r.raw(key)
	if !ok {
		return def
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		r.fail(key, v, "true or false")
		return def
	}
	return b
}

// ids reads an integer or a list of integers.
func (r *reader) ids(key string) []int {
	v, ok := r.raw(key)
	if !ok {
		return nil
	}
	var one int
	if err := json.Unmarshal(v, &one); err == nil {
		return []int{one}
	}
	var many []int
	if err := json.Unmarshal(v, &many); err != nil {
		r.fail(key, v, "an integer or a list of integers")
		return nil
	}
	return many
}

func (r *reader) into(key string, dst any) {
	v, ok := r.raw(key)
	if !ok {
		return
	}
	if err := json.Unmarshal(v, dst); err != nil {
		r.fail(key, v, fmt.Sprintf("%T", dst)[1:])
	}
}

// Fields reads optional values of a config object that Config does not
// normalise (a family's own keys, a rope object's parameters): absent and
// null keys take the default, and the first malformed value is kept, with
// its key, as Err.
type Fields struct{ r reader }

// NewFields reads m (Config.Text, Rope.Params).
func NewFields(m map[string]json.RawMessage) *Fields { return &Fields{r: reader{m: m}} }

func (f *Fields) Float(key string, def float64) float64 { return f.r.float(key, def) }
func (f *Fields) Int(key string, def int) int           { return f.r.int(key, def) }
func (f *Fields) Bool(key string, def bool) bool        { return f.r.bool(key, def) }

// Ints reads an integer or a list of integers (nil when absent).
func (f *Fields) Ints(key string) []int { return f.r.ids(key) }

// Err is the first malformed value's error, naming its key.
func (f *Fields) Err() error { return f.r.err }
