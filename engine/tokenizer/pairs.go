package tokenizer

// pairTable maps merge pairs (pairKey) to rank<<32 | merged id. It is an
// open-addressing hash table with linear probing: both the load (half a
// million merges for Gemma) and the merge loop spend much of their time
// here, and it is several times faster than a Go map for uint64 keys.
type pairTable struct {
	slots []pairSlot
	mask  uint64
	shift uint
}

type pairSlot struct{ key, val uint64 }

// emptyPair marks a free slot; pairKey never makes it (ids are below 2^31).
const emptyPair = ^uint64(0)

// newPairTable returns a table for up to n pairs, at most half full.
func newPairTable(n int) *pairTable {
	bits := uint(4)
	for 1<<bits < 2*n {
		bits++
	}
	t := &pairTable{slots: make([]pairSlot, 1<<bits), mask: 1<<bits - 1, shift: 64 - bits}
	for i := range t.slots {
		t.slots[i].key = emptyPair
	}
	return t
}

func (t *pairTable) home(key uint64) uint64 { return (key * 0x9E3779B97F4A7C15) >> t.shift }

// get returns the value of key.
func (t *pairTable) get(key uint64) (uint64, bool) {
	for i := t.home(key); ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.key == key {
			return s.val, true
		}
		if s.key == emptyPair {
			return 0, false
		}
	}
}

// put sets key to val, replacing an earlier value. The caller keeps the
// table at most half full (newPairTable's n).
func (t *pairTable) put(key, val uint64) {
	for i := t.home(key); ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.key == key || s.key == emptyPair {
			s.key, s.val = key, val
			return
		}
	}
}
