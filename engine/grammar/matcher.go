package grammar

import (
	"fmt"
	"slices"
)

// frame is one return address on a matcher's stack. Frames are shared
// (hash-consed per Matcher): two configurations with equal stacks hold the
// same pointer, so a set of configurations dedupes by comparing pointers.
type frame struct {
	ret   int32
	up    *frame
	depth int32
}

// config is one way the bytes so far can be read: a state and the stack
// of rules to return to.
type config struct {
	state int32
	stack *frame
}

// set is a closed set of configurations: each state in it reads a byte
// (states that only move without reading were followed), and accept says
// whether the root rule can end here.
type set struct {
	cs     []config
	accept bool
	escape bool // a configuration reached the end of the rule above bottom (mask.go)
}

// maxDepth bounds the stack: a left-recursive rule (which JSON schemas do
// not make, but a fuzzer might) would push forever.
const maxDepth = 512

// run holds what following bytes needs beyond the grammar: the frame
// table that shares stacks, and scratch for closures.
type run struct {
	g      *Grammar
	bottom *frame // the opaque stack of a state-mask walk; nil otherwise
	frames map[frameKey]*frame
	seen   []config
	work   []config
	moved  []config
}

type frameKey struct {
	ret int32
	up  *frame
}

func newRun(g *Grammar) *run {
	return &run{g: g, frames: map[frameKey]*frame{}}
}

func (r *run) push(ret int32, up *frame) *frame {
	k := frameKey{ret, up}
	if f, ok := r.frames[k]; ok {
		return f
	}
	d := int32(1)
	if up != nil {
		d = up.depth + 1
	}
	f := &frame{ret: ret, up: up, depth: d}
	r.frames[k] = f
	return f
}

// close follows every move that reads nothing from the configurations in
// start, and returns the closed set (appended to dst[:0]).
func (r *run) close(dst []config, start []config) set {
	r.seen = r.seen[:0]
	r.work = append(r.work[:0], start...)
	out := set{cs: dst[:0]}
	for len(r.work) > 0 {
		c := r.work[len(r.work)-1]
		r.work = r.work[:len(r.work)-1]
		if slices.Contains(r.seen, c) {
			continue
		}
		r.seen = append(r.seen, c)
		st := &r.g.states[c.state]
		if len(st.bytes) > 0 {
			out.cs = append(out.cs, c)
		}
		for _, e := range st.eps {
			r.work = append(r.work, config{e, c.stack})
		}
		for _, call := range st.calls {
			if c.stack != nil && c.stack.depth >= maxDepth {
				continue
			}
			r.work = append(r.work, config{r.g.rules[call.rule], r.push(call.next, c.stack)})
		}
		if st.final {
			if c.stack == nil {
				out.accept = true
			} else if c.stack == r.bottom {
				out.escape = true
			} else {
				r.work = append(r.work, config{c.stack.ret, c.stack.up})
			}
		}
	}
	return out
}

// step reads byte b from the closed set s and returns the next closed set
// (appended to dst[:0]); an empty set with accept false means b cannot
// come next.
func (r *run) step(dst []config, s set, b byte) set {
	moved := r.moved[:0]
	for _, c := range s.cs {
		for _, e := range r.g.states[c.state].bytes {
			if b < e.lo {
				break // edges are sorted by lo
			}
			if b <= e.hi {
				moved = append(moved, config{e.next, c.stack})
			}
		}
	}
	r.moved = moved
	return r.close(dst, moved)
}

// Matcher follows one generation through a grammar.
type Matcher struct {
	r              *run
	cur            set
	scratch, spare []config // for Mask's checks
}

// NewMatcher starts at the beginning of g's language.
func NewMatcher(g *Grammar) *Matcher {
	r := newRun(g)
	m := &Matcher{r: r}
	m.cur = r.close(nil, []config{{g.rules[g.root], nil}})
	return m
}

// Advance reads bytes (a token's text). It fails, leaving the matcher as
// it was, when they cannot come next.
func (m *Matcher) Advance(bytes []byte) error {
	s := m.cur
	for i, b := range bytes {
		s = m.r.step(nil, s, b)
		if len(s.cs) == 0 && !(s.accept && i == len(bytes)-1) {
			return fmt.Errorf("grammar: %q cannot come next (at byte %d)", bytes, i)
		}
	}
	m.cur = s
	return nil
}

// CanEnd reports whether the text so far is a whole sentence of the
// language: the end of generation may come now.
func (m *Matcher) CanEnd() bool { return m.cur.accept }

// Done reports whether nothing but the end can come.
func (m *Matcher) Done() bool { return len(m.cur.cs) == 0 }

// Accepts reports whether the whole of text is in g's language.
func (g *Grammar) Accepts(text string) bool {
	m := NewMatcher(g)
	return m.Advance([]byte(text)) == nil && m.CanEnd()
}
