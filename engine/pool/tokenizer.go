package pool

import (
	"sync"

	"hearth/engine/tokenizer"
)

// maxTokenizers bounds the tokenizers Tokenizer keeps for models that are
// not loaded (a large tokenizer.json takes tens of MB once parsed).
const maxTokenizers = 4

// tokenizers keeps the tokenizers Tokenizer read from disk, by directory.
type tokenizers struct {
	mu    sync.Mutex
	byDir map[string]*tokenizer.Tokenizer
	order []string // oldest first
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
	p.mu.Lock()
	for _, s := range p.slots {
		if s.model.Dir == m.Dir && s.r != nil {
			r := s.r
			p.mu.Unlock()
			return r.Tokenizer(), m.ID, nil
		}
	}
	p.mu.Unlock()
	t := &p.toks
	t.mu.Lock()
	defer t.mu.Unlock()
	if tok, ok := t.byDir[m.Dir]; ok {
		return tok, m.ID, nil
	}
	tok, err := tokenizer.Load(m.Dir)
	if err != nil {
		return nil, "", err
	}
	if t.byDir == nil {
		t.byDir = map[string]*tokenizer.Tokenizer{}
	}
	if len(t.order) == maxTokenizers {
		delete(t.byDir, t.order[0])
		t.order = t.order[1:]
	}
	t.byDir[m.Dir] = tok
	t.order = append(t.order, m.Dir)
	return tok, m.ID, nil
}
