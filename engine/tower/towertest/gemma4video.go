package towertest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Gemma4VideoGolden is the Gemma 4 entry's video_golden.json (made by
// tools/oracle/make_gemma4_video_goldens.py): the clip through
// Gemma4VideoProcessor and the tower frame by frame, and a conversation
// with it.
type Gemma4VideoGolden struct {
	Tolerance struct {
		MaxAbsLogit float64 `json:"max_abs_logit"`
		MaxAbsTower float64 `json:"max_abs_tower"`
	} `json:"tolerance"`
	Videos []Gemma4Video `json:"videos"`
	Cases  []VideoCase   `json:"cases"`
}

// Gemma4Video is one clip: its file and stream, the frames sampled, their
// times and the prompt's timestamps, each frame's patch rows (frame after
// frame) and grid, the vision model's output and the features after the
// embedder over all frames.
type Gemma4Video struct {
	File         string    `json:"file"`
	Width        int       `json:"width"`
	Height       int       `json:"height"`
	Frames       int       `json:"frames"`
	FPS          float64   `json:"fps"`
	NumFrames    int       `json:"num_frames"`
	Sampled      []int     `json:"sampled_indices"`
	Times        []float64 `json:"times"`
	Timestamps   []string  `json:"timestamps"`
	FrameGrids   [][2]int  `json:"frame_grids"` // in patches
	PixelShape   []int     `json:"pixel_values_shape"`
	PixelValues  []float32 `json:"pixel_values"`
	HiddenShape  []int     `json:"vision_last_hidden_state_shape"`
	Hidden       []float32 `json:"vision_last_hidden_state"`
	FeatureShape []int     `json:"video_features_shape"`
	Features     []float32 `json:"video_features"`
}

// Video is the clip as DecodeVideo takes it: pixel values with the grid
// (frames, h, w) in patches.
func (v Gemma4Video) Video() Video {
	g := v.FrameGrids[0]
	return Video{File: v.File, PixelShape: v.PixelShape, PixelValues: v.PixelValues, Grid: [3]int{len(v.FrameGrids), g[0], g[1]},
		HiddenShape: v.HiddenShape, Hidden: v.Hidden, FeatureShape: v.FeatureShape, Features: v.Features}
}

// Frame is frame f alone as a picture, with its share of the outputs.
func (v Gemma4Video) Frame(f int) Image {
	n := len(v.FrameGrids)
	rows := v.PixelShape[0] / n
	dim := v.PixelShape[1]
	per := v.HiddenShape[0] / n
	h, d := v.HiddenShape[1], v.FeatureShape[1]
	g := v.FrameGrids[f]
	return Image{File: fmt.Sprintf("%s frame %d", v.File, f), PixelShape: []int{rows, dim},
		PixelValues: v.PixelValues[f*rows*dim : (f+1)*rows*dim], Grid: [3]int{1, g[0], g[1]},
		HiddenShape: []int{per, h}, Hidden: v.Hidden[f*per*h : (f+1)*per*h],
		FeatureShape: []int{per, d}, Features: v.Features[f*per*d : (f+1)*per*d]}
}

// LoadGemma4Video reads the Gemma 4 entry's video golden.
func LoadGemma4Video() (*Gemma4VideoGolden, error) {
	path := filepath.Join(Dir(Gemma4Entry), "video_golden.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var g Gemma4VideoGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(g.Videos) == 0 || len(g.Cases) == 0 {
		return nil, fmt.Errorf("%s: no videos or no cases", path)
	}
	for _, v := range g.Videos {
		n := len(v.FrameGrids)
		if n == 0 || len(v.PixelShape) != 2 || len(v.HiddenShape) != 2 || len(v.FeatureShape) != 2 ||
			v.PixelShape[0]%n != 0 || v.HiddenShape[0]%n != 0 || v.FeatureShape[0] != v.HiddenShape[0] ||
			len(v.PixelValues) != v.PixelShape[0]*v.PixelShape[1] || len(v.Hidden) != v.HiddenShape[0]*v.HiddenShape[1] ||
			len(v.Features) != v.FeatureShape[0]*v.FeatureShape[1] {
			return nil, fmt.Errorf("%s: %s: inconsistent shapes", path, v.File)
		}
	}
	return &g, nil
}
