package web

import (
	"net/http"
	"strings"
	"testing"
)

// TestCountTokens: /v1/messages/count_tokens counts what /v1/messages
// reports as input_tokens for the same system, messages and tools, before
// the model is loaded (it loads none) and after.
func TestCountTokens(t *testing.T) {
	const tools = `"tools":[{"name":"get_weather","description":"d","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	conversations := []struct {
		name, fields string
	}{
		{"one message", `"messages":[{"role":"user","content":"hello there"}]`},
		{"system and history", `"system":[{"type":"text","text":"Be brief."}],"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":[{"type":"text","text":"Hello!"}]},{"role":"user","content":"How are you?"}]`},
		{"a tool round trip", tools + `,"messages":[{"role":"user","content":"Weather in Paris?"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Paris"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"22C"}]}]`},
		{"tool_choice none", tools + `,"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"hi"}]`},
	}
	ts := startServer(t, func(c *serverConfig) { c.model = toolModel(t) })
	count := func(fields string) int {
		t.Helper()
		var out countTokensResponse
		ts.postOK(t, "/v1/messages/count_tokens", `{"model":"chat-tiny",`+fields+`}`, &out)
		return out.InputTokens
	}
	before := make([]int, len(conversations))
	for i, c := range conversations {
		before[i] = count(c.fields)
	}
	if models := ts.psModels(t); len(models) != 0 {
		t.Errorf("/api/ps after counting = %v, want no model loaded", models)
	}
	for i, c := range conversations {
		var msg messageOut
		ts.postOK(t, "/v1/messages", `{"model":"chat-tiny","max_tokens":1,`+c.fields+`}`, &msg)
		if before[i] != msg.Usage.InputTokens || before[i] == 0 {
			t.Errorf("%s: count_tokens = %d before loading, /v1/messages input_tokens = %d", c.name, before[i], msg.Usage.InputTokens)
		}
		if after := count(c.fields); after != msg.Usage.InputTokens {
			t.Errorf("%s: count_tokens = %d with the model loaded, want %d", c.name, after, msg.Usage.InputTokens)
		}
	}
	if before[3] >= before[2] {
		t.Errorf("tool_choice none counts %d, the tool round trip %d: want the tools left out", before[3], before[2])
	}
	// The Anthropic error shape, also for the prompt that does not fit.
	long := `{"model":"chat-tiny","messages":[{"role":"user","content":"` + strings.Repeat("hello ", 300) + `"}]}`
	if r := ts.post(t, "/v1/messages/count_tokens", long); r.Status != http.StatusBadRequest ||
		!strings.Contains(string(r.Body), `"type":"error"`) || !strings.Contains(string(r.Body), "context is 256 tokens") {
		t.Errorf("an over-long prompt = %d %s, want a 400 in Anthropic's shape", r.Status, r.Body)
	}
}
