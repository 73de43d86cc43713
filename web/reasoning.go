package web

import (
	"encoding/json"
	"maps"
)

// A reasoning model's thinking comes back apart from its answer where its
// chat template marks it (engine/reasoning): reasoning_content on the
// OpenAI chat route, a reasoning item on the Responses API, thinking
// blocks on Anthropic's, thinking on Ollama's. The switches each API has
// for it become the chat template's enable_thinking here, and thinking
// sent back in a conversation becomes the assistant message's
// reasoning_content, the variable Qwen3-style templates read.

// reasoningEfforts are OpenAI's reasoning effort values.
var reasoningEfforts = map[string]bool{"none": true, "minimal": true, "low": true, "medium": true, "high": true, "xhigh": true}

// effortKwargs adds a reasoning effort to the chat template's kwargs, as
// Ollama's think does: enable_thinking (false for "none") and, when
// thinking, reasoning_effort. What the request's own chat_template_kwargs
// set wins. param names the field for errors.
func effortKwargs(param, effort string, kwargs map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	if !reasoningEfforts[effort] {
		return nil, badRequest(param, "%s: unknown value %q (expected none, minimal, low, medium, high or xhigh)", param, effort)
	}
	out := map[string]json.RawMessage{"enable_thinking": mustJSON(effort != "none")}
	if effort != "none" {
		out["reasoning_effort"] = mustJSON(effort)
	}
	maps.Copy(out, kwargs)
	return out, nil
}

// withReasoning sets an assistant message's reasoning_content to text,
// unless the message has one or text is empty.
func withReasoning(o object, text string) object {
	if text == "" || o.get("reasoning_content") != nil {
		return o
	}
	return append(o, field{"reasoning_content", mustJSON(text)})
}
