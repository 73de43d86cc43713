package web

import (
	"encoding/json"
	"fmt"
	"strings"

	"hearth/engine"
)

// messagesRequest is POST /v1/messages (Anthropic's Messages API).
type messagesRequest struct {
	Model         string          `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	Messages      json.RawMessage `json:"messages"`
	System        json.RawMessage `json:"system"`
	StopSequences []string        `json:"stop_sequences"`
	Stream        bool            `json:"stream"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	Tools         json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	// Thinking is {"type": "enabled", "budget_tokens"}, {"type":
	// "adaptive"} or {"type": "disabled"}: the chat template's
	// enable_thinking, and a cap on the thinking's tokens.
	Thinking *struct {
		Type   string `json:"type"`
		Budget *int   `json:"budget_tokens"`
	} `json:"thinking"`
}

// messagesJob is a validated Messages request.
type messagesJob struct {
	target
	stream bool
}

// block is one Anthropic content block (the fields of every kind we read).
type block struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	Source    json.RawMessage `json:"source"`   // an image block's
	Thinking  *string         `json:"thinking"` // a thinking block's
}

// parseMessages decodes and validates a Messages request and turns it into
// the OpenAI-shaped conversation the chat template takes.
func parseMessages(body []byte) (*messagesJob, error) {
	var in messagesRequest
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	if in.MaxTokens == nil {
		return nil, badRequest("max_tokens", "max_tokens: required")
	}
	if *in.MaxTokens < 1 {
		return nil, badRequest("max_tokens", "max_tokens: must be at least 1, got %d", *in.MaxTokens)
	}
	p := samplingParams{Temperature: in.Temperature, TopP: in.TopP, TopK: in.TopK}
	opt, err := p.options(1)
	if err != nil {
		return nil, err
	}
	if len(in.StopSequences) > maxStops {
		return nil, badRequest("stop_sequences", "stop_sequences: at most %d are allowed, got %d", maxStops, len(in.StopSequences))
	}
	var stops []string
	for _, s := range in.StopSequences {
		if s != "" {
			stops = append(stops, s)
		}
	}
	msgs, tools, refs, err := in.prompt()
	if err != nil {
		return nil, err
	}
	job := &messagesJob{target: target{model: in.Model, media: refs}, stream: in.Stream}
	job.sampling = sampling{params: p, maxTemp: 1}
	job.req = engine.Request{Messages: msgs, Tools: tools, MaxTokens: *in.MaxTokens, Stop: stops, Sample: opt}
	if th := in.Thinking; th != nil {
		switch th.Type {
		case "enabled", "adaptive", "disabled":
			job.req.TemplateKwargs = map[string]json.RawMessage{"enable_thinking": mustJSON(th.Type != "disabled")}
		default:
			return nil, badRequest("thinking.type", "thinking.type: expected enabled, adaptive or disabled, got %q", th.Type)
		}
		if b := th.Budget; b != nil && th.Type == "enabled" {
			if *b < 1 || *b >= job.req.MaxTokens {
				return nil, badRequest("thinking.budget_tokens", "thinking.budget_tokens: from 1 to less than max_tokens (%d), got %d", job.req.MaxTokens, *b)
			}
			job.req.ThinkingBudget = *b
		}
	}
	if job.req.ForceTool, err = in.forceTool(); err != nil {
		return nil, err
	}
	if err := checkForced(job.req.ForceTool, tools); err != nil {
		return nil, err
	}
	return job, nil
}

// forceTool reads tool_choice "any" (a call of some tool) and "tool" (of
// the one named), which force a call; prompt has checked the type.
func (in *messagesRequest) forceTool() (*engine.ForceTool, error) {
	var tc struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if isNull(in.ToolChoice) || json.Unmarshal(in.ToolChoice, &tc) != nil {
		return nil, nil
	}
	switch tc.Type {
	case "any":
		return &engine.ForceTool{}, nil
	case "tool":
		if tc.Name == "" {
			return nil, badRequest("tool_choice.name", "tool_choice.name: a tool choice of type tool names the tool")
		}
		return &engine.ForceTool{Name: tc.Name}, nil
	}
	return nil, nil
}

// prompt is what the chat template renders of a Messages request (or a
// count_tokens one): the conversation, the tools unless tool_choice is
// none (nil when there are none), and the images in it.
func (in *messagesRequest) prompt() (msgs, tools json.RawMessage, refs []mediaRef, err error) {
	msgs, refs, err = anthropicConversation(in.System, in.Messages)
	if err != nil {
		return nil, nil, nil, err
	}
	useTools := true
	if !isNull(in.ToolChoice) {
		var tc struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(in.ToolChoice, &tc); err != nil {
			return nil, nil, nil, badRequest("tool_choice", "tool_choice: expected an object with a type")
		}
		switch tc.Type {
		case "auto":
		case "none":
			useTools = false
		case "any", "tool": // forced: see forceTool
		default:
			return nil, nil, nil, badRequest("tool_choice.type", "tool_choice.type: unknown value %q", tc.Type)
		}
	}
	if tools, err = anthropicTools(in.Tools); err != nil {
		return nil, nil, nil, err
	}
	if !useTools {
		tools = nil
	}
	return msgs, tools, refs, nil
}

// anthropicTools converts [{name, description, input_schema}] to OpenAI
// function tools.
func anthropicTools(raw json.RawMessage) (json.RawMessage, error) {
	if isNull(raw) {
		return nil, nil
	}
	var tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description *string         `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, badRequest("tools", "tools: expected an array of {name, description, input_schema}")
	}
	if len(tools) == 0 {
		return nil, nil
	}
	out := make([]object, len(tools))
	for i, t := range tools {
		at := fmt.Sprintf("tools[%d]", i)
		if t.Type != "" && t.Type != "custom" {
			return nil, badRequest(at+".type", "%s.type: server tool %q is not supported", at, t.Type)
		}
		if t.Name == "" {
			return nil, badRequest(at+".name", "%s.name: required", at)
		}
		fn := object{{"name", mustJSON(t.Name)}}
		if t.Description != nil {
			fn = append(fn, field{"description", mustJSON(*t.Description)})
		}
		schema := t.InputSchema
		if isNull(schema) {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		fn = append(fn, field{"parameters", schema})
		out[i] = object{{"type", mustJSON("function")}, {"function", mustJSON(fn)}}
	}
	return mustJSON(out), nil
}

// anthropicConversation turns system + messages into OpenAI messages:
// system becomes a system message, tool_use blocks assistant tool_calls,
// tool_result blocks tool messages (placed before the user text of the
// same turn), and image blocks {"type": "image"} parts, whose sources it
// returns in order.
func anthropicConversation(system, raw json.RawMessage) (json.RawMessage, []mediaRef, error) {
	var out []object
	if !isNull(system) {
		text, err := blockText("system", system)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, object{{"role", mustJSON("system")}, {"content", mustJSON(text)}})
	}
	if isNull(raw) {
		return nil, nil, badRequest("messages", "messages: required (an array of at least one message)")
	}
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil, nil, badRequest("messages", "messages: expected an array of {role, content}")
	}
	if len(msgs) == 0 {
		return nil, nil, badRequest("messages", "messages: at least one message is required")
	}
	var refs []mediaRef
	for i, m := range msgs {
		at := fmt.Sprintf("messages[%d]", i)
		if m.Role != "user" && m.Role != "assistant" {
			return nil, nil, badRequest(at+".role", "%s.role: expected user or assistant, got %q", at, m.Role)
		}
		if isNull(m.Content) {
			return nil, nil, badRequest(at+".content", "%s.content: required", at)
		}
		if m.Content[0] == '"' {
			var s string
			json.Unmarshal(m.Content, &s)
			out = append(out, object{{"role", mustJSON(m.Role)}, {"content", mustJSON(s)}})
			continue
		}
		var blocks []block
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return nil, nil, badRequest(at+".content", "%s.content: expected a string or an array of content blocks", at)
		}
		msgs, err := anthropicTurn(at, m.Role, blocks, &refs)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, msgs...)
	}
	return mustJSON(out), refs, nil
}

// anthropicTurn converts one message's blocks, adding its images to refs.
func anthropicTurn(at, role string, blocks []block, refs *[]mediaRef) ([]object, error) {
	var (
		texts []string
		parts []json.RawMessage // text and image parts, once the turn has an image
		calls []object
		tools []object
		think []string
	)
	for j, b := range blocks {
		bat := fmt.Sprintf("%s.content[%d]", at, j)
		switch b.Type {
		case "text":
			if b.Text == nil {
				return nil, badRequest(bat+".text", "%s.text: required", bat)
			}
			texts = append(texts, *b.Text)
			parts = append(parts, textPart(*b.Text))
		case "image":
			if role != "user" {
				return nil, badRequest(bat, "%s: image blocks belong to user messages", bat)
			}
			ref, err := anthropicImage(bat, b.Source)
			if err != nil {
				return nil, err
			}
			*refs = append(*refs, ref)
			parts = append(parts, kindImage.placeholder())
		case "tool_use":
			if role != "assistant" {
				return nil, badRequest(bat, "%s: tool_use blocks belong to assistant messages", bat)
			}
			input := b.Input
			if isNull(input) {
				input = json.RawMessage("{}")
			}
			if input[0] != '{' {
				return nil, badRequest(bat+".input", "%s.input: expected an object", bat)
			}
			fn := object{{"name", mustJSON(b.Name)}, {"arguments", input}}
			calls = append(calls, object{{"id", mustJSON(b.ID)}, {"type", mustJSON("function")}, {"function", mustJSON(fn)}})
		case "tool_result":
			if role != "user" {
				return nil, badRequest(bat, "%s: tool_result blocks belong to user messages", bat)
			}
			text := ""
			if !isNull(b.Content) {
				var err error
				if text, err = blockText(bat+".content", b.Content); err != nil {
					return nil, err
				}
			}
			tools = append(tools, object{{"role", mustJSON("tool")}, {"tool_call_id", mustJSON(b.ToolUseID)}, {"content", mustJSON(text)}})
		case "thinking":
			// The template decides whether to show it (Qwen3's shows the
			// thinking of the turn being answered only).
			if role == "assistant" && b.Thinking != nil && *b.Thinking != "" {
				think = append(think, *b.Thinking)
			}
		case "redacted_thinking":
			// Encrypted by Anthropic: nothing a local model can read.
		case "audio", "input_audio":
			return nil, audioRefused(bat, fmt.Sprintf("an %q block", b.Type))
		case "document", "search_result":
			if mt := audioSource(b.Source); b.Type == "document" && mt != "" {
				return nil, audioRefused(bat, "a document of media type "+mt)
			}
			return nil, badRequest(bat, "%s: %s content is not supported yet (text and images only)", bat, b.Type)
		default:
			return nil, badRequest(bat+".type", "%s.type: unknown content block type %q", bat, b.Type)
		}
	}
	out := tools
	hasImage := len(parts) > len(texts)
	if len(texts) > 0 || len(calls) > 0 || len(tools) == 0 || hasImage {
		content := mustJSON(strings.Join(texts, "\n"))
		if hasImage {
			content = mustJSON(parts)
		}
		m := withReasoning(object{{"role", mustJSON(role)}, {"content", content}}, strings.Join(think, "\n"))
		if len(calls) > 0 {
			m = append(m, field{"tool_calls", mustJSON(calls)})
		}
		out = append(out, m)
	}
	return out, nil
}

// audioRefused is the 400 of audio sent to /v1/messages: Anthropic's API
// has no audio block, so clients invent their own; the one route that
// takes audio is OpenAI's.
func audioRefused(at, what string) error {
	return badRequest(at, "%s: the Anthropic Messages API has no audio content (got %s); send audio to /v1/chat/completions as an input_audio part ({\"type\": \"input_audio\", \"input_audio\": {\"data\": <base64>, \"format\": \"wav\"}})", at, what)
}

// audioSource is a document block's media type when its source says it
// is audio (audio/…), else "".
func audioSource(raw json.RawMessage) string {
	var src struct {
		MediaType string `json:"media_type"`
	}
	if isNull(raw) || json.Unmarshal(raw, &src) != nil {
		return ""
	}
	if mt := strings.ToLower(strings.TrimSpace(src.MediaType)); strings.HasPrefix(mt, "audio/") {
		return mt
	}
	return ""
}

// anthropicImage reads an image block's source: {"type": "base64",
// "media_type", "data"}, or {"type": "url", "url"} (fetched when the
// server allows it).
func anthropicImage(at string, raw json.RawMessage) (mediaRef, error) {
	var src struct {
		Type      string  `json:"type"`
		MediaType string  `json:"media_type"`
		Data      *string `json:"data"`
		URL       *string `json:"url"`
	}
	if isNull(raw) || json.Unmarshal(raw, &src) != nil {
		return mediaRef{}, badRequest(at+".source", "%s.source: required ({\"type\": \"base64\", \"media_type\": \"image/png\", \"data\": …})", at)
	}
	switch src.Type {
	case "base64":
		if src.Data == nil {
			return mediaRef{}, badRequest(at+".source.data", "%s.source.data: required (the image as base64)", at)
		}
		return mediaRef{at: at, src: at + ".source.data", kind: kindImage, data: *src.Data, bare: true}, nil
	case "url":
		if src.URL == nil {
			return mediaRef{}, badRequest(at+".source.url", "%s.source.url: required", at)
		}
		if scheme, _, _ := strings.Cut(*src.URL, ":"); !strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") {
			return mediaRef{}, badRequest(at+".source.url", "%s.source.url: expected an http(s) URL", at)
		}
		return mediaRef{at: at, src: at + ".source.url", kind: kindImage, data: *src.URL}, nil
	case "file":
		return mediaRef{}, badRequest(at+".source.type", "%s.source.type: file sources are not supported (Hearth keeps no files); send the image as base64", at)
	}
	return mediaRef{}, badRequest(at+".source.type", "%s.source.type: expected base64 or url, got %q", at, src.Type)
}

// blockText reads a string or an array of text blocks as one string.
func blockText(at string, raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var blocks []block
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", badRequest(at, "%s: expected a string or an array of text blocks", at)
	}
	texts := make([]string, 0, len(blocks))
	for j, b := range blocks {
		if b.Type != "text" || b.Text == nil {
			return "", badRequest(fmt.Sprintf("%s[%d]", at, j), "%s[%d]: only text blocks are supported here, got %q", at, j, b.Type)
		}
		texts = append(texts, *b.Text)
	}
	return strings.Join(texts, "\n"), nil
}
