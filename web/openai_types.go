package web

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"hearth/engine"
	"hearth/engine/toolcall"
)

// OpenAI response shapes, field for field as the API documents them.

type usageBody struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// PromptTokensDetails says how many prompt tokens came from the
	// prompt cache, when some did (OpenAI's field).
	PromptTokensDetails *promptTokensDetails `json:"prompt_tokens_details,omitempty"`
	// CompletionTokensDetails counts the completion's thinking tokens,
	// when the model thought (OpenAI's field).
	CompletionTokensDetails *completionTokensDetails `json:"completion_tokens_details,omitempty"`
	// Speculative is Hearth's extension: the drafted tokens and the ones
	// the model kept, when speculative decoding ran.
	Speculative *speculativeUsage `json:"speculative,omitempty"`
}

type completionTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

type promptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type speculativeUsage struct {
	Drafted  int `json:"drafted_tokens"`
	Accepted int `json:"accepted_tokens"`
}

func usageOf(u engine.Usage) *usageBody {
	b := &usageBody{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
	if u.CachedTokens > 0 {
		b.PromptTokensDetails = &promptTokensDetails{CachedTokens: u.CachedTokens}
	}
	if u.ReasoningTokens > 0 {
		b.CompletionTokensDetails = &completionTokensDetails{ReasoningTokens: u.ReasoningTokens}
	}
	if u.Drafted > 0 {
		b.Speculative = &speculativeUsage{Drafted: u.Drafted, Accepted: u.Accepted}
	}
	return b
}

type chatResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"` // "chat.completion"
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []chatChoice `json:"choices"`
	Usage             *usageBody   `json:"usage"`
}

type chatChoice struct {
	Index        int            `json:"index"`
	Message      chatMessageOut `json:"message"`
	Logprobs     *chatLogprobs  `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
}

type chatMessageOut struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	// ReasoningContent is the model's thinking, split from the answer
	// (vLLM's and llama-server's field).
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallBody `json:"tool_calls,omitempty"`
}

type toolCallBody struct {
	Index    *int         `json:"index,omitempty"` // streaming only
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON text, as OpenAI sends it
}

func toolCallOf(c toolcall.Call) toolCallBody {
	return toolCallBody{ID: c.ID, Type: "function", Function: functionCall{Name: c.Name, Arguments: argsText(c)}}
}

// argsText is a call's arguments as JSON text ("{}" when empty).
func argsText(c toolcall.Call) string {
	s := string(c.Arguments)
	if s == "" {
		return "{}"
	}
	return s
}

type chatChunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"` // "chat.completion.chunk"
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	Choices           []chunkChoice `json:"choices"`
	// Usage is omitted unless stream_options.include_usage, then null on
	// every chunk but the last.
	Usage any `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int           `json:"index"`
	Delta        chatDelta     `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type chatDelta struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallBody `json:"tool_calls,omitempty"`
}

type chatLogprobs struct {
	Content []tokenLogprobBody `json:"content"`
}

type tokenLogprobBody struct {
	Token       string             `json:"token"`
	Logprob     logprob            `json:"logprob"`
	Bytes       []int              `json:"bytes"`
	TopLogprobs []tokenLogprobBody `json:"top_logprobs,omitempty"`
}

func byteList(s string) []int {
	out := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = int(s[i])
	}
	return out
}

// logprob is a log-probability written as the float32 it is ("-1.5108837",
// not "-1.5108836889266968"); -Inf (a token that cannot occur) is written
// as OpenAI writes it, -9999.
type logprob float32

// MarshalJSON writes the shortest float32 form.
func (l logprob) MarshalJSON() ([]byte, error) {
	f := float64(l)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		f = -9999
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 32), nil
}

// chatLogprobsOf converts engine logprobs; nil unless asked for.
func chatLogprobsOf(lps []engine.TokenLogprob, want bool) *chatLogprobs {
	if !want {
		return nil
	}
	out := &chatLogprobs{Content: []tokenLogprobBody{}}
	for _, lp := range lps {
		b := tokenLogprobBody{Token: lp.Token, Logprob: logprob(lp.Logprob), Bytes: byteList(lp.Token), TopLogprobs: []tokenLogprobBody{}}
		for _, t := range lp.Top {
			b.TopLogprobs = append(b.TopLogprobs, tokenLogprobBody{Token: t.Token, Logprob: logprob(t.Logprob), Bytes: byteList(t.Token)})
		}
		out.Content = append(out.Content, b)
	}
	return out
}

// completionLogprobs is the legacy /v1/completions logprobs object.
type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*logprob           `json:"token_logprobs"` // nil: an echoed prompt's first token
	TopLogprobs   []map[string]logprob `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// completionLogprobsOf converts engine logprobs; offset is where the first
// token starts in the completion text.
func completionLogprobsOf(lps []engine.TokenLogprob, top int, offset int) *completionLogprobs {
	out := &completionLogprobs{Tokens: []string{}, TokenLogprobs: []*logprob{}, TextOffset: []int{}}
	if top > 0 {
		out.TopLogprobs = []map[string]logprob{}
	}
	for _, lp := range lps {
		out.Tokens = append(out.Tokens, lp.Token)
		out.TextOffset = append(out.TextOffset, offset)
		offset += len(lp.Token)
		if math.IsNaN(float64(lp.Logprob)) { // an echoed prompt's first token: nothing predicts it (null, as OpenAI and vLLM)
			out.TokenLogprobs = append(out.TokenLogprobs, nil)
			if top > 0 {
				out.TopLogprobs = append(out.TopLogprobs, nil)
			}
			continue
		}
		l := logprob(lp.Logprob)
		out.TokenLogprobs = append(out.TokenLogprobs, &l)
		if top > 0 {
			m := map[string]logprob{}
			for _, t := range lp.Top {
				if _, dup := m[t.Token]; !dup {
					m[t.Token] = logprob(t.Logprob)
				}
			}
			out.TopLogprobs = append(out.TopLogprobs, m)
		}
	}
	return out
}

type completionResponse struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"` // "text_completion"
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []completionChoice `json:"choices"`
	Usage             any                `json:"usage,omitempty"`
}

type completionChoice struct {
	Text         string              `json:"text"`
	Index        int                 `json:"index"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
	// TokenIDs are the generated ids, with return_token_ids (vLLM's
	// extension), so a client can check the engine token for token.
	TokenIDs []int32 `json:"token_ids,omitempty"`
}

// newID makes a response id such as "chatcmpl-3f9a…".
func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// hasCap reports whether the model has a capability ("tools", "vision", …).
func hasCap(info engine.Info, name string) bool { return slices.Contains(info.Capabilities, name) }

// nullJSON is an explicit JSON null (for "usage": null on stream chunks).
var nullJSON = json.RawMessage("null")

func strPtr(s string) *string { return &s }
