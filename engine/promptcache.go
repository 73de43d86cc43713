package engine

import (
	"container/list"
	"sync"
	"sync/atomic"
)

// PromptCache keeps finished sequences, their caches still on the
// backend, so that a later prompt that starts the same way (the next turn
// of a chat, a fixed system prompt, an agent's growing transcript) reads
// only what is new. It holds at most MaxBytes of cache memory (0: one
// sequence, whatever its size) and drops the least recently used
// sequence first.
//
// A sequence is reused at the longest prefix it shares with the new
// prompt that its caches can rewind to: any length for plain KV caches,
// the window's reach for sliding ones (cache.Rotating), and for recurrent
// state (Qwen 3.5's DeltaNet layers) only the lengths a kept slot holds,
// which after a request are its own end. At least one prompt token is
// always left to compute, for its logits.
type PromptCache struct {
	MaxBytes int64

	mu    sync.Mutex
	lru   *list.List // of *cachedSeq, most recent first
	bytes int64

	lookups, hits, hitTokens atomic.Uint64
}

type cachedSeq struct {
	seq *Sequence
	ids []int32 // the tokens its caches hold
}

// Take returns the cached sequence sharing the longest usable prefix with
// ids, rewound to it (n tokens), and removes it from the cache: the caller
// owns it. It returns nil when no sequence shares at least minShared
// tokens or none has room for capTokens.
func (c *PromptCache) Take(ids []int32, capTokens, minShared int) (seq *Sequence, n int) {
	c.lookups.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru == nil {
		return nil, 0
	}
	var best *list.Element
	for e := c.lru.Front(); e != nil; e = e.Next() {
		cs := e.Value.(*cachedSeq)
		if cs.seq.cap < capTokens {
			continue
		}
		p := sharedPrefix(cs.ids, ids[:len(ids)-1])
		for p >= minShared && !cs.seq.canTrim(len(cs.ids)-p) {
			p-- // a ring's reach or a state's slot is further back
		}
		if p >= minShared && p > n {
			best, n = e, p
		}
	}
	if best == nil {
		return nil, 0
	}
	cs := c.lru.Remove(best).(*cachedSeq)
	c.bytes -= cs.seq.bytes()
	cs.seq.Trim(len(cs.ids) - n)
	c.hits.Add(1)
	c.hitTokens.Add(uint64(n))
	return cs.seq, n
}

// Put keeps a finished sequence holding ids; the cache then owns it. Older
// sequences go when the total passes MaxBytes; one bigger than MaxBytes
// alone is freed at once.
func (c *PromptCache) Put(seq *Sequence, ids []int32) {
	if seq.Len() != len(ids) || len(ids) == 0 || len(seq.media) > 0 {
		seq.Close()
		return
	}
	b := seq.bytes()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru == nil {
		c.lru = list.New()
	}
	if c.MaxBytes > 0 && b > c.MaxBytes {
		seq.Close()
		return
	}
	c.lru.PushFront(&cachedSeq{seq: seq, ids: append([]int32(nil), ids...)})
	c.bytes += b
	for c.MaxBytes > 0 && c.bytes > c.MaxBytes || c.MaxBytes <= 0 && c.lru.Len() > 1 {
		last := c.lru.Back()
		cs := c.lru.Remove(last).(*cachedSeq)
		c.bytes -= cs.seq.bytes()
		cs.seq.Close()
	}
}

// Bytes is the cache memory the kept sequences hold.
func (c *PromptCache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Stats are the lookups, the hits and the prompt tokens hits saved.
func (c *PromptCache) Stats() (lookups, hits, tokens uint64) {
	return c.lookups.Load(), c.hits.Load(), c.hitTokens.Load()
}

// Close frees every kept sequence.
func (c *PromptCache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru == nil {
		return
	}
	for e := c.lru.Front(); e != nil; e = e.Next() {
		e.Value.(*cachedSeq).seq.Close()
	}
	c.lru.Init()
	c.bytes = 0
}

func sharedPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// canTrim reports whether every cache of s can drop its last n tokens.
func (s *Sequence) canTrim(n int) bool {
	for _, c := range s.caches {
		if !c.CanTrim(n) {
			return false
		}
	}
	return true
}

// bytes is the backend memory of s's caches.
func (s *Sequence) bytes() int64 {
	var b int64
	for _, c := range s.caches {
		b += c.Bytes()
	}
	return b
}

// sequence is the sequence a request decodes on: a cached one holding the
// longest start of prompt it can offer (the decoder prefills only the
// rest), else a new one. With the cache on, sequences hold the whole
// context, so that any later turn fits in them; requests with media get a
// new one of capTokens (their soft tokens are not the prompt's ids).
func (r *Runner) sequence(prompt []int32, capTokens int, media bool) (*Sequence, error) {
	if r.cache == nil || media {
		return r.model.NewSequence(capTokens)
	}
	if seq, _ := r.cache.Take(prompt, r.info.ContextTokens, 1); seq != nil {
		return seq, nil
	}
	// Free what no prompt shares before allocating: fit counts one
	// sequence's memory per model, not one more per cached one.
	r.cache.Close()
	return r.model.NewSequence(r.info.ContextTokens)
}

// keep hands a finished request's sequence to the prompt cache, holding
// the prompt and the answer's tokens its caches hold (a decoder may have
// run ahead of what the request returned: that is trimmed), or frees it.
func (r *Runner) keep(seq *Sequence, prompt, gen []int32) {
	if r.cache == nil {
		seq.Close()
		return
	}
	all := append(append(make([]int32, 0, len(prompt)+len(gen)), prompt...), gen...)
	held := seq.Len()
	if held > len(all) {
		if !seq.canTrim(held - len(all)) {
			seq.Close()
			return
		}
		seq.Trim(held - len(all))
		held = len(all)
	}
	r.cache.Put(seq, all[:held])
}

// PromptCacheStats are the runner's prompt-cache lookups, hits, the
// prompt tokens hits saved, and the cache memory it holds.
func (r *Runner) PromptCacheStats() (lookups, hits, tokens uint64, bytes int64) {
	if r.cache == nil {
		return 0, 0, 0, 0
	}
	l, h, t := r.cache.Stats()
	return l, h, t, r.cache.Bytes()
}
