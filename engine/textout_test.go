package engine

import (
	"context"
	"strings"
	"testing"

	"hearth/engine/reasoning"
	"hearth/engine/toolcall"
)

// pieces stands in for the detokenizer: token id i is pieces[i].
type pieces []string

func (p pieces) Add(id int32) string { return p[id] }

// TestTextOutSplitsThinking runs a reply through textOut token by token,
// its tags split across tokens: the thinking comes out apart, the answer
// goes on to tool-call parsing, a stop string still ends it, and the
// tokens up to the close tag count as reasoning.
func TestTextOutSplitsThinking(t *testing.T) {
	tests := []struct {
		name      string
		prefilled bool
		tools     bool
		stops     []string
		reply     pieces
		thinking  string
		content   string
		calls     int
		think     int // reasoning tokens
	}{
		{name: "think then answer", reply: pieces{"<th", "ink>\n", "a b", "</", "think>", "\n\nParis", "."},
			thinking: "a b", content: "Paris.", think: 5},
		{name: "prefilled, unclosed", prefilled: true, reply: pieces{"still ", "going"},
			thinking: "still going", think: 2},
		{name: "no thinking", reply: pieces{"Hi", " there"}, content: "Hi there"},
		{name: "then a tool call", tools: true, reply: pieces{"<think>", "call", "</think>\n", "<tool_", "call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>"},
			thinking: "call", calls: 1, think: 3},
		{name: "stop inside the answer", prefilled: true, stops: []string{"END"}, reply: pieces{"x</think>", "ab", "EN", "D", "never"},
			thinking: "x", content: "ab", think: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &job{ctx: context.Background(), out: make(chan Delta, 64)}
			o := &textOut{j: j, stream: tt.reply, flush: func() string { return "" }, stops: tt.stops,
				think: reasoning.NewStream(reasoning.Think, tt.prefilled)}
			if tt.tools {
				o.calls = toolcall.NewStream(toolcall.Hermes)
			}
			for id := range tt.reply {
				stopped, err := o.token(int32(id), nil)
				if err != nil {
					t.Fatal(err)
				}
				if stopped != "" {
					break
				}
			}
			if _, err := o.close(); err != nil {
				t.Fatal(err)
			}
			close(j.out)
			var th, c strings.Builder
			calls := 0
			for d := range j.out {
				th.WriteString(d.Thinking)
				c.WriteString(d.Content)
				calls += len(d.ToolCalls)
			}
			if th.String() != tt.thinking || c.String() != tt.content || calls != tt.calls {
				t.Errorf("thinking %q, content %q, %d calls; want %q, %q, %d", th.String(), c.String(), calls, tt.thinking, tt.content, tt.calls)
			}
			if o.reasoningTokens() != tt.think {
				t.Errorf("%d reasoning tokens, want %d", o.reasoningTokens(), tt.think)
			}
		})
	}
}
