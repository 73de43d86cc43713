package tokenizer

import "sync"

// General categories, numbered as in gcNames (unicode_tables.go).
const (
	gcCn = iota
	gcLu
	gcLl
	gcLt
	gcLm
	gcLo
	gcMn
	gcMc
	gcMe
	gcNd
	gcNl
	gcNo
	gcPc
	gcPd
	gcPs
	gcPe
	gcPi
	gcPf
	gcPo
	gcSm
	gcSc
	gcSk
	gcSo
	gcZs
	gcZl
	gcZp
	gcCc
	gcCf
	gcCs
	gcCo
	gcCount
)

// Category masks: bit 1<<gc for each general category a \p{X} name covers.
const (
	maskL = 1<<gcLu | 1<<gcLl | 1<<gcLt | 1<<gcLm | 1<<gcLo
	maskM = 1<<gcMn | 1<<gcMc | 1<<gcMe
	maskN = 1<<gcNd | 1<<gcNl | 1<<gcNo
	maskP = 1<<gcPc | 1<<gcPd | 1<<gcPs | 1<<gcPe | 1<<gcPi | 1<<gcPf | 1<<gcPo
	maskS = 1<<gcSm | 1<<gcSc | 1<<gcSk | 1<<gcSo
	maskZ = 1<<gcZs | 1<<gcZl | 1<<gcZp
	maskC = 1<<gcCn | 1<<gcCc | 1<<gcCf | 1<<gcCs | 1<<gcCo
)

// gcBlock is the number of code points per block of the lookup table.
const gcBlock = 128

// gcTable maps a code point to its general category through a two-level
// table of deduplicated 128-code-point blocks (about 60 KB in all).
type gcTable struct {
	index  [(0x10FFFF + gcBlock) / gcBlock]uint16
	blocks []uint8
}

// categories returns the table, built from gcRuns on first use.
var categories = sync.OnceValue(func() *gcTable {
	flat := make([]uint8, 0x110000)
	for i, run := range gcRuns {
		start := int(run >> 5)
		end := len(flat)
		if i+1 < len(gcRuns) {
			end = int(gcRuns[i+1] >> 5)
		}
		cat := uint8(run & 31)
		for c := start; c < end; c++ {
			flat[c] = cat
		}
	}
	t := &gcTable{}
	seen := map[string]uint16{}
	for b := range t.index {
		block := flat[b*gcBlock : (b+1)*gcBlock]
		n, ok := seen[string(block)]
		if !ok {
			n = uint16(len(t.blocks) / gcBlock)
			seen[string(block)] = n
			t.blocks = append(t.blocks, block...)
		}
		t.index[b] = n
	}
	return t
})

// category returns the general category of r (gcCn for invalid code points).
func (t *gcTable) category(r rune) uint8 {
	if r < 0 || r > 0x10FFFF {
		return gcCn
	}
	return t.blocks[int(t.index[r/gcBlock])*gcBlock+int(r%gcBlock)]
}

// isSpace reports whether r matches the reference's \s: tab, newline, vertical
// tab, form feed, carriage return, next line (U+0085) and the Z categories.
func (t *gcTable) isSpace(r rune) bool {
	switch {
	case r >= '\t' && r <= '\r', r == ' ', r == 0x85:
		return true
	case r < 0x80:
		return false
	}
	return 1<<t.category(r)&maskZ != 0
}

// isNumeric reports whether r is in \p{N}, like Rust's char::is_numeric.
func (t *gcTable) isNumeric(r rune) bool {
	return 1<<t.category(r)&maskN != 0
}
