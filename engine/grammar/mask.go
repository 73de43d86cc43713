package grammar

import (
	"sync"
)

// The mask of a step is the union, over the matcher's configurations, of
// what each allows. What a configuration allows mostly depends on its
// state alone: a token read entirely inside the state's rule (and the
// rules it calls) is allowed or refused whatever the stack below holds.
// Those verdicts are computed once per state by walking the whole trie
// with an opaque stack, and cached; only the tokens whose reading returns
// past the state's rule (a string's closing quote and what follows it in
// the same token) are checked against the real stack at each step. This
// is how the mask of a state inside a string, where nearly every token is
// allowed, costs a copy of a bitset and a few thousand short checks
// instead of a walk over 150k tokens.

// stateMask is what a state allows whatever the stack below it.
type stateMask struct {
	dense  []uint64 // certain tokens as a bitset, when many
	sparse []int32  // certain tokens as ids, when few
	unsure []int32  // tokens that read past the rule's end: checked per step
}

// maskCache holds the state masks of one grammar over one vocabulary.
type maskCache struct {
	mu     sync.Mutex
	states map[int32]*stateMask
}

func (g *Grammar) cache(v *Vocab) *maskCache {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.caches == nil {
		g.caches = map[*Vocab]*maskCache{}
	}
	c, ok := g.caches[v]
	if !ok {
		c = &maskCache{states: map[int32]*stateMask{}}
		g.caches[v] = c
	}
	return c
}

func (c *maskCache) get(g *Grammar, v *Vocab, q int32) *stateMask {
	c.mu.Lock()
	sm, ok := c.states[q]
	c.mu.Unlock()
	if ok {
		return sm
	}
	sm = newStateWalk(g, v).mask(q)
	c.mu.Lock()
	c.states[q] = sm
	c.mu.Unlock()
	return sm
}

// stateWalk computes one state's mask.
type stateWalk struct {
	r       *run
	v       *Vocab
	bufs    [][]config
	certain []uint64
	unsure  []uint64
}

func newStateWalk(g *Grammar, v *Vocab) *stateWalk {
	r := newRun(g)
	r.bottom = &frame{ret: -1}
	words := (v.Size() + 63) / 64
	return &stateWalk{r: r, v: v, bufs: make([][]config, 16), certain: make([]uint64, words), unsure: make([]uint64, words)}
}

func (w *stateWalk) mask(q int32) *stateMask {
	w.walk(0, set{cs: []config{{q, w.r.bottom}}}, 0, false)
	sm := &stateMask{}
	n := 0
	for i, x := range w.certain {
		w.unsure[i] &^= x
		n += popcount(x)
	}
	if n > w.v.Size()/32 {
		sm.dense = w.certain
	} else {
		sm.sparse = bitIDs(w.certain)
	}
	sm.unsure = bitIDs(w.unsure)
	return sm
}

// walk reads the trie below node from the closed set s. esc says a prefix
// already read can end the state's rule, after which the stack decides:
// tokens below that are not certain are unsure.
func (w *stateWalk) walk(node int32, s set, depth int, esc bool) {
	if depth+1 >= len(w.bufs) {
		w.bufs = append(w.bufs, make([][]config, len(w.bufs))...)
	}
	n := w.v.nodes[node]
	for _, e := range w.v.edges[n.first : n.first+n.count] {
		next := w.r.step(w.bufs[depth+1], s, e.b)
		w.bufs[depth+1] = next.cs[:0]
		c := w.v.nodes[e.node]
		if len(next.cs) == 0 && !next.escape {
			if esc {
				w.mark(w.unsure, c.lo, c.hi)
			}
			continue
		}
		w.mark(w.certain, c.lo, c.lo+c.ends)
		escBelow := esc || next.escape
		if len(next.cs) > 0 {
			w.walk(e.node, next, depth+1, escBelow)
		} else if escBelow {
			w.mark(w.unsure, c.lo+c.ends, c.hi)
		}
	}
}

func (w *stateWalk) mark(bits []uint64, lo, hi int32) {
	for _, id := range w.v.sorted[lo:hi] {
		bits[id>>6] |= 1 << (id & 63)
	}
}

func popcount(x uint64) int {
	n := 0
	for x != 0 {
		x &= x - 1
		n++
	}
	return n
}

func bitIDs(bits []uint64) []int32 {
	var ids []int32
	for i, x := range bits {
		for x != 0 {
			b := x & -x
			ids = append(ids, int32(i*64+popcount(b-1)))
			x &^= b
		}
	}
	return ids
}

// Mask sets bit id of allowed (len ≥ (v.Size()+63)/64) for every token
// that can come next, clearing the rest, and reports whether the end of
// generation may come now. The first mask at a state the grammar has not
// been in with this vocabulary walks the trie once for it.
func (m *Matcher) Mask(v *Vocab, allowed []uint64) (canEnd bool) {
	clear(allowed)
	c := m.r.g.cache(v)
	for _, cfg := range m.cur.cs {
		sm := c.get(m.r.g, v, cfg.state)
		if sm.dense != nil {
			for i, x := range sm.dense {
				allowed[i] |= x
			}
		}
		for _, id := range sm.sparse {
			allowed[id>>6] |= 1 << (id & 63)
		}
		for _, id := range sm.unsure {
			if allowed[id>>6]&(1<<(id&63)) == 0 && m.reads(cfg, v.bytes[id]) {
				allowed[id>>6] |= 1 << (id & 63)
			}
		}
	}
	return m.cur.accept
}

// reads reports whether configuration c can read all of b.
func (m *Matcher) reads(c config, b []byte) bool {
	s := set{cs: append(m.scratch[:0], c)}
	for i, x := range b {
		if len(s.cs) == 0 {
			return false
		}
		s = m.r.step(m.spare[:0], s, x)
		// step appends into spare; swap so the next step does not write
		// over the set it reads.
		m.scratch, m.spare = m.spare, s.cs
		if len(s.cs) == 0 && !(s.accept && i == len(b)-1) {
			return false
		}
	}
	return true
}
