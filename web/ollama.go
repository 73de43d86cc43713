package web

import (
	"encoding/json"
	"fmt"
	"strings"

	"hearth/engine"
)

// Ollama's native generation routes, POST /api/chat and POST
// /api/generate: request parsing. Unknown fields and options are ignored,
// as Ollama does; docs/api.md lists what is honoured and what is refused.

// ollamaCommon are the fields both routes take.
type ollamaCommon struct {
	Model     string          `json:"model"`
	Stream    *bool           `json:"stream"` // default true
	Format    json.RawMessage `json:"format"`
	Options   ollamaOptions   `json:"options"`
	Think     json.RawMessage `json:"think"`
	KeepAlive json.RawMessage `json:"keep_alive"`
	// Logprobs and TopLogprobs ask for each generated token's log
	// probability and the likeliest alternatives, as Ollama returns them.
	Logprobs    bool `json:"logprobs"`
	TopLogprobs *int `json:"top_logprobs"`
}

// ollamaOptions are the options Hearth honours. Ollama's others (num_ctx,
// num_keep, repeat_last_n, typical_p, mirostat, num_gpu, num_thread, …)
// are ignored: they tune llama.cpp, or the context, which is fixed per
// loaded model here.
type ollamaOptions struct {
	Temperature      *float64        `json:"temperature"`
	TopP             *float64        `json:"top_p"`
	TopK             *int            `json:"top_k"`
	MinP             *float64        `json:"min_p"`
	RepeatPenalty    *float64        `json:"repeat_penalty"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	Seed             *int64          `json:"seed"`        // negative = random, as in Ollama
	NumPredict       *int            `json:"num_predict"` // <= 0 = until the context is full
	Stop             json.RawMessage `json:"stop"`
}

// ollamaChatRequest is POST /api/chat.
type ollamaChatRequest struct {
	ollamaCommon
	Messages json.RawMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools"`
}

// ollamaGenerateRequest is POST /api/generate.
type ollamaGenerateRequest struct {
	ollamaCommon
	Prompt   string          `json:"prompt"`
	System   string          `json:"system"`
	Raw      bool            `json:"raw"`
	Suffix   string          `json:"suffix"`
	Template string          `json:"template"`
	Images   json.RawMessage `json:"images"`
	Context  json.RawMessage `json:"context"`
}

// ollamaJob is a validated /api/chat or /api/generate request.
type ollamaJob struct {
	target
	stream bool
	chat   bool // /api/chat: the answer is a message, not a response string
	// load is Ollama's load request (no messages, or an empty prompt):
	// load the model, or with keep_alive 0 unload it, and generate nothing.
	load bool
}

// ollamaMaxTemp bounds temperature: Ollama sets none, so this is the
// engine's own limit.
const ollamaMaxTemp = 100

// job validates the fields both routes share.
func (in *ollamaCommon) job(chat bool) (*ollamaJob, error) {
	keep, err := keepAliveOf(in.KeepAlive)
	if err != nil {
		return nil, err
	}
	job := &ollamaJob{target: target{model: in.Model, keep: keep}, stream: in.Stream == nil || *in.Stream, chat: chat}
	o := in.Options
	p := samplingParams{Temperature: o.Temperature, TopP: o.TopP, TopK: o.TopK, MinP: o.MinP,
		RepetitionPenalty: o.RepeatPenalty, PresencePenalty: o.PresencePenalty, FrequencyPenalty: o.FrequencyPenalty}
	if o.Seed != nil && *o.Seed >= 0 {
		p.Seed = o.Seed
	}
	opt, err := p.optionsAs(ollamaMaxTemp, ollamaOption)
	if err != nil {
		return nil, err
	}
	stops, err := stringList("options.stop", o.Stop, maxStops)
	if err != nil {
		return nil, err
	}
	job.sampling = sampling{params: p, maxTemp: ollamaMaxTemp}
	job.req = engine.Request{Stop: stops, Sample: opt}
	if o.NumPredict != nil && *o.NumPredict > 0 {
		job.req.MaxTokens = *o.NumPredict
	}
	if job.req.Format, err = ollamaFormat(in.Format); err != nil {
		return nil, err
	}
	if in.TopLogprobs != nil {
		if n := *in.TopLogprobs; n < 0 || n > maxTopLogprobs {
			return nil, badRequest("top_logprobs", "top_logprobs: %d is out of range [0, %d]", n, maxTopLogprobs)
		}
		job.req.TopLogprobs = *in.TopLogprobs
	}
	job.req.Logprobs = in.Logprobs || job.req.TopLogprobs > 0
	if job.req.TemplateKwargs, err = thinkKwargs(in.Think); err != nil {
		return nil, err
	}
	return job, nil
}

// ollamaOption names a sampling parameter as Ollama's options spell it.
func ollamaOption(name string) string {
	if name == "repetition_penalty" {
		name = "repeat_penalty"
	}
	return "options." + name
}

// ollamaFormat reads Ollama's format: "json" (any JSON object) or a JSON
// schema, both constrained while decoding.
func ollamaFormat(raw json.RawMessage) (*engine.Format, error) {
	if isNull(raw) || string(raw) == `""` {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s != "json" {
			return nil, badRequest("format", "format: expected \"json\" or a JSON schema object, got %q", s)
		}
		return outputFormat("format", true, nil)
	}
	if raw[0] != '{' {
		return nil, badRequest("format", "format: expected \"json\" or a JSON schema object")
	}
	return outputFormat("format", false, raw)
}

// thinkKwargs passes think to the chat template as enable_thinking (the
// variable Qwen 3 style templates read; others ignore it), and a level
// ("high", "medium", "low") also as reasoning_effort.
func thinkKwargs(raw json.RawMessage) (map[string]json.RawMessage, error) {
	if isNull(raw) {
		return nil, nil
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return map[string]json.RawMessage{"enable_thinking": mustJSON(b)}, nil
	}
	var level string
	if json.Unmarshal(raw, &level) == nil {
		switch level {
		case "high", "medium", "low":
			return map[string]json.RawMessage{"enable_thinking": mustJSON(true), "reasoning_effort": mustJSON(level)}, nil
		}
	}
	return nil, badRequest("think", "think: expected true, false, \"high\", \"medium\" or \"low\"")
}

// parseOllamaChat decodes and validates a /api/chat body.
func parseOllamaChat(body []byte) (*ollamaJob, error) {
	var in ollamaChatRequest
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	job, err := in.job(true)
	if err != nil {
		return nil, err
	}
	if err := validateTools(in.Tools); err != nil {
		return nil, err
	}
	msgs, refs, err := ollamaMessages(in.Messages)
	if err != nil {
		return nil, err
	}
	if msgs == nil {
		job.load = true
		return job, nil
	}
	job.req.Messages, job.media = msgs, refs
	if !isNullOrEmpty(in.Tools) {
		job.req.Tools = in.Tools
	}
	return job, nil
}

// ollamaMessages turns Ollama messages into the OpenAI-shaped conversation
// the chat template takes (nil for none: a load request). Ollama's
// tool_calls carry arguments as an object, as templates want them; a tool
// result's tool_name becomes name; thinking becomes reasoning_content; a
// message's images (base64, as Ollama sends them) become {"type":
// "image"} parts before its text, as Ollama places them, and are returned
// in order.
func ollamaMessages(raw json.RawMessage) (json.RawMessage, []mediaRef, error) {
	if isNull(raw) {
		return nil, nil, nil
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil, nil, badRequest("messages", "messages: expected an array of message objects")
	}
	if len(msgs) == 0 {
		return nil, nil, nil
	}
	out := make([]object, len(msgs))
	var refs []mediaRef
	for i, m := range msgs {
		at := fmt.Sprintf("messages[%d]", i)
		o, ok := parseObject(m)
		if !ok {
			return nil, nil, badRequest(at, "%s: expected an object with a role and content", at)
		}
		var (
			conv   object
			images json.RawMessage
		)
		for _, f := range o {
			switch f.key {
			case "images":
				images = f.val
			case "thinking":
				// Qwen3-style templates read an assistant message's
				// thinking as reasoning_content.
				if isNull(f.val) {
					break
				}
				if f.val[0] != '"' {
					return nil, nil, badRequest(at+".thinking", "%s.thinking: expected a string", at)
				}
				if o.get("reasoning_content") == nil {
					conv = append(conv, field{"reasoning_content", f.val})
				}
			case "tool_name":
				if o.get("name") == nil {
					conv = append(conv, field{"name", f.val})
				}
			case "tool_calls":
				calls, err := ollamaToolCalls(at+".tool_calls", f.val)
				if err != nil {
					return nil, nil, err
				}
				conv = append(conv, field{"tool_calls", calls})
			default:
				conv = append(conv, f)
			}
		}
		before := len(refs)
		norm, err := chatMessage(i, mustJSON(conv), &refs)
		if err != nil {
			return nil, nil, err
		}
		if !isNullOrEmpty(images) {
			imgs, err := ollamaImages(at+".images", images)
			if err != nil {
				return nil, nil, err
			}
			if role := string(norm.get("role")); role != `"user"` {
				return nil, nil, badRequest(at+".images", "%s.images: images are accepted in user messages only (this message's role is %s)", at, strings.Trim(role, `"`))
			}
			// The images go before the message's own parts, in the
			// conversation and in refs alike.
			norm = norm.set("content", withImages(norm.get("content"), len(imgs)))
			refs = append(refs[:before], append(imgs, refs[before:]...)...)
		}
		out[i] = norm
	}
	return mustJSON(out), refs, nil
}

// ollamaImages reads an images field: an array of base64 strings.
func ollamaImages(at string, raw json.RawMessage) ([]mediaRef, error) {
	var imgs []string
	if err := json.Unmarshal(raw, &imgs); err != nil {
		return nil, badRequest(at, "%s: expected an array of base64-encoded images", at)
	}
	refs := make([]mediaRef, len(imgs))
	for j, img := range imgs {
		iat := fmt.Sprintf("%s[%d]", at, j)
		refs[j] = mediaRef{at: iat, src: iat, kind: kindImage, data: img, bare: true}
	}
	return refs, nil
}

// withImages puts n image placeholders before a normalized content (a
// string, or a list of parts).
func withImages(content json.RawMessage, n int) json.RawMessage {
	parts := make([]json.RawMessage, 0, n+1)
	for range n {
		parts = append(parts, kindImage.placeholder())
	}
	var list []json.RawMessage
	var text string
	switch {
	case json.Unmarshal(content, &list) == nil:
		parts = append(parts, list...)
	case json.Unmarshal(content, &text) == nil && text != "":
		parts = append(parts, textPart(text))
	}
	return mustJSON(parts)
}

// ollamaToolCalls gives each call the "type": "function" OpenAI-shaped
// templates may test for; chatMessage checks the rest.
func ollamaToolCalls(at string, raw json.RawMessage) (json.RawMessage, error) {
	if isNull(raw) {
		return raw, nil
	}
	var calls []json.RawMessage
	if err := json.Unmarshal(raw, &calls); err != nil {
		return nil, badRequest(at, "%s: expected an array of tool calls", at)
	}
	out := make([]json.RawMessage, len(calls))
	for j, c := range calls {
		o, ok := parseObject(c)
		if !ok {
			return nil, badRequest(fmt.Sprintf("%s[%d]", at, j), "%s[%d]: expected an object with a function", at, j)
		}
		if o.get("type") == nil {
			o = append(object{{"type", mustJSON("function")}}, o...)
		}
		out[j] = mustJSON(o)
	}
	return mustJSON(out), nil
}

// parseOllamaGenerate decodes and validates a /api/generate body.
func parseOllamaGenerate(body []byte) (*ollamaJob, error) {
	var in ollamaGenerateRequest
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	job, err := in.job(false)
	if err != nil {
		return nil, err
	}
	switch {
	case in.Template != "":
		return nil, badRequest("template", "template: Ollama's Go templates are not supported; the model's own chat template is used (or send raw: true with a prompt you formatted)")
	case in.Suffix != "":
		return nil, badRequest("suffix", "suffix: not supported (no fill-in-the-middle)")
	case !isNullOrEmpty(in.Context):
		return nil, badRequest("context", "context: not supported (Hearth returns no context); send the conversation to /api/chat instead")
	case in.Raw && in.System != "":
		return nil, badRequest("system", "system: not used with raw: true (the prompt is sent as is); put it in the prompt")
	}
	var images []mediaRef
	if !isNullOrEmpty(in.Images) {
		if in.Raw {
			return nil, badRequest("images", "images: not used with raw: true (a raw prompt has no place for them); send them without raw, or to /api/chat")
		}
		if images, err = ollamaImages("images", in.Images); err != nil {
			return nil, err
		}
	}
	switch {
	case in.Prompt == "" && images == nil:
		job.load = true
	case in.Raw:
		job.req.Prompt = in.Prompt
	default:
		var msgs []object
		if in.System != "" {
			msgs = append(msgs, object{{"role", mustJSON("system")}, {"content", mustJSON(in.System)}})
		}
		content := mustJSON(in.Prompt)
		if images != nil {
			content = withImages(content, len(images))
		}
		msgs = append(msgs, object{{"role", mustJSON("user")}, {"content", content}})
		job.req.Messages, job.media = mustJSON(msgs), images
	}
	return job, nil
}
