package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// recorder sits between the browser and the real server. It passes every
// request through unchanged and records what reached the server for chat
// completions: the body, the status, and whether the browser went away
// before the stream ended. It can pace a stream frame by frame, because
// the test model writes its whole reply in milliseconds, faster than a
// person (or a test) could press Stop.
type recorder struct {
	proxy *httputil.ReverseProxy
	pace  atomic.Int64 // nanoseconds between SSE frames; 0 passes them at once
	paced atomic.Int64 // how many of the next chat requests are paced

	mu    sync.Mutex
	chats []*chatRecord
}

// chatRecord is one POST /v1/chat/completions as the server saw it.
type chatRecord struct {
	Body       []byte
	Status     int
	Frames     int  // SSE frames delivered to the browser
	ClientGone bool // the browser closed the connection before the end
	Done       bool // the proxy finished with this request
}

func newRecorder(target *url.URL) *recorder {
	p := httputil.NewSingleHostReverseProxy(target)
	p.ErrorLog = log.New(io.Discard, "", 0)
	return &recorder{proxy: p}
}

// reset forgets what was recorded and paces the first chat request's
// stream (pace 0: none).
func (rc *recorder) reset(pace time.Duration) {
	rc.mu.Lock()
	rc.chats = nil
	rc.mu.Unlock()
	rc.pace.Store(int64(pace))
	rc.paced.Store(1)
}

// records returns copies of the chat records, waiting (briefly) for
// requests still in flight to finish.
func (rc *recorder) records() []chatRecord {
	deadline := time.Now().Add(5 * time.Second)
	for {
		rc.mu.Lock()
		out := make([]chatRecord, len(rc.chats))
		done := true
		for i, c := range rc.chats {
			out[i] = *c
			done = done && c.Done
		}
		rc.mu.Unlock()
		if done || time.Now().After(deadline) {
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		rc.proxy.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	rec := &chatRecord{Body: body}
	rc.mu.Lock()
	rc.chats = append(rc.chats, rec)
	rc.mu.Unlock()
	var pace time.Duration
	if rc.paced.Add(-1) >= 0 {
		pace = time.Duration(rc.pace.Load())
	}
	pw := &pacedWriter{w: w, ctx: r.Context(), pace: pace, rc: rc, rec: rec}
	defer func() {
		rc.mu.Lock()
		rec.ClientGone = r.Context().Err() != nil
		rec.Done = true
		rc.mu.Unlock()
	}()
	rc.proxy.ServeHTTP(pw, r)
	pw.flushRest()
}

// pacedWriter delivers a successful event stream one frame at a time,
// pace apart, and stops as soon as the browser is gone.
type pacedWriter struct {
	w    http.ResponseWriter
	ctx  context.Context
	pace time.Duration
	rc   *recorder
	rec  *chatRecord
	buf  []byte
}

func (p *pacedWriter) Header() http.Header { return p.w.Header() }

func (p *pacedWriter) WriteHeader(code int) {
	p.rc.mu.Lock()
	p.rec.Status = code
	p.rc.mu.Unlock()
	p.w.WriteHeader(code)
}

func (p *pacedWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.Index(p.buf, []byte("\n\n"))
		if i < 0 {
			return len(b), nil
		}
		if err := p.frame(p.buf[:i+2]); err != nil {
			return 0, err
		}
		p.buf = p.buf[i+2:]
	}
}

func (p *pacedWriter) frame(f []byte) error {
	if p.pace > 0 {
		select {
		case <-p.ctx.Done():
			return p.ctx.Err()
		case <-time.After(p.pace):
		}
	}
	if _, err := p.w.Write(f); err != nil {
		return err
	}
	http.NewResponseController(p.w).Flush()
	p.rc.mu.Lock()
	p.rec.Frames++
	p.rc.mu.Unlock()
	return nil
}

// Flush is a no-op: frames are flushed as they are paced out.
func (p *pacedWriter) Flush() {}

func (p *pacedWriter) flushRest() {
	if len(p.buf) > 0 && p.ctx.Err() == nil {
		p.w.Write(p.buf)
		http.NewResponseController(p.w).Flush()
	}
	p.buf = nil
}

// chatBody is the part of a request body the tests look at.
type chatBody struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream      bool     `json:"stream"`
	Temperature *float64 `json:"temperature"`
}

func (c chatRecord) body() (chatBody, error) {
	var b chatBody
	err := json.Unmarshal(c.Body, &b)
	return b, err
}
