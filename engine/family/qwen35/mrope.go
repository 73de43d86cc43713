package qwen35

import (
	"fmt"
	"slices"

	"hearth/engine/family"
	"hearth/engine/tensor"
)

// Qwen 3.5's multimodal rotary embedding (Qwen3_5TextRotaryEmbedding and
// get_rope_index): every token has three positions, temporal, height and
// width. Text has the same one in all three, its place in the sequence
// shifted by the pictures before it; a picture's soft tokens sit at the
// picture's start plus their (t, h, w) in its grid, and the text after it
// resumes at that start plus max(h, w). The rotary frequency pairs are
// dealt out interleaved: pair j turns with the height position when j%3
// == 1 and j < 3·mrope_section[1], with the width position when j%3 == 2
// and j < 3·mrope_section[2], else with the temporal one.

// Positions are the temporal, height and width positions of b's rows (as
// get_rope_index gives them for the whole sequence). A media run without a
// grid is placed like text.
func Positions(b *family.Batch) [3][]int32 {
	n := len(b.Tokens)
	delta := 0
	for _, gr := range b.PastGrids {
		delta += advance(gr)
	}
	var out [3][]int32
	for s := range out {
		out[s] = make([]int32, n)
	}
	mi := 0
	for r := 0; r < n; {
		if mi < len(b.Media) && b.Media[mi].Row == r && b.Media[mi].Grid[0] > 0 {
			gr := b.Media[mi].Grid
			start := b.Pos + r + delta
			hw := gr[1] * gr[2]
			cnt := min(gr[0]*hw, n-r)
			for i := 0; i < cnt; i++ {
				out[0][r+i] = int32(start + i/hw)
				out[1][r+i] = int32(start + i/gr[2]%gr[1])
				out[2][r+i] = int32(start + i%gr[2])
			}
			delta += advance(gr)
			r += cnt
			mi++
			continue
		}
		if mi < len(b.Media) && b.Media[mi].Row == r {
			mi++
		}
		p := int32(b.Pos + r + delta)
		out[0][r], out[1][r], out[2][r] = p, p, p
		r++
	}
	return out
}

// advance is how much a picture of grid gr moves the positions of what
// follows it against their place in the sequence: the text after it
// resumes max(h, w) past its start, not t·h·w.
func advance(gr [3]int) int { return max(gr[1], gr[2]) - gr[0]*gr[1]*gr[2] }

// rotary is one pass's rotation of q and k: one stream of positions and
// the plain table while every token's three positions agree (all text,
// and every pass after the pictures'), else the three streams, each with
// the table's frequencies of its section.
type rotary struct {
	pos    [3]tensor.T
	tables [3]*tensor.Rope
	multi  bool
}

func (r rotary) apply(g *tensor.Graph, x tensor.T) tensor.T {
	if !r.multi {
		return g.RoPE(x, r.pos[0], r.tables[0])
	}
	// each rotation leaves the other streams' pairs alone (frequency 0),
	// so the three in a row are the reference's one
	for s := range r.pos {
		x = g.RoPE(x, r.pos[s], r.tables[s])
	}
	return x
}

// rotary records the pass's positions into g.
func (m *Model) rotary(g *tensor.Graph, pos [3][]int32, table *tensor.Rope) (rotary, error) {
	n := len(pos[0])
	if slices.Equal(pos[0], pos[1]) && slices.Equal(pos[0], pos[2]) {
		return rotary{pos: [3]tensor.T{g.InputInts(pos[0], n)}, tables: [3]*tensor.Rope{table}}, nil
	}
	r := rotary{multi: true}
	for s := range r.tables {
		t := *table
		t.InvFreq = make([]float32, len(table.InvFreq))
		for j, f := range table.InvFreq {
			if stream(j, m.mrope) == s {
				t.InvFreq[j] = f
			}
		}
		r.tables[s] = &t
		r.pos[s] = g.InputInts(pos[s], n)
	}
	if table.Traditional {
		return r, fmt.Errorf("mrope over a traditional rope table is not supported")
	}
	return r, nil
}

// stream is which position (0 temporal, 1 height, 2 width) rotary pair j
// turns with, for mrope_section sec.
func stream(j int, sec [3]int) int {
	switch {
	case j%3 == 1 && j < 3*sec[1]:
		return 1
	case j%3 == 2 && j < 3*sec[2]:
		return 2
	}
	return 0
}
