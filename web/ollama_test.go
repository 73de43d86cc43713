package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"hearth/engine"
	"hearth/engine/pool"
	"hearth/internal/testmodels"
)

// ollamaOut is one object of an Ollama answer, as the tests read it.
type ollamaOut struct {
	Model     string `json:"model"`
	CreatedAt string `json:"created_at"`
	Message   *struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		ToolCalls []struct {
			Function struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"message"`
	Response           *string `json:"response"`
	Done               bool    `json:"done"`
	DoneReason         string  `json:"done_reason"`
	TotalDuration      *int64  `json:"total_duration"`
	LoadDuration       *int64  `json:"load_duration"`
	PromptEvalCount    *int    `json:"prompt_eval_count"`
	PromptEvalDuration *int64  `json:"prompt_eval_duration"`
	EvalCount          *int    `json:"eval_count"`
	EvalDuration       *int64  `json:"eval_duration"`
	Error              string  `json:"error"`
}

// text is the object's message content or response.
func (o ollamaOut) text() string {
	if o.Message != nil {
		return o.Message.Content
	}
	if o.Response != nil {
		return *o.Response
	}
	return ""
}

// ollamaChatBody is a greedy /api/chat request for one user message.
func ollamaChatBody(msg string, numPredict int, extra string) string {
	b, _ := json.Marshal(msg)
	return fmt.Sprintf(`{"model":"chat-tiny","messages":[{"role":"user","content":%s}],"options":{"temperature":0,"num_predict":%d}%s}`, b, numPredict, extra)
}

// ollamaLines posts a streaming request and splits its NDJSON answer,
// checking the framing: every line one JSON object, the last one done.
func (ts *testServer) ollamaLines(t *testing.T, path, body string) []ollamaOut {
	t.Helper()
	r := ts.post(t, path, body)
	if r.Status != http.StatusOK {
		t.Fatalf("POST %s = %d %s", path, r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("Content-Type = %q, want application/x-ndjson", ct)
	}
	if !bytes.HasSuffix(r.Body, []byte("\n")) {
		t.Errorf("the stream does not end with a newline: %q", r.Body)
	}
	var out []ollamaOut
	for _, line := range strings.Split(strings.TrimSuffix(string(r.Body), "\n"), "\n") {
		var o ollamaOut
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, o)
	}
	return out
}

// ollamaWhole posts a request with stream false and decodes the answer.
func (ts *testServer) ollamaWhole(t *testing.T, path, body string) ollamaOut {
	t.Helper()
	r := ts.post(t, path, body)
	if r.Status != http.StatusOK {
		t.Fatalf("POST %s = %d %s", path, r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var o ollamaOut
	if err := json.Unmarshal(r.Body, &o); err != nil {
		t.Fatalf("POST %s: %v in %s", path, err, r.Body)
	}
	return o
}

// checkFinal checks a last object: done, its reason, and every metric.
func checkFinal(t *testing.T, o ollamaOut, reason string, promptTokens, evalCount int) {
	t.Helper()
	if !o.Done || o.DoneReason != reason {
		t.Errorf("last object done=%v done_reason=%q, want true %q", o.Done, o.DoneReason, reason)
	}
	if o.PromptEvalCount == nil || *o.PromptEvalCount != promptTokens || o.EvalCount == nil || *o.EvalCount != evalCount {
		t.Errorf("prompt_eval_count %v eval_count %v, want %d %d", o.PromptEvalCount, o.EvalCount, promptTokens, evalCount)
	}
	for name, d := range map[string]*int64{"total_duration": o.TotalDuration, "load_duration": o.LoadDuration,
		"prompt_eval_duration": o.PromptEvalDuration, "eval_duration": o.EvalDuration} {
		if d == nil || *d < 0 {
			t.Errorf("%s = %v, want a duration in nanoseconds", name, d)
		}
	}
	if o.TotalDuration != nil && o.PromptEvalDuration != nil && o.EvalDuration != nil && *o.TotalDuration < *o.PromptEvalDuration+*o.EvalDuration {
		t.Errorf("total_duration %d is less than prompt_eval_duration %d plus eval_duration %d", *o.TotalDuration, *o.PromptEvalDuration, *o.EvalDuration)
	}
}

func TestOllamaStream(t *testing.T) {
	ts := startServer(t)
	var want chatOut
	ts.postOK(t, "/v1/chat/completions", chatBody("hi", 6, ""), &want)
	promptTokens := len(ts.tokenize(t, chatML("hi"), false))

	for _, tt := range []struct{ name, path, body string }{
		{"chat", "/api/chat", ollamaChatBody("hi", 6, "")},
		{"generate", "/api/generate", `{"model":"chat-tiny","prompt":"hi","options":{"temperature":0,"num_predict":6}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lines := ts.ollamaLines(t, tt.path, tt.body) // stream defaults to true
			if len(lines) < 2 {
				t.Fatalf("%d lines, want text lines and a last one", len(lines))
			}
			var text strings.Builder
			for i, o := range lines {
				if _, err := time.Parse(time.RFC3339Nano, o.CreatedAt); err != nil || o.Model != "chat-tiny" {
					t.Errorf("line %d: model %q created_at %q (%v)", i, o.Model, o.CreatedAt, err)
				}
				if (tt.name == "chat") != (o.Message != nil) || (tt.name == "generate") != (o.Response != nil) {
					t.Errorf("line %d: message %v response %v, want the %s shape", i, o.Message, o.Response, tt.name)
				}
				if o.Message != nil && o.Message.Role != "assistant" {
					t.Errorf("line %d: role %q", i, o.Message.Role)
				}
				if last := i == len(lines)-1; o.Done != last {
					t.Errorf("line %d: done = %v", i, o.Done)
				} else if !last && (o.text() == "" || o.EvalCount != nil) {
					t.Errorf("line %d: %+v, want a piece of text and no metrics", i, o)
				}
				text.WriteString(o.text())
			}
			if text.String() != want.text() {
				t.Errorf("streamed text %q, want the chat completion's %q", text.String(), want.text())
			}
			checkFinal(t, lines[len(lines)-1], "length", promptTokens, 6)
		})
	}
}

func TestOllamaWhole(t *testing.T) {
	ts := startServer(t)
	var want chatOut
	ts.postOK(t, "/v1/chat/completions", chatBody("hi", 8, ""), &want)
	var wantSystem chatOut
	ts.postOK(t, "/v1/chat/completions", `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"temperature":0,"max_tokens":8}`, &wantSystem)
	raw, _ := json.Marshal(chatML("hi"))
	system := `<|im_start|>system` + "\n" + `be brief<|im_end|>` + "\n" + chatML("hi")
	for _, tt := range []struct {
		name, path, body string
		prompt           string // the text the prompt must tokenize as
	}{
		{"chat", "/api/chat", ollamaChatBody("hi", 8, `,"stream":false`), chatML("hi")},
		{"generate", "/api/generate", `{"prompt":"hi","stream":false,"options":{"temperature":0,"num_predict":8}}`, chatML("hi")},
		// raw: the prompt as is, here the chat template's own rendering.
		{"generate raw", "/api/generate", `{"prompt":` + string(raw) + `,"raw":true,"stream":false,"options":{"temperature":0,"num_predict":8}}`, chatML("hi")},
		{"generate system", "/api/generate", `{"prompt":"hi","system":"be brief","stream":false,"options":{"temperature":0,"num_predict":8}}`, system},
		{"chat system", "/api/chat", `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"stream":false,"options":{"temperature":0,"num_predict":8}}`, system},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := ts.ollamaWhole(t, tt.path, tt.body)
			if strings.HasPrefix(tt.name, "chat") != (o.Message != nil) {
				t.Errorf("message = %v for %s", o.Message, tt.path)
			}
			wantText := want.text()
			if strings.Contains(tt.name, "system") {
				wantText = wantSystem.text()
			}
			if o.text() != wantText {
				t.Errorf("text %q, want the chat completion's %q", o.text(), wantText)
			}
			checkFinal(t, o, "length", len(ts.tokenize(t, tt.prompt, false)), 8)
		})
	}
}

func TestOllamaOptions(t *testing.T) {
	ts := startServer(t)
	chat := func(opts string) ollamaOut {
		return ts.ollamaWhole(t, "/api/chat", `{"model":"chat-tiny","stream":false,"messages":[{"role":"user","content":"hello there"}],"options":{`+opts+`}}`)
	}
	greedy := chat(`"temperature":0,"num_predict":24`)

	t.Run("num_predict", func(t *testing.T) {
		o := chat(`"temperature":0,"num_predict":3`)
		if *o.EvalCount != 3 || o.DoneReason != "length" || !strings.HasPrefix(greedy.text(), o.text()) {
			t.Errorf("num_predict 3: eval_count %d %q %q, want 3 tokens of %q", *o.EvalCount, o.DoneReason, o.text(), greedy.text())
		}
	})

	t.Run("top_k 1 is greedy", func(t *testing.T) {
		if o := chat(`"temperature":1,"top_k":1,"num_predict":24`); o.text() != greedy.text() {
			t.Errorf("top_k 1 at temperature 1: %q, want the greedy %q", o.text(), greedy.text())
		}
	})

	t.Run("seed", func(t *testing.T) {
		const opts = `"temperature":1,"top_k":0,"top_p":1,"num_predict":24,"seed":`
		a, b := chat(opts+"42"), chat(opts+"42")
		if a.text() != b.text() {
			t.Errorf("seed 42 twice: %q and %q", a.text(), b.text())
		}
		differs := false
		for seed := 43; seed < 47 && !differs; seed++ {
			differs = chat(opts+fmt.Sprint(seed)).text() != a.text()
		}
		if !differs {
			t.Errorf("seeds 43 to 46 all give seed 42's answer %q: the seed is not used", a.text())
		}
	})

	t.Run("stop", func(t *testing.T) {
		answer := greedy.text()
		stop, at := "", -1
		for i := 1; i+2 <= len(answer) && at < 0; i++ {
			if w := answer[i : i+2]; printableASCII(w) && strings.Index(answer, w) == i {
				stop, at = w, i
			}
		}
		if at < 0 {
			t.Fatalf("no printable stop string in the greedy answer %q", answer)
		}
		s, _ := json.Marshal(stop)
		o := chat(`"temperature":0,"num_predict":24,"stop":[` + string(s) + `]`)
		if o.text() != answer[:at] || o.DoneReason != "stop" {
			t.Errorf("stop %q: %q (%s), want %q (stop)", stop, o.text(), o.DoneReason, answer[:at])
		}
	})
}

// toolModel is chat-tiny with a chat template that offers tools and
// writes Hermes <tool_call> markup, so the server treats it as tool-capable.
// The template prints the call's arguments.city, which is there only when
// the arguments reach it as an object, and a tool result's name.
func toolModel(t *testing.T) pool.Model {
	const tmpl = "{%- if tools %}<|im_start|>system\n{% for t in tools %}{{ t.function.name }}\n{% endfor %}<|im_end|>\n{% endif %}" +
		"{%- for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'tool' %}{{ m.name }}: {% endif %}{{ m.content }}" +
		"{%- for tc in m.tool_calls or [] %}<tool_call>{{ tc.function.name }}({{ tc.function.arguments.city }})</tool_call>{% endfor %}<|im_end|>\n{% endfor %}" +
		"{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
	return templateModel(t, tmpl)
}

// templateModel is chat-tiny with the chat template tmpl.
func templateModel(t *testing.T, tmpl string) pool.Model {
	t.Helper()
	dir := t.TempDir()
	tiny := filepath.Join(testmodels.Root(), "chat-tiny")
	for _, name := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
		raw, err := os.ReadFile(filepath.Join(tiny, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _ := json.Marshal(map[string]any{"eos_token": "<|im_end|>", "chat_template": tmpl, "model_max_length": 256})
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return pool.Model{ID: "chat-tiny", Dir: dir}
}

// TestOllamaToolRoundTrip sends a conversation with a tool call and its
// result: the prompt the model sees must render them, the same as the
// OpenAI route renders the same conversation.
func TestOllamaToolRoundTrip(t *testing.T) {
	ts := startServer(t, func(c *serverConfig) { c.model = toolModel(t) })
	const tools = `[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	ollama := `{"model":"chat-tiny","stream":false,"options":{"num_predict":2},"tools":` + tools + `,"messages":[
		{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},
		{"role":"tool","content":"22C","tool_name":"get_weather"}]}`
	openAI := `{"model":"chat-tiny","max_tokens":2,"tools":` + tools + `,"messages":[
		{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"c1","name":"get_weather","content":"22C"}]}`
	rendered := "<|im_start|>system\nget_weather\n<|im_end|>\n" +
		"<|im_start|>user\nWeather in Paris?<|im_end|>\n" +
		"<|im_start|>assistant\n<tool_call>get_weather(Paris)</tool_call><|im_end|>\n" +
		"<|im_start|>tool\nget_weather: 22C<|im_end|>\n" +
		"<|im_start|>assistant\n"
	want := len(ts.tokenize(t, rendered, false))

	o := ts.ollamaWhole(t, "/api/chat", ollama)
	if *o.PromptEvalCount != want {
		t.Errorf("prompt_eval_count = %d, want %d (the conversation rendered with its tool call and result)", *o.PromptEvalCount, want)
	}
	var oa chatOut
	ts.postOK(t, "/v1/chat/completions", openAI, &oa)
	if oa.Usage.PromptTokens != want {
		t.Errorf("the OpenAI route's prompt_tokens = %d, want %d", oa.Usage.PromptTokens, want)
	}
}

// ollamaVolatile matches the fields of an Ollama answer that change from
// run to run.
var ollamaVolatile = regexp.MustCompile(`"(created_at":"[^"]*"|(total|load)_duration":\d+)`)

func normalizeOllama(s string) string {
	return ollamaVolatile.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, `"created_at`) {
			return `"created_at":"T"`
		}
		return m[:strings.Index(m, ":")+1] + "0"
	})
}

// TestOllamaResponses drives the Ollama writer with scripted deltas: tool
// calls (which chat-tiny cannot make) and a failure mid-stream.
func TestOllamaResponses(t *testing.T) {
	base := func() ollamaBase { return ollamaBase{model: "m", start: time.Now(), load: time.Millisecond} }
	tests := []struct {
		golden string
		g      generator
		job    ollamaJob
	}{
		{"ollama_tools_chat.golden", toolScript, ollamaJob{chat: true}},
		{"ollama_tools_chat_stream.golden", toolScript, ollamaJob{chat: true, stream: true}},
		{"ollama_fail_generate_stream.golden", failScript, ollamaJob{stream: true}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			got := record(t, "/api/chat", func(s *Server, c echo.Context) error { return s.answerOllama(c, tt.g, &tt.job, base()) })
			golden(t, tt.golden, normalizeOllama(got))
		})
	}
}

// countOpens counts the pool's loads per model id.
type countOpens struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countOpens) open(dir string, opt engine.RunnerOptions) (*engine.Runner, error) {
	c.mu.Lock()
	c.n[opt.ID]++
	c.mu.Unlock()
	return engine.Open(dir, opt)
}

func (c *countOpens) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
}

// TestOllamaLoadUnload checks Ollama's idiom: no messages (or an empty
// prompt) loads a model; with keep_alive 0 it unloads one, never loading it
// to do so.
func TestOllamaLoadUnload(t *testing.T) {
	opens := &countOpens{n: map[string]int{}}
	ts := startServer(t, withTwoModels, func(c *serverConfig) { c.pool.Open = opens.open })
	idiom := func(path, body, reason string) {
		t.Helper()
		o := ts.ollamaWhole(t, path, body)
		if !o.Done || o.DoneReason != reason || o.Model != "other" || o.EvalCount != nil || o.text() != "" {
			t.Errorf("POST %s %s = %+v, want done_reason %q for other", path, body, o, reason)
		}
	}

	idiom("/api/generate", `{"model":"other","keep_alive":0}`, "unload")
	if n := opens.count("other"); n != 0 || len(ts.psModels(t)) != 0 {
		t.Errorf("unloading a model that is not loaded loaded it (%d loads, /api/ps %v)", n, ts.psModels(t))
	}

	before := time.Now()
	idiom("/api/chat", `{"model":"other","messages":[],"keep_alive":"1h"}`, "load")
	models := ts.psModels(t)
	if len(models) != 1 || models[0]["id"] != "other" {
		t.Fatalf("/api/ps after the load request = %v, want other", models)
	}
	if exp, err := time.Parse(time.RFC3339Nano, models[0]["expires_at"].(string)); err != nil || exp.Before(before.Add(time.Hour)) {
		t.Errorf("expires_at = %v (%v), want an hour after the load request", models[0]["expires_at"], err)
	}
	idiom("/api/generate", `{"model":"other","prompt":""}`, "load") // already loaded: no second load
	idiom("/api/chat", `{"model":"other","keep_alive":0}`, "unload")
	if models := ts.psModels(t); len(models) != 0 {
		t.Errorf("/api/ps after the unload request = %v, want nothing", models)
	}
	if n := opens.count("other"); n != 1 {
		t.Errorf("other loaded %d times, want 1", n)
	}

	// A generation's keep_alive applies too: 0 unloads once it is done.
	o := ts.ollamaWhole(t, "/api/chat", `{"model":"other","messages":[{"role":"user","content":"hi"}],"options":{"num_predict":2},"stream":false,"keep_alive":0}`)
	if !o.Done || o.EvalCount == nil || o.Model != "other" {
		t.Errorf("chat with keep_alive 0 = %+v", o)
	}
	if models := ts.psModels(t); len(models) != 0 {
		t.Errorf("/api/ps after a chat with keep_alive 0 = %v, want nothing", models)
	}

	for _, body := range []string{`{"model":"nope","messages":[]}`, `{"model":"nope","keep_alive":0}`} {
		if r := ts.post(t, "/api/chat", body); r.Status != http.StatusNotFound || !strings.Contains(string(r.Body), `"error":`) {
			t.Errorf("%s = %d %s, want 404 with an error", body, r.Status, r.Body)
		}
	}
}

// TestOllamaDisconnect stops reading a long /api/chat stream after its
// first line: the generation must be cancelled, freeing the model.
func TestOllamaDisconnect(t *testing.T) {
	ts := startServer(t, holdRequests)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/api/chat", strings.NewReader(ollamaChatBody("hello there", 200, "")))
	req.Header.Set("X-Test-Hold", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"done":false`) {
		t.Fatalf("first line %q: %v", line, err)
	}
	cancel()
	resp.Body.Close()

	// The held generation ends only by cancellation; if it held the
	// model, this request would wait behind it until the test times out.
	o := ts.ollamaWhole(t, "/api/chat", ollamaChatBody("hi", 5, `,"stream":false`))
	if *o.EvalCount != 5 {
		t.Errorf("next request: eval_count %d", *o.EvalCount)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(ts.logs.String(), `msg="ollama chat stream ended"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the disconnected stream was not logged as ended:\n%s", ts.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(ts.logs.String(), "context canceled") {
		t.Errorf("log:\n%s", ts.logs.String())
	}
}

// TestTagsWithoutRegistry: Ollama clients pick models from /api/tags, so
// it lists the server's own model even when no cache holds it.
func TestTagsWithoutRegistry(t *testing.T) {
	ts := startServer(t)
	var tags struct {
		Models []tagEntry `json:"models"`
	}
	if r := ts.do(t, http.MethodGet, "/api/tags", "", nil); r.Status != 200 || json.Unmarshal(r.Body, &tags) != nil {
		t.Fatalf("/api/tags = %d %s", r.Status, r.Body)
	}
	if len(tags.Models) != 1 || tags.Models[0].Name != "chat-tiny" || !tags.Models[0].Servable {
		t.Errorf("/api/tags = %+v, want chat-tiny", tags.Models)
	}
}
