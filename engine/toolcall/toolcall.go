// Package toolcall turns model output into OpenAI-style tool calls, for the
// formats the supported families are trained to write:
//
//   - Hermes (Qwen 2.5/3, Hermes): <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>,
//     several in a row;
//   - Llama 3: a bare JSON object {"name": ..., "parameters": {...}} as the
//     whole reply (several separated by ";"), or any text after <|python_tag|>,
//     where a built-in call brave_search.call(query="...") is also read;
//   - Mistral: [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...], or the
//     newer [TOOL_CALLS]name[ARGS]{...} (optionally name[CALL_ID]id[ARGS]{...}),
//     repeated;
//   - Gemma: a ```tool_code fenced block holding Python calls
//     (get_weather(city="Paris"), one per line or as a list) or JSON call
//     objects, or a whole reply that is a Python list of calls
//     [f(a=1), g()] (the format Google's Gemma 3 function-calling guide
//     prompts for; Gemma 3's chat template itself documents no format) or a
//     JSON call object;
//   - DeepSeek V3: <｜tool▁calls▁begin｜> followed by
//     <｜tool▁call▁begin｜>function<｜tool▁sep｜>name\n```json\n{...}\n```<｜tool▁call▁end｜>
//     per call and <｜tool▁calls▁end｜>.
//
// Text outside calls is content. Whitespace that only separates content
// from a call, or calls from each other, is dropped; a reply with no calls
// comes back unchanged. A call region that cannot be read is returned as
// content, with a *MalformedError.
//
// Parse reads a whole reply; a Stream reads it in pieces and returns
// content as soon as it cannot be part of a call, holding back any text that
// may begin a call marker, and each call once it is complete. Parse is a
// Stream fed the whole reply, so any chunking yields the same content and
// calls.
package toolcall

import (
	"fmt"
	"strings"
)

// Call is one tool call in OpenAI's shape.
type Call struct {
	ID string // "call_" and 24 letters or digits; for Mistral 9 letters or digits, as its templates require; or the model's own

	Name      string
	Arguments string // JSON text of the arguments object, as the model wrote it
}

// Format names a tool-call syntax.
type Format string

// The formats. None parses nothing: the whole reply is content.
const (
	None     Format = ""
	Hermes   Format = "hermes"
	Llama3   Format = "llama3"
	Mistral  Format = "mistral"
	Gemma    Format = "gemma"
	DeepSeek Format = "deepseek"
)

// Detect chooses the format from what a chat template writes: Hermes when it
// mentions <tool_call>, Mistral for [TOOL_CALLS], DeepSeek for
// <｜tool▁calls▁begin｜>, Llama 3 for <|python_tag|> or Llama 3's header
// tokens, Gemma for <start_of_turn> or tool_code, and None otherwise.
func Detect(templateSource string) Format {
	has := func(s string) bool { return strings.Contains(templateSource, s) }
	switch {
	case has("<tool_call>"):
		return Hermes
	case has("[TOOL_CALLS]"):
		return Mistral
	case has(dsCallsBegin):
		return DeepSeek
	case has("<|python_tag|>"), has("<|start_header_id|>"):
		return Llama3
	case has("tool_code"), has("<start_of_turn>"):
		return Gemma
	}
	return None
}

// Parse splits a complete reply into content and tool calls. A malformed
// call region is kept in content and reported as a *MalformedError.
func Parse(f Format, output string) (content string, calls []Call, err error) {
	s := NewStream(f)
	c1, k1 := s.Feed(output)
	c2, k2, err := s.Close()
	return c1 + c2, append(k1, k2...), err
}

// MalformedError reports text that opened a tool call but could not be read
// as one.
type MalformedError struct {
	Format Format
	Text   string // the call region as the model wrote it
	Err    error
}

func (e *MalformedError) Error() string {
	text := e.Text
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	return fmt.Sprintf("malformed %s tool call %q: %v", e.Format, text, e.Err)
}

func (e *MalformedError) Unwrap() error { return e.Err }

// Frame is how a format writes one call as JSON, for forcing a call with
// a grammar: Prefix, then {"name": …, ArgsKey: {…}}, then Suffix. ok is
// false for formats whose calls are not written so (Gemma's Python calls,
// DeepSeek's special-token frames).
func Frame(f Format) (prefix, suffix, argsKey string, ok bool) {
	switch f {
	case Hermes:
		return "<tool_call>\n", "\n</tool_call>", "arguments", true
	case Llama3:
		return "", "", "parameters", true
	case Mistral:
		return toolCalls + "[", "]", "arguments", true
	}
	return "", "", "", false
}
