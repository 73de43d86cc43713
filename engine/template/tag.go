package template

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tag rewrites one {{ ... }} or {% ... %} tag starting at w.pos, lexing its
// content as Jinja2 does: the closing delimiter counts only outside string
// literals and with every bracket balanced.
func (w *rewriter) tag(kind byte) error {
	open := w.pos
	i := open + 2
	if i < len(w.src) && (w.src[i] == '-' || w.src[i] == '+') {
		i++
	}
	var body strings.Builder
	var stack []byte
	afterPipe := false
	last := byte(0) // last non-space byte written to body
	put := func(s string) {
		if s == "" {
			return
		}
		if (s[0] == '}' && (last == '}' || last == '%')) || (s[0] == '%' && last == '{') {
			body.WriteByte(' ')
		}
		body.WriteString(s)
		if t := strings.TrimRightFunc(s, pyIsSpace); t != "" {
			last = t[len(t)-1]
		}
	}
	for {
		if i >= len(w.src) {
			return w.errorf(open, "missing end of %s tag", tagName(kind))
		}
		if len(stack) == 0 {
			if close, ok := tagEnd(w.src, i, kind); ok {
				w.closeTag(kind, body.String(), close)
				return nil
			}
		}
		c := w.src[i]
		r, n := utf8.DecodeRuneInString(w.src[i:])
		switch {
		case pyIsSpace(r):
			put(w.src[i : i+n])
			i += n
			continue
		case c == '\'' || c == '"':
			end, val, err := lexString(w.src, i)
			if err != nil {
				return w.errorf(i, "%v", err)
			}
			put(quote(val))
			i = end
		case c >= '0' && c <= '9':
			j, lit := lexNumber(w.src, i)
			put(lit)
			i = j
		case c == '_' || r >= utf8.RuneSelf && isLetter(r) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i + n
			for j < len(w.src) {
				r2, n2 := utf8.DecodeRuneInString(w.src[j:])
				if !(r2 == '_' || isLetter(r2) || r2 >= '0' && r2 <= '9') {
					break
				}
				j += n2
			}
			name := w.src[i:j]
			if _, ok := filters[name]; ok && afterPipe {
				name = filterPrefix + name
			}
			put(name)
			i = j
		default:
			op := lexOperator(w.src, i)
			if op == "" {
				return w.errorf(i, "unexpected char %q", r)
			}
			switch op {
			case "(", "[", "{":
				stack = append(stack, map[string]byte{"(": ')', "[": ']', "{": '}'}[op])
			case ")", "]", "}":
				if len(stack) == 0 || stack[len(stack)-1] != op[0] {
					return w.errorf(i, "unexpected %q", op)
				}
				stack = stack[:len(stack)-1]
			}
			put(op)
			i += len(op)
			afterPipe = op == "|"
			continue
		}
		afterPipe = false
	}
}

func tagName(kind byte) string {
	if kind == '{' {
		return "print"
	}
	return "statement"
}

// tagEnd matches a closing delimiter at i: for statements "+%}", "-%}" plus
// any whitespace, or "%}" plus one newline (trim_blocks); for output "-}}"
// plus any whitespace, or "}}".
func tagEnd(s string, i int, kind byte) (int, bool) {
	switch kind {
	case '%':
		switch {
		case strings.HasPrefix(s[i:], "+%}"):
			return i + 3, true
		case strings.HasPrefix(s[i:], "-%}"):
			return skipSpace(s, i+3), true
		case strings.HasPrefix(s[i:], "%}"):
			if i+2 < len(s) && s[i+2] == '\n' {
				return i + 3, true
			}
			return i + 2, true
		}
	case '{':
		switch {
		case strings.HasPrefix(s[i:], "-}}"):
			return skipSpace(s, i+3), true
		case strings.HasPrefix(s[i:], "}}"):
			return i + 2, true
		}
	}
	return 0, false
}

// operators are Jinja2's, longest first.
var operators = []string{
	"//", "**", "==", "!=", ">=", "<=",
	"+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";",
}

func lexOperator(s string, i int) string {
	for _, op := range operators {
		if strings.HasPrefix(s[i:], op) {
			return op
		}
	}
	return ""
}

// lexNumber reads the integer or float literal at i as Jinja2's lexer does
// (digits with "_" separators, an optional fraction and exponent, or a
// 0b/0o/0x integer) and returns its end and a spelling ardanlabs/jinja
// parses to the same value: decimal digits, and floats with a fraction.
func lexNumber(s string, i int) (int, string) {
	digits := func(j int, ok func(byte) bool) int {
		for j < len(s) && (ok(s[j]) || s[j] == '_') {
			j++
		}
		return j
	}
	dec := func(c byte) bool { return c >= '0' && c <= '9' }
	if s[i] == '0' && i+1 < len(s) {
		base := map[byte]int{'b': 2, 'B': 2, 'o': 8, 'O': 8, 'x': 16, 'X': 16}[s[i+1]]
		if base != 0 {
			j := digits(i+2, func(c byte) bool {
				d := strings.IndexByte("0123456789abcdef", c|0x20) // c|0x20 lowers a letter
				return d >= 0 && d < base
			})
			if v, err := strconv.ParseInt(strings.ReplaceAll(s[i+2:j], "_", ""), base, 64); err == nil {
				return j, strconv.FormatInt(v, 10)
			}
			return j, s[i:j]
		}
	}
	j := digits(i, dec)
	float := false
	if j+1 < len(s) && s[j] == '.' && dec(s[j+1]) {
		j, float = digits(j+1, dec), true
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && dec(s[k]) {
			j, float = digits(k, dec), true
		}
	}
	text := strings.ReplaceAll(s[i:j], "_", "")
	if !float {
		return j, text
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !math.IsInf(f, 0) {
		return j, text
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'e', -1, 64), "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	return j, mant + "e" + exp
}

// lexString reads the string literal at i and returns its end and value,
// decoded as Jinja2 does: Python's unicode-escape codec applied to the
// literal after non-ASCII characters were written as backslash escapes.
func lexString(s string, i int) (int, string, error) {
	q := s[i]
	j := i + 1
	for j < len(s) && s[j] != q {
		if s[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(s) {
		return 0, "", fmt.Errorf("unterminated string literal")
	}
	val, err := unicodeEscape(backslashReplace(s[i+1 : j]))
	return j + 1, val, err
}
