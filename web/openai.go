package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"hearth/engine"
)

// chatRequest is POST /v1/chat/completions. Unknown fields are ignored,
// as the OpenAI API does.
type chatRequest struct {
	openAIParams
	Messages            json.RawMessage            `json:"messages"`
	MaxCompletionTokens *int                       `json:"max_completion_tokens"`
	Logprobs            *bool                      `json:"logprobs"`
	TopLogprobs         *int                       `json:"top_logprobs"`
	Tools               json.RawMessage            `json:"tools"`
	ToolChoice          json.RawMessage            `json:"tool_choice"`
	ResponseFormat      *responseFormat            `json:"response_format"`
	ChatTemplateKwargs  map[string]json.RawMessage `json:"chat_template_kwargs"`
	ReasoningEffort     *string                    `json:"reasoning_effort"`
}

type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"` // the grammar is always strict
	} `json:"json_schema"`
}

// chatJob is a validated chat request.
type chatJob struct {
	target
	stream       bool
	includeUsage bool
	n            int // choices, generated one after another
}

// maxTopLogprobs is OpenAI's bound on top_logprobs.
const maxTopLogprobs = 20

// parseChat decodes and validates a chat request body.
func parseChat(body []byte) (*chatJob, error) {
	var in chatRequest
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	maxTok, maxField := in.MaxTokens, "max_tokens"
	if in.MaxCompletionTokens != nil {
		maxTok, maxField = in.MaxCompletionTokens, "max_completion_tokens"
	}
	opt, stops, maxTokens, err := in.common(maxTok, maxField)
	if err != nil {
		return nil, err
	}
	msgs, refs, err := chatMessages(in.Messages)
	if err != nil {
		return nil, err
	}
	job := &chatJob{target: target{model: in.Model, media: refs}, stream: in.Stream, includeUsage: in.includeUsage(), n: in.choices()}
	job.sampling = sampling{params: in.samplingParams, maxTemp: 2}
	job.req = engine.Request{Messages: msgs, MaxTokens: maxTokens, Stop: stops, Sample: opt, TemplateKwargs: in.ChatTemplateKwargs, Speculative: in.Speculative}
	if in.ReasoningEffort != nil {
		if job.req.TemplateKwargs, err = effortKwargs("reasoning_effort", *in.ReasoningEffort, in.ChatTemplateKwargs); err != nil {
			return nil, err
		}
	}
	if in.Logprobs != nil && *in.Logprobs {
		job.req.Logprobs = true
	}
	if in.TopLogprobs != nil {
		n := *in.TopLogprobs
		switch {
		case n < 0 || n > maxTopLogprobs:
			return nil, badRequest("top_logprobs", "top_logprobs: %d is out of range [0, %d]", n, maxTopLogprobs)
		case n > 0 && !job.req.Logprobs:
			return nil, badRequest("top_logprobs", "top_logprobs: requires logprobs to be true")
		}
		job.req.TopLogprobs = n
	}
	if err := validateTools(in.Tools); err != nil {
		return nil, err
	}
	useTools, force, err := toolChoice(in.ToolChoice)
	if err != nil {
		return nil, err
	}
	if useTools && !isNullOrEmpty(in.Tools) {
		job.req.Tools = in.Tools
	}
	if err := checkForced(force, job.req.Tools); err != nil {
		return nil, err
	}
	job.req.ForceTool = force
	if rf := in.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", "text":
		case "json_object":
			if !strings.Contains(strings.ToLower(string(msgs)), "json") {
				return nil, badRequest("response_format", "response_format: json_object requires the word \"JSON\" in the messages (tell the model to answer in JSON)")
			}
			if job.req.Format, err = outputFormat("response_format", true, nil); err != nil {
				return nil, err
			}
		case "json_schema":
			var schema json.RawMessage
			if rf.JSONSchema != nil {
				schema = rf.JSONSchema.Schema
			}
			if job.req.Format, err = outputFormat("response_format.json_schema.schema", false, schema); err != nil {
				return nil, err
			}
		default:
			return nil, badRequest("response_format.type", "response_format.type: unknown type %q (expected text, json_object or json_schema)", rf.Type)
		}
	}
	return job, nil
}

// toolChoice reports whether tools are offered to the model, and whether
// a call is forced. "auto" (the default) offers them; "none" withholds
// them; "required" forces a call of one of them, and a named function
// ({"type": "function", "function": {"name"}}, or the Responses API's
// {"type": "function", "name"}) a call of that one: decoding is then
// constrained to the model's tool-call syntax and the tool's parameters.
func toolChoice(raw json.RawMessage) (bool, *engine.ForceTool, error) {
	if isNull(raw) {
		return true, nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		switch s {
		case "auto":
			return true, nil, nil
		case "none":
			return false, nil, nil
		case "required":
			return true, &engine.ForceTool{}, nil
		}
		return false, nil, badRequest("tool_choice", "tool_choice: unknown value %q (expected auto, none or required)", s)
	}
	var o struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return false, nil, badRequest("tool_choice", "tool_choice: expected \"auto\", \"none\", \"required\" or an object")
	}
	if o.Function != nil {
		o.Name = o.Function.Name
	}
	if o.Type != "function" || o.Name == "" {
		return false, nil, badRequest("tool_choice", "tool_choice: expected {\"type\": \"function\", \"function\": {\"name\": …}}")
	}
	return true, &engine.ForceTool{Name: o.Name}, nil
}

// checkForced refuses a forced call without tools, or of a tool not
// offered.
func checkForced(force *engine.ForceTool, tools json.RawMessage) error {
	if force == nil {
		return nil
	}
	var list []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(tools, &list); err != nil || len(list) == 0 {
		return badRequest("tool_choice", "tool_choice: forcing a tool call needs tools")
	}
	for _, t := range list {
		if force.Name == "" || t.Function.Name == force.Name {
			return nil
		}
	}
	return badRequest("tool_choice", "tool_choice: %q is not among the tools", force.Name)
}

// chat serves POST /v1/chat/completions.
func (s *Server) chat(c echo.Context) error {
	return serveGeneration(s, c, parseChat, func(r *engine.Runner, job *chatJob) error {
		base := chatChunk{ID: newID("chatcmpl-"), Object: "chat.completion.chunk", Created: time.Now().Unix(), Model: r.Info().ID, SystemFingerprint: s.fingerprint()}
		return s.answerChat(c, r, job, base)
	})
}

// answerChat generates the answer and writes it, streamed or whole: job.n
// choices (choices.go).
func (s *Server) answerChat(c echo.Context, g generator, job *chatJob, base chatChunk) error {
	if job.stream {
		return s.streamChat(c, g, job, base)
	}
	cs := newChoices(job.n)
	out := make([]chatChoice, cs.n)
	err := cs.run(g, func(i int) error {
		var (
			text, thinking strings.Builder
			calls          []toolCallBody
			lps            []engine.TokenLogprob
		)
		return s.generate(c, g, choiceRequest(job.req, i), answer{
			kind: "chat", model: base.Model,
			emit: func(d engine.Delta) error {
				thinking.WriteString(d.Thinking)
				text.WriteString(d.Content)
				for _, tc := range d.ToolCalls {
					calls = append(calls, toolCallOf(tc))
				}
				lps = append(lps, d.Logprobs...)
				return nil
			},
			finish: func(u engine.Usage) error {
				msg := chatMessageOut{Role: "assistant", ReasoningContent: thinking.String(), ToolCalls: calls}
				if text.Len() > 0 || len(calls) == 0 {
					msg.Content = strPtr(text.String())
				}
				out[i] = chatChoice{Index: i, Message: msg, Logprobs: chatLogprobsOf(lps, job.req.Logprobs), FinishReason: u.FinishReason}
				cs.done(i, u)
				return nil
			},
		})
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, chatResponse{
		ID: base.ID, Object: "chat.completion", Created: base.Created, Model: base.Model, SystemFingerprint: base.SystemFingerprint,
		Choices: out, Usage: usageOf(cs.total()),
	})
}

// streamChat streams a chat completion as OpenAI does: for each choice a
// first chunk with the role, content and tool-call deltas and a chunk with
// the finish reason (the choices' chunks interleaved where they decode
// together, each with its index), then
// a usage chunk with no choices when asked for, then [DONE].
func (s *Server) streamChat(c echo.Context, g generator, job *chatJob, base chatChunk) error {
	w := newSSE(c)
	if job.includeUsage {
		base.Usage = nullJSON
	}
	cs := newChoices(job.n)
	err := cs.run(g, func(i int) error {
		send := func(ch chunkChoice) error {
			out := base
			ch.Index = i
			out.Choices = []chunkChoice{ch}
			return cs.locked(func() error { return w.data(out) })
		}
		var (
			started bool
			nCalls  int
		)
		begin := func() error {
			if started {
				return nil
			}
			started = true
			return send(chunkChoice{Delta: chatDelta{Role: "assistant", Content: strPtr("")}})
		}
		emit := func(d engine.Delta) error {
			if err := begin(); err != nil {
				return err
			}
			if d.Thinking != "" {
				if err := send(chunkChoice{Delta: chatDelta{ReasoningContent: d.Thinking}}); err != nil {
					return err
				}
			}
			if d.Content != "" || len(d.Logprobs) > 0 {
				ch := chunkChoice{Delta: chatDelta{Content: strPtr(d.Content)}, Logprobs: chatLogprobsOf(d.Logprobs, job.req.Logprobs && len(d.Logprobs) > 0)}
				if err := send(ch); err != nil {
					return err
				}
			}
			if len(d.ToolCalls) > 0 {
				var tcs []toolCallBody
				for _, tc := range d.ToolCalls {
					b := toolCallOf(tc)
					idx := nCalls
					b.Index = &idx
					nCalls++
					tcs = append(tcs, b)
				}
				if err := send(chunkChoice{Delta: chatDelta{ToolCalls: tcs}}); err != nil {
					return err
				}
			}
			return nil
		}
		finish := func(u engine.Usage) error {
			if err := begin(); err != nil {
				return err
			}
			cs.done(i, u)
			return send(chunkChoice{Delta: chatDelta{}, FinishReason: strPtr(u.FinishReason)})
		}
		return s.generate(c, g, choiceRequest(job.req, i), answer{
			kind: "chat stream", model: base.Model, emit: emit, finish: finish,
			started: w.begun, fail: func(p problem) error { return cs.fail(func() error { return w.openAIError(p) }) },
		})
	})
	if err != nil || cs.stopped() || c.Request().Context().Err() != nil {
		return err
	}
	if job.includeUsage {
		out := base
		out.Choices = []chunkChoice{}
		out.Usage = usageOf(cs.total())
		if err := w.data(out); err != nil {
			return err
		}
	}
	return w.done()
}
