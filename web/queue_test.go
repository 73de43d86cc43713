package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdWriter lets the first write of a response through, then blocks every
// later write until the request is cancelled: a client that stops reading
// after the first chunk. The generation behind it cannot finish on its
// own, so the tests below see whether cancellation frees the model.
type holdWriter struct {
	http.ResponseWriter
	ctx    context.Context
	writes int
}

func (w *holdWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes > 1 {
		<-w.ctx.Done()
		return 0, w.ctx.Err()
	}
	return w.ResponseWriter.Write(p)
}

func (w *holdWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *holdWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// holdRequests applies holdWriter to requests carrying X-Test-Hold.
func holdRequests(c *serverConfig) {
	c.wrap = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Test-Hold") != "" {
				w = &holdWriter{ResponseWriter: w, ctx: r.Context()}
			}
			h.ServeHTTP(w, r)
		})
	}
}

// holdStream starts a long streaming chat whose client stops reading
// after the first event; it returns once the model is generating it, and
// the func that disconnects the client.
func (ts *testServer) holdStream(t *testing.T) (disconnect func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body := chatBody("hello there", 200, `,"stream":true,"logprobs":true`)
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("X-Test-Hold", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		cancel()
		t.Fatalf("held stream: status %d", resp.StatusCode)
	}
	first := false
	readFrames(resp.Body, func(f frame) bool { first = f.Data != ""; return false })
	if !first {
		cancel()
		t.Fatal("held stream: no first event")
	}
	var once sync.Once
	disconnect = func() { once.Do(func() { cancel(); resp.Body.Close() }) }
	t.Cleanup(disconnect)
	return disconnect
}

func TestDisconnectFreesTheModel(t *testing.T) {
	ts := startServer(t, holdRequests)
	disconnect := ts.holdStream(t)
	disconnect()

	// The held generation can only end by cancellation; if the slot were
	// not freed this request would wait forever (and time out).
	var out chatOut
	ts.postOK(t, "/v1/chat/completions", chatBody("hi", 5, ""), &out)
	if out.Usage.CompletionTokens != 5 {
		t.Errorf("next request: %+v", out.Usage)
	}
	// Its handler logs the cancellation once Generate returns.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(ts.logs.String(), "context canceled") {
		if time.Now().After(deadline) {
			t.Fatalf("the disconnected stream was not logged as cancelled:\n%s", ts.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(ts.logs.String(), `msg="chat stream ended"`) {
		t.Errorf("log:\n%s", ts.logs.String())
	}
}

func TestQueueFull(t *testing.T) {
	ts := startServer(t, holdRequests, func(c *serverConfig) { c.runner.QueueLen = 1 })
	disconnect := ts.holdStream(t)

	// The model is busy and one request may wait: of two more, one waits
	// and one is refused.
	results := make(chan response, 2)
	for range 2 {
		go func() {
			r, err := ts.send("POST", "/v1/chat/completions", chatBody("hi", 3, ""), nil)
			if err != nil {
				r = response{Status: -1, Body: []byte(err.Error())}
			}
			results <- r
		}()
	}
	refused := <-results
	if refused.Status != http.StatusTooManyRequests {
		t.Fatalf("first answer = %d %s, want 429 while the other request waits", refused.Status, refused.Body)
	}
	golden(t, "queue_full.golden", string(refused.Body))
	disconnect()
	select {
	case waited := <-results:
		if waited.Status != 200 {
			t.Errorf("the queued request = %d %s, want 200 once the model is free", waited.Status, waited.Body)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the queued request never completed")
	}
}

// TestBurst sends 32 requests at once, half streaming, and checks each
// answer equals the one the same request gets alone.
func TestBurst(t *testing.T) {
	ts := startServer(t)
	const n = 32
	body := func(i int) string { return chatBody(fmt.Sprintf("question number %d", i), 10, "") }
	want := make([]string, n)
	for i := range want {
		var out chatOut
		ts.postOK(t, "/v1/chat/completions", body(i), &out)
		want[i] = out.text()
	}
	got := make([]response, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := body(i)
			if i%2 == 1 {
				b = strings.TrimSuffix(b, "}") + `,"stream":true}`
			}
			got[i], errs[i] = ts.send("POST", "/v1/chat/completions", b, nil)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the burst did not complete in 2 minutes")
	}
	for i := range n {
		if errs[i] != nil || got[i].Status != 200 {
			t.Errorf("request %d: %v %d %s", i, errs[i], got[i].Status, got[i].Body)
			continue
		}
		var text string
		if i%2 == 1 {
			text, _ = chatStreamText(t, frames(t, got[i].Body))
		} else {
			var out chatOut
			if err := json.Unmarshal(got[i].Body, &out); err != nil {
				t.Fatal(err)
			}
			text = out.text()
		}
		if text != want[i] {
			t.Errorf("request %d = %q, want %q", i, text, want[i])
		}
	}
}
