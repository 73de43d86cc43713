package engine

import (
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"

	"hearth/engine/grammar"
)

// Format constrains a request's output to a language: any JSON object
// (OpenAI's json_object, Ollama's "json"), or the JSON texts a schema
// validates (json_schema, an Ollama format schema, a forced tool call's
// parameters). Decoding then masks, at every step, the tokens that cannot
// continue a sentence of the language (engine/grammar).
type Format struct {
	JSONObject bool
	Schema     json.RawMessage
}

// formats is a runner's compiled grammars (a few schemas, LRU: an agent
// sends the same ones every turn) and its vocabulary's byte trie, made on
// the first constrained request.
type formats struct {
	mu     sync.Mutex
	byText map[string]*list.Element
	lru    *list.List // of formatEntry, most recent first
	vocab  *grammar.Vocab
}

type formatEntry struct {
	key string
	g   *grammar.Grammar
}

// keptGrammars bounds the cache: a grammar also holds its per-state masks
// (a few MB at most for a 150k vocabulary).
const keptGrammars = 16

func (r *Runner) grammar(f *Format) (*grammar.Grammar, *grammar.Vocab, error) {
	fs := &r.formats
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.byText == nil {
		fs.byText, fs.lru = map[string]*list.Element{}, list.New()
	}
	if fs.vocab == nil {
		fs.vocab = grammar.VocabOf(r.tok)
	}
	key := "object"
	if !f.JSONObject {
		key = "schema:" + string(f.Schema)
	}
	if e, ok := fs.byText[key]; ok {
		fs.lru.MoveToFront(e)
		return e.Value.(formatEntry).g, fs.vocab, nil
	}
	var g *grammar.Grammar
	if f.JSONObject {
		g = grammar.JSONObject()
	} else {
		var err error
		if g, err = grammar.Schema(f.Schema); err != nil {
			var se *grammar.SchemaError
			if errors.As(err, &se) {
				return nil, nil, &RequestError{err}
			}
			return nil, nil, err
		}
	}
	fs.byText[key] = fs.lru.PushFront(formatEntry{key, g})
	if fs.lru.Len() > keptGrammars {
		last := fs.lru.Back()
		fs.lru.Remove(last)
		delete(fs.byText, last.Value.(formatEntry).key)
	}
	return g, fs.vocab, nil
}

// masker applies a grammar to one generation's logits.
type masker struct {
	r       *Runner
	m       *grammar.Matcher
	v       *grammar.Vocab
	allowed []uint64
	end     int32 // the end-of-sequence id forced when the text is complete
}

func (r *Runner) newMasker(f *Format) (*masker, error) {
	g, v, err := r.grammar(f)
	if err != nil {
		return nil, err
	}
	end := int32(-1)
	for _, id := range r.tok.EOS() {
		if r.eos[id] {
			end = id
			break
		}
	}
	if end < 0 {
		return nil, &RequestError{fmt.Errorf("model %q has no end-of-sequence token, so a constrained answer could not end", r.id)}
	}
	return &masker{r: r, m: grammar.NewMatcher(g), v: v, allowed: make([]uint64, (v.Size()+63)/64), end: end}, nil
}

// apply sets every logit the grammar refuses to −∞; the end of sequence
// keeps its logit only where the text is a whole sentence of the
// language, and is all that is left once nothing else can come.
func (k *masker) apply(logits []float32) error {
	canEnd := k.m.Mask(k.v, k.allowed)
	inf := float32(math.Inf(-1))
	any := false
	for id := range logits {
		if id < k.v.Size() && k.allowed[id>>6]&(1<<(id&63)) != 0 {
			any = true
			continue
		}
		if !(canEnd && k.r.eos[int32(id)]) {
			logits[id] = inf
		}
	}
	switch {
	case canEnd && (k.m.Done() || math.IsInf(float64(logits[k.end]), -1)):
		logits[k.end] = max(logits[k.end], 0)
	case !canEnd && !any:
		return errors.New("constrained decoding: no token of this vocabulary can continue the text")
	}
	return nil
}

// accept moves the grammar past a sampled token.
func (k *masker) accept(id int32) error {
	if k.r.eos[id] {
		return nil
	}
	b, ok := k.r.tok.TokenBytes(id)
	if !ok {
		return fmt.Errorf("constrained decoding: token %d has no text", id)
	}
	return k.m.Advance(b)
}
