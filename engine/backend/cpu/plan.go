package cpu

import (
	"hearth/engine/tensor"
)

// A plan says where each node of a graph keeps its result, so a run
// allocates nothing: node results live in one arena that is reused across
// runs, and two nodes share arena space when their lifetimes do not
// overlap. Plans are made once per graph shape (decode graphs all share one)
// and kept in a small cache keyed by the graph's structure.

// slot kinds
const (
	slotNone  = iota // Store: no result
	slotArena        // its own arena range
	slotInput        // host data of an Input node
	slotView         // a view of another node's result (Reshape, Slice on axis 0)
	slotFused        // a MatMul computed by an earlier MatMul of the same input
)

type slot struct {
	kind uint8
	off  int // arena offset (slotArena)
	n    int // elements
}

type plan struct {
	sig   []int32
	hash  uint64
	slots []slot
	arena int // floats
	// fused[i] lists the MatMul nodes computed together with leader i.
	fused map[int][]int
	used  uint64 // last run that used the plan (for eviction)
}

// maxPlans bounds the plan cache: decode, a full prefill chunk and a few
// prompt tails.
const maxPlans = 8

// arenaAlign keeps every arena range 64-byte aligned for vector loads.
const arenaAlign = 16

// signature encodes what the plan depends on: ops, node inputs, shapes and
// the outputs. Buffer inputs are encoded as 0, since which weight or cache a
// node reads does not change where results live.
func signature(dst []int32, g *tensor.Graph, outs []tensor.T) []int32 {
	dst = dst[:0]
	for i := range g.Nodes {
		n := &g.Nodes[i]
		kind := int32(n.Op) << 8
		if n.Op == tensor.OpInput && n.Ints != nil {
			kind |= 1
		}
		dst = append(dst, kind, int32(len(n.In)), int32(len(n.Shape)))
		for _, t := range n.In {
			dst = append(dst, int32(t.Node()+1))
		}
		for _, d := range n.Shape {
			dst = append(dst, int32(d))
		}
	}
	dst = append(dst, -1)
	for _, t := range outs {
		dst = append(dst, int32(t.Node()+1))
	}
	return dst
}

func hashSig(sig []int32) uint64 {
	h := uint64(14695981039346656037)
	for _, v := range sig {
		h ^= uint64(uint32(v))
		h *= 1099511628211
	}
	return h
}

func sameSig(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// planFor returns the cached plan for g's structure, making one on a miss.
func (b *Backend) planFor(g *tensor.Graph, outs []tensor.T) *plan {
	b.sig = signature(b.sig, g, outs)
	h := hashSig(b.sig)
	b.runs++
	for _, p := range b.plans {
		if p.hash == h && sameSig(p.sig, b.sig) {
			p.used = b.runs
			return p
		}
	}
	p := makePlan(g, outs)
	p.sig = append([]int32(nil), b.sig...)
	p.hash = h
	p.used = b.runs
	if len(b.plans) < maxPlans {
		b.plans = append(b.plans, p)
	} else {
		old := 0
		for i, q := range b.plans {
			if q.used < b.plans[old].used {
				old = i
			}
		}
		b.plans[old] = p
	}
	return p
}

// isView reports whether node n's result is a view of its first input.
func isView(g *tensor.Graph, n *tensor.Node) bool {
	switch n.Op {
	case tensor.OpReshape:
		return n.In[0].Node() >= 0
	case tensor.OpSlice:
		return n.I[0] == 0 && n.In[0].Node() >= 0
	}
	return false
}

// maxFused bounds how many MatMuls of one input run as one parallel loop.
const maxFused = 4

func makePlan(g *tensor.Graph, outs []tensor.T) *plan {
	nn := len(g.Nodes)
	p := &plan{slots: make([]slot, nn), fused: map[int][]int{}}
	// root[i] is the node whose storage i's result lives in.
	root := make([]int, nn)
	for i := range g.Nodes {
		n := &g.Nodes[i]
		root[i] = i
		if isView(g, n) {
			root[i] = root[n.In[0].Node()]
		}
	}
	// MatMuls of the same input on weights (not nodes) run together at the
	// first one, sharing the input's preparation and one parallel loop.
	leaderOf := make([]int, nn)
	byInput := map[int]int{}
	for i := range g.Nodes {
		leaderOf[i] = -1
		n := &g.Nodes[i]
		if n.Op != tensor.OpMatMul || n.In[1].Buffer() < 0 || n.In[0].Node() < 0 {
			continue
		}
		x := n.In[0].Node()
		if l, ok := byInput[x]; ok && len(p.fused[l]) < maxFused-1 {
			leaderOf[i] = l
			p.fused[l] = append(p.fused[l], i)
			continue
		}
		byInput[x] = i
	}
	// defined[r] is when storage r is first written; lastUse[r] the last node
	// that reads it.
	lastUse := make([]int, nn)
	for i := range lastUse {
		lastUse[i] = i
	}
	for i := range g.Nodes {
		at := i
		if leaderOf[i] >= 0 {
			at = leaderOf[i] // a fused MatMul reads its input at the leader
		}
		for _, t := range g.Nodes[i].In {
			if j := t.Node(); j >= 0 {
				r := root[j]
				lastUse[r] = max(lastUse[r], i, at)
			}
		}
	}
	for _, t := range outs {
		if j := t.Node(); j >= 0 {
			lastUse[root[j]] = nn
		}
	}
	var fl freeList
	release := map[int][]int{} // node index → roots whose last use it is
	alloc := func(i int) {
		n := &g.Nodes[i]
		size := tensor.Elements(n.Shape)
		off := fl.alloc((size + arenaAlign - 1) / arenaAlign * arenaAlign)
		p.slots[i] = slot{kind: slotArena, off: off, n: size}
		release[lastUse[i]] = append(release[lastUse[i]], i)
	}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		switch {
		case leaderOf[i] >= 0:
			p.slots[i].kind = slotFused // allocated with its leader
		case n.Op == tensor.OpInput:
			p.slots[i] = slot{kind: slotInput}
		case n.Op == tensor.OpStore:
			p.slots[i] = slot{kind: slotNone}
		case isView(g, n):
			p.slots[i] = slot{kind: slotView}
		default:
			alloc(i)
			for _, m := range p.fused[i] {
				alloc(m)
			}
		}
		for _, r := range release[i] {
			s := p.slots[r]
			fl.free(s.off, (s.n+arenaAlign-1)/arenaAlign*arenaAlign)
		}
		delete(release, i)
	}
	p.arena = fl.top
	return p
}

// freeList hands out ranges of a growing arena, first fit, merging freed
// neighbours.
type freeList struct {
	top   int
	holes []hole // sorted by offset
}

type hole struct{ off, n int }

func (f *freeList) alloc(n int) int {
	for i, h := range f.holes {
		if h.n >= n {
			if h.n == n {
				f.holes = append(f.holes[:i], f.holes[i+1:]...)
			} else {
				f.holes[i] = hole{h.off + n, h.n - n}
			}
			return h.off
		}
	}
	// Grow the arena, absorbing a hole that ends at the top.
	if k := len(f.holes) - 1; k >= 0 && f.holes[k].off+f.holes[k].n == f.top {
		off := f.holes[k].off
		f.holes = f.holes[:k]
		f.top = off + n
		return off
	}
	off := f.top
	f.top += n
	return off
}

func (f *freeList) free(off, n int) {
	i := 0
	for i < len(f.holes) && f.holes[i].off < off {
		i++
	}
	f.holes = append(f.holes, hole{})
	copy(f.holes[i+1:], f.holes[i:])
	f.holes[i] = hole{off, n}
	// merge with the next, then the previous
	if i+1 < len(f.holes) && f.holes[i].off+f.holes[i].n == f.holes[i+1].off {
		f.holes[i].n += f.holes[i+1].n
		f.holes = append(f.holes[:i+1], f.holes[i+2:]...)
	}
	if i > 0 && f.holes[i-1].off+f.holes[i-1].n == f.holes[i].off {
		f.holes[i-1].n += f.holes[i].n
		f.holes = append(f.holes[:i], f.holes[i+1:]...)
	}
}
