package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"hearth/engine"
	"hearth/engine/fit"
	"hearth/engine/sample"
	"hearth/engine/tensor"
	"hearth/engine/whisper"
	"hearth/media"
)

// maxTranscribeBody bounds a transcription request: OpenAI's 25 MB file
// limit (media's default) and room for the form's other fields.
const maxTranscribeBody = media.DefaultAudioBytes + 1<<20

// transcribeFormats are the response_format values the route writes.
var transcribeFormats = map[string]bool{"json": true, "text": true, "verbose_json": true, "srt": true, "vtt": true}

// transcription is one parsed request.
type transcription struct {
	model, format string
	file          []byte
	opt           whisper.Options
}

// transcribe serves POST /v1/audio/transcriptions (and, with the task
// translate, /v1/audio/translations): OpenAI's multipart form, answered by
// a Whisper checkpoint.
func (s *Server) transcribe(task string) echo.HandlerFunc {
	return func(c echo.Context) error {
		req, err := parseTranscription(c, task)
		if err != nil {
			return err
		}
		m, err := s.pool.Resolve(req.model)
		if err != nil {
			return err
		}
		c.Set(modelKey, m.ID)
		if !whisper.Detect(m.Dir) {
			return s.transcribeByChat(c, req, m.ID)
		}
		ctx := c.Request().Context()
		a, err := media.DecodeAudio(ctx, req.file, media.AudioLimits{})
		if err != nil {
			return err
		}
		if len(a.Samples) == 0 {
			return badRequest("file", "file: the audio holds no samples")
		}
		if err := s.admitWhisper(m.ID, m.Dir); err != nil {
			return err
		}
		t, release, err := s.transcribers().get(ctx, m.Dir, s.pool.LoadOptions())
		if err != nil {
			return err
		}
		defer release()
		res, err := t.Transcribe(ctx, a, req.opt)
		if err != nil {
			var ie *whisper.InputError
			if errors.As(err, &ie) {
				return badRequest(ie.Param, "%s", ie.Msg)
			}
			return err
		}
		return writeTranscription(c, req, res, t.ChunkSeconds())
	}
}

// admitWhisper refuses a Whisper checkpoint that would not fit beside
// what is resident, by the estimate the pool makes for chat models (not
// checked where the pool checks none, or the model is loaded already).
func (s *Server) admitWhisper(id, dir string) error {
	mem, ok := s.pool.Memory()
	if !ok || s.transcribers().loaded(dir) {
		return nil
	}
	shape, err := whisper.FitShape(dir)
	if err != nil {
		return &engine.LoadError{Dir: dir, Err: err}
	}
	_, err = fit.Admit(id, shape, fit.Options{ContextTokens: shape.MaxContextTokens}, mem)
	return err
}

// transcribeByChat answers a transcription with a chat model that hears
// (its capabilities include audio): the clip and an instruction in one
// user turn, the reply as the text. Such a model gives no timestamps, so
// verbose_json, srt and vtt are refused, as OpenAI refuses them for its
// chat-based transcription models.
func (s *Server) transcribeByChat(c echo.Context, req *transcription, model string) error {
	if req.format != "json" && req.format != "text" {
		return badRequest("response_format", "response_format %q needs segment timestamps, which only Whisper checkpoints give; model %q answers with json or text", req.format, model)
	}
	ctx := c.Request().Context()
	r, release, err := s.pool.Acquire(ctx, model, nil)
	if err != nil {
		return err
	}
	defer release()
	info := r.Info()
	if !hasCap(info, "audio") {
		return badRequest("model", "model %q is not a transcription model: /v1/audio/transcriptions is served by Whisper checkpoints (model_type \"whisper\") and by chat models whose capabilities include audio", model)
	}
	clip, err := media.DecodeAudio(ctx, req.file, media.AudioLimits{})
	if err != nil {
		if errors.Is(err, media.ErrMedia) {
			return badRequest("file", "file: %s", mediaMessage(err))
		}
		return err
	}
	if limit, secs := info.AudioSeconds, clip.Duration().Seconds(); limit > 0 && secs > limit {
		c.Response().Header().Set(warningHeader, fmt.Sprintf("the audio is %.1f s long; model %q hears its first %g s", secs, model, limit))
	}
	msgs := []any{map[string]any{"role": "user", "content": []any{
		json.RawMessage(kindAudio.placeholder()),
		map[string]any{"type": "text", "text": transcribeInstruction(req.opt)},
	}}}
	er := engine.Request{Messages: mustJSON(msgs), Audio: []media.Audio{clip}, Sample: sample.Options{Temperature: req.opt.Temperature}}
	// As long as the transcript may be, within what the context leaves.
	pl, err := r.Prompter().PromptMedia(ctx, &er)
	if err != nil {
		return err
	}
	if er.MaxTokens = min(maxChatTranscriptTokens, info.ContextTokens-len(pl.IDs)); er.MaxTokens <= 0 {
		return badRequest("file", "file: the clip's prompt (%d tokens) fills model %q's context of %d tokens", len(pl.IDs), model, info.ContextTokens)
	}
	var text strings.Builder
	if _, err := r.Generate(ctx, er, func(d engine.Delta) error { text.WriteString(d.Content); return nil }); err != nil {
		return err
	}
	out := strings.TrimSpace(text.String())
	if req.format == "text" {
		return c.String(http.StatusOK, out+"\n")
	}
	return c.JSON(http.StatusOK, struct {
		Text string `json:"text"`
	}{out})
}

// maxChatTranscriptTokens bounds a chat model's transcript: a clip the
// model hears whole (Gemma 4: 30 s) is a few hundred tokens of speech.
const maxChatTranscriptTokens = 1024

// transcribeInstruction is the request a chat model gets with the clip.
func transcribeInstruction(o whisper.Options) string {
	var b strings.Builder
	if o.Task == "translate" {
		b.WriteString("Translate the speech in this audio into English. Reply with the translation only.")
	} else {
		b.WriteString("Transcribe the speech in this audio exactly, word for word. Reply with the transcript only.")
		if o.Language != "" {
			fmt.Fprintf(&b, " The speech is in the language with ISO 639-1 code %q.", o.Language)
		}
	}
	if o.Prompt != "" {
		fmt.Fprintf(&b, " Words and names that may occur: %s", o.Prompt)
	}
	return b.String()
}

func parseTranscription(c echo.Context, task string) (*transcription, error) {
	r := c.Request()
	if r.ContentLength > maxTranscribeBody {
		return nil, &http.MaxBytesError{Limit: maxTranscribeBody}
	}
	r.Body = http.MaxBytesReader(c.Response(), r.Body, maxTranscribeBody)
	ct := r.Header.Get("Content-Type")
	if !strings.HasPrefix(strings.ToLower(ct), "multipart/form-data") {
		return nil, badRequest("", "the request must be multipart/form-data (file, model, …), not %q", ct)
	}
	// Everything in memory: the body is bounded above.
	if err := r.ParseMultipartForm(maxTranscribeBody); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, badRequest("", "the multipart form cannot be read: %v", err)
	}
	form := r.MultipartForm
	defer form.RemoveAll()
	field := func(name string) string {
		if v := form.Value[name]; len(v) > 0 {
			return strings.TrimSpace(v[0])
		}
		return ""
	}
	req := &transcription{model: field("model"), format: field("response_format")}
	if req.model == "" {
		return nil, badRequest("model", "model is required (a Whisper checkpoint)")
	}
	files := form.File["file"]
	if len(files) == 0 {
		return nil, badRequest("file", "file is required: the audio to transcribe, as a multipart file part")
	}
	data, err := readPart(files[0])
	if err != nil {
		return nil, err
	}
	req.file = data
	if req.format == "" {
		req.format = "json"
	}
	if !transcribeFormats[req.format] {
		return nil, badRequest("response_format", "response_format %q is not one of json, text, verbose_json, srt, vtt", req.format)
	}
	for _, g := range append(form.Value["timestamp_granularities[]"], form.Value["timestamp_granularities"]...) {
		if g != "segment" {
			return nil, badRequest("timestamp_granularities", "timestamp_granularities %q: Hearth gives segment timestamps only", g)
		}
	}
	req.opt = whisper.Options{Task: task, Prompt: field("prompt"),
		// Segments need the timestamp tokens; plain text does without them,
		// as the reference's default does.
		Timestamps: req.format == "verbose_json" || req.format == "srt" || req.format == "vtt"}
	if task == "transcribe" {
		req.opt.Language = field("language")
	}
	if v := field("temperature"); v != "" {
		t, err := strconv.ParseFloat(v, 64)
		if err != nil || t < 0 || t > 1 || math.IsNaN(t) {
			return nil, badRequest("temperature", "temperature %q must be a number from 0 to 1", v)
		}
		req.opt.Temperature = t
	}
	return req, nil
}

func readPart(fh *multipart.FileHeader) ([]byte, error) {
	if fh.Size > media.DefaultAudioBytes {
		return nil, badRequest("file", "file: %d bytes is over the %d-byte limit", fh.Size, media.DefaultAudioBytes)
	}
	f, err := fh.Open()
	if err != nil {
		return nil, badRequest("file", "file: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, media.DefaultAudioBytes+1))
	if err != nil {
		return nil, badRequest("file", "file: %v", err)
	}
	return data, nil
}

// transcriptNote says what was left out of a clip longer than one chunk.
func transcriptNote(res *whisper.Result, chunk float64) string {
	if !res.Cut {
		return ""
	}
	return fmt.Sprintf("the audio is %.1f s long; only its first %.0f s were transcribed (Hearth does not run Whisper's long-form decoding yet)", res.Duration, chunk)
}

type transcriptSegment struct {
	ID               int     `json:"id"`
	Seek             int     `json:"seek"`
	Start            float64 `json:"start"`
	End              float64 `json:"end"`
	Text             string  `json:"text"`
	Tokens           []int32 `json:"tokens"`
	Temperature      float64 `json:"temperature"`
	AvgLogprob       float64 `json:"avg_logprob"`
	CompressionRatio float64 `json:"compression_ratio"`
}

func writeTranscription(c echo.Context, req *transcription, res *whisper.Result, chunk float64) error {
	note := transcriptNote(res, chunk)
	if note != "" {
		c.Response().Header().Set("X-Hearth-Warning", note)
	}
	switch req.format {
	case "text":
		return c.String(http.StatusOK, res.Text+"\n")
	case "srt", "vtt":
		var b strings.Builder
		if req.format == "vtt" {
			b.WriteString("WEBVTT\n\n")
		}
		n := 0
		for _, s := range res.Segments {
			text := strings.TrimSpace(s.Text)
			if text == "" {
				continue
			}
			n++
			if req.format == "srt" {
				fmt.Fprintf(&b, "%d\n%s --> %s\n%s\n\n", n, clock(s.Start, ","), clock(s.End, ","), text)
			} else {
				fmt.Fprintf(&b, "%s --> %s\n%s\n\n", clock(s.Start, "."), clock(s.End, "."), text)
			}
		}
		ct := "application/x-subrip; charset=UTF-8"
		if req.format == "vtt" {
			ct = "text/vtt; charset=UTF-8"
		}
		return c.Blob(http.StatusOK, ct, []byte(b.String()))
	case "verbose_json":
		segs := make([]transcriptSegment, len(res.Segments))
		for i, s := range res.Segments {
			segs[i] = transcriptSegment{ID: i, Start: round2(s.Start), End: round2(s.End), Text: s.Text, Tokens: s.Tokens,
				Temperature: req.opt.Temperature, AvgLogprob: s.AvgLogprob, CompressionRatio: s.CompressionRatio}
		}
		task := req.opt.Task
		return c.JSON(http.StatusOK, struct {
			Task     string              `json:"task"`
			Language string              `json:"language"`
			Duration float64             `json:"duration"`
			Text     string              `json:"text"`
			Segments []transcriptSegment `json:"segments"`
			Note     string              `json:"note,omitempty"`
		}{task, whisper.LanguageName(res.Language), res.Duration, res.Text, segs, note})
	}
	return c.JSON(http.StatusOK, struct {
		Text string `json:"text"`
		Note string `json:"note,omitempty"`
	}{res.Text, note})
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// clock writes seconds as HH:MM:SS<sep>mmm (SRT's comma, WebVTT's dot).
func clock(sec float64, sep string) string {
	ms := int64(math.Round(max(sec, 0) * 1000))
	return fmt.Sprintf("%02d:%02d:%02d%s%03d", ms/3600000, ms/60000%60, ms/1000%60, sep, ms%1000)
}

// transcriberSet holds the Whisper models loaded for transcription, by
// checkpoint directory. Whisper runs outside the pool (its decoder is not
// a text family's), so it keeps its own: at most maxTranscribers resident,
// the least recently used dropped when idle, and one request at a time per
// model (a model holds one clip's encoder state).
type transcriberSet struct {
	mu     sync.Mutex
	models map[string]*transcriber
}

const maxTranscribers = 2

// maxTranscribeQueue bounds the requests waiting for one model, as the
// chat runner's queue is bounded (engine.ErrQueueFull past it).
const maxTranscribeQueue = 64

type transcriber struct {
	*whisper.Model
	b    tensor.Backend
	turn chan struct{} // holds one token while a request runs
	used time.Time
	busy int
}

func (s *Server) transcribers() *transcriberSet {
	s.transcribeOnce.Do(func() { s.transcribeSet = &transcriberSet{models: map[string]*transcriber{}} })
	return s.transcribeSet
}

// get returns dir's model, loading it on opt's backend if needed, once it
// is free; release hands it back.
func (ts *transcriberSet) get(ctx context.Context, dir string, opt engine.Options) (*transcriber, func(), error) {
	ts.mu.Lock()
	t := ts.models[dir]
	if t == nil {
		ts.evict()
		b, _, err := engine.NewBackend(opt)
		if err != nil {
			ts.mu.Unlock()
			return nil, nil, err
		}
		m, err := whisper.Load(dir, b)
		if err != nil {
			ts.mu.Unlock()
			b.Close()
			return nil, nil, &engine.LoadError{Dir: dir, Err: err}
		}
		t = &transcriber{Model: m, b: b, turn: make(chan struct{}, 1)}
		ts.models[dir] = t
	}
	if t.busy >= maxTranscribeQueue {
		ts.mu.Unlock()
		return nil, nil, engine.ErrQueueFull
	}
	t.busy++
	ts.mu.Unlock()
	select {
	case t.turn <- struct{}{}:
	case <-ctx.Done():
		ts.mu.Lock()
		t.busy--
		ts.mu.Unlock()
		return nil, nil, ctx.Err()
	}
	return t, func() {
		<-t.turn
		ts.mu.Lock()
		t.busy--
		t.used = time.Now()
		ts.mu.Unlock()
	}, nil
}

// loaded reports whether dir's model is resident.
func (ts *transcriberSet) loaded(dir string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.models[dir] != nil
}

// evict drops idle models, least recently used first, until there is room
// for one more. ts.mu is held.
func (ts *transcriberSet) evict() {
	for len(ts.models) >= maxTranscribers {
		var oldest string
		for dir, t := range ts.models {
			if t.busy == 0 && (oldest == "" || t.used.Before(ts.models[oldest].used)) {
				oldest = dir
			}
		}
		if oldest == "" {
			return // all busy: one more resident for a while
		}
		ts.models[oldest].close()
		delete(ts.models, oldest)
	}
}

func (t *transcriber) close() {
	t.Model.Close()
	t.b.Close()
}

// close frees every model (at shutdown).
func (ts *transcriberSet) close() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for dir, t := range ts.models {
		t.close()
		delete(ts.models, dir)
	}
}
