package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"hearth/engine"
)

// POST /v1/responses: OpenAI's Responses API, on the chat machinery. The
// input items become the OpenAI-shaped conversation the chat template
// takes (as /v1/chat/completions sends it), the function tools become chat
// tools, and the answer's deltas become output items: one "message" item
// for the text, one "function_call" item per tool call. Hearth keeps no
// state between requests, so what needs stored responses is refused.

// responsesRequest is POST /v1/responses. Unknown fields are ignored, as
// on the other OpenAI routes; a field that needs what Hearth does not have
// (stored responses, built-in tools, background runs) is refused with a
// 400 that names it.
type responsesRequest struct {
	Model              string              `json:"model"`
	Input              json.RawMessage     `json:"input"`
	Instructions       json.RawMessage     `json:"instructions"`
	Tools              json.RawMessage     `json:"tools"`
	ToolChoice         json.RawMessage     `json:"tool_choice"`
	ParallelToolCalls  *bool               `json:"parallel_tool_calls"`
	MaxToolCalls       *int                `json:"max_tool_calls"` // bounds built-in tool calls: none here
	Temperature        *float64            `json:"temperature"`
	TopP               *float64            `json:"top_p"`
	TopLogprobs        *int                `json:"top_logprobs"`
	MaxOutputTokens    *int                `json:"max_output_tokens"`
	Stream             bool                `json:"stream"`
	Store              *bool               `json:"store"`
	Include            []string            `json:"include"`
	Text               *responsesText      `json:"text"`
	Reasoning          *responsesReasoning `json:"reasoning"`
	Truncation         *string             `json:"truncation"`
	Metadata           json.RawMessage     `json:"metadata"`
	User               *string             `json:"user"`
	PreviousResponseID *string             `json:"previous_response_id"`
	Conversation       json.RawMessage     `json:"conversation"`
	Prompt             json.RawMessage     `json:"prompt"`
	Background         *bool               `json:"background"`
}

type responsesText struct {
	Format *struct {
		Type   string          `json:"type"`
		Name   string          `json:"name"`   // json_schema's
		Schema json.RawMessage `json:"schema"` // json_schema's
		Strict *bool           `json:"strict"` // the grammar is always strict
	} `json:"format"`
	Verbosity *string `json:"verbosity"` // a hint to OpenAI's models; ignored
}

type responsesReasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// responsesJob is a validated Responses request.
type responsesJob struct {
	target
	stream   bool
	maxCalls int // parallel_tool_calls false: 1; 0 = no limit
	echo     responseObject
}

// includeValues are the include values the API knows. Hearth produces
// only message and function_call items, so all but the logprobs have
// nothing to add.
var includeValues = map[string]bool{
	"message.output_text.logprobs":          true,
	"reasoning.encrypted_content":           true,
	"message.input_image.image_url":         true,
	"computer_call_output.output.image_url": true,
	"file_search_call.results":              true,
	"web_search_call.results":               true,
	"web_search_call.action.sources":        true,
	"code_interpreter_call.outputs":         true,
}

// parseResponses decodes and validates a Responses request body.
func parseResponses(body []byte) (*responsesJob, error) {
	var in responsesRequest
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	const send = "send the whole conversation in input (earlier output items included)"
	switch {
	case in.PreviousResponseID != nil && *in.PreviousResponseID != "":
		return nil, badRequest("previous_response_id", "previous_response_id: not supported: Hearth keeps no responses to continue; "+send)
	case !isNull(in.Conversation):
		return nil, badRequest("conversation", "conversation: not supported: Hearth keeps no conversations; "+send)
	case in.Store != nil && *in.Store:
		return nil, badRequest("store", "store: true is not supported: Hearth keeps no responses to retrieve; send store: false or leave it out")
	case in.Background != nil && *in.Background:
		return nil, badRequest("background", "background: true is not supported (no stored responses to poll); stream the response instead")
	case !isNull(in.Prompt):
		return nil, badRequest("prompt", "prompt: stored prompt templates are not supported; send instructions and input")
	case in.Truncation != nil && *in.Truncation == "auto":
		return nil, badRequest("truncation", "truncation: \"auto\" is not supported: Hearth never drops the start of a conversation (a prompt that does not fit is refused); use \"disabled\"")
	case in.Truncation != nil && *in.Truncation != "disabled":
		return nil, badRequest("truncation", "truncation: unknown value %q (expected disabled)", *in.Truncation)
	case in.MaxOutputTokens != nil && *in.MaxOutputTokens < 1:
		return nil, badRequest("max_output_tokens", "max_output_tokens: must be at least 1, got %d", *in.MaxOutputTokens)
	case in.MaxToolCalls != nil && *in.MaxToolCalls < 0:
		return nil, badRequest("max_tool_calls", "max_tool_calls: must not be negative, got %d", *in.MaxToolCalls)
	}
	p := samplingParams{Temperature: in.Temperature, TopP: in.TopP}
	opt, err := p.options(2)
	if err != nil {
		return nil, err
	}
	job := &responsesJob{target: target{model: in.Model}, stream: in.Stream}
	job.sampling = sampling{params: p, maxTemp: 2}
	job.req = engine.Request{Sample: opt}
	if in.MaxOutputTokens != nil {
		job.req.MaxTokens = *in.MaxOutputTokens
	}
	for i, v := range in.Include {
		if !includeValues[v] {
			return nil, badRequest(fmt.Sprintf("include[%d]", i), "include[%d]: unknown value %q", i, v)
		}
		if v == "message.output_text.logprobs" {
			job.req.Logprobs = true
		}
	}
	if n := in.TopLogprobs; n != nil {
		if *n < 0 || *n > maxTopLogprobs {
			return nil, badRequest("top_logprobs", "top_logprobs: %d is out of range [0, %d]", *n, maxTopLogprobs)
		}
		job.req.TopLogprobs = *n
		job.req.Logprobs = job.req.Logprobs || *n > 0
	}
	format := "text"
	if in.Text != nil && in.Text.Format != nil {
		format = in.Text.Format.Type
	}
	if r := in.Reasoning; r != nil && r.Effort != nil {
		if job.req.TemplateKwargs, err = effortKwargs("reasoning.effort", *r.Effort, nil); err != nil {
			return nil, err
		}
	}
	instructions, err := responsesInstructions(in.Instructions)
	if err != nil {
		return nil, err
	}
	msgs, refs, err := responsesConversation(instructions, in.Input)
	if err != nil {
		return nil, err
	}
	job.req.Messages, job.media = msgs, refs
	switch format {
	case "text":
	case "json_object":
		if !strings.Contains(strings.ToLower(string(msgs)), "json") {
			return nil, badRequest("text.format", "text.format: json_object requires the word \"JSON\" in the input or instructions (tell the model to answer in JSON)")
		}
		if job.req.Format, err = outputFormat("text.format", true, nil); err != nil {
			return nil, err
		}
	case "json_schema":
		if job.req.Format, err = outputFormat("text.format.schema", false, in.Text.Format.Schema); err != nil {
			return nil, err
		}
	default:
		return nil, badRequest("text.format.type", "text.format.type: unknown type %q (expected text, json_object or json_schema)", format)
	}
	tools, err := responsesTools(in.Tools)
	if err != nil {
		return nil, err
	}
	useTools, force, err := toolChoice(in.ToolChoice)
	if err != nil {
		return nil, err
	}
	if useTools {
		job.req.Tools = tools
	}
	if err := checkForced(force, job.req.Tools); err != nil {
		return nil, err
	}
	job.req.ForceTool = force
	parallel := in.ParallelToolCalls == nil || *in.ParallelToolCalls
	if !parallel {
		job.maxCalls = 1
	}

	e := &job.echo
	e.Instructions, e.MaxOutputTokens, e.MaxToolCalls, e.ParallelToolCalls = instructions, in.MaxOutputTokens, in.MaxToolCalls, parallel
	e.Text.Format.Type, e.Truncation, e.User, e.TopLogprobs = format, "disabled", in.User, job.req.TopLogprobs
	e.ToolChoice, e.Tools, e.Metadata = json.RawMessage(`"auto"`), json.RawMessage("[]"), json.RawMessage("{}")
	if !isNull(in.ToolChoice) {
		e.ToolChoice = in.ToolChoice
	}
	if !isNull(in.Tools) {
		e.Tools = in.Tools
	}
	if !isNull(in.Metadata) {
		e.Metadata = in.Metadata
	}
	if r := in.Reasoning; r != nil {
		e.Reasoning.Effort = r.Effort
	}
	return job, nil
}

// responsesInstructions reads instructions: a string (the system message)
// or nothing.
func responsesInstructions(raw json.RawMessage) (*string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, badRequest("instructions", "instructions: expected a string")
	}
	return &s, nil
}

// inputItem is one item of a Responses input list (the fields of every
// kind read here).
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // JSON text; an object is taken too
	Output    json.RawMessage `json:"output"`
	Summary   json.RawMessage `json:"summary"` // a reasoning item's
}

// reasoningText is a reasoning item's text: its reasoning_text parts, else
// its summary's text (OpenAI's own items carry only a summary).
func reasoningText(it inputItem) string {
	var parts []struct {
		Text string `json:"text"`
	}
	for _, raw := range []json.RawMessage{it.Content, it.Summary} {
		if json.Unmarshal(raw, &parts) != nil {
			continue
		}
		var texts []string
		for _, p := range parts {
			if p.Text != "" {
				texts = append(texts, p.Text)
			}
		}
		if len(texts) > 0 {
			return strings.Join(texts, "\n")
		}
	}
	return ""
}

// inputRoles maps a message item's role to the chat template's.
var inputRoles = map[string]string{"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}

// responsesConversation turns instructions and input into OpenAI-shaped
// chat messages: instructions become the system message; a string input
// one user message; message items messages (text parts joined with "\n",
// developer as system); function_call items the tool_calls of an assistant
// message (the one just before, or a new one), with their arguments as the
// object templates print; function_call_output items tool messages, named
// after their call; a reasoning item the reasoning_content of the
// assistant message after it. input_image parts become {"type": "image"}
// parts, whose sources it returns in order.
func responsesConversation(instructions *string, raw json.RawMessage) (json.RawMessage, []mediaRef, error) {
	var out []object
	if instructions != nil {
		out = append(out, object{{"role", mustJSON("system")}, {"content", mustJSON(*instructions)}})
	}
	if isNull(raw) {
		return nil, nil, badRequest("input", "input: required (a string or an array of input items)")
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		out = append(out, object{{"role", mustJSON("user")}, {"content", mustJSON(text)}})
		return mustJSON(out), nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, nil, badRequest("input", "input: expected a string or an array of input items")
	}
	if len(items) == 0 {
		return nil, nil, badRequest("input", "input: at least one item is required")
	}
	names := map[string]string{} // call_id → function name
	var refs []mediaRef
	thought := "" // a reasoning item's text, for the next assistant message
	for j, rawItem := range items {
		at := fmt.Sprintf("input[%d]", j)
		var it inputItem
		if len(rawItem) == 0 || rawItem[0] != '{' {
			return nil, nil, badRequest(at, "%s: expected an input item object", at)
		}
		if err := json.Unmarshal(rawItem, &it); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				return nil, nil, badRequest(at+"."+te.Field, "%s.%s: expected %s, got %s", at, te.Field, goKind(te.Type), jsonKind(te.Value))
			}
			return nil, nil, badRequest(at, "%s: expected an input item object", at)
		}
		switch it.Type {
		case "", "message":
			role, ok := inputRoles[it.Role]
			if !ok {
				return nil, nil, badRequest(at+".role", "%s.role: expected user, assistant, system or developer, got %q", at, it.Role)
			}
			content, err := inputContent(at+".content", role, it.Content, &refs)
			if err != nil {
				return nil, nil, err
			}
			m := object{{"role", mustJSON(role)}, {"content", content}}
			if role == "assistant" {
				m, thought = withReasoning(m, thought), ""
			}
			out = append(out, m)
		case "function_call":
			if it.CallID == "" {
				return nil, nil, badRequest(at+".call_id", "%s.call_id: required", at)
			}
			if it.Name == "" {
				return nil, nil, badRequest(at+".name", "%s.name: required", at)
			}
			args, err := callArguments(at+".arguments", it.Arguments)
			if err != nil {
				return nil, nil, err
			}
			names[it.CallID] = it.Name
			fn := object{{"name", mustJSON(it.Name)}, {"arguments", args}}
			call := object{{"id", mustJSON(it.CallID)}, {"type", mustJSON("function")}, {"function", mustJSON(fn)}}
			if n := len(out); n > 0 && string(out[n-1].get("role")) == `"assistant"` {
				var calls []json.RawMessage
				if prev := out[n-1].get("tool_calls"); prev != nil {
					json.Unmarshal(prev, &calls)
				}
				out[n-1] = withReasoning(out[n-1].set("tool_calls", mustJSON(append(calls, mustJSON(call)))), thought)
			} else {
				out = append(out, withReasoning(object{{"role", mustJSON("assistant")}, {"content", mustJSON("")}, {"tool_calls", mustJSON([]object{call})}}, thought))
			}
			thought = ""
		case "function_call_output":
			if it.CallID == "" {
				return nil, nil, badRequest(at+".call_id", "%s.call_id: required", at)
			}
			if isNull(it.Output) {
				return nil, nil, badRequest(at+".output", "%s.output: required", at)
			}
			content, err := inputContent(at+".output", "tool", it.Output, &refs)
			if err != nil {
				return nil, nil, err
			}
			m := object{{"role", mustJSON("tool")}, {"tool_call_id", mustJSON(it.CallID)}}
			if name, ok := names[it.CallID]; ok {
				m = append(m, field{"name", mustJSON(name)})
			}
			out = append(out, append(m, field{"content", content}))
		case "reasoning":
			thought = reasoningText(it)
		case "item_reference":
			return nil, nil, badRequest(at+".type", "%s.type: item_reference needs stored responses, which Hearth does not keep; send the item itself", at)
		default:
			return nil, nil, badRequest(at+".type", "%s.type: %q items are not supported (Hearth runs function tools only: message, function_call and function_call_output items)", at, it.Type)
		}
	}
	if len(out) == 0 {
		return nil, nil, badRequest("input", "input: no message to answer (reasoning items are not messages)")
	}
	return mustJSON(out), refs, nil
}

// callArguments reads a function_call item's arguments: JSON text, as the
// API sends them (or an object), as the object templates print; "{}" when
// empty.
func callArguments(at string, raw json.RawMessage) (json.RawMessage, error) {
	if isNull(raw) {
		return json.RawMessage("{}"), nil
	}
	text := []byte(raw)
	if raw[0] == '"' {
		var s string
		json.Unmarshal(raw, &s)
		if strings.TrimSpace(s) == "" {
			return json.RawMessage("{}"), nil
		}
		text = []byte(s)
	}
	var args json.RawMessage
	if err := json.Unmarshal(text, &args); err != nil {
		return nil, badRequest(at, "%s: not valid JSON: %v", at, err)
	}
	if args[0] != '{' {
		return nil, badRequest(at, "%s: expected a JSON object", at)
	}
	return args, nil
}

// inputContent reads a message's content (or a function call's output):
// a string, or an array of text parts (input_text, output_text, refusal)
// joined with "\n". With input_image parts (in a user message) the parts
// stay a list: text parts and {"type": "image"}, the images going to
// refs. File and audio parts are refused for now.
func inputContent(at, role string, raw json.RawMessage, refs *[]mediaRef) (json.RawMessage, error) {
	if isNull(raw) {
		return nil, badRequest(at, "%s: required", at)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return mustJSON(s), nil
	}
	var parts []struct {
		Type     string          `json:"type"`
		Text     *string         `json:"text"`
		Refusal  *string         `json:"refusal"`
		ImageURL json.RawMessage `json:"image_url"`
		FileID   *string         `json:"file_id"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, badRequest(at, "%s: expected a string or an array of content parts ({\"type\": \"input_text\", \"text\": …})", at)
	}
	texts := make([]string, 0, len(parts))
	var list []json.RawMessage // set once an image is seen
	add := func(t string) {
		if list != nil {
			list = append(list, textPart(t))
		} else {
			texts = append(texts, t)
		}
	}
	for j, p := range parts {
		pat := fmt.Sprintf("%s[%d]", at, j)
		switch p.Type {
		case "input_text", "output_text", "text":
			if p.Text == nil {
				return nil, badRequest(pat+".text", "%s.text: required for a text part", pat)
			}
			add(*p.Text)
		case "refusal":
			if p.Refusal != nil {
				add(*p.Refusal)
			}
		case "input_image":
			if role != "user" {
				return nil, badRequest(pat, "%s: input_image content is accepted in user messages only", pat)
			}
			if isNull(p.ImageURL) {
				if p.FileID != nil {
					return nil, badRequest(pat+".file_id", "%s.file_id: uploaded files are not supported (Hearth keeps no files); send image_url as a base64 data URL", pat)
				}
				return nil, badRequest(pat+".image_url", "%s.image_url: required (a base64 data URL such as data:image/png;base64,…)", pat)
			}
			u, src, err := mediaURL(pat+".image_url", p.ImageURL)
			if err != nil {
				return nil, err
			}
			ref, err := sourceRef(pat, src, kindImage, u)
			if err != nil {
				return nil, err
			}
			*refs = append(*refs, ref)
			list = withPlaceholder(list, texts, kindImage)
		case "input_file", "input_audio":
			return nil, badRequest(pat, "%s: %s content is not supported yet (text and images only)", pat, p.Type)
		default:
			return nil, badRequest(pat+".type", "%s.type: unknown content part type %q", pat, p.Type)
		}
	}
	if list == nil {
		return mustJSON(strings.Join(texts, "\n")), nil
	}
	return mustJSON(list), nil
}

// responsesTools converts Responses function tools ({type, name,
// description, parameters, strict}, flat) to chat tools; nil when there
// are none. Built-in tools are refused.
func responsesTools(raw json.RawMessage) (json.RawMessage, error) {
	if isNull(raw) {
		return nil, nil
	}
	var tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description *string         `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, badRequest("tools", "tools: expected an array of {\"type\": \"function\", \"name\": …, \"parameters\": {…}}")
	}
	if len(tools) == 0 {
		return nil, nil
	}
	out := make([]object, len(tools))
	for i, t := range tools {
		at := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return nil, badRequest(at+".type", "%s.type: %q tools are not supported (Hearth runs function tools only)", at, t.Type)
		}
		if t.Name == "" {
			return nil, badRequest(at+".name", "%s.name: required", at)
		}
		fn := object{{"name", mustJSON(t.Name)}}
		if t.Description != nil {
			fn = append(fn, field{"description", mustJSON(*t.Description)})
		}
		if !isNull(t.Parameters) {
			if t.Parameters[0] != '{' {
				return nil, badRequest(at+".parameters", "%s.parameters: expected a JSON schema object", at)
			}
			fn = append(fn, field{"parameters", t.Parameters})
		}
		out[i] = object{{"type", mustJSON("function")}, {"function", mustJSON(fn)}}
	}
	return mustJSON(out), nil
}

// Response shapes, field for field as the API documents them.
type (
	responseObject struct {
		ID                 string             `json:"id"`
		Object             string             `json:"object"` // "response"
		CreatedAt          int64              `json:"created_at"`
		Status             string             `json:"status"` // in_progress, completed, incomplete, failed
		CompletedAt        *int64             `json:"completed_at"`
		Error              *responseError     `json:"error"`
		IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
		Instructions       *string            `json:"instructions"`
		MaxOutputTokens    *int               `json:"max_output_tokens"`
		MaxToolCalls       *int               `json:"max_tool_calls"`
		Model              string             `json:"model"`
		Output             []any              `json:"output"` // reasoningItem, messageItem and functionCallItem
		ParallelToolCalls  bool               `json:"parallel_tool_calls"`
		PreviousResponseID *string            `json:"previous_response_id"`
		Reasoning          reasoningConfig    `json:"reasoning"`
		Store              bool               `json:"store"`
		Temperature        float64            `json:"temperature"`
		Text               textConfig         `json:"text"`
		ToolChoice         json.RawMessage    `json:"tool_choice"`
		Tools              json.RawMessage    `json:"tools"`
		TopLogprobs        int                `json:"top_logprobs"`
		TopP               float64            `json:"top_p"`
		Truncation         string             `json:"truncation"`
		Usage              *responseUsage     `json:"usage"`
		User               *string            `json:"user"`
		Metadata           json.RawMessage    `json:"metadata"`
	}
	responseError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	incompleteDetails struct {
		Reason string `json:"reason"` // "max_output_tokens"
	}
	reasoningConfig struct {
		Effort  *string `json:"effort"`
		Summary *string `json:"summary"`
	}
	textConfig struct {
		Format struct {
			Type string `json:"type"`
		} `json:"format"`
	}
	responseUsage struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int `json:"total_tokens"`
	}
	messageItem struct {
		ID      string       `json:"id"`
		Type    string       `json:"type"`   // "message"
		Status  string       `json:"status"` // in_progress, completed, incomplete
		Role    string       `json:"role"`   // "assistant"
		Content []outputText `json:"content"`
	}
	outputText struct {
		Type        string             `json:"type"` // "output_text"
		Text        string             `json:"text"`
		Annotations []any              `json:"annotations"`
		Logprobs    []tokenLogprobBody `json:"logprobs"`
	}
	// reasoningItem is the model's thinking, as the API gives an open
	// model's: its text in reasoning_text parts, no summary.
	reasoningItem struct {
		ID      string          `json:"id"`
		Type    string          `json:"type"` // "reasoning"
		Summary []any           `json:"summary"`
		Content []reasoningPart `json:"content"`
		Status  string          `json:"status"` // in_progress, completed, incomplete
	}
	reasoningPart struct {
		Type string `json:"type"` // "reasoning_text"
		Text string `json:"text"`
	}
	functionCallItem struct {
		ID        string `json:"id"`
		Type      string `json:"type"`   // "function_call"
		Status    string `json:"status"` // in_progress, completed
		Arguments string `json:"arguments"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
	}
)

func responseUsageOf(u engine.Usage) *responseUsage {
	ru := &responseUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
	ru.InputTokensDetails.CachedTokens = u.CachedTokens
	ru.OutputTokensDetails.ReasoningTokens = u.ReasoningTokens
	return ru
}

// newOutputText is an empty output_text part.
func newOutputText() outputText {
	return outputText{Type: "output_text", Annotations: []any{}, Logprobs: []tokenLogprobBody{}}
}

// responsesLogprobs converts engine logprobs to the output_text shape
// (never nil, as the API always sends the list).
func responsesLogprobs(lps []engine.TokenLogprob, want bool) []tokenLogprobBody {
	if lp := chatLogprobsOf(lps, want); lp != nil {
		return lp.Content
	}
	return []tokenLogprobBody{}
}

// outputListener is told of each step of an answer's output (the stream
// writer writes them as events); index is the item's output_index.
type outputListener interface {
	reasoningAdded(index int, r reasoningItem) error
	reasoningDelta(index int, r reasoningItem, delta string) error
	reasoningDone(index int, r reasoningItem) error
	messageAdded(index int, m messageItem) error
	textDelta(index int, m messageItem, delta string, lps []tokenLogprobBody) error
	messageDone(index int, m messageItem) error
	callDone(index int, fc functionCallItem) error
}

// responseOutput builds an answer's output items from its deltas: the
// thinking goes to a reasoning item, which comes first; text goes to the
// open message item (a new one after a function call), each tool call is
// one function_call item. Both writers build with it, so a streamed answer
// ends with the same items as a whole one.
type responseOutput struct {
	items    []any
	answered bool           // a message or function_call item was added
	thought  *reasoningItem // the open reasoning item, nil when none
	rsIndex  int
	rsText   strings.Builder
	msg      *messageItem // the open message item, nil when none
	msgIndex int
	text     strings.Builder
	lps      []tokenLogprobBody
	calls    int
	maxCalls int  // 0 = no limit
	logprobs bool // the request asked for logprobs
	on       outputListener
}

// add takes one delta.
func (o *responseOutput) add(d engine.Delta) error {
	if (d.Thinking != "" || o.thought != nil) && d.Content == "" {
		d.Logprobs = nil // the thinking's tokens: output_text logprobs are the text's
	}
	if d.Thinking != "" {
		if err := o.think(d.Thinking); err != nil {
			return err
		}
	}
	if d.Content != "" || len(d.Logprobs) > 0 || len(d.ToolCalls) > 0 {
		if err := o.closeThinking("completed"); err != nil {
			return err
		}
	}
	if d.Content != "" || len(d.Logprobs) > 0 {
		if err := o.open(); err != nil {
			return err
		}
		lps := responsesLogprobs(d.Logprobs, o.logprobs)
		o.text.WriteString(d.Content)
		o.lps = append(o.lps, lps...)
		if o.on != nil {
			if err := o.on.textDelta(o.msgIndex, *o.msg, d.Content, lps); err != nil {
				return err
			}
		}
	}
	for _, tc := range d.ToolCalls {
		if o.maxCalls > 0 && o.calls >= o.maxCalls {
			continue // parallel_tool_calls false: the first call only
		}
		o.calls++
		if err := o.close("completed"); err != nil {
			return err
		}
		fc := functionCallItem{ID: newID("fc_"), Type: "function_call", Status: "completed", Arguments: argsText(tc), CallID: tc.ID, Name: tc.Name}
		o.items, o.answered = append(o.items, fc), true
		if o.on != nil {
			if err := o.on.callDone(len(o.items)-1, fc); err != nil {
				return err
			}
		}
	}
	return nil
}

// think adds thinking to the reasoning item, starting it first.
func (o *responseOutput) think(text string) error {
	if o.thought == nil {
		o.thought = &reasoningItem{ID: newID("rs_"), Type: "reasoning", Summary: []any{}, Content: []reasoningPart{}, Status: "in_progress"}
		o.rsIndex = len(o.items)
		o.items = append(o.items, *o.thought)
		o.rsText.Reset()
		if o.on != nil {
			if err := o.on.reasoningAdded(o.rsIndex, *o.thought); err != nil {
				return err
			}
		}
	}
	o.rsText.WriteString(text)
	if o.on != nil {
		return o.on.reasoningDelta(o.rsIndex, *o.thought, text)
	}
	return nil
}

// closeThinking finishes the open reasoning item, if any, with status.
func (o *responseOutput) closeThinking(status string) error {
	if o.thought == nil {
		return nil
	}
	r := *o.thought
	r.Status, r.Content = status, []reasoningPart{{Type: "reasoning_text", Text: o.rsText.String()}}
	o.items[o.rsIndex] = r
	o.thought = nil
	if o.on != nil {
		return o.on.reasoningDone(o.rsIndex, r)
	}
	return nil
}

// open starts a message item unless one is open.
func (o *responseOutput) open() error {
	if o.msg != nil {
		return nil
	}
	o.msg = &messageItem{ID: newID("msg_"), Type: "message", Status: "in_progress", Role: "assistant", Content: []outputText{}}
	o.msgIndex = len(o.items)
	o.items, o.answered = append(o.items, *o.msg), true
	o.text.Reset()
	o.lps = nil
	if o.on != nil {
		return o.on.messageAdded(o.msgIndex, *o.msg)
	}
	return nil
}

// close finishes the open reasoning or message item, if any, with status.
func (o *responseOutput) close(status string) error {
	if err := o.closeThinking(status); err != nil {
		return err
	}
	if o.msg == nil {
		return nil
	}
	part := newOutputText()
	part.Text = o.text.String()
	if o.lps != nil {
		part.Logprobs = o.lps
	}
	m := *o.msg
	m.Status, m.Content = status, []outputText{part}
	o.items[o.msgIndex] = m
	o.msg = nil
	if o.on != nil {
		return o.on.messageDone(o.msgIndex, m)
	}
	return nil
}

// finish closes the output: an answer with no message or call (none at
// all, or thinking alone) gets an empty message, so that it always has one
// (the SDKs' output_text is then "").
func (o *responseOutput) finish(status string) error {
	if err := o.closeThinking(status); err != nil {
		return err
	}
	if !o.answered {
		if err := o.open(); err != nil {
			return err
		}
	}
	return o.close(status)
}

// allText is the whole answer's text, for the json_object check.
func (o *responseOutput) allText() string {
	var b strings.Builder
	for _, it := range o.items {
		if m, ok := it.(messageItem); ok {
			for _, p := range m.Content {
				b.WriteString(p.Text)
			}
		}
	}
	if o.msg != nil {
		b.WriteString(o.text.String())
	}
	return b.String()
}

// statusOf is a finished response's status and incomplete_details.
func statusOf(u engine.Usage) (string, *incompleteDetails) {
	if u.FinishReason == "length" {
		return "incomplete", &incompleteDetails{Reason: "max_output_tokens"}
	}
	return "completed", nil
}

// responses serves POST /v1/responses.
func (s *Server) responses(c echo.Context) error {
	return serveGeneration(s, c, parseResponses, func(r *engine.Runner, job *responsesJob) error {
		resp := job.echo
		resp.ID, resp.Object, resp.CreatedAt, resp.Status = newID("resp_"), "response", time.Now().Unix(), "in_progress"
		resp.Model, resp.Output = r.Info().ID, []any{}
		resp.Temperature, resp.TopP = job.req.Sample.Temperature, job.req.Sample.TopP
		if resp.TopP == 0 {
			resp.TopP = 1
		}
		err := s.answerResponses(c, r, job, resp)
		var ce *engine.ContextError
		switch {
		case errors.As(err, &ce) && ce.MaxTokens > 0:
			return &apiError{status: http.StatusBadRequest, param: "max_output_tokens", code: "context_length_exceeded", msg: ce.Message("max_output_tokens")}
		case ce != nil:
			return &apiError{status: http.StatusBadRequest, param: "input", code: "context_length_exceeded", msg: ce.Error()}
		}
		return err
	})
}

// answerResponses generates the answer and writes it, streamed or whole.
func (s *Server) answerResponses(c echo.Context, g generator, job *responsesJob, resp responseObject) error {
	if job.stream {
		return s.streamResponses(c, g, job, resp)
	}
	out := &responseOutput{maxCalls: job.maxCalls, logprobs: job.req.Logprobs}
	return s.generate(c, g, job.req, answer{
		kind: "responses", model: resp.Model,
		emit: out.add,
		finish: func(u engine.Usage) error {
			status, incomplete := statusOf(u)
			out.finish(status)
			resp.Status, resp.IncompleteDetails, resp.Output, resp.Usage = status, incomplete, out.items, responseUsageOf(u)
			now := time.Now().Unix()
			resp.CompletedAt = &now
			return c.JSON(http.StatusOK, resp)
		},
	})
}
