package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"hearth/engine/checkpoint"
	"hearth/engine/config"
	"hearth/engine/families"
	"hearth/engine/family"
	"hearth/engine/nn"
	"hearth/engine/tensor"
	"hearth/engine/tower"
	"hearth/media"
)

// loadVision binds the checkpoint's vision tower when its weights hold
// one, Hearth has the tower for its model type and the family splices the
// tower's output; otherwise the tower's tensors stay unconsumed (and the
// weight audit names them).
func loadVision(ck *checkpoint.Checkpoint, fam *family.Family, l *nn.Loader) (tower.Vision, error) {
	return loadTower(ck, fam, l, family.Vision, families.VisionTower(ck.Config))
}

// loadTower binds the tower of kind cap with load when the checkpoint
// holds its weights and fam splices its output; the zero T otherwise.
func loadTower[T any, L ~func([]byte, *config.Config, *nn.Loader) (T, error)](ck *checkpoint.Checkpoint, fam *family.Family, l *nn.Loader, cap family.Caps, load L) (T, error) {
	var none T
	if ck.Towers&families.Towers(ck.Config, fam)&cap == 0 {
		return none, nil
	}
	t, err := load(ck.ConfigJSON, ck.Config, l)
	if err != nil {
		return none, err
	}
	return t, l.Err()
}

// HasVision reports whether the model's vision tower is loaded: it takes
// pictures.
func (m *Model) HasVision() bool { return m.vision != nil }

// VisionPrompt is how the model's prompts hold pictures; ok is false when
// it takes none.
func (m *Model) VisionPrompt() (p tower.Prompt, ok bool) {
	if m.vision == nil {
		return tower.Prompt{}, false
	}
	return m.vision.Prompt(), true
}

// ImageGrid is the (t, h, w) grid of the soft tokens the vision tower
// makes of px, zero for a tower whose output has no grid.
func (m *Model) ImageGrid(px media.Pixels) [3]int {
	if gv, ok := m.vision.(tower.Gridded); ok {
		return gv.Grid(px)
	}
	return [3]int{}
}

// ErrNoVision is the error of a picture given to a model without a vision
// tower.
var ErrNoVision = errors.New("the model has no vision tower")

// EncodeImage runs the vision tower over one picture's (or clip's) pixel
// values (the model's processor's output) and returns its soft tokens,
// [tokens, hidden] row by row.
func (m *Model) EncodeImage(ctx context.Context, px media.Pixels) ([]float32, error) {
	if m.vision == nil {
		return nil, ErrNoVision
	}
	g := tensor.NewGraph(m.backend)
	out, err := m.vision.Encode(g, px)
	if err == nil {
		err = g.Err()
	}
	if err == nil {
		err = m.backend.Run(ctx, g, out)
	}
	if err != nil {
		return nil, fmt.Errorf("vision tower: %w", err)
	}
	data := make([]float32, tensor.Elements(g.Shape(out)))
	if err := m.backend.Read(out, data); err != nil {
		return nil, err
	}
	return data, nil
}

// Media is a tower's output for one run of a sequence's positions: the
// embeddings that take the place of those tokens' (an image's soft
// tokens), [n, hidden] row by row.
type Media struct {
	Pos    int // the first position
	Embeds []float32
	// Grid is the embeddings' (t, h, w) layout where the tower gives one
	// (ImageGrid), for decoders whose positions follow it (Qwen's mRoPE).
	Grid [3]int
}

// AddMedia makes the sequence's passes take media in place of the token
// embeddings at their positions: each item must lie past what the
// sequence holds, apart from the others. A pass that reaches an item
// covers it whole (longer than a chunk if it must), and a pass over its
// positions again (after a Trim) takes it again.
func (s *Sequence) AddMedia(items ...Media) error {
	hidden := s.m.Checkpoint.Config.HiddenSize
	for _, it := range items {
		n := len(it.Embeds) / max(1, hidden)
		if n == 0 || n*hidden != len(it.Embeds) || it.Pos < s.Len() || it.Pos+n > s.cap {
			return fmt.Errorf("media of %d values (hidden %d) at position %d of a sequence of %d tokens held, context %d", len(it.Embeds), hidden, it.Pos, s.Len(), s.cap)
		}
		if g := it.Grid; g != ([3]int{}) && g[0]*g[1]*g[2] != n {
			return fmt.Errorf("media of %d rows with a %d×%d×%d grid", n, g[0], g[1], g[2])
		}
		for _, o := range s.media {
			if it.Pos < o.Pos+len(o.Embeds)/hidden && o.Pos < it.Pos+n {
				return fmt.Errorf("media at positions [%d, %d) overlaps media at [%d, %d)", it.Pos, it.Pos+n, o.Pos, o.Pos+len(o.Embeds)/hidden)
			}
		}
		s.media = append(s.media, it)
	}
	slices.SortFunc(s.media, func(a, b Media) int { return a.Pos - b.Pos })
	return nil
}

// chunkEnd is where a pass over tokens[i:n] ends, tokens[0] being at
// position base: a chunk on, unless that cuts a media item; then before
// the item when text comes first (the item starts the next pass), else at
// the item's end.
func (s *Sequence) chunkEnd(base, i, n int) int {
	end := min(i+s.chunk, n)
	hidden := s.m.Checkpoint.Config.HiddenSize
	for _, it := range s.media {
		ms, me := it.Pos-base, it.Pos+len(it.Embeds)/hidden-base
		if ms < end && me > end && me > i {
			if ms > i {
				return ms
			}
			return min(me, n)
		}
	}
	return end
}

// lastChunk is where the last pass over prompt (appended to what the
// sequence holds) starts, by chunkEnd's split.
func (s *Sequence) lastChunk(prompt []int32) int {
	last := 0
	for i := 0; i < len(prompt); i = s.chunkEnd(s.Len(), i, len(prompt)) {
		last = i
	}
	return last
}

// batch is the family.Batch of one pass over tokens (or, with ids set, the
// token on the device) after what the sequence holds, with the media items
// it covers recorded into g.
func (s *Sequence) batch(g *tensor.Graph, tokens []int32, ids tensor.T) (*family.Batch, error) {
	b := &family.Batch{Tokens: tokens, IDs: ids, Pos: s.Len(), Caches: s.caches}
	hidden := s.m.Checkpoint.Config.HiddenSize
	end := b.Pos + len(tokens)
	for _, it := range s.media {
		n := len(it.Embeds) / hidden
		if it.Pos+n <= b.Pos {
			b.PastGrids = append(b.PastGrids, it.Grid)
			continue
		}
		if it.Pos >= end {
			continue
		}
		if it.Pos < b.Pos || it.Pos+n > end {
			return nil, fmt.Errorf("a pass over positions [%d, %d) cuts media at [%d, %d)", b.Pos, end, it.Pos, it.Pos+n)
		}
		if !ids.IsNone() {
			return nil, errors.New("media in a pass fed by a token on the device")
		}
		b.Media = append(b.Media, family.Media{Row: it.Pos - b.Pos, Embeds: g.Input(it.Embeds, n, hidden), Grid: it.Grid})
	}
	return b, nil
}

// addImages runs the vision tower over each picture (preprocessed now
// unless prompting did, pixels[i]) and makes seq's prompt pass take its
// soft tokens at rows[i].
func (r *Runner) addImages(ctx context.Context, seq *Sequence, images []media.Image, pixels []media.Pixels, rows []int) error {
	if len(images) != len(rows) {
		return fmt.Errorf("%d images for %d image positions", len(images), len(rows))
	}
	for i, img := range images {
		var px media.Pixels
		if i < len(pixels) && pixels[i].Data != nil {
			px = pixels[i]
		} else {
			var err error
			if px, err = r.imgProc.Image(img); err != nil {
				return mediaError("image", i, err)
			}
		}
		embeds, err := r.model.EncodeImage(ctx, px)
		if err != nil {
			return fmt.Errorf("image %d: %w", i+1, err)
		}
		if err := seq.AddMedia(Media{Pos: rows[i], Embeds: embeds, Grid: r.model.ImageGrid(px)}); err != nil {
			return fmt.Errorf("image %d: %w", i+1, err)
		}
	}
	return nil
}

// VideoPrompt is how the model's prompts hold clips; ok is false when its
// vision tower takes none.
func (m *Model) VideoPrompt() (p tower.VideoPrompt, ok bool) {
	if cv, ok := m.vision.(tower.Clips); ok {
		return cv.VideoPrompt(), true
	}
	return tower.VideoPrompt{}, false
}

// clips is how the model's prompts hold clips, ok when both its tower
// and its checkpoint's processor take video.
func (r *Runner) clips() (tower.VideoPrompt, bool) {
	vp, ok := r.model.VideoPrompt()
	ip, isMedia := r.imgProc.(*media.ImageProcessor)
	return vp, ok && isMedia && ip.VideoProcessor != nil
}

// clip runs the checkpoint's video processor over a clip's frames.
func (r *Runner) clip(frames []media.Frame) (Clip, error) {
	ip := r.imgProc.(*media.ImageProcessor)
	px, err := ip.Video(frames)
	if err != nil {
		return Clip{}, err
	}
	return Clip{Pixels: px, Grid: r.model.ImageGrid(px), Times: media.VideoTimestamps(frames, ip.VideoProcessor.TemporalPatchSize)}, nil
}

// addClips runs the vision tower over each clip and makes seq's prompt
// pass take each temporal patch's soft tokens at its row, as a picture of
// one frame: Qwen's get_rope_index places the patches apart, each at its
// own start, since the prompt writes them apart.
func (r *Runner) addClips(ctx context.Context, seq *Sequence, clips []Clip, rows [][]int) error {
	if len(clips) != len(rows) {
		return fmt.Errorf("%d videos for %d video positions", len(clips), len(rows))
	}
	hidden := r.model.Checkpoint.Config.HiddenSize
	for i, c := range clips {
		embeds, err := r.model.encodeClip(ctx, c.Pixels)
		if err != nil {
			return fmt.Errorf("video %d: %w", i+1, err)
		}
		gt, per := c.Grid[0], c.Grid[1]*c.Grid[2]*hidden
		if len(rows[i]) != gt || len(embeds) != gt*per {
			return fmt.Errorf("video %d: %d values for %d rows of a %v grid", i+1, len(embeds), len(rows[i]), c.Grid)
		}
		for k := 0; k < gt; k++ {
			m := Media{Pos: rows[i][k], Embeds: embeds[k*per : (k+1)*per], Grid: [3]int{1, c.Grid[1], c.Grid[2]}}
			if err := seq.AddMedia(m); err != nil {
				return fmt.Errorf("video %d: %w", i+1, err)
			}
		}
	}
	return nil
}

// encodeClip runs the vision tower over a clip: whole, or, for a tower
// that takes a clip's frames as pictures (tower.VideoPrompt.Frames, Gemma
// 4's get_video_features), one frame at a time, the frames' soft tokens
// in turn.
func (m *Model) encodeClip(ctx context.Context, px media.Pixels) ([]float32, error) {
	vp, _ := m.VideoPrompt()
	t := px.Grid[0]
	if !vp.Frames || t <= 1 {
		return m.EncodeImage(ctx, px)
	}
	if len(px.Shape) != 2 || px.Shape[0]%t != 0 || len(px.Data) != px.Shape[0]*px.Shape[1] {
		return nil, fmt.Errorf("vision tower: clip pixel values %v (%d values) are not %d frames' rows", px.Shape, len(px.Data), t)
	}
	rows := px.Shape[0] / t
	per := rows * px.Shape[1]
	var out []float32
	for f := range t {
		frame := media.Pixels{Data: px.Data[f*per : (f+1)*per], Shape: []int{rows, px.Shape[1]}, Grid: [3]int{1, px.Grid[1], px.Grid[2]}}
		e, err := m.EncodeImage(ctx, frame)
		if err != nil {
			return nil, fmt.Errorf("frame %d: %w", f+1, err)
		}
		out = append(out, e...)
	}
	return out, nil
}
