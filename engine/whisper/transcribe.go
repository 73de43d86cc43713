package whisper

import (
	"bytes"
	"compress/zlib"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"hearth/engine/sample"
	"hearth/media"
)

// Reference constants of WhisperForConditionalGeneration.generate: each
// timestamp token is 20 ms; a feature frame is 10 ms.
const (
	timePrecision         = 0.02
	timePrecisionFeatures = 0.01
)

// Options say how to transcribe one clip.
type Options struct {
	// Language is an ISO 639-1 code ("en"); "" detects it, as the
	// reference does, on a multilingual checkpoint.
	Language string
	// Task is "transcribe" (the default) or "translate" (into English).
	Task string
	// Timestamps asks for timestamp tokens, which split the text into
	// timed segments.
	Timestamps bool
	// Prompt is text the decoder is conditioned on (the reference's
	// prompt_ids: <|startofprev|> and the text's tokens before the
	// prompt tokens).
	Prompt string
	// Temperature 0 decodes greedily; above 0 it samples.
	Temperature float64
	Seed        *uint64
	// MaxTokens bounds the generated tokens (0: as many as the decoder
	// holds).
	MaxTokens int
}

// InputError is a request the model cannot honour (an unknown language, a
// task an English-only checkpoint lacks): the caller's fault.
type InputError struct {
	Param, Msg string
}

func (e *InputError) Error() string { return e.Msg }

// Segment is a stretch of the transcript between two timestamps (the whole
// transcript when there are none).
type Segment struct {
	Start, End float64
	Tokens     []int32
	Text       string
	AvgLogprob float64
	// CompressionRatio is the text's length over its zlib-compressed
	// length (the reference's repetition check).
	CompressionRatio float64
}

// Result is one clip's transcript.
type Result struct {
	Text     string
	Language string // the code of the language decoded in ("" on an English-only checkpoint)
	Duration float64
	Segments []Segment
	Tokens   []int32 // the generated ids, without the end of text
	// Prefix is the decoder prompt: prompt ids, then
	// <|startoftranscript|>, language, task, <|notimestamps|>.
	Prefix []int32
	// Cut reports that the clip was longer than one chunk and only its
	// first ChunkSeconds were transcribed.
	Cut bool
}

// Transcribe decodes a at its own rate: resampled to 16 kHz, cut or padded
// to one chunk, encoded, then decoded with opt.
func (m *Model) Transcribe(ctx context.Context, a media.Audio, opt Options) (*Result, error) {
	a16 := media.Resample(a, m.Features.Rate)
	f, cut := m.Extract(a16)
	res, err := m.Decode(ctx, f, opt)
	if err != nil {
		return nil, err
	}
	res.Cut = cut
	res.Duration = a.Duration().Seconds()
	return res, nil
}

// Decode transcribes features already extracted (one chunk).
func (m *Model) Decode(ctx context.Context, f media.Features, opt Options) (*Result, error) {
	prefix, lang, err := m.prefix(opt)
	if err != nil {
		return nil, err
	}
	if err := m.Encode(ctx, f, nil); err != nil {
		return nil, err
	}
	gen := m.Generation
	logits := make([]float32, m.Config.Vocab)
	if lang == "" && len(gen.LangToID) > 0 && m.multilingual() {
		// detect_language: one step over <|startoftranscript|>, the most
		// likely language token.
		if err := m.Step(ctx, []int32{gen.DecoderStart}, 0, logits); err != nil {
			return nil, err
		}
		best, bestID := "", int32(-1)
		for tok, id := range gen.LangToID {
			if bestID < 0 || logits[id] > logits[bestID] || logits[id] == logits[bestID] && id < bestID {
				best, bestID = tok, id
			}
		}
		lang = strings.TrimSuffix(strings.TrimPrefix(best, "<|"), "|>")
		at := slices.Index(prefix, gen.DecoderStart)
		prefix = slices.Insert(prefix, at+1, bestID)
	}
	ids, logprobs, err := m.generate(ctx, prefix, opt, logits)
	if err != nil {
		return nil, err
	}
	res := &Result{Language: lang, Tokens: ids, Prefix: prefix}
	res.Segments = m.segments(ids, logprobs)
	kept := ids
	if opt.Timestamps {
		// What the segments hold: the reference drops ids after the last
		// timestamp pair (its seek loop decodes that audio again).
		kept = nil
		for _, s := range res.Segments {
			kept = append(kept, s.Tokens...)
		}
	}
	res.Text = strings.TrimSpace(m.text(kept))
	return res, nil
}

func (m *Model) multilingual() bool {
	g := m.Generation
	return g.Multilingual == nil || *g.Multilingual
}

// TimestampBegin is the id of <|0.00|> (the token after
// <|notimestamps|>), or -1 when the checkpoint has no timestamps.
func (m *Model) TimestampBegin() int32 {
	if m.Generation.NoTimestamps == nil {
		return -1
	}
	return *m.Generation.NoTimestamps + 1
}

// prefix is the decoder prompt for opt (the reference's
// _retrieve_init_tokens, with prompt_ids ahead), and the language it
// names ("" when it is to be detected or the checkpoint is English-only).
func (m *Model) prefix(opt Options) ([]int32, string, error) {
	gen := m.Generation
	task := opt.Task
	if task == "" {
		task = "transcribe"
	}
	if task != "transcribe" && task != "translate" {
		return nil, "", &InputError{Param: "task", Msg: fmt.Sprintf("task %q is not transcribe or translate", task)}
	}
	if opt.Timestamps && gen.NoTimestamps == nil {
		return nil, "", &InputError{Param: "timestamps", Msg: "this checkpoint's generation_config.json has no no_timestamps_token_id, so it cannot give timestamps"}
	}
	init := []int32{gen.DecoderStart}
	lang := strings.ToLower(strings.TrimSpace(opt.Language))
	lang = strings.TrimSuffix(strings.TrimPrefix(lang, "<|"), "|>")
	if !m.multilingual() || len(gen.LangToID) == 0 {
		// English-only: the reference refuses a language or task; English
		// and transcribe are what it does anyway, so only others are.
		if lang != "" && lang != "en" && lang != "english" {
			return nil, "", &InputError{Param: "language", Msg: fmt.Sprintf("this model transcribes English only; language %q is not available", opt.Language)}
		}
		if task == "translate" {
			return nil, "", &InputError{Param: "task", Msg: "this model transcribes English only; it cannot translate"}
		}
		lang = ""
	} else {
		if lang != "" {
			if code, ok := languageCodes[lang]; ok {
				lang = code
			}
			id, ok := gen.LangToID["<|"+lang+"|>"]
			if !ok {
				codes := make([]string, 0, len(gen.LangToID))
				for k := range gen.LangToID {
					codes = append(codes, strings.TrimSuffix(strings.TrimPrefix(k, "<|"), "|>"))
				}
				sort.Strings(codes)
				return nil, "", &InputError{Param: "language", Msg: fmt.Sprintf("language %q is not one this model knows (%s)", opt.Language, strings.Join(codes, ", "))}
			}
			init = append(init, id)
		}
		id, ok := gen.TaskToID[task]
		if !ok && task == "translate" {
			return nil, "", &InputError{Param: "task", Msg: "this checkpoint's generation_config.json has no translate task"}
		}
		if ok {
			init = append(init, id)
		}
	}
	if !opt.Timestamps && gen.NoTimestamps != nil {
		init = append(init, *gen.NoTimestamps)
	}
	var prefix []int32
	if p := strings.TrimSpace(opt.Prompt); p != "" {
		ids, err := m.promptIDs(p)
		if err != nil {
			return nil, "", err
		}
		prefix = ids
	}
	return append(prefix, init...), lang, nil
}

// promptIDs is the tokenizer's get_prompt_ids: <|startofprev|> and the
// tokens of " " + text. Only the last max_target_positions/2 - 1 text
// tokens are kept (openai-whisper's rule), so a long prompt leaves room to
// transcribe.
func (m *Model) promptIDs(text string) ([]int32, error) {
	gen := m.Generation
	var prev int32 = -1
	switch {
	case gen.PrevSOT != nil:
		prev = *gen.PrevSOT
	case len(gen.Suppress) >= 2:
		prev = gen.Suppress[len(gen.Suppress)-2] // the reference's fallback
	default:
		if id, ok := m.Tok.TokenID("<|startofprev|>"); ok {
			prev = id
		}
	}
	if prev < 0 {
		return nil, &InputError{Param: "prompt", Msg: "this checkpoint has no <|startofprev|> token, so it takes no prompt"}
	}
	ids := m.Tok.Encode(" "+text, false)
	for _, id := range ids {
		if id >= gen.eos {
			tok, _ := m.Tok.Token(id)
			return nil, &InputError{Param: "prompt", Msg: fmt.Sprintf("the prompt holds the special token %s", tok)}
		}
	}
	if keep := m.Config.TargetPos/2 - 1; len(ids) > keep {
		ids = ids[len(ids)-keep:]
	}
	return append([]int32{prev}, ids...), nil
}

// limit is the longest the decoder sequence may grow: generate's
// max_length (generation_config's, raised by the prompt's tokens up to
// half the decoder) within max_target_positions.
func (m *Model) limit(prefix int) int {
	t := m.Config.TargetPos
	if ml := m.Generation.MaxLength; ml > 0 {
		return min(ml+min(t/2-1, prefix), t)
	}
	return t
}

// generate decodes after prefix: the logits processors of the reference's
// generate (begin suppression, suppression, timestamp rules) and greedy or
// sampled choice. It returns the ids without the end of text and each
// one's log-probability under the processed scores.
func (m *Model) generate(ctx context.Context, prefix []int32, opt Options, logits []float32) ([]int32, []float64, error) {
	if len(prefix) >= m.Config.TargetPos {
		return nil, nil, &InputError{Param: "prompt", Msg: fmt.Sprintf("the decoder prompt is %d tokens; the model holds %d", len(prefix), m.Config.TargetPos)}
	}
	limit := m.limit(len(prefix))
	if opt.MaxTokens > 0 {
		limit = min(limit, len(prefix)+opt.MaxTokens)
	}
	var sampler *sample.Sampler
	if opt.Temperature > 0 {
		sampler = sample.New(sample.Options{Temperature: opt.Temperature, Seed: opt.Seed}, nil)
	}
	seq := slices.Clone(prefix)
	var ids []int32
	var logprobs []float64
	pos, feed := 0, prefix
	for len(seq) < limit {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if err := m.Step(ctx, feed, pos, logits); err != nil {
			return nil, nil, err
		}
		pos += len(feed)
		m.Process(logits, seq, len(prefix), opt.Timestamps)
		var id int32
		if sampler != nil {
			scaled := slices.Clone(logits)
			id = sampler.Sample(scaled)
		} else {
			id = sample.Argmax(logits)
		}
		if math.IsInf(float64(logits[id]), -1) {
			return nil, nil, fmt.Errorf("whisper: every token was suppressed at step %d", len(ids))
		}
		if id == m.Generation.eos {
			break
		}
		logprobs = append(logprobs, logSoftmaxAt(logits, id))
		ids = append(ids, id)
		seq = append(seq, id)
		feed = []int32{id}
	}
	return ids, logprobs, nil
}

// Process applies the reference's logits processors to one step's logits
// in place, in generate's order: SuppressTokensAtBegin (at the first
// generated position), SuppressTokens, then, with timestamps,
// WhisperTimeStampLogitsProcessor. seq is the decoder sequence so far and
// begin the length of its prompt.
func (m *Model) Process(logits []float32, seq []int32, begin int, timestamps bool) {
	gen := m.Generation
	ninf := float32(math.Inf(-1))
	if len(seq) == begin {
		for _, id := range gen.BeginSuppress {
			logits[id] = ninf
		}
	}
	for _, id := range gen.Suppress {
		logits[id] = ninf
	}
	if !timestamps || gen.NoTimestamps == nil {
		return
	}
	tb := int(m.TimestampBegin())
	if tb >= len(logits) {
		return
	}
	logits[*gen.NoTimestamps] = ninf
	sampled := seq[begin:]
	last := len(sampled) >= 1 && int(sampled[len(sampled)-1]) >= tb
	penultimate := len(sampled) < 2 || int(sampled[len(sampled)-2]) >= tb
	if last {
		if penultimate { // a pair is complete: text next
			fill(logits[tb:], ninf)
		} else { // a segment is open: its end, or the end of text
			fill(logits[:gen.eos], ninf)
		}
	}
	lastTS := int32(-1)
	for _, id := range sampled {
		if int(id) >= tb {
			lastTS = id
		}
	}
	if lastTS >= 0 {
		// timestamps never decrease, and a new segment never restarts at
		// the last one's end
		upto := int(lastTS)
		if !(last && !penultimate) {
			upto++
		}
		fill(logits[tb:upto], ninf)
	}
	if len(seq) == begin {
		fill(logits[:tb], ninf)
		if gen.MaxInitialTS != nil {
			if from := tb + *gen.MaxInitialTS + 1; from < len(logits) {
				fill(logits[from:], ninf)
			}
		}
	}
	// When the timestamps together are likelier than any text token, a
	// timestamp it is.
	lse := logSumExp(logits)
	tsMass := logSumExp(logits[tb:]) - lse
	maxText := math.Inf(-1)
	for _, v := range logits[:tb] {
		maxText = max(maxText, float64(v)-lse)
	}
	if tsMass > maxText {
		fill(logits[:tb], ninf)
	}
}

func fill(s []float32, v float32) {
	for i := range s {
		s[i] = v
	}
}

func logSumExp(x []float32) float64 {
	top := math.Inf(-1)
	for _, v := range x {
		top = max(top, float64(v))
	}
	if math.IsInf(top, -1) {
		return top
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - top)
	}
	return top + math.Log(s)
}

func logSoftmaxAt(x []float32, id int32) float64 { return float64(x[id]) - logSumExp(x) }

// text is the transcript of ids: their text tokens (timestamps and
// special tokens dropped).
func (m *Model) text(ids []int32) string {
	var txt []int32
	for _, id := range ids {
		if id < m.Generation.eos {
			txt = append(txt, id)
		}
	}
	return m.Tok.Decode(txt, true)
}

// segments splits the generated ids at timestamp pairs as the reference's
// _retrieve_segment does for a clip of one chunk (time offset 0).
func (m *Model) segments(ids []int32, logprobs []float64) []Segment {
	tb := m.TimestampBegin()
	isTS := func(i int) bool { return tb >= 0 && ids[i] >= tb }
	chunk := int(float64(2*m.Config.SourcePos) * timePrecisionFeatures / timePrecision)
	mk := func(from, to int, start, end float64) Segment {
		s := Segment{Start: start, End: end, Tokens: slices.Clone(ids[from:to]), Text: m.text(ids[from:to])}
		if to > from {
			var sum float64
			for _, lp := range logprobs[from:to] {
				sum += lp
			}
			s.AvgLogprob = sum / float64(to-from)
		}
		s.CompressionRatio = compressionRatio(s.Text)
		return s
	}
	n := len(ids)
	single := n >= 2 && !isTS(n-2) && isTS(n-1)
	var cuts []int
	for i := 1; i < n; i++ {
		if isTS(i-1) && isTS(i) {
			cuts = append(cuts, i)
		}
	}
	if len(cuts) == 0 {
		end := float64(chunk)
		for i := n - 1; i >= 0; i-- {
			if isTS(i) {
				if ids[i] != tb {
					end = float64(ids[i] - tb)
				}
				break
			}
		}
		return []Segment{mk(0, n, 0, end*timePrecision)}
	}
	if single {
		cuts = append(cuts, n)
	} else {
		cuts[len(cuts)-1]++
	}
	var segs []Segment
	from := 0
	for i, cut := range cuts {
		endAt := cut - 1
		if i == len(cuts)-1 && !single {
			endAt = cut - 2
		}
		start := float64(ids[from]-tb) * timePrecision
		end := float64(ids[endAt]-tb) * timePrecision
		segs = append(segs, mk(from, cut, start, end))
		from = cut
	}
	return segs
}

func compressionRatio(text string) float64 {
	if text == "" {
		return 0
	}
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	w.Write([]byte(text))
	w.Close()
	return float64(len(text)) / float64(b.Len())
}

// languageCodes maps the language names OpenAI's API and the reference
// accept onto Whisper's codes, for the common ones.
var languageCodes = map[string]string{
	"english": "en", "chinese": "zh", "german": "de", "spanish": "es", "russian": "ru", "korean": "ko",
	"french": "fr", "japanese": "ja", "portuguese": "pt", "turkish": "tr", "polish": "pl", "catalan": "ca",
	"dutch": "nl", "arabic": "ar", "swedish": "sv", "italian": "it", "indonesian": "id", "hindi": "hi",
	"finnish": "fi", "vietnamese": "vi", "hebrew": "he", "ukrainian": "uk", "greek": "el", "malay": "ms",
	"czech": "cs", "romanian": "ro", "danish": "da", "hungarian": "hu", "tamil": "ta", "norwegian": "no",
	"thai": "th", "urdu": "ur", "croatian": "hr", "bulgarian": "bg", "lithuanian": "lt", "latin": "la",
	"welsh": "cy", "slovak": "sk", "persian": "fa", "latvian": "lv", "bengali": "bn", "serbian": "sr",
	"slovenian": "sl", "estonian": "et", "icelandic": "is", "swahili": "sw", "cantonese": "yue",
}

// LanguageName is the English name of a language code, as OpenAI's
// verbose_json writes it ("en" → "english"); the code itself when it is
// not among the common ones, and "english" for "" (an English-only
// checkpoint).
func LanguageName(code string) string {
	if code == "" {
		return "english"
	}
	for name, c := range languageCodes {
		if c == code {
			return name
		}
	}
	return code
}
