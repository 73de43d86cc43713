package template

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"hearth/engine/gguf"
	"hearth/engine/template/jinja"
)

// ErrNoTemplate reports a checkpoint that ships no chat template.
var ErrNoTemplate = errors.New("no chat template")

// Template is a compiled chat template with the special tokens it renders
// with. It is safe for concurrent use.
type Template struct {
	source  string // the default template's Jinja source
	def     *jinja.Template
	toolUse *jinja.Template // the "tool_use" template, used when tools are given
	special Special
	now     func() time.Time // strftime_now's clock
}

// Special holds the special tokens transformers passes to a template
// (its special_tokens_map). An empty string leaves the name undefined.
type Special struct {
	BOS, EOS, UNK, PAD, SEP, CLS, Mask string
	Additional                         []string // additional_special_tokens
}

// Options are the per-request inputs besides the messages.
type Options struct {
	Tools               json.RawMessage // the request's tools array, verbatim; empty or null means none
	AddGenerationPrompt bool
	EnableThinking      *bool                      // passed as enable_thinking when set
	Extra               map[string]json.RawMessage // other chat_template_kwargs
	// Limits bound the render; a zero field takes its default (see
	// DefaultLimits).
	Limits Limits
}

// Limits bound one render: nested macro calls, loop iterations, output
// bytes, bytes of strings and lists built, and wall time.
type Limits = jinja.Limits

// DefaultLimits are the limits of a render whose Options leave them zero.
// Iterations, OutputBytes and AllocBytes grow with the request: Render adds
// one iteration per 8 bytes and 4 and 32 bytes per byte of messages and
// tools, so a long conversation always fits.
func DefaultLimits() Limits { return jinja.DefaultLimits() }

// Error is a failure while rendering that the request caused: the template
// called raise_exception (Raised), it exceeded one of its Limits (Limit
// names which), or it failed on the request's messages, tools or kwargs.
// The HTTP layer answers it with a 400 and Message.
type Error struct {
	Message string
	Raised  bool
	Limit   string // the limit exceeded ("loop iterations", …); "" otherwise
}

func (e *Error) Error() string { return "chat template: " + e.Message }

// maxMessageBytes bounds an Error's message: a template may raise with any
// text, and the message goes back to the client.
const maxMessageBytes = 2000

// newError is an *Error for err, its message cut to maxMessageBytes.
func newError(msg string) *Error {
	if len(msg) > maxMessageBytes {
		cut := maxMessageBytes
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return &Error{Message: msg}
}

// reserved are the render arguments chat_template_kwargs may not replace
// (Python would raise "got multiple values for keyword argument").
var reserved = map[string]bool{"messages": true, "tools": true, "documents": true, "add_generation_prompt": true}

// Load reads the chat template of the checkpoint in dir as transformers
// does: chat_template.jinja when present, otherwise tokenizer_config.json's
// "chat_template" (a string, or a list of {name, template} of which
// "default" is used, and "tool_use" when tools are given), and the special
// tokens from tokenizer_config.json; a GGUF checkpoint's from its
// metadata (gguf.go).
func Load(dir string) (*Template, error) {
	if path, _ := gguf.Find(dir); path != "" {
		return loadGGUF(path)
	}
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	var cfg tokenizerConfig
	data, err := os.ReadFile(cfgPath)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("load chat template: %s: %w", cfgPath, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("load chat template: %w", err)
	}
	special, err := cfg.special()
	if err != nil {
		return nil, fmt.Errorf("load chat template: %s: %w", cfgPath, err)
	}

	jinjaPath := filepath.Join(dir, "chat_template.jinja")
	if src, err := os.ReadFile(jinjaPath); err == nil {
		return newTemplate(jinjaPath, string(src), "", special)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load chat template: %w", err)
	}
	def, toolUse, err := cfg.templates()
	if err != nil {
		return nil, fmt.Errorf("load chat template: %s: %w", cfgPath, err)
	}
	if def == "" {
		return nil, fmt.Errorf("load chat template: %s: %w (tokenizer_config.json has no \"chat_template\" and there is no chat_template.jinja)", dir, ErrNoTemplate)
	}
	return newTemplate(cfgPath, def, toolUse, special)
}

// Parse compiles a chat template from its source.
func Parse(source string, special Special) (*Template, error) {
	return newTemplate("chat_template", source, "", special)
}

func newTemplate(file, source, toolUse string, special Special) (*Template, error) {
	t := &Template{source: source, special: special, now: time.Now}
	var err error
	if t.def, err = compile(source); err != nil {
		return nil, fmt.Errorf("load chat template: %s: %w", file, err)
	}
	if toolUse != "" {
		if t.toolUse, err = compile(toolUse); err != nil {
			return nil, fmt.Errorf("load chat template: %s: tool_use: %w", file, err)
		}
	}
	return t, nil
}

func compile(source string) (t *jinja.Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("template engine failed: %v", r)
		}
	}()
	src, err := rewrite(source)
	if err != nil {
		return nil, err
	}
	return jinja.Compile(src)
}

// Source returns the Jinja source of the default template (for
// toolcall.Detect).
func (t *Template) Source() string { return t.source }

// Special returns the special tokens the template renders with.
func (t *Template) Special() Special { return t.special }

// StartsWithBOS reports whether rendered begins with the BOS token's text,
// in which case the caller tokenizes it without adding special tokens.
func (t *Template) StartsWithBOS(rendered string) bool {
	return t.special.BOS != "" && strings.HasPrefix(rendered, t.special.BOS)
}

// Render renders the conversation under opt.Limits. messages is the
// request's messages array, verbatim. A failure the request caused is an
// *Error; a template that exceeds a limit is one whose Limit says which.
// When ctx ends the render stops within a few thousand steps and Render
// returns an error wrapping ctx.Err().
func (t *Template) Render(ctx context.Context, messages json.RawMessage, opt Options) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", newError(fmt.Sprintf("template engine failed: %v", r))
		}
	}()
	lim := opt.limits(len(messages) + len(opt.Tools))
	data, tmpl, err := t.context(messages, opt)
	if err != nil {
		return "", err
	}
	out, err = tmpl.Execute(jinja.NewBudget(ctx, lim), data)
	if err != nil {
		var (
			r  *raised
			le *jinja.LimitError
		)
		switch {
		case errors.As(err, &le):
			return "", &Error{Message: le.Error(), Limit: le.Limit}
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return "", fmt.Errorf("chat template: %w", err)
		case errors.As(err, &r):
			e := newError(r.msg)
			e.Raised = true
			return "", e
		}
		return "", newError(err.Error())
	}
	return out, nil
}

// limits fills the zero fields of opt.Limits with the defaults, scaled to
// a request of inputBytes.
func (opt Options) limits(inputBytes int) Limits {
	l, d, in := opt.Limits, DefaultLimits(), int64(inputBytes)
	if l.Iterations <= 0 {
		l.Iterations = d.Iterations + in/8
	}
	if l.OutputBytes <= 0 {
		l.OutputBytes = d.OutputBytes + 4*in
	}
	if l.AllocBytes <= 0 {
		l.AllocBytes = d.AllocBytes + 32*in
	}
	return l
}

// context builds the render arguments as transformers' render_jinja_template
// passes them, and picks the template.
func (t *Template) context(messages json.RawMessage, opt Options) (map[string]jinja.Value, *jinja.Template, error) {
	msgs, err := decodeJSON(messages)
	if err != nil {
		return nil, nil, newError(fmt.Sprintf("messages: %v", err))
	}
	if !msgs.IsList() {
		return nil, nil, &Error{Message: "messages: not a JSON array"}
	}
	tools := jinja.None()
	if s := strings.TrimSpace(string(opt.Tools)); s != "" && s != "null" {
		if tools, err = decodeJSON(opt.Tools); err != nil {
			return nil, nil, newError(fmt.Sprintf("tools: %v", err))
		}
	}
	tmpl := t.def
	if t.toolUse != nil && !tools.IsNone() {
		tmpl = t.toolUse
	}

	data := globals(t.now)
	for name, text := range map[string]string{
		"bos_token": t.special.BOS, "eos_token": t.special.EOS, "unk_token": t.special.UNK,
		"pad_token": t.special.PAD, "sep_token": t.special.SEP, "cls_token": t.special.CLS,
		"mask_token": t.special.Mask,
	} {
		if text != "" {
			data[name] = jinja.NewString(text)
		}
	}
	if len(t.special.Additional) > 0 {
		items := make([]jinja.Value, len(t.special.Additional))
		for i, s := range t.special.Additional {
			items[i] = jinja.NewString(s)
		}
		data["additional_special_tokens"] = jinja.NewList(items)
	}
	for name, raw := range opt.Extra {
		if reserved[name] || strings.HasPrefix(name, "__hearth_") {
			return nil, nil, newError(fmt.Sprintf("chat_template_kwargs: %q cannot be set", name))
		}
		v, err := decodeJSON(raw)
		if err != nil {
			return nil, nil, newError(fmt.Sprintf("chat_template_kwargs: %q: %v", name, err))
		}
		data[name] = v
	}
	if opt.EnableThinking != nil {
		data["enable_thinking"] = jinja.NewBool(*opt.EnableThinking)
	}
	data["messages"] = msgs
	data["tools"] = tools
	data["documents"] = jinja.None()
	data["add_generation_prompt"] = jinja.NewBool(opt.AddGenerationPrompt)
	return data, tmpl, nil
}
