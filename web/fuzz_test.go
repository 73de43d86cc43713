package web

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// The request decoders read outside input: they must never panic, must
// refuse bad input with a 400, and what they accept must be well formed.

// checkConverted checks a parser's conversation: normalized, with one
// {"type": "image"} or {"type": "video"} part for each of refs, in order.
// With each placeholder given a source again (sourced), the chat route
// normalizes it to itself, with as many media.
func checkConverted(t *testing.T, msgs json.RawMessage, refs []mediaRef) {
	t.Helper()
	with, kinds := sourced(t, msgs)
	if len(kinds) != len(refs) {
		t.Fatalf("%d media placeholders in %s, %d media", len(kinds), msgs, len(refs))
	}
	for i, k := range kinds {
		if refs[i].kind != k {
			t.Fatalf("placeholder %d is %s, media %d is %s (%s)", i, k, i, refs[i].kind, refs[i].at)
		}
		if refs[i].at == "" || refs[i].src == "" {
			t.Fatalf("media %d names no field: %+v", i, refs[i])
		}
	}
	again, againRefs, err := chatMessages(with)
	if err != nil || !bytes.Equal(again, msgs) || len(againRefs) != len(refs) {
		t.Fatalf("normalizing again: %v\n%s\n%s", err, msgs, again)
	}
}

// sourced gives each media placeholder of normalized messages a source
// (an image_url or video_url part), returning their kinds in order.
func sourced(t *testing.T, msgs json.RawMessage) (json.RawMessage, []mediaKind) {
	t.Helper()
	var list []json.RawMessage
	if err := json.Unmarshal(msgs, &list); err != nil {
		t.Fatalf("messages are not an array: %s", msgs)
	}
	var kinds []mediaKind
	for i, m := range list {
		o, ok := parseObject(m)
		if !ok {
			t.Fatalf("message %d is not an object: %s", i, m)
		}
		var parts []json.RawMessage
		if json.Unmarshal(o.get("content"), &parts) != nil {
			continue
		}
		for j, p := range parts {
			switch string(p) {
			case `{"type":"image"}`:
				kinds = append(kinds, kindImage)
				parts[j] = json.RawMessage(`{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}`)
			case `{"type":"video"}`:
				kinds = append(kinds, kindVideo)
				parts[j] = json.RawMessage(`{"type":"video_url","video_url":{"url":"data:video/mp4;base64,AA=="}}`)
			}
		}
		list[i] = mustJSON(o.set("content", mustJSON(parts)))
	}
	return mustJSON(list), kinds
}

var chatSeeds = []string{
	`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","reasoning":"r"},{"role":"assistant","content":"b","reasoning_content":"s"}],"reasoning_effort":"low","chat_template_kwargs":{"enable_thinking":false}}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
	`{"messages":[{"role":"developer","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"stream":true,"stream_options":{"include_usage":true}}`,
	`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{\"b\":1,\"a\":2}"}}]},{"role":"tool","tool_call_id":"1","content":"ok"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto"}`,
	`{"messages":[{"role":"user","content":"json please"}],"response_format":{"type":"json_object"},"stop":["a","b"],"seed":-1,"top_k":5,"min_p":0.1,"max_completion_tokens":3,"logprobs":true,"top_logprobs":2}`,
	`{"messages":[{"role":"user","content":"hi"}],"temperature":"hot"}`,
	`{"messages":[]}`,
	`[1]`,
	`{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`,
	`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"low"}},{"type":"text","text":"b"},{"type":"video_url","video_url":{"url":"https://example.com/v.mp4"}}]}]}`,
	`{"messages":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/jpeg;base64,/9j/"}]},{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"data:,"}}]}]}`,
}

func FuzzChatRequest(f *testing.F) {
	for _, s := range chatSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		job, err := parseChat(body)
		if err != nil {
			if p := classify(err); p.Status != 400 {
				t.Fatalf("error %v classifies as %d, want 400", err, p.Status)
			}
			return
		}
		if !json.Valid(job.req.Messages) {
			t.Fatalf("messages are not JSON: %s", job.req.Messages)
		}
		// Normalized messages are a fixed point.
		checkConverted(t, job.req.Messages, job.media)
		if job.req.MaxTokens < 0 || job.req.TopLogprobs < 0 || job.req.TopLogprobs > maxTopLogprobs {
			t.Fatalf("accepted limits %+v", job.req)
		}
		if err := job.req.Sample.Validate(); err != nil {
			t.Fatalf("accepted sampling options the engine refuses: %v", err)
		}
	})
}

func FuzzCompletionRequest(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"hi","max_tokens":3,"logprobs":2,"return_token_ids":true}`,
		`{"prompt":[1,2,3]}`,
		`{"prompt":[[1,2,3]]}`,
		`{"prompt":["one"]}`,
		`{"prompt":["a","b"]}`,
		`{"prompt":[1.5,null]}`,
		`{"prompt":[-1]}`,
		`{"prompt":"x","stream":true,"stream_options":{"include_usage":true},"stop":"\n"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		job, err := parseCompletion(body)
		if err != nil {
			if p := classify(err); p.Status != 400 {
				t.Fatalf("error %v classifies as %d, want 400", err, p.Status)
			}
			return
		}
		if (job.req.Prompt == "") == (job.req.PromptIDs == nil) {
			t.Fatalf("want exactly one of a text and a token prompt: %q %v", job.req.Prompt, job.req.PromptIDs)
		}
		for _, id := range job.req.PromptIDs {
			if id < 0 {
				t.Fatalf("negative token id %d accepted", id)
			}
		}
		if err := job.req.Sample.Validate(); err != nil {
			t.Fatalf("accepted sampling options the engine refuses: %v", err)
		}
	})
}

func FuzzMessagesRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		`{"max_tokens":5,"system":"be brief","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stop_sequences":["x"],"stream":true}`,
		`{"max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"text","text":"t"},{"type":"tool_use","id":"tu1","name":"f","input":{"z":1,"a":2}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":[{"type":"text","text":"r"}]},{"type":"text","text":"next"}]}],"tools":[{"name":"f","description":"d","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto"}}`,
		`{"max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"}]}]}`,
		`{"max_tokens":5,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking","thinking":"a","signature":""},{"type":"redacted_thinking","data":"x"},{"type":"text","text":"b"}]}]}`,
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image"}]}]}`,
		`{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"what?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}]}`,
		`{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"},{"type":"image","source":{"type":"file","file_id":"f"}}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		job, err := parseMessages(body)
		if err != nil {
			if p := classify(err); p.Status != 400 {
				t.Fatalf("error %v classifies as %d, want 400", err, p.Status)
			}
			return
		}
		// The converted conversation is a valid OpenAI conversation.
		checkConverted(t, job.req.Messages, job.media)
		if !isNull(job.req.Tools) {
			if err := validateTools(job.req.Tools); err != nil {
				t.Fatalf("converted tools are refused: %v\n%s", err, job.req.Tools)
			}
		}
		if job.req.MaxTokens < 1 {
			t.Fatalf("max_tokens %d accepted", job.req.MaxTokens)
		}
	})
}

// checkOllamaJob checks what an Ollama request decoder accepted.
func checkOllamaJob(t *testing.T, job *ollamaJob) {
	t.Helper()
	if job.load != (job.req.Messages == nil && job.req.Prompt == "") {
		t.Fatalf("load %v with messages %s and prompt %q", job.load, job.req.Messages, job.req.Prompt)
	}
	if job.req.Messages != nil {
		// Converted messages are a valid OpenAI conversation, normalized.
		checkConverted(t, job.req.Messages, job.media)
	}
	if !isNull(job.req.Tools) {
		if err := validateTools(job.req.Tools); err != nil {
			t.Fatalf("accepted tools are refused: %v\n%s", err, job.req.Tools)
		}
	}
	if job.req.MaxTokens < 0 {
		t.Fatalf("max tokens %d accepted", job.req.MaxTokens)
	}
	if err := job.req.Sample.Validate(); err != nil {
		t.Fatalf("accepted sampling options the engine refuses: %v", err)
	}
}

func FuzzOllamaChatRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[]}`,
		`{"model":"m","keep_alive":0}`,
		`{"messages":[{"role":"system","content":"s"},{"role":"user","content":"q","images":[]},{"role":"assistant","content":"","thinking":"hmm","tool_calls":[{"function":{"index":0,"name":"f","arguments":{"b":1,"a":2}}}]},{"role":"tool","content":"r","tool_name":"f"}],"tools":[{"type":"function","function":{"name":"f"}}],"stream":false,"think":true,"keep_alive":"5m"}`,
		`{"messages":[{"role":"user","content":"hi"}],"options":{"temperature":0.7,"top_p":0.9,"top_k":40,"min_p":0.05,"seed":-1,"num_predict":-1,"stop":["a","b"],"repeat_penalty":1.1,"num_ctx":4096}}`,
		`{"messages":[{"role":"user","content":"hi","images":["AAAA"]}]}`,
		`{"messages":[{"role":"user","content":"","images":["iVBORw0KGgo=","/9j/"]},{"role":"assistant","content":"x","images":["AAAA"]}]}`,
		`{"messages":[{"role":"user","content":"hi"}],"format":{"type":"object"}}`,
		`{"messages":[{"role":"user","content":"hi"}],"think":"high","options":{"stop":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		job, err := parseOllamaChat(body)
		if err != nil {
			if p := classify(err); p.Status != 400 {
				t.Fatalf("error %v classifies as %d, want 400", err, p.Status)
			}
			return
		}
		if job.req.Prompt != "" || job.req.PromptIDs != nil {
			t.Fatalf("a chat became a text prompt: %+v", job.req)
		}
		checkOllamaJob(t, job)
	})
}

func FuzzOllamaGenerateRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":"hi"}`,
		`{"model":"m","prompt":"","keep_alive":0}`,
		`{"prompt":"hi","system":"be brief","stream":false,"options":{"num_predict":3,"seed":7}}`,
		`{"prompt":"<|im_start|>user\nhi<|im_end|>\n","raw":true}`,
		`{"prompt":"hi","raw":true,"system":"s"}`,
		`{"prompt":"hi","suffix":"x","template":"{{ .Prompt }}","images":["AAAA"],"context":[1,2]}`,
		`{"prompt":"hi","format":"json"}`,
		`{"prompt":"what is this?","system":"s","images":["iVBORw0KGgo="]}`,
		`{"prompt":"","images":["iVBORw0KGgo="]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		job, err := parseOllamaGenerate(body)
		if err != nil {
			if p := classify(err); p.Status != 400 {
				t.Fatalf("error %v classifies as %d, want 400", err, p.Status)
			}
			return
		}
		if job.req.Messages != nil && job.req.Prompt != "" {
			t.Fatalf("both a conversation and a raw prompt: %+v", job.req)
		}
		checkOllamaJob(t, job)
	})
}

// FuzzMediaSource fuzzes the parse of an image's source: a data: URL, or
// bare base64 (Ollama's images, Anthropic's base64 source). It must never
// panic, never return more than the limit, refuse with words, and give
// back exactly the bytes any base64 form of them encodes.
func FuzzMediaSource(f *testing.F) {
	for _, s := range []string{
		"data:image/png;base64,iVBORw0KGgo=",
		"data:image/jpeg;base64,/9j/4AAQSkZJRg",
		"DATA:image/png;charset=x;BASE64,AAEC\nAwQF\r\n",
		"data:image/png,%89PNG",
		"data:;base64,",
		"data:image/png;base64",
		"data:image/png;base64,-_-_",
		"data:image/png;base64,+/+/====",
		"data:image/png;base64,A",
		"iVBORw0KGgo=",
		"https://example.com/a.png",
		"",
	} {
		f.Add(s, false, int64(64))
		f.Add(s, true, int64(3))
	}
	f.Fuzz(func(t *testing.T, s string, bare bool, max int64) {
		if max < 0 {
			max = -max
		}
		b, err := decodeSource(s, bare, max)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("an error without words for %q", s)
			}
			return
		}
		if int64(len(b)) > max {
			t.Fatalf("%d bytes from %q, over the limit of %d", len(b), s, max)
		}
		if !bare && !strings.HasPrefix(strings.ToLower(s), "data:") {
			t.Fatalf("%q decoded as a data URL", s)
		}
		for _, again := range []struct {
			s    string
			bare bool
		}{
			{"data:image/png;base64," + base64.StdEncoding.EncodeToString(b), false},
			{base64.RawURLEncoding.EncodeToString(b), true},
			{base64.StdEncoding.EncodeToString(b), true},
		} {
			got, err := decodeSource(again.s, again.bare, max)
			if err != nil || !bytes.Equal(got, b) {
				t.Fatalf("%q: %v, got %x, want %x", again.s, err, got, b)
			}
		}
	})
}
