package qwen35_test

import (
	"slices"
	"testing"

	"hearth/engine/family"
	"hearth/engine/family/qwen35"
	"hearth/engine/tower/towertest"
)

// TestVideoPositions holds the mRoPE streams to get_rope_index over the
// golden video prompts: each of a clip's temporal patches is placed as a
// one-frame picture at its own start (Qwen 3.5 splits video_grid_thw per
// frame, the prompt writing each frame's time between them), in one pass,
// in passes split before each media run, and in decode steps.
func TestVideoPositions(t *testing.T) {
	g, err := towertest.Load(towertest.Qwen35Entry)
	if err != nil {
		t.Fatal(err)
	}
	vg, err := towertest.LoadVideo()
	if err != nil {
		t.Fatal(err)
	}
	const merge = 2 // the entry's spatial_merge_size
	for _, c := range vg.Cases {
		t.Run(c.Name, func(t *testing.T) {
			want := c.PositionIDs
			total := len(c.PromptIDs) + len(c.GreedyIDs)
			if len(want[0]) != total || len(want[1]) != total || len(want[2]) != total {
				t.Fatalf("golden streams of %d, %d, %d positions, want %d", len(want[0]), len(want[1]), len(want[2]), total)
			}
			type item struct {
				row  int
				grid [3]int
			}
			var items []item
			irows, _ := c.Runs(1)
			for k, r := range irows {
				gr := g.Images[c.Images[k]].Grid
				items = append(items, item{r, [3]int{gr[0], gr[1] / merge, gr[2] / merge}})
			}
			vrows, _ := c.Runs(2)
			k := 0
			for _, j := range c.Videos {
				gr := vg.Videos[j].Grid
				for f := 0; f < gr[0]; f++ {
					items = append(items, item{vrows[k], [3]int{1, gr[1] / merge, gr[2] / merge}})
					k++
				}
			}
			if k != len(vrows) || k == 0 {
				t.Fatalf("%d video runs for %d frames", len(vrows), k)
			}
			slices.SortFunc(items, func(a, b item) int { return a.row - b.row })
			tokens := append(slices.Clone(c.PromptIDs), c.GreedyIDs...)
			check := func(from, to int) {
				b := &family.Batch{Tokens: tokens[from:to], Pos: from}
				for _, it := range items {
					n := it.grid[0] * it.grid[1] * it.grid[2]
					switch {
					case it.row+n <= from:
						b.PastGrids = append(b.PastGrids, it.grid)
					case it.row < to:
						b.Media = append(b.Media, family.Media{Row: it.row - from, Grid: it.grid})
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
			cuts := []int{0}
			for _, it := range items {
				cuts = append(cuts, it.row)
			}
			cuts = append(cuts, n)
			for i := 0; i+1 < len(cuts); i++ {
				if cuts[i] < cuts[i+1] {
					check(cuts[i], cuts[i+1])
				}
			}
			for s := n; s < total; s++ {
				check(s, s+1)
			}
		})
	}
}
