package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"hearth/engine"
	"hearth/engine/toolcall"
)

// Ollama's response shapes, field for field (api.ChatResponse and
// api.GenerateResponse).
type (
	ollamaResponse struct {
		Model     string         `json:"model"`
		CreatedAt time.Time      `json:"created_at"`         // RFC 3339 with nanoseconds, UTC
		Message   *ollamaMessage `json:"message,omitempty"`  // /api/chat
		Response  *string        `json:"response,omitempty"` // /api/generate
		Thinking  string         `json:"thinking,omitempty"` // /api/generate
		Done      bool           `json:"done"`
		// Logprobs are the frame's tokens' log probabilities, when asked.
		Logprobs []ollamaLogprob `json:"logprobs,omitempty"`
		// DoneReason is stop, length, or for a request that generates
		// nothing load or unload.
		DoneReason string `json:"done_reason,omitempty"`
		*ollamaMetrics
	}
	ollamaMessage struct {
		Role      string           `json:"role"`
		Content   string           `json:"content"`
		Thinking  string           `json:"thinking,omitempty"`
		ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
	}
	ollamaToolCall struct {
		ID       string         `json:"id,omitempty"`
		Function ollamaFunction `json:"function"`
	}
	ollamaFunction struct {
		Index     int             `json:"index"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"` // an object, not JSON text as in OpenAI's API
	}
	ollamaLogprob struct {
		Token       string          `json:"token"`
		Logprob     logprob         `json:"logprob"`
		Bytes       []int           `json:"bytes,omitempty"`
		TopLogprobs []ollamaLogprob `json:"top_logprobs,omitempty"`
	}
	// ollamaMetrics end an answer; durations are in nanoseconds.
	ollamaMetrics struct {
		TotalDuration      time.Duration `json:"total_duration"`
		LoadDuration       time.Duration `json:"load_duration"`
		PromptEvalCount    int           `json:"prompt_eval_count"`
		PromptEvalDuration time.Duration `json:"prompt_eval_duration"`
		EvalCount          int           `json:"eval_count"`
		EvalDuration       time.Duration `json:"eval_duration"`
	}
)

// ollamaChat serves POST /api/chat.
func (s *Server) ollamaChat(c echo.Context) error { return s.ollama(c, parseOllamaChat) }

// ollamaGenerate serves POST /api/generate.
func (s *Server) ollamaGenerate(c echo.Context) error { return s.ollama(c, parseOllamaGenerate) }

func (s *Server) ollama(c echo.Context, parse func([]byte) (*ollamaJob, error)) error {
	start := time.Now()
	return serveGeneration(s, c, parse, func(r *engine.Runner, job *ollamaJob) error {
		if job.load {
			return s.ollamaLoad(c, job)
		}
		return s.answerOllamaRun(c, r, job, ollamaBase{model: r.Info().ID, start: start, load: job.loadTime})
	})
}

// generation is the job's target; a load request needs none (ollamaLoad
// gets or unloads the model itself).
func (j *ollamaJob) generation() *target {
	if j.load {
		return nil
	}
	return &j.target
}

// answerOllamaRun is answerOllama with the context error worded in
// Ollama's terms (num_predict).
func (s *Server) answerOllamaRun(c echo.Context, r *engine.Runner, job *ollamaJob, base ollamaBase) error {
	err := s.answerOllama(c, r, job, base)
	var ce *engine.ContextError
	if errors.As(err, &ce) && ce.MaxTokens > 0 {
		return &apiError{status: http.StatusBadRequest, param: "options.num_predict", code: "context_length_exceeded", msg: ce.Message("num_predict")}
	}
	return err
}

// ollamaLoad answers Ollama's load request (no messages, or an empty
// prompt): the model loads and stays for the request's keep_alive. With
// keep_alive 0 it is unloaded instead, and never loaded to do so.
func (s *Server) ollamaLoad(c echo.Context, job *ollamaJob) error {
	out := ollamaResponse{Done: true}
	if job.keep != nil && *job.keep == 0 {
		id, err := s.pool.Unload(job.model)
		if err != nil {
			return err
		}
		out.Model, out.DoneReason = id, "unload"
	} else {
		r, release, err := s.pool.Acquire(c.Request().Context(), job.model, job.keep)
		if err != nil {
			return err
		}
		out.Model, out.DoneReason = r.Info().ID, "load"
		release()
	}
	s.log.Info("ollama "+out.DoneReason, "model", out.Model)
	out.CreatedAt = time.Now().UTC()
	if job.chat {
		out.Message = &ollamaMessage{Role: "assistant"}
	} else {
		out.Response = strPtr("")
	}
	return c.JSON(http.StatusOK, out)
}

// ollamaBase is what every object of one answer shares.
type ollamaBase struct {
	model string
	start time.Time     // when the request arrived
	load  time.Duration // getting the model: loading it, or waiting for room
}

// answerOllama generates the answer and writes it: streamed, one object
// per line as text arrives and a last one with done: true, the reason and
// the metrics; or whole, as that last object with all the text.
func (s *Server) answerOllama(c echo.Context, g generator, job *ollamaJob, b ollamaBase) error {
	kind := "ollama generate"
	if job.chat {
		kind = "ollama chat"
	}
	var (
		text, thinking strings.Builder
		calls          []ollamaToolCall
	)
	toolCalls := func(cs []toolcall.Call) []ollamaToolCall {
		var out []ollamaToolCall
		for _, tc := range cs {
			out = append(out, ollamaToolCall{ID: tc.ID, Function: ollamaFunction{Index: len(calls), Name: tc.Name, Arguments: toolInput(tc)}})
			calls = append(calls, out[len(out)-1])
		}
		return out
	}
	frame := func(think, content string, cs []ollamaToolCall) ollamaResponse {
		out := ollamaResponse{Model: b.model, CreatedAt: time.Now().UTC()}
		if job.chat {
			out.Message = &ollamaMessage{Role: "assistant", Content: content, Thinking: think, ToolCalls: cs}
		} else {
			out.Response, out.Thinking = &content, think
		}
		return out
	}
	last := func(think, content string, cs []ollamaToolCall, u engine.Usage) ollamaResponse {
		out := frame(think, content, cs)
		out.Done, out.DoneReason = true, "stop"
		if u.FinishReason == "length" {
			out.DoneReason = "length"
		}
		out.ollamaMetrics = &ollamaMetrics{
			TotalDuration: time.Since(b.start), LoadDuration: b.load,
			PromptEvalCount: u.PromptTokens, PromptEvalDuration: u.PrefillDuration,
			EvalCount: u.CompletionTokens, EvalDuration: u.DecodeDuration,
		}
		return out
	}
	var lps []ollamaLogprob
	if !job.stream {
		return s.generate(c, g, job.req, answer{
			kind: kind, model: b.model,
			emit: func(d engine.Delta) error {
				thinking.WriteString(d.Thinking)
				text.WriteString(d.Content)
				toolCalls(d.ToolCalls)
				lps = append(lps, ollamaLogprobs(d.Logprobs)...)
				return nil
			},
			finish: func(u engine.Usage) error {
				out := last(thinking.String(), text.String(), calls, u)
				out.Logprobs = lps
				return c.JSON(http.StatusOK, out)
			},
		})
	}
	w := newNDJSON(c)
	return s.generate(c, g, job.req, answer{
		kind: kind + " stream", model: b.model,
		emit: func(d engine.Delta) error {
			if d.Thinking == "" && d.Content == "" && len(d.ToolCalls) == 0 && len(d.Logprobs) == 0 {
				return nil
			}
			out := frame(d.Thinking, d.Content, toolCalls(d.ToolCalls))
			out.Logprobs = ollamaLogprobs(d.Logprobs)
			return w.line(out)
		},
		finish:  func(u engine.Usage) error { return w.line(last("", "", nil, u)) },
		started: w.begun,
		fail:    func(p problem) error { return w.line(nativeError{Error: p.Message}) },
	})
}

// ollamaLogprobs are the engine's token logprobs as Ollama writes them:
// the token's text, its bytes, and the alternatives.
func ollamaLogprobs(lps []engine.TokenLogprob) []ollamaLogprob {
	var out []ollamaLogprob
	for _, lp := range lps {
		o := ollamaLogprob{Token: lp.Token, Logprob: logprob(lp.Logprob), Bytes: byteList(lp.Token)}
		for _, t := range lp.Top {
			o.TopLogprobs = append(o.TopLogprobs, ollamaLogprob{Token: t.Token, Logprob: logprob(t.Logprob), Bytes: byteList(t.Token)})
		}
		out = append(out, o)
	}
	return out
}
