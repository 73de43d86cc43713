package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"hearth/engine/template"
	"hearth/engine/tokenizer"
	"hearth/engine/toolcall"
	"hearth/engine/tower"
	"hearth/media"
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
	// Vision is how the model's vision tower takes pictures into the
	// prompt; nil when it takes none.
	Vision *tower.Prompt
	// ImageTokens counts a picture's soft tokens where that depends on the
	// picture (Vision.Tokens 0: Qwen-VL's dynamic resolution).
	ImageTokens func(media.Image) (int, error)
}

// Prompter is the runner's own prompter.
func (r *Runner) Prompter() Prompter {
	p := Prompter{ID: r.id, Tokenizer: r.tok, Template: r.tmpl, ContextTokens: r.info.ContextTokens}
	if vp, ok := r.model.VisionPrompt(); ok && r.imgProc != nil {
		p.Vision = &vp
		if vp.Tokens == 0 {
			p.ImageTokens = func(im media.Image) (int, error) {
				px, err := r.imgProc.Image(im)
				if err != nil {
					return 0, err
				}
				g := r.model.ImageGrid(px)
				return g[0] * g[1] * g[2], nil
			}
		}
	}
	return p
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
	ids, _, err := p.PromptImages(ctx, req)
	return ids, err
}

// PromptImages is Prompt for a request that may hold pictures
// (req.Images): each picture's placeholder in the rendered conversation
// is expanded as the model's processor does (tower.Prompt), and the
// picture's soft tokens start at ids[rows[i]] for picture i. A model that
// takes no pictures, a conversation with another number of placeholders
// than pictures, or pictures without messages are a *RequestError.
func (p Prompter) PromptImages(ctx context.Context, req *Request) (ids []int32, rows []int, err error) {
	if len(req.Images) > 0 {
		if p.Vision == nil {
			return nil, nil, &RequestError{fmt.Errorf("model %q takes no images", p.ID)}
		}
		if req.Messages == nil {
			return nil, nil, &RequestError{fmt.Errorf("images go in messages, as image parts; model %q got %d with a plain prompt", p.ID, len(req.Images))}
		}
	}
	text, err := p.render(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if req.Messages == nil {
		ids, err = p.encode(text, true)
		return ids, nil, err
	}
	if len(req.Images) == 0 {
		// Like transformers' apply_chat_template(tokenize=True): the
		// template writes every special token itself.
		ids, err = p.encode(text, false)
		return ids, nil, err
	}
	return p.expand(text, req.Images)
}

// expand replaces each picture placeholder of the rendered text as the
// model's processor does (Gemma3Processor: the placeholder's text becomes
// the full image sequence; Qwen3VLProcessor: the placeholder repeated once
// per soft token), tokenizes, and finds each picture's soft tokens.
func (p Prompter) expand(text string, pictures []media.Image) ([]int32, []int, error) {
	v := p.Vision
	images := len(pictures)
	piece := func(id int32) (string, error) {
		if id < 0 {
			return "", nil // none written
		}
		s, ok := p.Tokenizer.Token(id)
		if !ok || s == "" {
			return "", fmt.Errorf("model %q: its image token %d is not in the tokenizer", p.ID, id)
		}
		return s, nil
	}
	ph, err := piece(v.Placeholder)
	if err != nil {
		return nil, nil, err
	}
	begin, err := piece(v.Begin)
	if err != nil {
		return nil, nil, err
	}
	end, err := piece(v.End)
	if err != nil {
		return nil, nil, err
	}
	img, err := piece(v.Image)
	if err != nil {
		return nil, nil, err
	}
	if n := strings.Count(text, ph); n != images {
		return nil, nil, &RequestError{fmt.Errorf("the conversation has %d image parts but the request holds %d images", n, images)}
	}
	counts := make([]int, images)
	need := 0
	for i := range counts {
		counts[i] = v.Tokens
		if v.Tokens == 0 {
			if p.ImageTokens == nil {
				return nil, nil, fmt.Errorf("model %q: its pictures' token counts depend on the picture, and the prompter cannot count them", p.ID)
			}
			n, err := p.ImageTokens(pictures[i])
			if err != nil {
				if errors.Is(err, media.ErrMedia) {
					return nil, nil, &RequestError{fmt.Errorf("image %d: %w", i+1, err)}
				}
				return nil, nil, fmt.Errorf("image %d: %w", i+1, err)
			}
			counts[i] = n
		}
		need += counts[i]
	}
	// The soft tokens alone are about the sum of counts: refuse a prompt
	// that cannot fit before building its text.
	if need > p.ContextTokens-1 {
		return nil, nil, &ContextError{PromptTokens: need, AtLeast: true, ContextTokens: p.ContextTokens}
	}
	// each placeholder, in order, becomes its picture's sequence
	parts := strings.Split(text, ph)
	var b strings.Builder
	for i, part := range parts {
		b.WriteString(part)
		if i < images {
			b.WriteString(v.Before + begin + strings.Repeat(img, counts[i]) + end + v.After)
		}
	}
	ids, err := p.encode(b.String(), false)
	if err != nil {
		return nil, nil, err
	}
	// runs of image tokens, each split into consecutive pictures' counts
	var rows []int
	k := 0
	for i := 0; i < len(ids); i++ {
		if ids[i] != v.Image {
			continue
		}
		j := i
		for j < len(ids) && ids[j] == v.Image {
			j++
		}
		for r := i; r < j; r += counts[k-1] {
			if k >= images || counts[k] <= 0 || counts[k] > j-r {
				return nil, nil, &RequestError{fmt.Errorf("the prompt holds a run of %d image tokens that is not whole pictures (is the image token's text in a message?)", j-i)}
			}
			rows = append(rows, r)
			k++
		}
		i = j - 1
	}
	if len(rows) != images {
		return nil, nil, &RequestError{fmt.Errorf("the prompt holds the soft tokens of %d images, but the request has %d (is the image token's text in a message?)", len(rows), images)}
	}
	return ids, rows, nil
}

// render is the prompt's text: the conversation through the chat
// template, or the plain prompt.
func (p Prompter) render(ctx context.Context, req *Request) (string, error) {
	if req.Messages == nil {
		return req.Prompt, nil
	}
	if p.Template == nil {
		return "", &RequestError{fmt.Errorf("model %q has no chat template; send a prompt, not messages", p.ID)}
	}
	opt := template.Options{Tools: req.Tools, AddGenerationPrompt: true, Extra: req.TemplateKwargs}
	if raw, ok := req.TemplateKwargs["enable_thinking"]; ok {
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return "", &RequestError{fmt.Errorf("enable_thinking must be true or false")}
		}
		opt.EnableThinking = &b
	}
	// The template renders under its budget and stops when ctx ends
	// (the client left): a cancelled render is not the request's fault.
	text, err := p.Template.Render(ctx, req.Messages, opt)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "", err
	}
	if err != nil {
		return "", &RequestError{err}
	}
	return text, nil
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
