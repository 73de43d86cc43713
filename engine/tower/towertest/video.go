package towertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"hearth/engine/cache"
	"hearth/engine/family"
	"hearth/engine/tensor"
	"hearth/media"
)

// VideoGolden is the Qwen 3.5 entry's video_golden.json (made by
// tools/oracle/make_qwen_video_goldens.py): the clip through the video
// processor and the tower, and conversations with it.
type VideoGolden struct {
	Tolerance struct {
		MaxAbsLogit float64 `json:"max_abs_logit"`
		MaxAbsTower float64 `json:"max_abs_tower"`
	} `json:"tolerance"`
	Videos []Video     `json:"videos"`
	Cases  []VideoCase `json:"cases"`
}

// Video is one clip: its file and stream, the frames the processor
// sampled and their times, its pixel values, the tower's last hidden
// state and the merger's soft tokens.
type Video struct {
	File         string    `json:"file"`
	Width        int       `json:"width"`
	Height       int       `json:"height"`
	Frames       int       `json:"frames"`
	FPS          float64   `json:"fps"`
	Sampled      []int     `json:"sampled_indices"`
	Timestamps   []float64 `json:"timestamps"`
	PixelShape   []int     `json:"pixel_values_shape"`
	PixelValues  []float32 `json:"pixel_values"`
	Grid         [3]int    `json:"grid_thw"` // in patches
	HiddenShape  []int     `json:"vision_last_hidden_state_shape"`
	Hidden       []float32 `json:"vision_last_hidden_state"`
	FeatureShape []int     `json:"video_features_shape"`
	Features     []float32 `json:"video_features"`
}

// Pixels is the clip's pixel values as the tower takes them.
func (v Video) Pixels() media.Pixels {
	return media.Pixels{Data: v.PixelValues, Shape: v.PixelShape, Grid: v.Grid}
}

// VideoCase is one conversation with pictures (the entry's golden.json
// images) and clips.
type VideoCase struct {
	Name         string          `json:"name"`
	Images       []int           `json:"images"`
	Videos       []int           `json:"videos"`
	Messages     json.RawMessage `json:"messages"`
	PromptText   string          `json:"prompt_text"`
	ExpandedText string          `json:"expanded_text"`
	PromptIDs    []int32         `json:"prompt_ids"`
	// MMTypes are the processor's mm_token_type_ids: 0 text, 1 image, 2
	// video.
	MMTypes     []int       `json:"mm_token_type_ids"`
	PositionIDs [3][]int32  `json:"position_ids"`
	GreedyIDs   []int32     `json:"greedy_ids"`
	Logits      [][]float32 `json:"logits"`
	MinMargin   float64     `json:"min_margin"`
}

// Runs are the rows where each run of kind's tokens (1 image, 2 video)
// starts, and its length.
func (c VideoCase) Runs(kind int) (rows, lens []int) {
	for i, t := range c.MMTypes {
		if t != kind {
			continue
		}
		if i == 0 || c.MMTypes[i-1] != kind {
			rows, lens = append(rows, i), append(lens, 0)
		}
		lens[len(lens)-1]++
	}
	return rows, lens
}

// LoadVideo reads the Qwen 3.5 entry's video golden.
func LoadVideo() (*VideoGolden, error) {
	path := filepath.Join(Dir(Qwen35Entry), "video_golden.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var g VideoGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(g.Videos) == 0 || len(g.Cases) == 0 {
		return nil, fmt.Errorf("%s: no videos or no cases", path)
	}
	return &g, nil
}

// RunVideo runs the tower over clip v on the backend and reads back its
// last hidden state and soft tokens.
func (bd *Bound) RunVideo(ctx context.Context, v Video) (hidden, feats []float32, err error) {
	return bd.Run(ctx, Image{File: v.File, PixelShape: v.PixelShape, PixelValues: v.PixelValues, Grid: v.Grid,
		HiddenShape: v.HiddenShape, FeatureShape: v.FeatureShape})
}

// DecodeVideo runs case c through the decoder as Decode does, the soft
// tokens of picture i being images[i] and of clip j clips[j]: each of a
// clip's temporal patches is its own media run, a one-frame grid placed
// by get_rope_index at its own start.
func (bd *Bound) DecodeVideo(ctx context.Context, g *Golden, vg *VideoGolden, c VideoCase, images, clips [][]float32) ([][]float32, error) {
	n := len(c.PromptIDs)
	caches, err := bd.Model.NewCaches(bd.b, n+len(c.GreedyIDs)+4, n)
	if err != nil {
		return nil, err
	}
	defer cache.FreeAll(caches)
	hidden := bd.Checkpoint.Config.HiddenSize
	type run struct {
		row    int
		embeds []float32
		grid   [3]int
	}
	var runs []run
	irows, _ := c.Runs(1)
	if len(irows) != len(c.Images) {
		return nil, fmt.Errorf("%s: %d image runs for %d images", c.Name, len(irows), len(c.Images))
	}
	for k, row := range irows {
		i := c.Images[k]
		runs = append(runs, run{row, images[i], bd.Grid(g.Images[i])})
	}
	vrows, vlens := c.Runs(2)
	k := 0
	for _, j := range c.Videos {
		v := vg.Videos[j]
		grid := bd.Grid(Image{PixelShape: v.PixelShape, PixelValues: v.PixelValues, Grid: v.Grid})
		per := grid[1] * grid[2]
		for f := 0; f < grid[0]; f++ {
			if k >= len(vrows) || vlens[k] != per {
				return nil, fmt.Errorf("%s: video run %d does not hold one frame of %d tokens", c.Name, k, per)
			}
			runs = append(runs, run{vrows[k], clips[j][f*per*hidden : (f+1)*per*hidden], [3]int{1, grid[1], grid[2]}})
			k++
		}
	}
	if k != len(vrows) {
		return nil, fmt.Errorf("%s: %d video runs for %d frames", c.Name, len(vrows), k)
	}
	// in row order, as a batch holds them
	slices.SortFunc(runs, func(a, b run) int { return a.row - b.row })
	var grids [][3]int
	step := func(tokens []int32, pos int, media bool) ([]float32, error) {
		gr := tensor.NewGraph(bd.b)
		batch := &family.Batch{Tokens: tokens, Pos: pos, Caches: caches}
		if media {
			for _, r := range runs {
				batch.Media = append(batch.Media, family.Media{Row: r.row, Embeds: gr.Input(r.embeds, len(r.embeds)/hidden, hidden), Grid: r.grid})
			}
		} else {
			batch.PastGrids = grids
		}
		logits, err := bd.Model.Forward(gr, batch)
		if err != nil {
			return nil, err
		}
		if err := bd.b.Run(ctx, gr, logits); err != nil {
			return nil, err
		}
		out := make([]float32, tensor.Elements(gr.Shape(logits)))
		return out, bd.b.Read(logits, out)
	}
	logits, err := step(c.PromptIDs, 0, true)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		grids = append(grids, r.grid)
	}
	out := [][]float32{logits}
	for s := 0; s+1 < len(c.GreedyIDs); s++ {
		if logits, err = step(c.GreedyIDs[s:s+1], n+s, false); err != nil {
			return nil, err
		}
		out = append(out, logits)
	}
	return out, nil
}
