package toolcall

import (
	"errors"
	"fmt"
	"strings"
)

// rawCall is a call as read, before it gets an ID.
type rawCall struct {
	name, args, id string
}

// syntax is one format's rules.
type syntax interface {
	format() Format
	// findMarker returns the first call marker in s and its index, or -1.
	findMarker(s string) (int, string)
	// partialMarker returns the length of the longest suffix of s that is a
	// proper prefix of a marker.
	partialMarker(s string) int
	// bareStart reports whether a reply whose first non-space byte is c may
	// be a call without a marker.
	bareStart(c byte) bool
	// regionEnd finds the end of the call region that follows marker at the
	// start of s: body is the call text and n the bytes to consume (body and
	// any closing text). more reports that s may still be incomplete.
	// It may keep scanning state in r, whose text s only grows.
	regionEnd(r *region, s string, final bool) (body string, n int, more bool)
	parseRegion(marker, body string) ([]rawCall, error)
	// parseBare reads a whole reply that began like a call.
	parseBare(s string) ([]rawCall, error)
}

// syntaxes is the format table; None has no entry.
var syntaxes = map[Format]syntax{
	Hermes:   hermes{},
	Llama3:   llama3{},
	Mistral:  mistral{},
	Gemma:    gemma{},
	DeepSeek: deepseek{},
}

// markers implements findMarker and partialMarker for a fixed list.
type markers []string

func (ms markers) findMarker(s string) (int, string) {
	best, which := -1, ""
	for _, m := range ms {
		if i := strings.Index(s, m); i >= 0 && (best < 0 || i < best) {
			best, which = i, m
		}
	}
	return best, which
}

func (ms markers) partialMarker(s string) int {
	longest := 0
	for _, m := range ms {
		for n := min(len(m)-1, len(s)); n > longest; n-- {
			if strings.HasSuffix(s, m[:n]) {
				longest = n
				break
			}
		}
	}
	return longest
}

// closedBy finds a region that ends at the string end, searching only what
// it has not searched before; at the end of the reply an unclosed region
// runs to the end.
func closedBy(r *region, end, s string, final bool) (string, int, bool) {
	if i := strings.Index(s[r.scanned:], end); i >= 0 {
		i += r.scanned
		return s[:i], i + len(end), false
	}
	r.scanned = max(0, len(s)-len(end)+1)
	return toEnd(s, final)
}

// toEnd takes the rest of the reply as the region, once the reply is
// complete.
func toEnd(s string, final bool) (string, int, bool) {
	if final {
		return s, len(s), false
	}
	return "", 0, true
}

// Hermes: <tool_call>{json}</tool_call>.
type hermes struct{}

func (hermes) format() Format                                { return Hermes }
func (hermes) findMarker(s string) (int, string)             { return markers{"<tool_call>"}.findMarker(s) }
func (hermes) partialMarker(s string) int                    { return markers{"<tool_call>"}.partialMarker(s) }
func (hermes) bareStart(byte) bool                           { return false }
func (hermes) parseBare(string) ([]rawCall, error)           { return nil, errors.New("no marker") }
func (hermes) parseRegion(_, body string) ([]rawCall, error) { return jsonCalls(body, "") }
func (hermes) regionEnd(r *region, s string, final bool) (string, int, bool) {
	return closedBy(r, "</tool_call>", s, final)
}

// Llama 3: a bare JSON reply, or anything after <|python_tag|>.
type llama3 struct{}

const pythonTag = "<|python_tag|>"

func (llama3) format() Format                    { return Llama3 }
func (llama3) findMarker(s string) (int, string) { return markers{pythonTag}.findMarker(s) }
func (llama3) partialMarker(s string) int        { return markers{pythonTag}.partialMarker(s) }
func (llama3) bareStart(c byte) bool             { return c == '{' }
func (llama3) parseBare(s string) ([]rawCall, error) {
	return jsonCalls(s, ";")
}
func (llama3) regionEnd(_ *region, s string, final bool) (string, int, bool) {
	return toEnd(s, final)
}
func (llama3) parseRegion(_, body string) ([]rawCall, error) {
	if t := strings.TrimSpace(body); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return jsonCalls(t, ";")
	}
	return pyCalls(body)
}

// Mistral: [TOOL_CALLS][{json}, ...] or [TOOL_CALLS]name[ARGS]{json}.
type mistral struct{}

const (
	toolCalls = "[TOOL_CALLS]"
	argsTag   = "[ARGS]"
	callIDTag = "[CALL_ID]"
)

func (mistral) format() Format                      { return Mistral }
func (mistral) findMarker(s string) (int, string)   { return markers{toolCalls}.findMarker(s) }
func (mistral) partialMarker(s string) int          { return markers{toolCalls}.partialMarker(s) }
func (mistral) bareStart(byte) bool                 { return false }
func (mistral) parseBare(string) ([]rawCall, error) { return nil, errors.New("no marker") }

// regionEnd finds the end of a JSON list or object right after the marker,
// or of name[ARGS]{...}: where brackets balance outside strings. Arguments
// that do not begin with "{" run to the end of the reply.
func (mistral) regionEnd(r *region, s string, final bool) (string, int, bool) {
	if r.args < 0 {
		t := strings.TrimLeftFunc(s, isSpace)
		if t == "" {
			return toEnd(s, final)
		}
		if t[0] == '[' || t[0] == '{' {
			r.args = len(s) - len(t)
		} else {
			i := strings.Index(s[r.scanned:], argsTag)
			if i < 0 {
				r.scanned = max(0, len(s)-len(argsTag)+1)
				return toEnd(s, final)
			}
			from := r.scanned + i + len(argsTag)
			r.scanned = from
			t := strings.TrimLeftFunc(s[from:], isSpace)
			if t == "" || t[0] != '{' {
				r.scanned -= len(argsTag) // look again once more text arrives
				return toEnd(s, final)
			}
			r.args = len(s) - len(t)
		}
		r.json.pos = r.args
	}
	if end := r.json.advance(s); end > 0 {
		return s[:end], end, false
	}
	return toEnd(s, final)
}

func (mistral) parseRegion(_, body string) ([]rawCall, error) {
	t := strings.TrimSpace(body)
	if strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{") {
		return jsonCalls(t, "")
	}
	name, args, ok := strings.Cut(t, argsTag)
	if !ok {
		return nil, fmt.Errorf("no %s after the function name", argsTag)
	}
	name, id, _ := strings.Cut(name, callIDTag)
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, errors.New("empty function name")
	}
	a, err := arguments([]byte(args))
	if err != nil {
		return nil, err
	}
	return []rawCall{{name: name, args: a, id: strings.TrimSpace(id)}}, nil
}

// Gemma: ```tool_code ... ``` or a bare [f(a=1), ...] or JSON reply.
type gemma struct{}

const toolCode = "```tool_code"

func (gemma) format() Format                    { return Gemma }
func (gemma) findMarker(s string) (int, string) { return markers{toolCode}.findMarker(s) }
func (gemma) partialMarker(s string) int        { return markers{toolCode}.partialMarker(s) }
func (gemma) bareStart(c byte) bool             { return c == '[' || c == '{' }
func (gemma) regionEnd(r *region, s string, final bool) (string, int, bool) {
	return closedBy(r, "```", s, final)
}
func (gemma) parseRegion(_, body string) ([]rawCall, error) { return gemmaCalls(body) }
func (gemma) parseBare(s string) ([]rawCall, error)         { return gemmaCalls(s) }

// gemmaCalls reads JSON call objects, or else Python calls.
func gemmaCalls(s string) ([]rawCall, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") {
		return jsonCalls(t, ";")
	}
	if strings.HasPrefix(t, "[") {
		if calls, err := jsonCalls(t, ""); err == nil {
			return calls, nil
		}
	}
	return pyCalls(t)
}

// DeepSeek V3: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>name
// ```json {...} ```<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>.
type deepseek struct{}

const (
	dsCallsBegin = "<｜tool▁calls▁begin｜>"
	dsCallsEnd   = "<｜tool▁calls▁end｜>"
	dsCallBegin  = "<｜tool▁call▁begin｜>"
	dsCallEnd    = "<｜tool▁call▁end｜>"
	dsSep        = "<｜tool▁sep｜>"
)

func (deepseek) format() Format                      { return DeepSeek }
func (deepseek) findMarker(s string) (int, string)   { return markers{dsCallsBegin}.findMarker(s) }
func (deepseek) partialMarker(s string) int          { return markers{dsCallsBegin}.partialMarker(s) }
func (deepseek) bareStart(byte) bool                 { return false }
func (deepseek) parseBare(string) ([]rawCall, error) { return nil, errors.New("no marker") }
func (deepseek) regionEnd(r *region, s string, final bool) (string, int, bool) {
	return closedBy(r, dsCallsEnd, s, final)
}

func (deepseek) parseRegion(_, body string) ([]rawCall, error) {
	var calls []rawCall
	rest := strings.TrimSpace(body)
	for rest != "" {
		after, ok := strings.CutPrefix(rest, dsCallBegin)
		if !ok {
			return nil, fmt.Errorf("expected %s", dsCallBegin)
		}
		call, tail, _ := strings.Cut(after, dsCallEnd)
		rest = strings.TrimSpace(tail)
		_, spec, ok := strings.Cut(call, dsSep)
		if !ok {
			return nil, fmt.Errorf("no %s in a call", dsSep)
		}
		name, args, _ := strings.Cut(spec, "\n")
		if name = strings.TrimSpace(name); name == "" {
			return nil, errors.New("empty function name")
		}
		args = strings.TrimSpace(args)
		args = strings.TrimPrefix(args, "```json")
		args = strings.TrimSuffix(strings.TrimSpace(args), "```")
		a, err := arguments([]byte(args))
		if err != nil {
			return nil, fmt.Errorf("call %q: %w", name, err)
		}
		calls = append(calls, rawCall{name: name, args: a})
	}
	if len(calls) == 0 {
		return nil, errors.New("no call")
	}
	return calls, nil
}
