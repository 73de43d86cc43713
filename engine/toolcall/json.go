package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// jsonCalls reads one or more JSON values, each a call object or an array
// of call objects, separated by whitespace or any byte of seps.
func jsonCalls(s, seps string) ([]rawCall, error) {
	var calls []rawCall
	rest := s
	for {
		rest = strings.TrimLeftFunc(rest, func(r rune) bool { return isSpace(r) || strings.ContainsRune(seps, r) })
		if rest == "" {
			break
		}
		end, state := jsonEnd(rest)
		if state != jsonComplete {
			var v any
			err := json.Unmarshal([]byte(rest), &v)
			if err == nil {
				err = errors.New("not a JSON value")
			}
			return nil, err
		}
		raw := []byte(rest[:end])
		rest = rest[end:]
		switch t := bytes.TrimSpace(raw); {
		case len(t) > 0 && t[0] == '[':
			var items []json.RawMessage
			if err := json.Unmarshal(t, &items); err != nil {
				return nil, err
			}
			if len(items) == 0 {
				return nil, errors.New("empty list of calls")
			}
			for _, it := range items {
				c, err := callObject(it)
				if err != nil {
					return nil, err
				}
				calls = append(calls, c)
			}
		default:
			c, err := callObject(t)
			if err != nil {
				return nil, err
			}
			calls = append(calls, c)
		}
	}
	if len(calls) == 0 {
		return nil, errors.New("no call")
	}
	return calls, nil
}

// callObject reads {"name": ..., "arguments"|"parameters": ...}, also nested
// as {"function": {...}} or named by "function": "name", with an optional
// string "id".
func callObject(raw json.RawMessage) (rawCall, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return rawCall{}, fmt.Errorf("call is not a JSON object: %s", clip(string(raw)))
	}
	var c rawCall
	_ = json.Unmarshal(m["id"], &c.id)
	if fn, ok := m["function"]; ok {
		if err := json.Unmarshal(fn, &c.name); err != nil {
			inner, err := callObject(fn)
			if err != nil {
				return rawCall{}, err
			}
			inner.id = c.id
			return inner, nil
		}
	} else if err := json.Unmarshal(m["name"], &c.name); err != nil {
		return rawCall{}, errors.New(`call has no string "name"`)
	}
	if c.name == "" {
		return rawCall{}, errors.New("call has an empty name")
	}
	args, ok := m["arguments"]
	if !ok {
		args = m["parameters"]
	}
	var err error
	if c.args, err = arguments(args); err != nil {
		return rawCall{}, fmt.Errorf("call %q: %w", c.name, err)
	}
	return c, nil
}

// arguments returns the JSON text of a call's arguments: an object as
// written, the text of a JSON-encoded string, or "{}" when absent or null.
func arguments(raw []byte) (string, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return "{}", nil
	}
	switch t[0] {
	case '{':
		if !json.Valid(t) {
			return "", errors.New("arguments are not valid JSON")
		}
		return string(t), nil
	case '"':
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return "", err
		}
		if s = strings.TrimSpace(s); s == "" {
			return "{}", nil
		}
		return s, nil
	}
	return "", fmt.Errorf("arguments are not an object: %s", clip(string(t)))
}

type jsonState int

const (
	jsonComplete jsonState = iota
	jsonIncomplete
	jsonInvalid
)

// jsonEnd finds the end of the JSON value at the start of s (after
// whitespace): complete with its end offset, incomplete when s ends inside
// it, or invalid.
func jsonEnd(s string) (int, jsonState) {
	dec := json.NewDecoder(strings.NewReader(s))
	var raw json.RawMessage
	err := dec.Decode(&raw)
	switch {
	case err == nil:
		return int(dec.InputOffset()), jsonComplete
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return 0, jsonIncomplete
	}
	return 0, jsonInvalid
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// jsonScan finds where a JSON object or list closes, reading each byte
// once across calls: it tracks bracket depth outside strings and does not
// validate (the parse that follows does).
type jsonScan struct {
	pos        int // next byte to read
	depth      int
	inStr, esc bool
}

// advance scans s from pos and returns the offset just past the closing
// bracket of the value that starts at the first scanned byte, or -1.
func (j *jsonScan) advance(s string) int {
	for ; j.pos < len(s); j.pos++ {
		c := s[j.pos]
		switch {
		case j.inStr:
			switch {
			case j.esc:
				j.esc = false
			case c == '\\':
				j.esc = true
			case c == '"':
				j.inStr = false
			}
		case c == '"':
			j.inStr = true
		case c == '{' || c == '[':
			j.depth++
		case c == '}' || c == ']':
			if j.depth--; j.depth == 0 {
				j.pos++
				return j.pos
			}
		}
	}
	return -1
}
