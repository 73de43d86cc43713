// Package cache holds the per-layer attention memory of a sequence: plain KV
// caches that grow with the context and rotating ones that keep a sliding
// window, behind one interface with Trim for speculative rollback.
package cache

import (
	"fmt"

	"hearth/engine/tensor"
)

// Layer is one layer's key/value memory on a backend.
type Layer interface {
	// Update records, into g, the write of k and v ([n, kvHeads, headDim],
	// the new tokens) after the tokens already held, and returns what the
	// attention op reads. The length grows at record time: if the graph
	// is not run, Trim the n tokens back off.
	Update(g *tensor.Graph, k, v tensor.T) (View, error)
	// Len is the number of tokens held.
	Len() int
	// Trim drops the last n tokens and returns how many it dropped (a
	// rotating cache can only drop what it has not overwritten).
	Trim(n int) int
	// CanTrim reports whether Trim(n) would drop n tokens and leave a
	// layer that can go on: what a prompt cache asks before rewinding a
	// finished sequence to a prefix it shares with a new prompt.
	CanTrim(n int) bool
	// Bytes is the backend memory the layer holds.
	Bytes() int64
	// Free releases the backend buffers.
	Free()
}

// View is what one attention op reads: the key and value buffers and the
// positions they hold. Window and Scale are left to the model.
type View struct {
	K, V     tensor.T
	QueryPos int // position of the first new token
	KeyLen   int // tokens held after the update
	Ring     int // rows of a rotating buffer; 0 for a plain one
}

// Spec fills the cache's part of an attention spec.
func (v View) Spec(s tensor.AttnSpec) tensor.AttnSpec {
	s.QueryPos, s.KeyLen, s.Ring = v.QueryPos, v.KeyLen, v.Ring
	return s
}

// typed is a backend whose KV caches hold elements of type t (WithType).
type typed struct {
	tensor.Backend
	t tensor.KVType
}

// WithType is b as the cache constructors of this package see it when the
// key and value buffers they make should hold elements of type t (a
// quantized cache): a family's NewCaches passes it on unchanged, and any
// other buffer (a recurrent state) is still a plain float32 Alloc.
func WithType(b tensor.Backend, t tensor.KVType) tensor.Backend {
	if tb, ok := b.(typed); ok {
		b = tb.Backend
	}
	if t == tensor.KVF32 {
		return b
	}
	return typed{Backend: b, t: t}
}

// TypeOf is the element type of the KV buffers made on b.
func TypeOf(b tensor.Backend) tensor.KVType {
	if tb, ok := b.(typed); ok {
		return tb.t
	}
	return tensor.KVF32
}

// allocKV makes the key and value buffers [rows, kvHeads, headDim] of the
// type b carries.
func allocKV(b tensor.Backend, rows, kvHeads, headDim int) (k, v tensor.T, err error) {
	shape := []int{rows, kvHeads, headDim}
	alloc := b.Alloc
	if t := TypeOf(b); t != tensor.KVF32 {
		ka, ok := b.(typed).Backend.(tensor.KVAllocator)
		if !ok {
			return k, v, fmt.Errorf("the %s backend has no %v kv cache", b.Name(), t)
		}
		alloc = func(shape []int) (tensor.T, error) { return ka.AllocKV(shape, t) }
	}
	if k, err = alloc(shape); err != nil {
		return k, v, err
	}
	if v, err = alloc(shape); err != nil {
		b.Free(k)
		return k, v, err
	}
	return k, v, nil
}

// kvBytes is the memory of a key and a value buffer of shape [rows, heads, headDim].
func kvBytes(b tensor.Backend, buf tensor.T) int64 {
	s := b.Shape(buf)
	return 2 * int64(s[0]) * int64(s[1]) * TypeOf(b).RowBytes(s[2])
}

// KV is a plain cache: token p lives in row p, up to a fixed capacity.
type KV struct {
	b      tensor.Backend
	k, v   tensor.T
	length int
	rows   int
}

// NewKV allocates a plain cache for capTokens tokens, of the element type
// b carries (WithType).
func NewKV(b tensor.Backend, capTokens, kvHeads, headDim int) (*KV, error) {
	k, v, err := allocKV(b, capTokens, kvHeads, headDim)
	if err != nil {
		return nil, err
	}
	return &KV{b: b, k: k, v: v, rows: capTokens}, nil
}

// Update appends k and v.
func (c *KV) Update(g *tensor.Graph, k, v tensor.T) (View, error) {
	n := g.Shape(k)[0]
	if c.length+n > c.rows {
		return View{}, fmt.Errorf("kv cache full: %d tokens held, %d more, capacity %d", c.length, n, c.rows)
	}
	kb := g.Store(c.k, k, c.length)
	vb := g.Store(c.v, v, c.length)
	view := View{K: kb, V: vb, QueryPos: c.length, KeyLen: c.length + n}
	c.length += n
	return view, nil
}

// Len is the number of tokens held.
func (c *KV) Len() int { return c.length }

// Trim drops the last n tokens.
func (c *KV) Trim(n int) int {
	n = min(n, c.length)
	c.length -= n
	return n
}

// CanTrim: any of the tokens held.
func (c *KV) CanTrim(n int) bool { return n >= 0 && n <= c.length }

// Bytes is the memory of the keys and values.
func (c *KV) Bytes() int64 { return kvBytes(c.b, c.k) }

// Free releases the buffers.
func (c *KV) Free() { c.b.Free(c.k); c.b.Free(c.v) }

// Rotating keeps the last Window tokens of a sliding-window layer in a ring
// of Window+Chunk rows, so a chunk of up to Chunk new tokens never
// overwrites a key that a query of the same chunk still needs.
type Rotating struct {
	b             tensor.Backend
	k, v          tensor.T
	length        int
	window, chunk int
	// oldest position still intact: writes past it recycle rows
	floor int
}

// NewRotating allocates a rotating cache, of the element type b carries.
func NewRotating(b tensor.Backend, window, chunk, kvHeads, headDim int) (*Rotating, error) {
	if window <= 0 || chunk <= 0 {
		return nil, fmt.Errorf("rotating cache: window %d and chunk %d must be positive", window, chunk)
	}
	k, v, err := allocKV(b, window+chunk, kvHeads, headDim)
	if err != nil {
		return nil, err
	}
	return &Rotating{b: b, k: k, v: v, window: window, chunk: chunk}, nil
}

func (c *Rotating) rows() int { return c.window + c.chunk }

// Update writes k and v at ring rows (position mod rows); a chunk that wraps
// is written in two pieces.
func (c *Rotating) Update(g *tensor.Graph, k, v tensor.T) (View, error) {
	n := g.Shape(k)[0]
	if n > c.chunk {
		return View{}, fmt.Errorf("rotating cache: %d new tokens in one step, at most %d", n, c.chunk)
	}
	rows := c.rows()
	kb, vb := c.k, c.v
	for done := 0; done < n; {
		row := (c.length + done) % rows
		m := min(n-done, rows-row)
		kp, vp := k, v
		if m != n {
			kp, vp = g.Slice(k, 0, done, done+m), g.Slice(v, 0, done, done+m)
		}
		kb = g.Store(c.k, kp, row)
		vb = g.Store(c.v, vp, row)
		done += m
	}
	view := View{K: kb, V: vb, QueryPos: c.length, KeyLen: c.length + n, Ring: rows}
	c.length += n
	c.floor = max(c.floor, c.length-rows)
	return view, nil
}

// Len is the number of tokens seen (not all are still held).
func (c *Rotating) Len() int { return c.length }

// Trim drops the last n tokens, as far as the window stays intact.
func (c *Rotating) Trim(n int) int {
	n = min(n, c.trimmable())
	c.length -= n
	return n
}

// trimmable is how many tokens Trim can drop: after trimming to length L,
// positions [L-window, L) must still be in the ring, and positions below
// floor have been overwritten.
func (c *Rotating) trimmable() int {
	if c.floor > 0 {
		return max(0, c.length-c.floor-c.window)
	}
	return c.length
}

// CanTrim: as far as the window stays intact.
func (c *Rotating) CanTrim(n int) bool { return n >= 0 && n <= c.trimmable() }

// Bytes is the memory of the ring's keys and values.
func (c *Rotating) Bytes() int64 { return kvBytes(c.b, c.k) }

// Free releases the buffers.
func (c *Rotating) Free() { c.b.Free(c.k); c.b.Free(c.v) }

// NewAttention makes an attention layer's cache: a rotating one for a
// sliding layer whose window (plus one prefill chunk) is shorter than the
// context, a plain one otherwise.
func NewAttention(b tensor.Backend, capTokens, window, chunk, kvHeads, headDim int) (Layer, error) {
	if window > 0 && window+chunk < capTokens {
		return NewRotating(b, window, chunk, kvHeads, headDim)
	}
	return NewKV(b, capTokens, kvHeads, headDim)
}

// FreeAll frees every cache of layers: a family's NewCaches undoes a
// partial allocation with it.
func FreeAll(layers []Layer) {
	for _, c := range layers {
		c.Free()
	}
}
