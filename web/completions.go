package web

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"hearth/engine"
)

// completionRequest is POST /v1/completions (OpenAI's legacy text
// completion API).
type completionRequest struct {
	openAIParams
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"` // number of top alternatives; null = none
	Echo     bool            `json:"echo"`
	Suffix   *string         `json:"suffix"`
	BestOf   *int            `json:"best_of"`
	// ReturnTokenIDs (vLLM's extension) adds the generated ids to the choice.
	ReturnTokenIDs bool `json:"return_token_ids"`
}

// completionJob is a validated completion request.
type completionJob struct {
	target
	stream       bool
	includeUsage bool
	logprobs     bool // the client asked for logprobs
	top          int
	tokenIDs     bool
	echo         bool // the prompt is given back before the completion
	n            int  // choices, generated one after another
}

// echoed is the prompt as echo gives it back: the string the client sent,
// or its tokens' text when it sent ids.
func (job *completionJob) echoed(prompt []engine.TokenLogprob) string {
	if job.req.Prompt != "" {
		return job.req.Prompt
	}
	var b strings.Builder
	for _, lp := range prompt {
		b.WriteString(lp.Token)
	}
	return b.String()
}

// parseCompletion decodes and validates a completion request body.
func parseCompletion(body []byte) (*completionJob, error) {
	var in completionRequest
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	// echo with max_tokens 0 scores the prompt and generates nothing, as
	// OpenAI's legacy API allows (lm-eval-harness's loglikelihood).
	scoreOnly := in.Echo && in.MaxTokens != nil && *in.MaxTokens == 0
	limit := in.MaxTokens
	if scoreOnly {
		limit = nil
	}
	opt, stops, maxTokens, err := in.common(limit, "max_tokens")
	if err != nil {
		return nil, err
	}
	switch {
	case in.Suffix != nil && *in.Suffix != "":
		return nil, badRequest("suffix", "suffix: not supported (no fill-in-the-middle)")
	case in.BestOf != nil && *in.BestOf != 1:
		return nil, badRequest("best_of", "best_of: only 1 is supported, got %d", *in.BestOf)
	}
	job := &completionJob{target: target{model: in.Model}, stream: in.Stream, includeUsage: in.includeUsage(), tokenIDs: in.ReturnTokenIDs, echo: in.Echo, n: in.choices()}
	job.sampling = sampling{params: in.samplingParams, maxTemp: 2}
	job.req = engine.Request{MaxTokens: maxTokens, Stop: stops, Sample: opt, Speculative: in.Speculative}
	if err := parsePrompt(in.Prompt, &job.req); err != nil {
		return nil, err
	}
	if in.Logprobs != nil {
		n := *in.Logprobs
		if n < 0 || n > maxTopLogprobs {
			return nil, badRequest("logprobs", "logprobs: %d is out of range [0, %d]", n, maxTopLogprobs)
		}
		job.logprobs, job.top = true, n
		job.req.Logprobs, job.req.TopLogprobs = true, n
	}
	// The engine sends the prompt's tokens first (their text echoes a
	// prompt given as ids; their logprobs are asked for with logprobs).
	job.req.PromptLogprobs = in.Echo
	job.req.ScoreOnly = scoreOnly
	if job.tokenIDs {
		job.req.Logprobs = true // the ids travel with the logprobs
	}
	return job, nil
}

// parsePrompt reads prompt as the OpenAI API allows it: a string, an array
// of token ids, or a one-element array of either (batches are refused).
func parsePrompt(raw json.RawMessage, req *engine.Request) error {
	if isNull(raw) {
		return badRequest("prompt", "prompt: required (a string or an array of token ids)")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" {
			return badRequest("prompt", "prompt: must not be empty")
		}
		req.Prompt = s
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return badRequest("prompt", "prompt: expected a string or an array of token ids")
	}
	if len(items) == 0 {
		return badRequest("prompt", "prompt: must not be empty")
	}
	switch strings.TrimSpace(string(items[0]))[0] {
	case '"', '[':
		if len(items) > 1 {
			return badRequest("prompt", "prompt: a batch of %d prompts is not supported; send one prompt per request", len(items))
		}
		return parsePrompt(items[0], req)
	}
	ids := make([]int32, len(items))
	for i, it := range items {
		var f float64
		if c := it[0]; c != '-' && (c < '0' || c > '9') {
			return badRequest("prompt", "prompt[%d]: expected a token id (a non-negative integer), got %s", i, it)
		}
		if err := json.Unmarshal(it, &f); err != nil || f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
			return badRequest("prompt", "prompt[%d]: expected a token id (a non-negative integer), got %s", i, it)
		}
		ids[i] = int32(f)
	}
	req.PromptIDs = ids
	return nil
}

// completions serves POST /v1/completions.
func (s *Server) completions(c echo.Context) error {
	return serveGeneration(s, c, parseCompletion, func(r *engine.Runner, job *completionJob) error {
		return s.answerCompletion(c, r, job)
	})
}

// answerCompletion generates the completion and writes it, streamed or
// whole.
func (s *Server) answerCompletion(c echo.Context, r *engine.Runner, job *completionJob) error {
	base := completionResponse{ID: newID("cmpl-"), Object: "text_completion", Created: time.Now().Unix(), Model: r.Info().ID, SystemFingerprint: s.fingerprint()}
	if job.stream {
		return s.streamCompletion(c, r, job, base)
	}
	cs := newChoices(job.n)
	base.Choices = make([]completionChoice, cs.n)
	err := cs.run(r, func(i int) error {
		var (
			text       strings.Builder
			lps, shown []engine.TokenLogprob
		)
		return s.generate(c, r, choiceRequest(job.req, i), answer{
			kind: "completion", model: base.Model,
			emit: func(d engine.Delta) error {
				if d.PromptLogprobs != nil {
					text.WriteString(job.echoed(d.PromptLogprobs))
					shown = d.PromptLogprobs
				}
				text.WriteString(d.Content)
				lps = append(lps, d.Logprobs...)
				return nil
			},
			finish: func(u engine.Usage) error {
				ch := completionChoice{Text: text.String(), Index: i, FinishReason: strPtr(u.FinishReason)}
				job.fill(&ch, append(shown, lps...), 0)
				base.Choices[i] = ch
				cs.done(i, u)
				return nil
			},
		})
	})
	if err != nil {
		return err
	}
	base.Usage = usageOf(cs.total())
	return c.JSON(http.StatusOK, base)
}

// fill adds the logprobs and token ids the client asked for.
func (job *completionJob) fill(ch *completionChoice, lps []engine.TokenLogprob, offset int) {
	if job.logprobs {
		ch.Logprobs = completionLogprobsOf(lps, job.top, offset)
	}
	if job.tokenIDs {
		ch.TokenIDs = []int32{}
		for _, lp := range lps {
			ch.TokenIDs = append(ch.TokenIDs, lp.ID)
		}
	}
}

// streamCompletion streams text chunks, then a chunk with the finish
// reason, for each choice (interleaved where they decode together, each
// chunk with its index), then a
// usage chunk when asked for, then [DONE].
func (s *Server) streamCompletion(c echo.Context, r generator, job *completionJob, base completionResponse) error {
	w := newSSE(c)
	if job.includeUsage {
		base.Usage = nullJSON
	}
	cs := newChoices(job.n)
	err := cs.run(r, func(i int) error {
		send := func(ch completionChoice) error {
			out := base
			ch.Index = i
			out.Choices = []completionChoice{ch}
			return cs.locked(func() error { return w.data(out) })
		}
		offset := 0
		emit := func(d engine.Delta) error {
			text, lps := d.Content, d.Logprobs
			if d.PromptLogprobs != nil { // echo: the prompt's chunk comes first
				text, lps = job.echoed(d.PromptLogprobs), d.PromptLogprobs
			}
			if text == "" && len(lps) == 0 {
				return nil
			}
			ch := completionChoice{Text: text}
			job.fill(&ch, lps, offset)
			for _, lp := range lps {
				offset += len(lp.Token)
			}
			return send(ch)
		}
		finish := func(u engine.Usage) error {
			cs.done(i, u)
			return send(completionChoice{Text: "", FinishReason: strPtr(u.FinishReason)})
		}
		return s.generate(c, r, choiceRequest(job.req, i), answer{
			kind: "completion stream", model: base.Model, emit: emit, finish: finish,
			started: w.begun, fail: func(p problem) error { return cs.fail(func() error { return w.openAIError(p) }) },
		})
	})
	if err != nil || cs.stopped() || c.Request().Context().Err() != nil {
		return err
	}
	if job.includeUsage {
		out := base
		out.Choices = []completionChoice{}
		out.Usage = usageOf(cs.total())
		if err := w.data(out); err != nil {
			return err
		}
	}
	return w.done()
}
