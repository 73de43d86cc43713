package web

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"hearth/engine"
	"hearth/engine/toolcall"
)

// Anthropic response shapes.

type messageBody struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"` // "message"
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []contentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        anthropicUsage `json:"usage"`
}

type contentBlock struct {
	Type      string          `json:"type"` // "thinking", "text" or "tool_use"
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"` // always "": nothing is signed
	Text      *string         `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

type anthropicUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Stream events, fields in Anthropic's order.
type (
	messageStart struct {
		Type    string      `json:"type"`
		Message messageBody `json:"message"`
	}
	blockStart struct {
		Type         string       `json:"type"`
		Index        int          `json:"index"`
		ContentBlock contentBlock `json:"content_block"`
	}
	blockDelta struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta any    `json:"delta"`
	}
	textDelta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	thinkingDelta struct {
		Type     string `json:"type"`
		Thinking string `json:"thinking"`
	}
	jsonDelta struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	}
	blockStop struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}
	messageDelta struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   string  `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage anthropicUsage `json:"usage"`
	}
	messageStop struct {
		Type string `json:"type"`
	}
)

// stopReason maps the engine's finish reason: a stop string the client
// sent is stop_sequence, the model's end of turn end_turn.
func stopReason(u engine.Usage) string {
	switch {
	case u.FinishReason == "length":
		return "max_tokens"
	case u.FinishReason == "tool_calls":
		return "tool_use"
	case u.StopSequence != "":
		return "stop_sequence"
	}
	return "end_turn"
}

// stopSequence is the stop string that ended the answer, or nil.
func stopSequence(u engine.Usage) *string {
	if u.StopSequence == "" {
		return nil
	}
	return strPtr(u.StopSequence)
}

// toolInput is a call's arguments as the JSON object Anthropic's input
// field holds.
func toolInput(c toolcall.Call) json.RawMessage {
	a := strings.TrimSpace(argsText(c))
	if strings.HasPrefix(a, "{") && json.Valid([]byte(a)) {
		return json.RawMessage(a)
	}
	return json.RawMessage("{}")
}

func thinkingBlock(text string) contentBlock {
	return contentBlock{Type: "thinking", Thinking: &text, Signature: strPtr("")}
}

func toolUseBlock(c toolcall.Call) contentBlock {
	return contentBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: toolInput(c)}
}

// messages serves POST /v1/messages.
func (s *Server) messages(c echo.Context) error {
	return serveGeneration(s, c, parseMessages, func(r *engine.Runner, job *messagesJob) error {
		msg := messageBody{ID: newID("msg_"), Type: "message", Role: "assistant", Model: r.Info().ID, Content: []contentBlock{}}
		return s.answerMessages(c, r, job, msg)
	})
}

// answerMessages generates the answer and writes it, streamed or whole.
func (s *Server) answerMessages(c echo.Context, g generator, job *messagesJob, msg messageBody) error {
	if job.stream {
		return s.streamMessages(c, g, job, msg)
	}
	var (
		text, thinking strings.Builder
		calls          []contentBlock
	)
	return s.generate(c, g, job.req, answer{
		kind: "messages", model: msg.Model,
		emit: func(d engine.Delta) error {
			thinking.WriteString(d.Thinking)
			text.WriteString(d.Content)
			for _, tc := range d.ToolCalls {
				calls = append(calls, toolUseBlock(tc))
			}
			return nil
		},
		finish: func(u engine.Usage) error {
			if thinking.Len() > 0 {
				msg.Content = append(msg.Content, thinkingBlock(thinking.String()))
			}
			if text.Len() > 0 {
				msg.Content = append(msg.Content, contentBlock{Type: "text", Text: strPtr(text.String())})
			}
			msg.Content = append(msg.Content, calls...)
			msg.StopReason = strPtr(stopReason(u))
			msg.StopSequence = stopSequence(u)
			msg.Usage = anthropicUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
			return c.JSON(http.StatusOK, msg)
		},
	})
}

// streamMessages streams Anthropic's events: message_start, then per
// block content_block_start, content_block_delta (thinking_delta,
// text_delta or input_json_delta), content_block_stop, then message_delta
// with the stop reason and usage, and message_stop.
//
// The prompt's token count is known only when generation ends, so
// message_start reports input_tokens 0 and message_delta carries the real
// count (as Anthropic's own message_delta usage may).
func (s *Server) streamMessages(c echo.Context, g generator, job *messagesJob, msg messageBody) error {
	w := newSSE(c)
	var (
		started bool
		index   = -1
		open    string // the type of the open thinking or text block, if any
	)
	begin := func() error {
		if started {
			return nil
		}
		started = true
		start := msg
		start.Usage = anthropicUsage{}
		return w.event("message_start", messageStart{Type: "message_start", Message: start})
	}
	closeBlock := func() error {
		if open == "" {
			return nil
		}
		open = ""
		return w.event("content_block_stop", blockStop{Type: "content_block_stop", Index: index})
	}
	// into opens a block of the type of b unless one is open, and sends delta.
	into := func(b contentBlock, delta any) error {
		if open != b.Type {
			if err := closeBlock(); err != nil {
				return err
			}
			open = b.Type
			index++
			if err := w.event("content_block_start", blockStart{Type: "content_block_start", Index: index, ContentBlock: b}); err != nil {
				return err
			}
		}
		return w.event("content_block_delta", blockDelta{Type: "content_block_delta", Index: index, Delta: delta})
	}
	emit := func(d engine.Delta) error {
		if err := begin(); err != nil {
			return err
		}
		if d.Thinking != "" {
			if err := into(thinkingBlock(""), thinkingDelta{Type: "thinking_delta", Thinking: d.Thinking}); err != nil {
				return err
			}
		}
		if d.Content != "" {
			if err := into(contentBlock{Type: "text", Text: strPtr("")}, textDelta{Type: "text_delta", Text: d.Content}); err != nil {
				return err
			}
		}
		for _, tc := range d.ToolCalls {
			if err := closeBlock(); err != nil {
				return err
			}
			index++
			events := []struct {
				name string
				body any
			}{
				{"content_block_start", blockStart{Type: "content_block_start", Index: index,
					ContentBlock: contentBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: json.RawMessage("{}")}}},
				{"content_block_delta", blockDelta{Type: "content_block_delta", Index: index,
					Delta: jsonDelta{Type: "input_json_delta", PartialJSON: string(toolInput(tc))}}},
				{"content_block_stop", blockStop{Type: "content_block_stop", Index: index}},
			}
			for _, e := range events {
				if err := w.event(e.name, e.body); err != nil {
					return err
				}
			}
		}
		return nil
	}
	finish := func(u engine.Usage) error {
		if err := begin(); err != nil {
			return err
		}
		if err := closeBlock(); err != nil {
			return err
		}
		delta := messageDelta{Type: "message_delta", Usage: anthropicUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}}
		delta.Delta.StopReason = stopReason(u)
		delta.Delta.StopSequence = stopSequence(u)
		if err := w.event("message_delta", delta); err != nil {
			return err
		}
		return w.event("message_stop", messageStop{Type: "message_stop"})
	}
	return s.generate(c, g, job.req, answer{
		kind: "messages stream", model: msg.Model, emit: emit, finish: finish,
		started: w.begun, fail: func(p problem) error { return w.event("error", errorBody(dialectAnthropic, p)) },
	})
}
