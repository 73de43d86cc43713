package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"hearth/engine"
	"hearth/engine/pool"
)

// servedServer is a Server accepting connections through its own serve
// loop, as hearth serve runs it (startServer mounts only the handler), so
// tests reach Shutdown and the http.Server's settings.
type servedServer struct {
	*testServer
	s *Server
}

// startServing serves chat-tiny with opt through Server.serve until the
// test ends. wrap, if set, wraps the handler (it gets the Server, for the
// test's hooks).
func startServing(t *testing.T, opt Options, wrap func(*Server, http.Handler) http.Handler) *servedServer {
	t.Helper()
	return startServingParallel(t, 1, opt, wrap)
}

// startServingParallel is startServing with runners that decode parallel
// requests at once (--parallel).
func startServingParallel(t *testing.T, parallel int, opt Options, wrap func(*Server, http.Handler) http.Handler) *servedServer {
	t.Helper()
	p := pool.New(pool.Options{Runner: engine.RunnerOptions{Options: engine.Options{Threads: 1, Backend: "cpu"}, Parallel: parallel}, Default: chatTiny()})
	logs := &logBuffer{}
	opt.Pool, opt.Version, opt.Logger = p, "test", slog.New(slog.NewTextHandler(logs, nil))
	s := New(opt)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := s.handler(ln.Addr())
	if wrap != nil {
		h = wrap(s, h)
	}
	done := make(chan error, 1)
	go func() { done <- s.serve(ln, h) }()
	t.Cleanup(func() {
		s.Shutdown(context.Background())
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		p.Close()
	})
	return &servedServer{testServer: &testServer{URL: "http://" + ln.Addr().String(), pool: p, logs: logs}, s: s}
}

// gateWriter lets a response's first write through and holds every later
// one until open is closed (then lets them through), or fails it once the
// request is over: a stream that cannot finish before the test says so.
type gateWriter struct {
	http.ResponseWriter
	open   <-chan struct{}
	gone   <-chan struct{}
	writes int
}

func (w *gateWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes > 1 {
		select {
		case <-w.open:
		case <-w.gone:
			return 0, errors.New("the request is over")
		}
	}
	return w.ResponseWriter.Write(p)
}

func (w *gateWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *gateWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// gateUntil wraps every request's writer in a gateWriter that open opens.
func gateUntil(open func(*Server) <-chan struct{}) func(*Server, http.Handler) http.Handler {
	return func(s *Server, h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(&gateWriter{ResponseWriter: w, open: open(s), gone: r.Context().Done()}, r)
		})
	}
}

// openStream posts body to path and returns the response once its status
// is in, with a reader positioned after the first event (SSE) or line
// (NDJSON).
func (ts *testServer) openStream(t *testing.T, path, body string) (*http.Response, *bufio.Reader) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s = %d %s", path, resp.StatusCode, b)
	}
	br := bufio.NewReader(resp.Body)
	end := "\n\n"
	if strings.HasPrefix(path, "/api/") {
		end = "\n"
	}
	var first strings.Builder
	for !strings.HasSuffix(first.String(), end) {
		line, err := br.ReadString('\n')
		first.WriteString(line)
		if err != nil {
			t.Fatalf("POST %s: no first event: %q: %v", path, first.String(), err)
		}
	}
	return resp, br
}

// shutdownError checks an error object's message.
func shutdownError(t *testing.T, what, msg string) {
	t.Helper()
	if !strings.Contains(msg, "shutting down") {
		t.Errorf("%s message %q, want one saying the server is shutting down", what, msg)
	}
}

// TestShutdownEndsStreams checks that a stream still running when the
// drain is over ends with an error event in its API's shape (not a cut
// connection), and that its log line counts the tokens it had.
func TestShutdownEndsStreams(t *testing.T) {
	openAIEnd := func(t *testing.T, rest string) {
		fs := frames(t, []byte(rest))
		if len(fs) < 2 || fs[len(fs)-1].Data != "[DONE]" {
			t.Fatalf("stream ends %q, want an error frame then [DONE]", rest)
		}
		var e openAIError
		if err := json.Unmarshal([]byte(fs[len(fs)-2].Data), &e); err != nil || e.Error.Code == nil || *e.Error.Code != "server_shutting_down" {
			t.Fatalf("frame before [DONE] = %s (%v), want an OpenAI error with code server_shutting_down", fs[len(fs)-2].Data, err)
		}
		shutdownError(t, "error", e.Error.Message)
	}
	tests := []struct {
		name, path, body, kind string
		end                    func(t *testing.T, rest string)
	}{
		{"chat", "/v1/chat/completions", chatBody("hello there", 200, `,"stream":true,"logprobs":true`), "chat stream", openAIEnd},
		{"completions", "/v1/completions", `{"prompt":"hello there","max_tokens":200,"temperature":0,"logprobs":1,"stream":true}`, "completion stream", openAIEnd},
		{"messages", "/v1/messages", messagesBody("hello there", 200, `,"stream":true`), "messages stream", func(t *testing.T, rest string) {
			fs := frames(t, []byte(rest))
			last := fs[len(fs)-1]
			var e anthropicError
			if err := json.Unmarshal([]byte(last.Data), &e); err != nil || last.Event != "error" || e.Type != "error" || e.Error.Type == "" {
				t.Fatalf("stream ends %q, want an Anthropic error event", rest)
			}
			shutdownError(t, "error", e.Error.Message)
		}},
		{"ollama chat", "/api/chat", `{"model":"chat-tiny","messages":[{"role":"user","content":"hello there"}],"options":{"temperature":0,"num_predict":200}}`, "ollama chat stream", nil},
		{"ollama generate", "/api/generate", `{"model":"chat-tiny","prompt":"hello there","options":{"temperature":0,"num_predict":200}}`, "ollama generate stream", nil},
	}
	ollamaEnd := func(t *testing.T, rest string) {
		lines := strings.Split(strings.TrimSuffix(rest, "\n"), "\n")
		var e nativeError
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &e); err != nil || e.Error == "" {
			t.Fatalf("stream ends %q, want a line with an error", rest)
		}
		shutdownError(t, "error", e.Error)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServing(t, Options{Drain: 50 * time.Millisecond}, gateUntil(func(s *Server) <-chan struct{} { return s.halt.Done() }))
			resp, br := ts.openStream(t, tt.path, tt.body)
			shut := make(chan error, 1)
			go func() { shut <- ts.s.Shutdown(context.Background()) }()
			rest, err := io.ReadAll(br)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("the stream was cut: %v, after %q", err, rest)
			}
			if tt.end == nil {
				tt.end = ollamaEnd
			}
			tt.end(t, string(rest))
			if err := <-shut; !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Shutdown = %v, want the drain's deadline", err)
			}
			line := regexp.MustCompile(`msg="` + tt.kind + ` ended".* prompt_tokens=(\d+) completion_tokens=(\d+) .*shutting down`).FindStringSubmatch(ts.logs.String())
			if line == nil {
				t.Fatalf("no %q log line for the stopped stream in:\n%s", tt.kind+" ended", ts.logs)
			}
			if p, _ := strconv.Atoi(line[1]); p == 0 {
				t.Errorf("logged %s prompt tokens, want the prompt's count", line[1])
			}
			if c, _ := strconv.Atoi(line[2]); c == 0 {
				t.Errorf("logged %s completion tokens, want the tokens generated before the stop", line[2])
			}
		})
	}
}

// TestShutdownIdle checks that a server with nothing running shuts down
// at once and answers nothing after.
func TestShutdownIdle(t *testing.T) {
	ts := startServing(t, Options{}, nil)
	if r := ts.do(t, http.MethodGet, "/health", "", nil); r.Status != http.StatusOK {
		t.Fatalf("/health = %d", r.Status)
	}
	if err := ts.s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown = %v, want nil with nothing running", err)
	}
	if _, err := ts.send(http.MethodGet, "/health", "", nil); err == nil {
		t.Errorf("a request after Shutdown was answered")
	}
}

// TestShutdownAnswersWaiting checks that a request still waiting for the
// model when the drain is over gets a 503 saying why, not a cut
// connection.
func TestShutdownAnswersWaiting(t *testing.T) {
	ts := startServing(t, Options{Drain: 50 * time.Millisecond}, gateUntil(func(s *Server) <-chan struct{} { return s.halt.Done() }))
	resp, br := ts.openStream(t, "/v1/chat/completions", chatBody("hello there", 200, `,"stream":true,"logprobs":true`))
	waiting := make(chan response, 1)
	go func() {
		r, err := ts.send(http.MethodPost, "/v1/chat/completions", chatBody("hi", 200, ""), nil)
		if err != nil {
			r = response{Body: []byte(err.Error())}
		}
		waiting <- r
	}()
	// Both requests hold the model once the second is queued behind the
	// first.
	for deadline := time.Now().Add(guard); ; time.Sleep(time.Millisecond) {
		if st := ts.pool.Loaded(); len(st) == 1 && st[0].Active == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second request never reached the model: %+v", ts.pool.Loaded())
		}
	}
	if err := ts.s.Shutdown(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want the drain's deadline", err)
	}
	io.Copy(io.Discard, br)
	resp.Body.Close()
	r := <-waiting
	var e openAIError
	if err := json.Unmarshal(r.Body, &e); err != nil || r.Status != http.StatusServiceUnavailable || e.Error.Code == nil || *e.Error.Code != "server_shutting_down" {
		t.Fatalf("the waiting request: %d %s, want 503 server_shutting_down", r.Status, r.Body)
	}
	shutdownError(t, "503", e.Error.Message)
}
