// Package family is the registry seam between a checkpoint's config and the
// code that runs it: each Family declares its tier, the configs it accepts,
// its capabilities and fidelity label, and builds a Model.
package family

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"hearth/engine/cache"
	"hearth/engine/config"
	"hearth/engine/fit"
	"hearth/engine/nn"
	"hearth/engine/tensor"
)

// Tier says how a family is supported.
type Tier string

const (
	// Targeted families have a dedicated graph.
	Targeted Tier = "targeted"
	// Generic families run on the universal module from a descriptor.
	Generic Tier = "generic"
)

// Caps are a family's capabilities beyond text.
type Caps uint8

const (
	Vision Caps = 1 << iota
	Audio
	Tools
	Embeddings
	// Thinking: the chat template marks a reasoning block (engine/reasoning),
	// which the API returns apart from the answer.
	Thinking
)

// Names lists the capabilities set in c.
func (c Caps) Names() []string {
	var out []string
	for _, x := range []struct {
		c    Caps
		name string
	}{{Vision, "vision"}, {Audio, "audio"}, {Tools, "tools"}, {Embeddings, "embeddings"}, {Thinking, "thinking"}} {
		if c&x.c != 0 {
			out = append(out, x.name)
		}
	}
	return out
}

// Family is one supported model family.
type Family struct {
	Name     string
	Tier     Tier
	Accepts  func(c *config.Config) bool
	Caps     Caps
	Fidelity string
	// Types lists the model_type values Accepts takes, for error messages.
	Types func() []string
	New   func(c *config.Config, l *nn.Loader) (Model, error)
	// CacheLayers is what each layer's cache holds, for the fit estimate,
	// when it is not fit.FromConfig's one KV cache per layer (layers that
	// share another's cache, recurrent state, per-layer head sizes); nil
	// means FromConfig's.
	CacheLayers func(c *config.Config) ([]fit.Layer, error)
	// Media says which towers' output the family's Forward splices in
	// for c (Batch.Media); nil: none. A tower runs only where the family
	// takes its output and the checkpoint holds its weights; Caps then
	// gains it for that model (the engine's Info.Capabilities).
	Media func(c *config.Config) Caps
}

// Model is a family's graph over weights already on a backend.
type Model interface {
	// Forward records the pass over b's tokens into g and returns logits:
	// [1, vocab] for the last token, or [n, vocab] with b.AllLogits.
	Forward(g *tensor.Graph, b *Batch) (tensor.T, error)
	// NewCaches makes one cache per layer for up to capTokens tokens,
	// taking at most chunk tokens per Forward.
	NewCaches(b tensor.Backend, capTokens, chunk int) ([]cache.Layer, error)
	// AuditIgnore lists checkpoint tensors the family knowingly skips.
	AuditIgnore() []string
}

// BatchModel is a Model that can also run one new token of each of
// several sequences in one pass (continuous batching): the projections and
// the MLP read the weights once for every row, and each row attends to its
// own sequence's caches. Outputs are those of each sequence run alone.
type BatchModel interface {
	// ForwardBatch records the pass into g and returns the logits of every
	// row: [len(rows), vocab].
	ForwardBatch(g *tensor.Graph, rows []Row) (tensor.T, error)
}

// Row is one sequence's next token in a batched step (BatchModel).
type Row struct {
	Token  int32
	Pos    int           // its position: the sequence's length before it
	Caches []cache.Layer // the sequence's, one per layer
}

// RowInputs are a batched step's host inputs: each row's token, its
// position, and the end of its positions after the step. It refuses an
// empty step, a row whose caches are not one per layer, and a row that
// check (the family's rope rule for a pass over [start, end)) refuses.
func RowInputs(rows []Row, layers int, check func(start, end int) error) (tokens, pos []int32, ends []int, err error) {
	if len(rows) == 0 {
		return nil, nil, nil, errors.New("a batched step of no rows")
	}
	n := len(rows)
	tokens, pos, ends = make([]int32, n), make([]int32, n), make([]int, n)
	for i, r := range rows {
		if len(r.Caches) != layers {
			return nil, nil, nil, fmt.Errorf("row %d: %d caches for %d layers", i, len(r.Caches), layers)
		}
		if err := check(r.Pos, r.Pos+1); err != nil {
			return nil, nil, nil, fmt.Errorf("row %d: %w", i, err)
		}
		tokens[i], pos[i], ends[i] = r.Token, int32(r.Pos), r.Pos+1
	}
	return tokens, pos, ends, nil
}

// Batch is the input of one forward pass of one sequence.
type Batch struct {
	Tokens []int32 // [n] new tokens
	// IDs, when set, holds the n token ids on the backend instead (float32
	// values: the token the last step picked, which the host has not read
	// yet); Tokens then only gives n.
	IDs       tensor.T
	Pos       int           // position of Tokens[0]
	Caches    []cache.Layer // one per layer
	AllLogits bool          // logits for every token, not only the last
	// Hidden asks for every token's final hidden state (after the final
	// norm, before the head: [n, hidden]) instead of logits, for
	// embeddings. A family that cannot give them returns an error.
	Hidden bool
	// Media are tower outputs (an image's soft tokens) that take the
	// place of some rows' token embeddings, each whole in this batch, in
	// row order and apart. Only with host Tokens.
	Media []Media
	// PastGrids are the Grids of the sequence's media runs before Pos, in
	// order: Qwen's mRoPE shifts the positions of everything after a
	// picture by its grid.
	PastGrids [][3]int
}

// Media is one run of rows whose embeddings come from a tower.
type Media struct {
	Row int // the batch row it starts at
	// Embeds [n, hidden] (float32, a node of the pass's graph or a
	// buffer) replace the embeddings of rows Row..Row+n-1 as they are:
	// after the model's embedding scale, as transformers' masked_scatter
	// puts them.
	Embeds tensor.T
	// Grid is the rows' (t, h, w) layout where the tower gives one
	// (tower.Gridded; row-major, t·h·w rows), zero otherwise.
	Grid [3]int
}

// MediaRows checks b.Media against b's n rows and hidden width and returns
// the Splice row map (the row of the media embeddings each row takes, or
// -1) per media item, and the positions each item covers.
func (b *Batch) MediaRows(g *tensor.Graph, hidden int) ([][]int32, []tensor.Span, error) {
	n := len(b.Tokens)
	if len(b.Media) > 0 && !b.IDs.IsNone() {
		return nil, nil, errors.New("media rows need host token ids")
	}
	var from [][]int32
	var spans []tensor.Span
	next := 0
	for i, m := range b.Media {
		s := g.Shape(m.Embeds)
		if len(s) != 2 || s[1] != hidden || s[0] == 0 || m.Row < next || m.Row+s[0] > n {
			return nil, nil, fmt.Errorf("media %d: embeddings %v at row %d of a batch of %d rows (hidden %d; after row %d)", i, s, m.Row, n, hidden, next)
		}
		f := make([]int32, n)
		for r := range f {
			f[r] = -1
			if r >= m.Row && r < m.Row+s[0] {
				f[r] = int32(r - m.Row)
			}
		}
		from = append(from, f)
		spans = append(spans, tensor.Span{Start: b.Pos + m.Row, End: b.Pos + m.Row + s[0]})
		next = m.Row + s[0]
	}
	return from, spans, nil
}

// ErrUnsupported is returned (wrapped) when no family accepts a config.
var ErrUnsupported = errors.New("unsupported model")

// Resolve returns the first family in fams that accepts c. fams is in
// resolution order: targeted ports first, the generic tier last.
func Resolve(fams []*Family, c *config.Config) (*Family, error) {
	for _, f := range fams {
		if f.Accepts(c) {
			return f, nil
		}
	}
	var types []string
	for _, f := range fams {
		types = append(types, f.Types()...)
	}
	sort.Strings(types)
	hint := ""
	if near := Nearest(c.ModelType, types); near != "" {
		hint = fmt.Sprintf("; the nearest supported type is %q, a different architecture", near)
	}
	return nil, fmt.Errorf("%w: unsupported model_type %q%s (supported: %s)", ErrUnsupported, c.ModelType, hint, strings.Join(types, ", "))
}

// Nearest returns the supported type that shares the longest name prefix
// with modelType (at least 4 characters, e.g. "qwen3_next" → "qwen3"), or
// "" when none does. Variants of a family are named this way on the Hub, so
// the prefix points the user at what they probably meant, without claiming
// the checkpoint would load as that type.
func Nearest(modelType string, types []string) string {
	best, bestLen := "", 3
	for _, t := range types {
		n := 0
		for n < len(t) && n < len(modelType) && t[n] == modelType[n] {
			n++
		}
		// A shared separator is no evidence: "qwen3_next" is nearer
		// "qwen3" than "qwen3_moe".
		for n > 0 && modelType[n-1] == '_' {
			n--
		}
		// On equal prefixes prefer the shorter name: the base family.
		if n > bestLen || (n == bestLen && best != "" && len(t) < len(best)) {
			best, bestLen = t, n
		}
	}
	return best
}

// EmbedTokens is the batch's host tokens for the embedding lookup, with
// every media row (from MediaRows) set to id 0: those rows are replaced,
// and their placeholder may lie outside the vocabulary (transformers embeds
// such an image token as 0 too).
func (b *Batch) EmbedTokens(from [][]int32) []int32 {
	if len(b.Media) == 0 {
		return b.Tokens
	}
	tokens := slices.Clone(b.Tokens)
	for _, f := range from {
		for r, src := range f {
			if src >= 0 {
				tokens[r] = 0
			}
		}
	}
	return tokens
}
