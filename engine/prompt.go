package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"hearth/engine/template"
	"hearth/engine/tokenizer"
	"hearth/engine/toolcall"
)

// Prompter turns a request's messages or prompt text into prompt ids the
// way a Runner does, with no weights: a checkpoint's tokenizer and chat
// template, at the context the model is (or would be) loaded with. A
// Runner prompts through its own; counting a prompt without loading the
// model (Anthropic's count_tokens) uses one made from the checkpoint's
// files, so both count the same tokens.
type Prompter struct {
	ID            string // the model's id, for messages
	Tokenizer     *tokenizer.Tokenizer
	Template      *template.Template // nil when the checkpoint has no chat template
	ContextTokens int
}

// Prompter is the runner's own prompter.
func (r *Runner) Prompter() Prompter {
	return Prompter{ID: r.id, Tokenizer: r.tok, Template: r.tmpl, ContextTokens: r.info.ContextTokens}
}

// ToolCalls reports whether the chat template has a tool-call format the
// engine parses (the "tools" capability).
func (p Prompter) ToolCalls() bool {
	return p.Template != nil && toolcall.Detect(p.Template.Source()) != ""
}

// Prompt renders req.Messages with the chat template (tools and template
// kwargs included) and tokenizes the text, or tokenizes req.Prompt with
// the tokenizer's special tokens. A prompt that leaves no room for one
// generated token is a *ContextError; a template that refuses the
// conversation, a *RequestError. req.PromptIDs is not read.
func (p Prompter) Prompt(ctx context.Context, req *Request) ([]int32, error) {
	if req.Messages == nil {
		return p.encode(req.Prompt, true)
	}
	if p.Template == nil {
		return nil, &RequestError{fmt.Errorf("model %q has no chat template; send a prompt, not messages", p.ID)}
	}
	opt := template.Options{Tools: req.Tools, AddGenerationPrompt: true, Extra: req.TemplateKwargs}
	if raw, ok := req.TemplateKwargs["enable_thinking"]; ok {
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, &RequestError{fmt.Errorf("enable_thinking must be true or false")}
		}
		opt.EnableThinking = &b
	}
	// The template renders under its budget and stops when ctx ends
	// (the client left): a cancelled render is not the request's fault.
	text, err := p.Template.Render(ctx, req.Messages, opt)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil, err
	}
	if err != nil {
		return nil, &RequestError{err}
	}
	// Like transformers' apply_chat_template(tokenize=True): the
	// template writes every special token itself.
	return p.encode(text, false)
}

// encode tokenizes a prompt but gives up, with a *ContextError, as soon
// as it is certain not to leave room for one generated token: from its
// length in bytes before any tokenizing, else part way through. A prompt
// of any size costs at most about a context's worth of tokenizing.
func (p Prompter) encode(text string, addSpecial bool) ([]int32, error) {
	ids, n := p.Tokenizer.EncodeLimit(text, addSpecial, p.ContextTokens-1)
	if n > p.ContextTokens-1 {
		return nil, &ContextError{PromptTokens: n, AtLeast: true, ContextTokens: p.ContextTokens}
	}
	return ids, nil
}
