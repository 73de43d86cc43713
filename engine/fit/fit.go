// Package fit estimates how much memory a model needs at a context length
// and judges it against this machine: weights (from safetensors headers),
// the KV cache per layer type, working buffers for one prefill chunk, and
// the process's own overhead. It reads no tensor, so a load that cannot fit
// is refused before any weight is touched.
//
// The constants are calibrated against the peak resident set of a real
// load and prefill on the CPU backend (see docs/design/registry.md and
// TestEstimateMatchesRSS).
package fit

import (
	"fmt"

	"hearth/engine/config"
	"hearth/engine/tensor"
)

// LayerKind says how a layer's attention memory grows with the context.
type LayerKind uint8

const (
	// Full layers keep a key and a value for every token of the context.
	Full LayerKind = iota
	// Sliding layers keep at most Window tokens (plus one prefill chunk,
	// which the rotating cache holds so a chunk never overwrites a key a
	// query of the same chunk still reads).
	Sliding
	// Recurrent layers keep a constant state, whatever the context.
	Recurrent
)

func (k LayerKind) String() string {
	switch k {
	case Full:
		return "full"
	case Sliding:
		return "sliding"
	case Recurrent:
		return "recurrent"
	}
	return fmt.Sprintf("LayerKind(%d)", uint8(k))
}

// Layer is one decoder layer's cache shape.
type Layer struct {
	Kind       LayerKind
	Window     int   // Sliding: tokens the window sees
	KVHeads    int   // Full, Sliding
	HeadDim    int   // Full, Sliding
	StateBytes int64 // Recurrent: the constant state
}

// Shape is what the estimate needs to know about a checkpoint; FromConfig
// fills it from config.json and the weights' byte count.
type Shape struct {
	WeightBytes  int64 // tensor bytes on disk, from the safetensors headers
	Layers       []Layer
	Hidden       int // hidden_size
	QDim         int // num_attention_heads × head_dim
	Intermediate int // intermediate_size
	Vocab        int // vocab_size
	// MaxContextTokens is max_position_embeddings (0 when unknown); the
	// largest context worth reporting.
	MaxContextTokens int
}

// FromConfig describes the checkpoint of a normalized config whose
// safetensors files hold weightBytes bytes of tensors.
func FromConfig(c *config.Config, weightBytes int64) Shape {
	s := Shape{
		WeightBytes:      weightBytes,
		Hidden:           c.HiddenSize,
		QDim:             c.QDim(),
		Intermediate:     c.IntermediateSize,
		Vocab:            c.VocabSize,
		MaxContextTokens: c.MaxPositionEmbeddings,
	}
	for i := 0; i < c.NumHiddenLayers; i++ {
		l := Layer{Kind: Full, KVHeads: c.NumKeyValueHeads, HeadDim: c.HeadDim}
		if i < len(c.LayerTypes) && c.IsSliding(i) {
			l.Kind, l.Window = Sliding, c.SlidingWindow
		}
		if i < len(c.LayerTypes) && c.LayerTypes[i] == config.Linear {
			// a fixed state, not keys and values; its size is the
			// family's to say (family.Family.CacheLayers)
			l = Layer{Kind: Recurrent}
		}
		s.Layers = append(s.Layers, l)
	}
	return s
}

// Defaults of Options.
const (
	// DefaultKVBytes is the size of one cached key or value element: the
	// CPU backend stores the cache as float32.
	DefaultKVBytes = 4
	// DefaultChunkTokens is the prefill chunk of engine.Options.
	DefaultChunkTokens = 512
	// DefaultOverheadBytes is the resident memory of the serving process
	// besides the model (Go runtime, tokenizer tables, chat template, HTTP
	// server). Measured (TestDefaultOverhead): the runtime is about 5 MB,
	// and loading a real tokenizer peaks at 47-115 MB (gemma3's 262k
	// entries the most); the rest is room for the server, to be
	// re-measured once `hearth serve` exists.
	DefaultOverheadBytes = 200 << 20
)

// Working-buffer model of the CPU backend. Node results live in one arena
// planned per graph shape, where a result's space is reused once its last
// reader has run, so a prefill chunk holds about one layer's live set per
// token: the residual stream and one normed copy (2 hidden-wide), plus the
// larger of the MLP's gate, up and product (3 intermediate-wide) and the
// attention's q, k, v and their roped copies (2 q-wide, 3 kv-wide). The
// matmul kernels keep packed copies of their input (up to 2.5 times the
// widest input row, with the 25% slack the scratch grows by). The logits
// of the last token and its hidden state close the chunk.
const (
	workResidual  = 2 // × hidden
	workMLP       = 3 // × intermediate
	workAttnQ     = 2 // × q_dim
	workAttnKV    = 3 // × kv_dim
	workPackedNum = 5 // workPackedNum/workPackedDen × the widest matmul input
	workPackedDen = 2
	workFloat     = 4 // bytes
)

// Options say what to estimate. The zero value means the defaults.
type Options struct {
	ContextTokens int // the context the sequence may grow to; 0 means MaxContextTokens or 4096
	// Sequences is how many sequences of that context are held at once
	// (the runner's Parallel: batched requests); 0 means 1.
	Sequences   int
	KVBytes     int // bytes per cached key or value element; 0 means DefaultKVBytes
	ChunkTokens int // prefill chunk; 0 means DefaultChunkTokens
	// KV is the element type of the attention caches (engine.Options.KV).
	// A quantized type sets the bytes of each head row, its scales
	// included (tensor.KVType.RowBytes), in place of KVBytes.
	KV tensor.KVType
	// OverheadBytes is the process's resident memory before the load;
	// 0 means DefaultOverheadBytes.
	OverheadBytes int64
	// GCPercent is the collector's GOGC. The KV cache and the working
	// buffers live on the Go heap, and the collector lets garbage grow to
	// this percentage of the live heap before it runs; every decode step
	// leaves its logits behind, so in a long generation the heap settles
	// at (1 + GCPercent/100) times its live size. 0 means 100, Go's
	// default; negative means no slack (GOGC=off under a memory limit).
	GCPercent int
}

func (o Options) withDefaults(s Shape) Options {
	if o.ContextTokens <= 0 {
		o.ContextTokens = s.MaxContextTokens
		if o.ContextTokens <= 0 {
			o.ContextTokens = 4096
		}
	}
	if o.Sequences <= 0 {
		o.Sequences = 1
	}
	if o.KVBytes <= 0 {
		o.KVBytes = DefaultKVBytes
	}
	if o.ChunkTokens <= 0 {
		o.ChunkTokens = DefaultChunkTokens
	}
	if o.OverheadBytes <= 0 {
		o.OverheadBytes = DefaultOverheadBytes
	}
	if o.GCPercent == 0 {
		o.GCPercent = 100
	}
	if o.GCPercent < 0 {
		o.GCPercent = 0
	}
	return o
}

// Breakdown is an estimate, term by term.
type Breakdown struct {
	ContextTokens int
	WeightBytes   int64
	KVBytes       int64 // caches at ContextTokens, of every sequence held
	WorkBytes     int64 // activations of one prefill chunk and the logits
	// GCBytes is the garbage the collector lets pile up beside the live
	// heap (KV and work) before it runs.
	GCBytes       int64
	OverheadBytes int64
}

// Total is the estimated peak resident memory.
func (b Breakdown) Total() int64 {
	return b.WeightBytes + b.KVBytes + b.WorkBytes + b.GCBytes + b.OverheadBytes
}

// HeapBytes is the Go heap the model needs besides the mapped weights:
// the live KV cache and working buffers plus the process overhead. A
// caller that sets a soft memory limit (debug.SetMemoryLimit) to this,
// with GCPercent < 0, trades the GC slack for more frequent collections.
func (b Breakdown) HeapBytes() int64 { return b.KVBytes + b.WorkBytes + b.OverheadBytes }

// Estimate returns the memory s needs at opt.ContextTokens.
func Estimate(s Shape, opt Options) Breakdown {
	o := opt.withDefaults(s)
	b := Breakdown{
		ContextTokens: o.ContextTokens,
		WeightBytes:   s.WeightBytes,
		KVBytes:       kvBytes(s, o),
		WorkBytes:     workBytes(s, o),
		OverheadBytes: o.OverheadBytes,
	}
	b.GCBytes = (b.KVBytes + b.WorkBytes) * int64(o.GCPercent) / 100
	return b
}

// kvBytes sums the caches of every layer at o.ContextTokens, times the
// sequences held.
func kvBytes(s Shape, o Options) int64 {
	return int64(o.Sequences) * seqKVBytes(s, o)
}

func seqKVBytes(s Shape, o Options) int64 {
	var total int64
	for _, l := range s.Layers {
		perToken := 2 * int64(l.KVHeads) * int64(l.HeadDim) * int64(o.KVBytes)
		if o.KV != tensor.KVF32 {
			perToken = 2 * int64(l.KVHeads) * o.KV.RowBytes(l.HeadDim)
		}
		switch l.Kind {
		case Full:
			total += perToken * int64(o.ContextTokens)
		case Sliding:
			// The rotating cache holds window+chunk rows; a context
			// shorter than that gets a plain cache of the context.
			total += perToken * int64(min(o.ContextTokens, l.Window+o.ChunkTokens))
		case Recurrent:
			total += l.StateBytes
		}
	}
	return total
}

// workBytes is the arena and scratch of one prefill chunk plus the logits.
func workBytes(s Shape, o Options) int64 {
	chunk := int64(min(o.ChunkTokens, o.ContextTokens))
	kvDim := 0
	for _, l := range s.Layers {
		kvDim = max(kvDim, l.KVHeads*l.HeadDim)
	}
	h, q, kv, inter := int64(s.Hidden), int64(s.QDim), int64(kvDim), int64(s.Intermediate)
	live := workResidual*h + max(workMLP*inter, workAttnQ*q+workAttnKV*kv)
	packed := max(h, q, inter) * workPackedNum / workPackedDen
	floats := chunk*(live+packed) + int64(s.Vocab) + h
	return floats * workFloat
}
