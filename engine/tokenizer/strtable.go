package tokenizer

import (
	"hash/maphash"
	"unsafe"
)

// strTable maps strings to ids: an open-addressing hash table over one
// arena of keys. Beside single lookups it resolves keys in batches, so that
// the cache misses of many lookups overlap; loading Gemma 3 looks up 1.5
// million merge parts, and a Go map spends most of the load on them.
type strTable struct {
	slots []uint64 // hash tag<<32 | entry+1, 0 = free
	mask  uint64
	shift uint
	seed  maphash.Seed
	keys  string     // every key, back to back
	meta  []strEntry // per entry, plus a sentinel: where its key starts, its id
}

type strEntry struct {
	start uint32
	id    int32
}

// newStrTable indexes keys[ends[i-1]:ends[i]] → ids[i]; a repeated key keeps
// its last id, as a map filled in order would.
func newStrTable(keys string, ends []uint32, ids []int32) *strTable {
	n := len(ids)
	bits := uint(4)
	for 1<<bits < 2*n {
		bits++
	}
	t := &strTable{
		slots: make([]uint64, 1<<bits),
		mask:  1<<bits - 1,
		shift: 64 - bits,
		seed:  maphash.MakeSeed(),
		keys:  keys,
		meta:  make([]strEntry, n+1),
	}
	start := uint32(0)
	for e := range n {
		t.meta[e] = strEntry{start: start, id: ids[e]}
		start = ends[e]
	}
	t.meta[n].start = start
	for e := range n {
		key := t.key(uint32(e))
		h := maphash.String(t.seed, key)
		for i := h >> t.shift; ; i = (i + 1) & t.mask {
			s := t.slots[i]
			if s == 0 || (uint32(s>>32) == uint32(h) && t.key(uint32(s)-1) == key) {
				t.slots[i] = h<<32 | uint64(e+1)
				break
			}
		}
	}
	return t
}

func (t *strTable) key(e uint32) string { return t.keys[t.meta[e].start:t.meta[e+1].start] }

// len returns the number of entries.
func (t *strTable) len() int { return len(t.meta) - 1 }

// get returns the id of key.
func (t *strTable) get(key string) (int32, bool) {
	h := maphash.String(t.seed, key)
	for i := h >> t.shift; ; i = (i + 1) & t.mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if uint32(s>>32) == uint32(h) {
			if e := uint32(s) - 1; t.key(e) == key {
				return t.meta[e].id, true
			}
		}
	}
}

// getBytes is get for a byte slice, without copying it.
func (t *strTable) getBytes(key []byte) (int32, bool) {
	return t.get(unsafe.String(unsafe.SliceData(key), len(key)))
}

// batchSize is how many lookups getBatch overlaps.
const batchSize = 32

// getBatch sets ids[j] to the id of keys[j], or -1, for up to batchSize
// keys. It runs each step for all keys before the next (hash, slot, entry,
// key bytes), so the processor has many independent loads in flight.
func (t *strTable) getBatch(keys []string, ids []int32) {
	var h, slot [batchSize]uint64
	var ent [batchSize]uint32
	n := len(keys)
	for j := range n {
		h[j] = maphash.String(t.seed, keys[j])
	}
	for j := range n {
		slot[j] = t.slots[h[j]>>t.shift]
	}
	for j := range n {
		ent[j] = 0
		if s := slot[j]; s != 0 && uint32(s>>32) == uint32(h[j]) {
			ent[j] = uint32(s)
			_ = t.meta[ent[j]] // load the entry and its successor's start
		}
	}
	for j := range n {
		if e := ent[j]; e != 0 && t.key(e-1) == keys[j] {
			ids[j] = t.meta[e-1].id
			continue
		}
		if slot[j] == 0 {
			ids[j] = -1
			continue
		}
		// A collision or a miss behind an occupied slot: probe normally.
		if id, ok := t.get(keys[j]); ok {
			ids[j] = id
		} else {
			ids[j] = -1
		}
	}
}
