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
	// Videos are the request's clips, in order, where each is a
	// {"type": "video"} part: the frames sampled from it
	// (media.VideoFrames). A model whose tower takes no video refuses
	// them.
	Videos [][]media.Frame
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

	MaxTokens int // 0 = until the context is full
	// ThinkingBudget caps the tokens a reasoning model thinks for (0: no
	// cap): once its thinking reaches the budget, the closing tag goes in
	// as the next tokens, and the answer follows (Anthropic's
	// thinking.budget_tokens).
	ThinkingBudget int
	Stop           []string
	Sample         sample.Options
	Logprobs       bool
	TopLogprobs    int
	// PromptLogprobs asks for each prompt token's logprob given the tokens
	// before it (with TopLogprobs alternatives), sent in the first Delta
	// (OpenAI's echo with logprobs). The prompt is then computed whole,
	// not read from the prompt cache; media prompts are refused.
	PromptLogprobs bool
	// ScoreOnly ends the request after the prompt: nothing is generated
	// (echo with max_tokens 0, to score a text).
	ScoreOnly bool

	// embed makes the job an embeddings one (Runner.Embed): it shares
	// the queue, not the generation.
	embed *embedTask
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
	// PromptLogprobs are the prompt's tokens with Request.PromptLogprobs;
	// the first token, which nothing predicts, has Logprob NaN.
	PromptLogprobs []TokenLogprob
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
