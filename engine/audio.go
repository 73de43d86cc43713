package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"hearth/engine/checkpoint"
	"hearth/engine/families"
	"hearth/engine/family"
	"hearth/engine/nn"
	"hearth/engine/tensor"
	"hearth/engine/tower"
	"hearth/media"
)

// Audio prompts (docs/design/audio.md): the audio analogue of vision.go.

// loadAudio binds the checkpoint's audio tower when its weights hold one,
// Hearth has the tower for its model type and the family splices the
// tower's output; otherwise the tower's tensors stay unconsumed.
func loadAudio(ck *checkpoint.Checkpoint, fam *family.Family, l *nn.Loader) (tower.Audio, error) {
	return loadTower(ck, fam, l, family.Audio, families.AudioTower(ck.Config))
}

// HasAudio reports whether the model's audio tower is loaded: it takes
// sound clips.
func (m *Model) HasAudio() bool { return m.audio != nil }

// AudioPrompt is how a prompt holds each clip (ok is false without an
// audio tower).
func (m *Model) AudioPrompt() (p tower.Prompt, ok bool) {
	if m.audio == nil {
		return tower.Prompt{}, false
	}
	return m.audio.Prompt(), true
}

// Hear is Hear with the model's audio tower: a clip's features and
// soft-token count.
func (m *Model) Hear(clip media.Audio) (Heard, error) {
	if m.audio == nil {
		return Heard{}, ErrNoAudio
	}
	return Hear(m.audio, clip)
}

// ErrNoAudio is the error of a clip given to a model without an audio
// tower.
var ErrNoAudio = errors.New("the model has no audio tower")

// AudioSeconds is the longest clip the model hears whole (0: it takes no
// audio); longer clips are cut there, as its feature extractor cuts them.
func (m *Model) AudioSeconds() float64 {
	if m.audio == nil {
		return 0
	}
	return m.audio.MaxSeconds()
}

// EncodeAudio runs the audio tower over one clip's features (the model's
// extractor's output) and returns its soft tokens, [tokens, hidden] row
// by row.
func (m *Model) EncodeAudio(ctx context.Context, f media.Features) ([]float32, error) {
	if m.audio == nil {
		return nil, ErrNoAudio
	}
	g := tensor.NewGraph(m.backend)
	out, err := m.audio.Encode(g, f)
	if err == nil {
		err = g.Err()
	}
	if err == nil {
		err = m.backend.Run(ctx, g, out)
	}
	if err != nil {
		return nil, fmt.Errorf("audio tower: %w", err)
	}
	data := make([]float32, tensor.Elements(g.Shape(out)))
	if err := m.backend.Read(out, data); err != nil {
		return nil, err
	}
	return data, nil
}

// Heard is one clip of a prompt: its features and soft-token count, and
// whether it was cut to the model's longest.
type Heard struct {
	Features media.Features
	Tokens   int
	Cut      bool
}

// Hear resamples a clip to the rate the tower takes and extracts its
// features, as the model's processor does.
func Hear(a tower.Audio, clip media.Audio) (Heard, error) {
	if clip.Rate <= 0 || len(clip.Samples) == 0 {
		return Heard{}, fmt.Errorf("%w: the audio clip is empty", media.ErrMedia)
	}
	if clip.Rate != a.Rate() {
		clip = media.Resample(clip, a.Rate())
	}
	f, cut := a.Extract(clip)
	n := a.Tokens(f)
	if n <= 0 {
		return Heard{}, fmt.Errorf("%w: the audio clip is too short to hear (%d samples at %d Hz)", media.ErrMedia, len(clip.Samples), clip.Rate)
	}
	return Heard{Features: f, Tokens: n, Cut: cut}, nil
}

// expandAudio replaces each audio placeholder of the rendered text as the
// model's processor does (Gemma4Processor: the placeholder's text becomes
// begin, n × the audio token and end, n the clip's soft tokens), before
// the pictures' expansion and the tokenizer see it.
func (p Prompter) expandAudio(text string, req *Request) (string, []Heard, error) {
	if len(req.Audio) == 0 {
		return text, nil, nil
	}
	if p.Audio == nil {
		return "", nil, &RequestError{fmt.Errorf("model %q takes no audio", p.ID)}
	}
	if req.Messages == nil {
		return "", nil, &RequestError{fmt.Errorf("audio goes in messages, as input_audio parts; model %q got %d clips with a plain prompt", p.ID, len(req.Audio))}
	}
	v := p.Audio.Prompt()
	piece := func(id int32) (string, error) {
		s, ok := p.Tokenizer.Token(id)
		if !ok || s == "" {
			return "", fmt.Errorf("model %q: its audio token %d is not in the tokenizer", p.ID, id)
		}
		return s, nil
	}
	var pieces [4]string
	for i, id := range []int32{v.Placeholder, v.Begin, v.End, v.Image} {
		s, err := piece(id)
		if err != nil {
			return "", nil, err
		}
		pieces[i] = s
	}
	ph, begin, end, tok := pieces[0], pieces[1], pieces[2], pieces[3]
	if n := strings.Count(text, ph); n != len(req.Audio) {
		return "", nil, &RequestError{fmt.Errorf("the conversation has %d audio parts but the request holds %d clips", n, len(req.Audio))}
	}
	heard := make([]Heard, len(req.Audio))
	need := 0
	for i, clip := range req.Audio {
		h, err := Hear(p.Audio, clip)
		if err != nil {
			return "", nil, mediaError("audio clip", i, err)
		}
		heard[i] = h
		need += h.Tokens
	}
	if need > p.ContextTokens-1 {
		return "", nil, &ContextError{PromptTokens: need, AtLeast: true, ContextTokens: p.ContextTokens}
	}
	parts := strings.Split(text, ph)
	var b strings.Builder
	for i, part := range parts {
		b.WriteString(part)
		if i < len(heard) {
			b.WriteString(begin + strings.Repeat(tok, heard[i].Tokens) + end)
		}
	}
	return b.String(), heard, nil
}

// placeAudio finds each clip's soft tokens in the prompt: the runs of the
// audio token, split into the clips' counts in order.
func (p Prompter) placeAudio(pl *Placed, heard []Heard, err error) (*Placed, error) {
	if err != nil || len(heard) == 0 {
		return pl, err
	}
	tok := p.Audio.Prompt().Image
	ids := pl.IDs
	k := 0
	for i := 0; i < len(ids); i++ {
		if ids[i] != tok {
			continue
		}
		j := i
		for j < len(ids) && ids[j] == tok {
			j++
		}
		for r := i; r < j; r += heard[k-1].Tokens {
			if k >= len(heard) || heard[k].Tokens > j-r {
				return nil, &RequestError{fmt.Errorf("the prompt holds a run of %d audio tokens that is not whole clips (is the audio token's text in a message?)", j-i)}
			}
			pl.AudioRows = append(pl.AudioRows, r)
			k++
		}
		i = j - 1
	}
	if k != len(heard) {
		return nil, &RequestError{fmt.Errorf("the prompt holds the soft tokens of %d clips, but the request has %d (is the audio token's text in a message?)", k, len(heard))}
	}
	pl.Audio = heard
	return pl, nil
}

// addAudio runs the audio tower over each clip and makes seq's prompt
// pass take its soft tokens at rows[i].
func (r *Runner) addAudio(ctx context.Context, seq *Sequence, heard []Heard, rows []int) error {
	if len(heard) != len(rows) {
		return fmt.Errorf("%d clips for %d audio positions", len(heard), len(rows))
	}
	for i, h := range heard {
		embeds, err := r.model.EncodeAudio(ctx, h.Features)
		if err != nil {
			return mediaError("audio clip", i, err)
		}
		if err := seq.AddMedia(Media{Pos: rows[i], Embeds: embeds}); err != nil {
			return fmt.Errorf("audio clip %d: %w", i+1, err)
		}
	}
	return nil
}
