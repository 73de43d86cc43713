package engine

import (
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"

	"hearth/engine/grammar"
	"hearth/engine/toolcall"
)

// Format constrains a request's output to a language: any JSON object
// (OpenAI's json_object, Ollama's "json"), or the JSON texts a schema
// validates (json_schema, an Ollama format schema, a forced tool call's
// parameters). Decoding then masks, at every step, the tokens that cannot
// continue a sentence of the language (engine/grammar).
type Format struct {
	JSONObject bool
	Schema     json.RawMessage

	prefix, suffix string // literal text around the value (a forced tool call's frame)
}

// ForceTool makes the answer a call of one of the request's tools (Name
// empty: any of them; OpenAI's tool_choice "required", Anthropic's "any")
// or of the one named, written in the model's own tool-call syntax with
// arguments that follow the tool's parameter schema.
type ForceTool struct {
	Name string
}

// toolCallFormat is the Format that forces a call: a schema over
// {"name", arguments} for each tool allowed, framed as the model's chat
// template writes calls.
func (r *Runner) toolCallFormat(f *ForceTool, tools json.RawMessage) (*Format, error) {
	prefix, suffix, argsKey, ok := toolcall.Frame(r.tools)
	if !ok {
		return nil, &RequestError{fmt.Errorf("model %q writes tool calls in a syntax (%q) Hearth cannot force yet; use tool_choice auto", r.id, r.tools)}
	}
	var list []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(tools, &list); err != nil {
		return nil, &RequestError{fmt.Errorf("tools: %w", err)}
	}
	var alts []any
	for _, t := range list {
		if f.Name != "" && t.Function.Name != f.Name {
			continue
		}
		params := json.RawMessage(`{"type": "object"}`)
		if len(t.Function.Parameters) > 0 && string(t.Function.Parameters) != "null" {
			params = t.Function.Parameters
		}
		alts = append(alts, map[string]any{
			"type":       "object",
			"properties": orderedJSON{{"name", map[string]any{"const": t.Function.Name}}, {argsKey, params}},
			"required":   []string{"name", argsKey},
		})
	}
	if len(alts) == 0 {
		return nil, &RequestError{fmt.Errorf("tool_choice names %q, which is not among the tools", f.Name)}
	}
	schema, err := json.Marshal(map[string]any{"anyOf": alts})
	if err != nil {
		return nil, err
	}
	return &Format{Schema: schema, prefix: prefix, suffix: suffix}, nil
}

// orderedJSON marshals as an object with its keys in order (the grammar
// writes properties in the order the schema lists them: name first).
type orderedJSON []struct {
	k string
	v any
}

func (o orderedJSON) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, kv := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(kv.k)
		v, err := json.Marshal(kv.v)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
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
		key = "schema:" + f.prefix + "\x00" + f.suffix + "\x00" + string(f.Schema)
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
		if g, err = grammar.SchemaFramed(f.Schema, f.prefix, f.suffix); err != nil {
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
