package web

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// guard bounds how long a test waits on the server before it fails. It is
// a hang guard, far above any timeout the tests set, not a measurement.
const guard = 30 * time.Second

// TestBodyTimeout checks that a client trickling its body is answered 408
// once the body timeout is over and its connection is closed, and that
// the server keeps serving.
func TestBodyTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	ts := startServing(t, Options{BodyTimeout: timeout}, nil)
	host := strings.TrimPrefix(ts.URL, "http://")
	tests := []struct{ name, path, framing string }{
		{"openai, content-length", "/v1/chat/completions", "Content-Length: 1000"},
		{"anthropic, chunked", "/v1/messages", "Transfer-Encoding: chunked"},
		{"ollama, content-length", "/api/chat", "Content-Length: 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s\r\n\r\n", tt.path, host, tt.framing)
			chunked := strings.HasPrefix(tt.framing, "Transfer")
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				// One byte every few milliseconds, for as long as the
				// connection takes them.
				for {
					select {
					case <-stop:
						return
					case <-time.After(timeout / 10):
					}
					b := " "
					if chunked {
						b = "1\r\n \r\n"
					}
					if _, err := io.WriteString(conn, b); err != nil {
						return
					}
				}
			}()
			conn.SetReadDeadline(time.Now().Add(guard))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer to a trickled body: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "request body") {
				t.Errorf("trickled body: %d %s, want 408 naming the request body", resp.StatusCode, body)
			}
			if !resp.Close {
				t.Errorf("trickled body: the connection is kept open (headers %v)", resp.Header)
			}
			if n, err := br.Read(make([]byte, 1)); err == nil {
				t.Errorf("trickled body: read %d more bytes, want the connection closed", n)
			}
		})
	}
	if r := ts.do(t, http.MethodGet, "/health", "", nil); r.Status != http.StatusOK {
		t.Errorf("/health after the trickled bodies = %d %s", r.Status, r.Body)
	}
	var out chatOut
	ts.postOK(t, "/v1/chat/completions", chatBody("hi", 2, ""), &out)
}

// TestBodyTimeoutSparesAnswers checks that the body timeout bounds only
// the body: an answer streaming long past it, and the next request on the
// same connection, are untouched.
func TestBodyTimeoutSparesAnswers(t *testing.T) {
	const timeout = 50 * time.Millisecond
	open := make(chan struct{})
	ts := startServing(t, Options{BodyTimeout: timeout}, gateUntil(func(*Server) <-chan struct{} { return open }))
	resp, br := ts.openStream(t, "/v1/chat/completions", chatBody("hello there", 8, `,"stream":true`))
	time.Sleep(5 * timeout) // the answer is held well past the body timeout
	close(open)
	rest, err := io.ReadAll(br)
	resp.Body.Close()
	if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Fatalf("the answer held past the body timeout ends %q, %v; want it whole, ending in [DONE]", rest, err)
	}
	// The connection went back to the client's pool; the next request
	// may reuse it, and must not meet an old deadline.
	time.Sleep(2 * timeout)
	var out chatOut
	ts.postOK(t, "/v1/chat/completions", chatBody("hi", 2, ""), &out)
	if b, _ := json.Marshal(out); len(out.Choices) != 1 {
		t.Errorf("the next request: %s", b)
	}
}
