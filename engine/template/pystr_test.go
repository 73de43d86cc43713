package template

import (
	"testing"

	"hearth/engine/template/jinja"
)

// The expected strings are CPython 3.11's.
func TestPyFloatRepr(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{1e16, "1e+16"},
		{9999999999999998.0, "9999999999999998.0"},
		{1e-05, "1e-05"},
		{0.0001, "0.0001"},
		{123456789.123, "123456789.123"},
		{5e-324, "5e-324"},
		{1.7976931348623157e308, "1.7976931348623157e+308"},
		{0.1, "0.1"},
		{100.0, "100.0"},
		{-2.5e-10, "-2.5e-10"},
		{1e15, "1000000000000000.0"},
		{0, "0.0"},
		{1.5, "1.5"},
		{1 << 60, "1.152921504606847e+18"},
	}
	for _, tt := range tests {
		if got := pyFloatRepr(tt.in); got != tt.want {
			t.Errorf("pyFloatRepr(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPyJSONString(t *testing.T) {
	s := jinja.NewString("a\x00\x1f\x7f\u2028é😀\"\\")
	tests := []struct {
		ascii bool
		want  string
	}{
		{false, "\"a\\u0000\\u001f\x7f\u2028é😀\\\"\\\\\""},
		{true, `"a\u0000\u001f\u007f\u2028\u00e9\ud83d\ude00\"\\"`},
	}
	for _, tt := range tests {
		got, err := pyJSON(nil, s, jsonOptions{ensureASCII: tt.ascii})
		if err != nil || got != tt.want {
			t.Errorf("pyJSON(ensure_ascii=%v) = %q, %v; want %q", tt.ascii, got, err, tt.want)
		}
	}
}

func TestPyReprString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a\x00\n\t\r\x7f\u00a0\u200b\u3000é😀\U000e0001\\", `'a\x00\n\t\r\x7f\xa0\u200b\u3000é😀\U000e0001\\'`},
		{"it's", `"it's"`},
		{`both ' "`, `'both \' "'`},
	}
	for _, tt := range tests {
		if got := pyReprString(tt.in); got != tt.want {
			t.Errorf("pyReprString(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestUnicodeEscape(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: `a\nb\tc\\d\'e\"f`, want: "a\nb\tc\\d'e\"f"},
		{in: `\x41\101\u00e9\U0001F600\a\b\f\v\r`, want: "AAé😀\a\b\f\v\r"},
		{in: `\q\0`, want: "\\q\x00"},
		{in: "line\\\ncontinued", want: "linecontinued"},
		{in: `\x4`, err: `truncated \xXX escape`},
		{in: `\U00110000`, err: "illegal Unicode character"},
		{in: `\N{BULLET}`, err: `\N{...} escapes are not supported`},
	}
	for _, tt := range tests {
		got, err := unicodeEscape(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("unicodeEscape(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("unicodeEscape(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
