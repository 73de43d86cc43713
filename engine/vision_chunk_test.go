package engine

import (
	"slices"
	"testing"

	"hearth/engine/cache"
	"hearth/engine/checkpoint"
	"hearth/engine/config"
)

// heldCache is a cache.Layer that only says how many tokens it holds.
type heldCache struct {
	cache.Layer
	n int
}

func (c *heldCache) Len() int { return c.n }

// TestChunkSplitKeepsMediaWhole: passes end a chunk on, except that a
// pass never cuts a media item: it ends before an item that text starts
// it with, and runs to the end of an item it starts with.
func TestChunkSplitKeepsMediaWhole(t *testing.T) {
	const hidden = 2
	m := &Model{Checkpoint: &checkpoint.Checkpoint{Config: &config.Config{HiddenSize: hidden}}}
	item := func(pos, n int) Media { return Media{Pos: pos, Embeds: make([]float32, n*hidden)} }
	for _, tc := range []struct {
		name   string
		held   int
		chunk  int
		n      int
		media  []Media
		passes [][2]int // [start, end) in prompt indices
	}{
		{"no media", 0, 4, 10, nil, [][2]int{{0, 4}, {4, 8}, {8, 10}}},
		{"item inside a chunk", 0, 8, 10, []Media{item(2, 3)}, [][2]int{{0, 8}, {8, 10}}},
		{"item cut: text first", 0, 4, 12, []Media{item(2, 6)}, [][2]int{{0, 2}, {2, 8}, {8, 12}}},
		{"item at a pass start", 0, 4, 12, []Media{item(4, 6)}, [][2]int{{0, 4}, {4, 10}, {10, 12}}},
		{"two items", 0, 5, 20, []Media{item(3, 4), item(9, 7)}, [][2]int{{0, 3}, {3, 8}, {8, 9}, {9, 16}, {16, 20}}},
		{"after held tokens", 5, 4, 10, []Media{item(8, 4)}, [][2]int{{0, 3}, {3, 7}, {7, 10}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Sequence{m: m, caches: []cache.Layer{&heldCache{n: tc.held}}, cap: 100, chunk: tc.chunk}
			if err := s.AddMedia(tc.media...); err != nil {
				t.Fatal(err)
			}
			var got [][2]int
			for i := 0; i < tc.n; {
				end := s.chunkEnd(tc.held, i, tc.n)
				got = append(got, [2]int{i, end})
				i = end
			}
			if !slices.Equal(got, tc.passes) {
				t.Fatalf("passes %v, want %v", got, tc.passes)
			}
			if last := s.lastChunk(make([]int32, tc.n)); last != tc.passes[len(tc.passes)-1][0] {
				t.Fatalf("lastChunk %d, want %d", last, tc.passes[len(tc.passes)-1][0])
			}
		})
	}
}
