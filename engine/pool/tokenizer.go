package pool

import (
	"errors"
	"sync"

	"hearth/engine"
	"hearth/engine/template"
	"hearth/engine/tokenizer"
)

// maxTokenizers bounds the tokenizers Tokenizer keeps for models that are
// not loaded (a large tokenizer.json takes tens of MB once parsed).
const maxTokenizers = 4

// tokenizers keeps the tokenizers (and chat templates) Tokenizer and
// Prompter read from disk, by directory.
type tokenizers struct {
	mu    sync.Mutex
	byDir map[string]*files
	order []string // oldest first
}

// files are what a checkpoint prompts with: its tokenizer, and its chat
// template once Prompter asked for it.
type files struct {
	tok      *tokenizer.Tokenizer
	tmpl     *template.Template // nil: none, or not read yet
	tmplErr  error
	tmplRead bool
}

// Tokenizer returns the tokenizer of the named model ("" = the default)
// and the model's id, without loading the model onto a backend: a loaded
// model's own, else one read from its directory (the last few are kept).
// Counting tokens never evicts a model nor waits for room.
func (p *Pool) Tokenizer(name string) (*tokenizer.Tokenizer, string, error) {
	m, err := p.resolve(name)
	if err != nil {
		return nil, "", err
	}
	if r := p.loadedRunner(m); r != nil {
		return r.Tokenizer(), m.ID, nil
	}
	f, err := p.toks.get(m.Dir, false)
	if err != nil {
		return nil, "", err
	}
	return f.tok, m.ID, nil
}

// Prompter returns what renders and tokenizes the named model's prompts
// ("" = the default), without loading the model onto a backend: a loaded
// model's own, else one made from its tokenizer and chat template at the
// context it would be loaded with. It counts the prompt tokens a
// generation would report.
func (p *Pool) Prompter(name string) (engine.Prompter, error) {
	m, err := p.resolve(name)
	if err != nil {
		return engine.Prompter{}, err
	}
	if r := p.loadedRunner(m); r != nil {
		return r.Prompter(), nil
	}
	f, err := p.toks.get(m.Dir, true)
	if err != nil {
		return engine.Prompter{}, err
	}
	return engine.Prompter{ID: m.ID, Tokenizer: f.tok, Template: f.tmpl, ContextTokens: p.contextTokens(m)}, nil
}

// loadedRunner is the runner serving m's checkpoint, if one is loaded.
func (p *Pool) loadedRunner(m Model) *engine.Runner {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.slots {
		if s.model.Dir == m.Dir && s.r != nil {
			return s.r
		}
	}
	return nil
}

// get returns dir's files, reading them on first use (the chat template
// too when withTemplate).
func (t *tokenizers) get(dir string, withTemplate bool) (*files, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.byDir[dir]
	if !ok {
		tok, err := tokenizer.Load(dir)
		if err != nil {
			return nil, err
		}
		f = &files{tok: tok}
		if t.byDir == nil {
			t.byDir = map[string]*files{}
		}
		if len(t.order) == maxTokenizers {
			delete(t.byDir, t.order[0])
			t.order = t.order[1:]
		}
		t.byDir[dir] = f
		t.order = append(t.order, dir)
	}
	if withTemplate && !f.tmplRead {
		f.tmpl, f.tmplErr = template.Load(dir)
		if errors.Is(f.tmplErr, template.ErrNoTemplate) {
			f.tmpl, f.tmplErr = nil, nil
		}
		f.tmplRead = true
	}
	if withTemplate && f.tmplErr != nil {
		return nil, f.tmplErr
	}
	return f, nil
}
