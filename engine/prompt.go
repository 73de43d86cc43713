package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"hearth/engine/template"
	"hearth/engine/tokenizer"
	"hearth/engine/toolcall"
	"hearth/engine/tower"
	"hearth/media"
)

// Prompter turns a request's messages or prompt text into prompt ids the
// way a Runner does, with no weights: a checkpoint's tokenizer and chat
// template, at the context the model is (or would be) loaded with. A
// Runner prompts through its own; counting a prompt without loading the
// model (Anthropic's count_tokens) uses one made from the checkpoint's
// files, so both count the same tokens.
type Prompter struct {
	ID            string // the model's id, for messages
	Tokenizer     *tokenizer.Tokenizer
	Template      *template.Template // nil when the checkpoint has no chat template
	ContextTokens int
	// Vision is how the model's vision tower takes pictures into the
	// prompt; nil when it takes none.
	Vision *tower.Prompt
	// ImagePixels preprocesses a picture whose soft-token count depends
	// on it (Vision.Tokens 0: Qwen-VL's dynamic resolution): its pixel
	// values, kept for the tower, and the count.
	ImagePixels func(media.Image) (media.Pixels, int, error)
	// Video is how the model takes clips into the prompt, and VideoPixels
	// its video processor; nil when it takes none.
	Video       *tower.VideoPrompt
	VideoPixels func([]media.Frame) (Clip, error)
	// Audio is the model's audio tower, which says how a prompt holds a
	// sound clip and extracts its features; nil when it takes none.
	Audio tower.Audio
}

// Clip is one video as the model's video processor gives it.
type Clip struct {
	Pixels media.Pixels
	Grid   [3]int    // the soft tokens: Grid[0] temporal patches of Grid[1]×Grid[2]
	Times  []float64 // each temporal patch's time in seconds, as the prompt writes it
}

// Placed is a prompt with its media placed: where each picture's soft
// tokens start, and each clip's temporal patches'.
type Placed struct {
	IDs       []int32
	ImageRows []int
	// ImagePixels are the pictures' pixel values where prompting
	// preprocessed them (to count their tokens), nil Data where not.
	ImagePixels []media.Pixels
	Clips       []Clip
	ClipRows    [][]int // per clip, the first row of each temporal patch
	// Audio are the sound clips as heard (engine/audio.go), AudioRows
	// where each one's soft tokens start.
	Audio     []Heard
	AudioRows []int
}

// Prompter is the runner's own prompter.
func (r *Runner) Prompter() Prompter {
	p := Prompter{ID: r.id, Tokenizer: r.tok, Template: r.tmpl, ContextTokens: r.info.ContextTokens, Audio: r.model.audio}
	if vp, ok := r.model.VisionPrompt(); ok && r.imgProc != nil {
		p.Vision = &vp
		if vp.Tokens == 0 {
			p.ImagePixels = func(im media.Image) (media.Pixels, int, error) {
				px, err := r.imgProc.Image(im)
				if err != nil {
					return media.Pixels{}, 0, err
				}
				g := r.model.ImageGrid(px)
				return px, g[0] * g[1] * g[2], nil
			}
		}
	}
	if vp, ok := r.clips(); ok {
		p.Video, p.VideoPixels = &vp, r.clip
	}
	return p
}

// ToolCalls reports whether the chat template has a tool-call format the
// engine parses (the "tools" capability).
func (p Prompter) ToolCalls() bool {
	return p.Template != nil && toolcall.Detect(p.Template.Source()) != ""
}

// Prompt renders req.Messages with the chat template (tools and template
// kwargs included) and tokenizes the text, or tokenizes req.Prompt with
// the tokenizer's special tokens. A prompt that leaves no room for one
// generated token is a *ContextError; a template that refuses the
// conversation, a *RequestError. req.PromptIDs is not read.
func (p Prompter) Prompt(ctx context.Context, req *Request) ([]int32, error) {
	pl, err := p.PromptMedia(ctx, req)
	if err != nil {
		return nil, err
	}
	return pl.IDs, nil
}

// PromptImages is Prompt for a request that may hold pictures
// (req.Images): each picture's placeholder in the rendered conversation
// is expanded as the model's processor does (tower.Prompt), and the
// picture's soft tokens start at ids[rows[i]] for picture i. A model that
// takes no pictures, a conversation with another number of placeholders
// than pictures, or pictures without messages are a *RequestError.
func (p Prompter) PromptImages(ctx context.Context, req *Request) (ids []int32, rows []int, err error) {
	pl, err := p.PromptMedia(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	return pl.IDs, pl.ImageRows, nil
}

// PromptMedia is PromptImages for pictures and clips (req.Videos): each
// clip's placeholder is expanded as Qwen3VLProcessor does (tower.
// VideoPrompt), and the media are placed (Placed).
func (p Prompter) PromptMedia(ctx context.Context, req *Request) (*Placed, error) {
	if len(req.Images) > 0 {
		if p.Vision == nil {
			return nil, &RequestError{fmt.Errorf("model %q takes no images", p.ID)}
		}
		if req.Messages == nil {
			return nil, &RequestError{fmt.Errorf("images go in messages, as image parts; model %q got %d with a plain prompt", p.ID, len(req.Images))}
		}
	}
	if len(req.Videos) > 0 {
		if p.Video == nil {
			return nil, &RequestError{fmt.Errorf("model %q takes no video", p.ID)}
		}
		if req.Messages == nil {
			return nil, &RequestError{fmt.Errorf("videos go in messages, as video parts; model %q got %d with a plain prompt", p.ID, len(req.Videos))}
		}
	}
	text, err := p.render(ctx, req)
	if err != nil {
		return nil, err
	}
	text, heard, err := p.expandAudio(text, req)
	if err != nil {
		return nil, err
	}
	if req.Messages == nil {
		ids, err := p.encode(text, true)
		return &Placed{IDs: ids}, err
	}
	if len(req.Images) == 0 && len(req.Videos) == 0 {
		// Like transformers' apply_chat_template(tokenize=True): the
		// template writes every special token itself.
		ids, err := p.encode(text, false)
		return p.placeAudio(&Placed{IDs: ids}, heard, err)
	}
	pl, err := p.expand(text, req.Images, req.Videos)
	return p.placeAudio(pl, heard, err)
}

// mediaError is a preprocessing failure of media item what: the input's
// fault (media.ErrMedia) is a *RequestError.
func mediaError(what string, i int, err error) error {
	if errors.Is(err, media.ErrMedia) {
		return &RequestError{fmt.Errorf("%s %d: %w", what, i+1, err)}
	}
	return fmt.Errorf("%s %d: %w", what, i+1, err)
}

// expand replaces each picture and clip placeholder of the rendered text
// as the model's processor does (Gemma3Processor: the placeholder's text
// becomes the full image sequence; Qwen3VLProcessor: the placeholder
// repeated once per soft token, and a clip's written per temporal patch
// with its time), tokenizes, and finds each one's soft tokens.
func (p Prompter) expand(text string, pictures []media.Image, videos [][]media.Frame) (*Placed, error) {
	pl := &Placed{}
	need := 0
	var counts []int // each picture's soft tokens
	if len(pictures) > 0 {
		var err error
		if text, counts, err = p.expandImages(text, pictures, pl); err != nil {
			return nil, err
		}
		for _, n := range counts {
			need += n
		}
	}
	if len(videos) > 0 {
		n, err := p.processClips(text, videos, pl)
		if err != nil {
			return nil, err
		}
		need += n
	}
	// The soft tokens alone are about the sum of counts: refuse a prompt
	// that cannot fit before building its text.
	if need > p.ContextTokens-1 {
		return nil, &ContextError{PromptTokens: need, AtLeast: true, ContextTokens: p.ContextTokens}
	}
	if len(videos) > 0 {
		text = p.expandClips(text, pl.Clips)
	}
	ids, err := p.encode(text, false)
	if err != nil {
		return nil, err
	}
	pl.IDs = ids
	if len(pictures) > 0 {
		if pl.ImageRows, err = p.imageRows(ids, counts); err != nil {
			return nil, err
		}
	}
	if len(videos) > 0 {
		if pl.ClipRows, err = p.clipRows(ids, pl.Clips); err != nil {
			return nil, err
		}
	}
	return pl, nil
}

// expandImages writes each picture's sequence in place of its
// placeholder, and returns the text and each picture's soft tokens; the
// pixels it preprocessed to count them go in pl.ImagePixels.
func (p Prompter) expandImages(text string, pictures []media.Image, pl *Placed) (string, []int, error) {
	v := p.Vision
	images := len(pictures)
	piece := func(id int32) (string, error) {
		if id < 0 {
			return "", nil // none written
		}
		s, ok := p.Tokenizer.Token(id)
		if !ok || s == "" {
			return "", fmt.Errorf("model %q: its image token %d is not in the tokenizer", p.ID, id)
		}
		return s, nil
	}
	ph, err := piece(v.Placeholder)
	if err != nil {
		return "", nil, err
	}
	begin, err := piece(v.Begin)
	if err != nil {
		return "", nil, err
	}
	end, err := piece(v.End)
	if err != nil {
		return "", nil, err
	}
	img, err := piece(v.Image)
	if err != nil {
		return "", nil, err
	}
	if n := strings.Count(text, ph); n != images {
		return "", nil, &RequestError{fmt.Errorf("the conversation has %d image parts but the request holds %d images", n, images)}
	}
	counts := make([]int, images)
	pl.ImagePixels = make([]media.Pixels, images)
	need := 0
	for i := range counts {
		counts[i] = v.Tokens
		if v.Tokens == 0 {
			if p.ImagePixels == nil {
				return "", nil, fmt.Errorf("model %q: its pictures' token counts depend on the picture, and the prompter cannot count them", p.ID)
			}
			px, n, err := p.ImagePixels(pictures[i])
			if err != nil {
				return "", nil, mediaError("image", i, err)
			}
			counts[i], pl.ImagePixels[i] = n, px
		}
		need += counts[i]
	}
	// The soft tokens alone are about the sum of counts: refuse a prompt
	// that cannot fit before building its text.
	if need > p.ContextTokens-1 {
		return "", nil, &ContextError{PromptTokens: need, AtLeast: true, ContextTokens: p.ContextTokens}
	}
	// each placeholder, in order, becomes its picture's sequence
	parts := strings.Split(text, ph)
	var b strings.Builder
	for i, part := range parts {
		b.WriteString(part)
		if i < images {
			b.WriteString(v.Before + begin + strings.Repeat(img, counts[i]) + end + v.After)
		}
	}
	return b.String(), counts, nil
}

// imageRows finds each picture's soft tokens in ids: the rows where they
// start, for pictures of counts tokens.
func (p Prompter) imageRows(ids []int32, counts []int) ([]int, error) {
	v := p.Vision
	images := len(counts)
	// runs of image tokens, each split into consecutive pictures' counts
	var rows []int
	k := 0
	for i := 0; i < len(ids); i++ {
		if ids[i] != v.Image {
			continue
		}
		j := i
		for j < len(ids) && ids[j] == v.Image {
			j++
		}
		for r := i; r < j; r += counts[k-1] {
			if k >= images || counts[k] <= 0 || counts[k] > j-r {
				return nil, &RequestError{fmt.Errorf("the prompt holds a run of %d image tokens that is not whole pictures (is the image token's text in a message?)", j-i)}
			}
			rows = append(rows, r)
			k++
		}
		i = j - 1
	}
	if len(rows) != images {
		return nil, &RequestError{fmt.Errorf("the prompt holds the soft tokens of %d images, but the request has %d (is the image token's text in a message?)", len(rows), images)}
	}
	return rows, nil
}

// processClips runs the video processor over each clip into pl.Clips,
// once the conversation is seen to hold one placeholder per clip, and
// returns their soft tokens.
func (p Prompter) processClips(text string, videos [][]media.Frame, pl *Placed) (int, error) {
	v := p.Video
	for _, id := range []int32{v.Placeholder, v.Begin, v.End, v.Video} {
		if s, ok := p.Tokenizer.Token(id); !ok || s == "" {
			return 0, fmt.Errorf("model %q: its video token %d is not in the tokenizer", p.ID, id)
		}
	}
	ph, _ := p.Tokenizer.Token(v.Placeholder)
	if n := strings.Count(text, ph); n != len(videos) {
		return 0, &RequestError{fmt.Errorf("the conversation has %d video parts but the request holds %d videos", n, len(videos))}
	}
	need := 0
	for i, frames := range videos {
		c, err := p.VideoPixels(frames)
		if err != nil {
			return 0, mediaError("video", i, err)
		}
		if len(c.Times) != c.Grid[0] || c.Grid[0]*c.Grid[1]*c.Grid[2] <= 0 {
			return 0, fmt.Errorf("video %d: %d times for a %v grid", i+1, len(c.Times), c.Grid)
		}
		pl.Clips = append(pl.Clips, c)
		need += c.Grid[0] * c.Grid[1] * c.Grid[2]
	}
	return need, nil
}

// expandClips writes each clip in place of its placeholder as
// Qwen3VLProcessor.replace_video_token does: per temporal patch, its time
// to a tenth of a second, then the patch's soft tokens between Begin and
// End (processClips checked the tokens).
func (p Prompter) expandClips(text string, clips []Clip) string {
	v := p.Video
	ph, _ := p.Tokenizer.Token(v.Placeholder)
	begin, _ := p.Tokenizer.Token(v.Begin)
	end, _ := p.Tokenizer.Token(v.End)
	tok, _ := p.Tokenizer.Token(v.Video)
	parts := strings.Split(text, ph)
	var b strings.Builder
	for i, part := range parts {
		b.WriteString(part)
		if i >= len(clips) {
			continue
		}
		c := clips[i]
		frame := begin + strings.Repeat(tok, c.Grid[1]*c.Grid[2]) + end
		if v.Frames {
			// Gemma4Processor.replace_video_token: "mm:ss " before each
			// frame, the frames joined by spaces
			for k, t := range c.Times {
				if k > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(media.Gemma4Timestamp(t) + " " + frame)
			}
			continue
		}
		for _, t := range c.Times {
			// Python's f"{t:.1f}" and Go's %.1f both round the float's
			// exact value to nearest, ties to even
			fmt.Fprintf(&b, "<%.1f seconds>%s", t, frame)
		}
	}
	return b.String()
}

// clipRows finds each clip's temporal patches in ids: one run of video
// tokens each, in order.
func (p Prompter) clipRows(ids []int32, clips []Clip) ([][]int, error) {
	tok := p.Video.Video
	rows := make([][]int, len(clips))
	k := 0
	for i := 0; i < len(ids); i++ {
		if ids[i] != tok {
			continue
		}
		j := i
		for j < len(ids) && ids[j] == tok {
			j++
		}
		for k < len(clips) && len(rows[k]) == clips[k].Grid[0] {
			k++
		}
		if k >= len(clips) || j-i != clips[k].Grid[1]*clips[k].Grid[2] {
			return nil, &RequestError{fmt.Errorf("the prompt holds a run of %d video tokens that is not one frame's (is the video token's text in a message?)", j-i)}
		}
		rows[k] = append(rows[k], i)
		i = j - 1
	}
	for k, c := range clips {
		if len(rows[k]) != c.Grid[0] {
			return nil, &RequestError{fmt.Errorf("the prompt holds %d of video %d's %d frames' soft tokens (is the video token's text in a message?)", len(rows[k]), k+1, c.Grid[0])}
		}
	}
	return rows, nil
}

// render is the prompt's text: the conversation through the chat
// template, or the plain prompt.
func (p Prompter) render(ctx context.Context, req *Request) (string, error) {
	if req.Messages == nil {
		return req.Prompt, nil
	}
	if p.Template == nil {
		return "", &RequestError{fmt.Errorf("model %q has no chat template; send a prompt, not messages", p.ID)}
	}
	opt := template.Options{Tools: req.Tools, AddGenerationPrompt: true, Extra: req.TemplateKwargs}
	if raw, ok := req.TemplateKwargs["enable_thinking"]; ok {
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return "", &RequestError{fmt.Errorf("enable_thinking must be true or false")}
		}
		opt.EnableThinking = &b
	}
	// The template renders under its budget and stops when ctx ends
	// (the client left): a cancelled render is not the request's fault.
	text, err := p.Template.Render(ctx, req.Messages, opt)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "", err
	}
	if err != nil {
		return "", &RequestError{err}
	}
	return text, nil
}

// encode tokenizes a prompt but gives up, with a *ContextError, as soon
// as it is certain not to leave room for one generated token: from its
// length in bytes before any tokenizing, else part way through. A prompt
// of any size costs at most about a context's worth of tokenizing.
func (p Prompter) encode(text string, addSpecial bool) ([]int32, error) {
	ids, n := p.Tokenizer.EncodeLimit(text, addSpecial, p.ContextTokens-1)
	if n > p.ContextTokens-1 {
		return nil, &ContextError{PromptTokens: n, AtLeast: true, ContextTokens: p.ContextTokens}
	}
	return ids, nil
}
