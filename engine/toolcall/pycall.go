package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pyCalls reads calls written in Python syntax: a list [f(a=1), g(b="x")]
// or calls separated by newlines, commas or semicolons, each possibly
// wrapped in print(...). Arguments must be keywords with literal values
// (strings, numbers, True/False/None, lists, tuples, dicts); they become a
// JSON object in the order written.
func pyCalls(s string) ([]rawCall, error) {
	p := &pyParser{s: s}
	p.space()
	bracket := p.eat('[')
	var calls []rawCall
	for {
		p.space()
		if bracket && p.eat(']') {
			break
		}
		if p.eof() {
			if bracket {
				return nil, errors.New("unclosed [")
			}
			break
		}
		c, err := p.call()
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
		p.space()
		if !p.eat(',') {
			p.eat(';')
		}
	}
	p.space()
	if !p.eof() {
		return nil, fmt.Errorf("unexpected %q after the calls", clip(p.s[p.i:]))
	}
	if len(calls) == 0 {
		return nil, errors.New("no call")
	}
	return calls, nil
}

type pyParser struct {
	s string
	i int
}

func (p *pyParser) eof() bool { return p.i >= len(p.s) }

func (p *pyParser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.s[p.i]
}

func (p *pyParser) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

func (p *pyParser) space() {
	for !p.eof() {
		r, n := utf8.DecodeRuneInString(p.s[p.i:])
		if !unicode.IsSpace(r) {
			return
		}
		p.i += n
	}
}

func (p *pyParser) ident() string {
	start := p.i
	for !p.eof() {
		r, n := utf8.DecodeRuneInString(p.s[p.i:])
		if !(r == '_' || unicode.IsLetter(r) || (p.i > start && unicode.IsDigit(r))) {
			break
		}
		p.i += n
	}
	return p.s[start:p.i]
}

// call reads name(key=value, ...) or print(call).
func (p *pyParser) call() (rawCall, error) {
	var parts []string
	for {
		id := p.ident()
		if id == "" {
			return rawCall{}, fmt.Errorf("expected a function name at %q", clip(p.s[p.i:]))
		}
		parts = append(parts, id)
		if !p.eat('.') {
			break
		}
	}
	p.space()
	if !p.eat('(') {
		return rawCall{}, fmt.Errorf("expected ( after %q", strings.Join(parts, "."))
	}
	if len(parts) == 1 && parts[0] == "print" {
		p.space()
		c, err := p.call()
		if err != nil {
			return rawCall{}, err
		}
		p.space()
		if !p.eat(')') {
			return rawCall{}, errors.New("expected ) closing print(")
		}
		return c, nil
	}
	if len(parts) > 1 && parts[len(parts)-1] == "call" { // brave_search.call(...)
		parts = parts[:len(parts)-1]
	}
	name := parts[len(parts)-1]
	var args bytes.Buffer
	args.WriteByte('{')
	for n := 0; ; n++ {
		p.space()
		if p.eat(')') {
			break
		}
		if n > 0 {
			if !p.eat(',') {
				return rawCall{}, fmt.Errorf("call %q: expected , or )", name)
			}
			p.space()
			if p.eat(')') {
				break
			}
		}
		key := p.ident()
		p.space()
		if key == "" || !p.eat('=') || p.peek() == '=' {
			return rawCall{}, fmt.Errorf("call %q: only keyword arguments are supported", name)
		}
		p.space()
		v, err := p.value(0)
		if err != nil {
			return rawCall{}, fmt.Errorf("call %q: argument %q: %w", name, key, err)
		}
		if n > 0 {
			args.WriteByte(',')
		}
		writeJSONString(&args, key)
		args.WriteByte(':')
		args.WriteString(v)
	}
	args.WriteByte('}')
	return rawCall{name: name, args: args.String()}, nil
}

// value reads a Python literal and returns it as JSON text.
func (p *pyParser) value(depth int) (string, error) {
	if depth > 100 {
		return "", errors.New("nested too deeply")
	}
	switch c := p.peek(); {
	case c == '"' || c == '\'':
		s, err := p.str()
		if err != nil {
			return "", err
		}
		var b bytes.Buffer
		writeJSONString(&b, s)
		return b.String(), nil
	case c == '[' || c == '(':
		p.i++
		return p.seq(map[byte]byte{'[': ']', '(': ')'}[c], depth)
	case c == '{':
		p.i++
		return p.dict(depth)
	case c == '-' || c == '+' || c == '.' || c >= '0' && c <= '9':
		return p.number()
	}
	switch id := p.ident(); id {
	case "True", "true":
		return "true", nil
	case "False", "false":
		return "false", nil
	case "None", "null":
		return "null", nil
	case "":
		return "", fmt.Errorf("unexpected %q", clip(p.s[p.i:]))
	default:
		return "", fmt.Errorf("%s is not a literal", id)
	}
}

func (p *pyParser) seq(end byte, depth int) (string, error) {
	var b strings.Builder
	b.WriteByte('[')
	for n := 0; ; n++ {
		p.space()
		if p.eat(end) {
			break
		}
		if n > 0 {
			if !p.eat(',') {
				return "", fmt.Errorf("expected , or %c", end)
			}
			p.space()
			if p.eat(end) {
				break
			}
			b.WriteByte(',')
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return "", err
		}
		b.WriteString(v)
	}
	b.WriteByte(']')
	return b.String(), nil
}

func (p *pyParser) dict(depth int) (string, error) {
	var b strings.Builder
	b.WriteByte('{')
	for n := 0; ; n++ {
		p.space()
		if p.eat('}') {
			break
		}
		if n > 0 {
			if !p.eat(',') {
				return "", errors.New("expected , or }")
			}
			p.space()
			if p.eat('}') {
				break
			}
			b.WriteByte(',')
		}
		k, err := p.value(depth + 1)
		if err != nil {
			return "", err
		}
		if !strings.HasPrefix(k, `"`) { // JSON keys are strings: str(1) is "1"
			k = strconv.Quote(k)
		}
		p.space()
		if !p.eat(':') {
			return "", errors.New("expected : in a dict")
		}
		p.space()
		v, err := p.value(depth + 1)
		if err != nil {
			return "", err
		}
		b.WriteString(k + ":" + v)
	}
	b.WriteByte('}')
	return b.String(), nil
}

func (p *pyParser) number() (string, error) {
	start := p.i
	if p.peek() == '-' || p.peek() == '+' {
		p.i++
	}
	for !p.eof() && strings.IndexByte("0123456789._eExXoObBaAcCdDfF", p.peek()) >= 0 ||
		(p.i > start && (p.s[p.i-1] == 'e' || p.s[p.i-1] == 'E') && (p.peek() == '-' || p.peek() == '+')) {
		p.i++
	}
	text := strings.ReplaceAll(p.s[start:p.i], "_", "")
	if i, err := strconv.ParseInt(text, 0, 64); err == nil {
		return strconv.FormatInt(i, 10), nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || f != f || f-f != 0 {
		return "", fmt.Errorf("bad number %q", text)
	}
	return strconv.FormatFloat(f, 'g', -1, 64), nil
}

// str reads a Python string literal ('...', "...", or triple-quoted, with
// an optional r prefix already excluded) and decodes its escapes.
func (p *pyParser) str() (string, error) {
	q := p.s[p.i : p.i+1]
	if strings.HasPrefix(p.s[p.i:], q+q+q) {
		q = q + q + q
	}
	p.i += len(q)
	var b strings.Builder
	for {
		if p.eof() {
			return "", errors.New("unterminated string")
		}
		if strings.HasPrefix(p.s[p.i:], q) {
			p.i += len(q)
			return b.String(), nil
		}
		c := p.s[p.i]
		if c == '\n' && len(q) == 1 {
			return "", errors.New("unterminated string")
		}
		if c != '\\' || p.i+1 >= len(p.s) {
			b.WriteByte(c)
			p.i++
			continue
		}
		p.i += 2
		switch e := p.s[p.i-1]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '0':
			b.WriteByte(0)
		case '\\', '\'', '"':
			b.WriteByte(e)
		case '\n':
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if p.i+n > len(p.s) {
				return "", fmt.Errorf(`truncated \%c escape`, e)
			}
			v, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
			if err != nil || v > unicode.MaxRune {
				return "", fmt.Errorf(`bad \%c escape`, e)
			}
			b.WriteRune(rune(v))
			p.i += n
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
}

// writeJSONString writes s as a JSON string without HTML escaping.
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode's newline
}
