package qwen35_test

import (
	"slices"
	"testing"

	"hearth/engine/family"
	"hearth/engine/family/qwen35"
	"hearth/engine/tower/towertest"
)

// TestVisionPositions holds the three mRoPE position streams to transformers'
// get_rope_index over each golden image prompt and its greedy ids: the
// prompt as one pass, as passes split before each picture, and each
// decode step after it (the pictures then known only by their grids).
func TestVisionPositions(t *testing.T) {
	g, err := towertest.Load(towertest.Qwen35Entry)
	if err != nil {
		t.Fatal(err)
	}
	const merge = 2 // the entry's spatial_merge_size
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			want := c.PositionIDs
			total := len(c.PromptIDs) + len(c.GreedyIDs)
			if len(want[0]) != total || len(want[1]) != total || len(want[2]) != total {
				t.Fatalf("golden streams of %d, %d, %d positions, want %d", len(want[0]), len(want[1]), len(want[2]), total)
			}
			rows := c.ImageRows()
			var grids [][3]int
			for _, i := range c.Images {
				gr := g.Images[i].Grid
				grids = append(grids, [3]int{gr[0], gr[1] / merge, gr[2] / merge})
			}
			tokens := append(slices.Clone(c.PromptIDs), c.GreedyIDs...)
			// check runs the pass over tokens[from:to] with the pictures
			// it covers and those before it
			check := func(from, to int) {
				b := &family.Batch{Tokens: tokens[from:to], Pos: from}
				for k, r := range rows {
					n := grids[k][0] * grids[k][1] * grids[k][2]
					switch {
					case r+n <= from:
						b.PastGrids = append(b.PastGrids, grids[k])
					case r < to:
						b.Media = append(b.Media, family.Media{Row: r - from, Grid: grids[k]})
					}
				}
				got := qwen35.Positions(b)
				for s := range got {
					if !slices.Equal(got[s], want[s][from:to]) {
						t.Fatalf("positions [%d, %d) stream %d = %v, want %v", from, to, s, got[s], want[s][from:to])
					}
				}
			}
			n := len(c.PromptIDs)
			check(0, n)
			cuts := append([]int{0}, rows...)
			cuts = append(cuts, n)
			for i := 0; i+1 < len(cuts); i++ {
				if cuts[i] < cuts[i+1] {
					check(cuts[i], cuts[i+1])
				}
			}
			for s := n; s < total; s++ {
				check(s, s+1)
			}
			if slices.Equal(want[0], want[1]) && slices.Equal(want[0], want[2]) {
				t.Fatal("the golden streams agree everywhere: they test no mRoPE")
			}
		})
	}
}
