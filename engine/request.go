package engine

import (
	"encoding/json"
	"time"

	"hearth/engine/sample"
	"hearth/engine/toolcall"
	"hearth/media"
)

// Request is one generation request. Exactly one of Messages (chat),
// Prompt (text completion) or PromptIDs (token completion) is set.
type Request struct {
	Messages json.RawMessage // OpenAI-shaped messages, verbatim
	Tools    json.RawMessage // OpenAI-shaped tools, verbatim; enables tool-call parsing
	// TemplateKwargs are extra chat-template variables (enable_thinking, …).
	TemplateKwargs map[string]json.RawMessage

	// Images are the request's pictures in the order their parts appear
	// in Messages, where each is a {"type": "image"} part for the chat
	// template. A model without a vision tower refuses them.
	Images []media.Image
	// Audio are the request's sound clips, in order, where each is a
	// {"type": "audio"} part. A model without an audio tower refuses them.
	Audio []media.Audio

	Prompt    string
	PromptIDs []int32

	// Format, when set, constrains the output (constrain.go).
	Format *Format
	// ForceTool, when set (with Tools), makes the answer a tool call.
	ForceTool *ForceTool
	// Speculative turns speculative decoding on or off for this request
	// where the runner drafts (nil: the runner's choice).
	Speculative *bool

	MaxTokens   int // 0 = until the context is full
	Stop        []string
	Sample      sample.Options
	Logprobs    bool
	TopLogprobs int
}

// Delta is a piece of the answer. Content is text safe to show (never half
// a UTF-8 character, never the start of a stop string or a tool call).
// Thinking is a reasoning model's thinking, split from the answer where its
// chat template marks it (engine/reasoning).
type Delta struct {
	Thinking  string
	Content   string
	ToolCalls []toolcall.Call
	Logprobs  []TokenLogprob
}

// TokenLogprob is one generated token with its log-probability and the most
// likely alternatives.
type TokenLogprob struct {
	Token   string
	ID      int32
	Logprob float32
	Top     []TokenLogprob
}

// Usage is what a finished request cost and why it ended.
type Usage struct {
	PromptTokens     int
	CachedTokens     int // of the prompt, read from the prompt cache instead of computed
	CompletionTokens int
	ReasoningTokens  int    // of the completion, generated inside the thinking
	FinishReason     string // "stop", "length" or "tool_calls"
	StopSequence     string // the stop string that ended the answer, if one did
	// Drafted and Accepted count speculative decoding's guesses and the
	// ones the model kept (0 without it).
	Drafted, Accepted int
	TimeToFirstToken  time.Duration
	PrefillDuration   time.Duration
	DecodeDuration    time.Duration
}
