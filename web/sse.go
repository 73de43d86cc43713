package web

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"
)

// sse writes a server-sent event stream. Nothing is written until the
// first event, so a request that fails before producing anything still
// gets a plain HTTP error with its status. A write error means the client
// is gone; the caller returns it from emit, which cancels the generation.
type sse struct {
	c       echo.Context
	started bool
	buf     bytes.Buffer
}

func newSSE(c echo.Context) *sse { return &sse{c: c} }

// begun reports whether the stream has started (its status is sent).
func (s *sse) begun() bool { return s.started }

func (s *sse) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.c.Response().Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	s.c.Response().WriteHeader(http.StatusOK)
}

// data writes "data: <json>\n\n" (OpenAI's framing).
func (s *sse) data(v any) error { return s.event("", v) }

// event writes "event: <name>\ndata: <json>\n\n" (Anthropic's framing),
// or just the data line when name is empty.
func (s *sse) event(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.raw(name, b)
}

// done writes OpenAI's terminating "data: [DONE]".
func (s *sse) done() error { return s.raw("", []byte("[DONE]")) }

// openAIError ends an OpenAI stream that failed midway: an error frame in
// OpenAI's shape, then [DONE], so a client waiting for the end sees it.
func (s *sse) openAIError(p problem) error {
	if err := s.data(errorBody(dialectOpenAI, p)); err != nil {
		return err
	}
	return s.done()
}

func (s *sse) raw(name string, data []byte) error {
	s.start()
	s.buf.Reset()
	if name != "" {
		s.buf.WriteString("event: ")
		s.buf.WriteString(name)
		s.buf.WriteByte('\n')
	}
	s.buf.WriteString("data: ")
	s.buf.Write(data)
	s.buf.WriteString("\n\n")
	if _, err := s.c.Response().Write(s.buf.Bytes()); err != nil {
		return err
	}
	return http.NewResponseController(s.c.Response().Writer).Flush()
}

// ndjson writes newline-delimited JSON, one object per line, each line
// flushed (Ollama's streaming framing). Like sse, nothing is written
// until the first line, and a write error means the client is gone.
type ndjson struct {
	c       echo.Context
	started bool
}

func newNDJSON(c echo.Context) *ndjson { return &ndjson{c: c} }

// begun reports whether the stream has started (its status is sent).
func (w *ndjson) begun() bool { return w.started }

// line writes v as one line.
func (w *ndjson) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if !w.started {
		w.started = true
		w.c.Response().Header().Set(echo.HeaderContentType, "application/x-ndjson")
		w.c.Response().WriteHeader(http.StatusOK)
	}
	if _, err := w.c.Response().Write(append(b, '\n')); err != nil {
		return err
	}
	return http.NewResponseController(w.c.Response().Writer).Flush()
}
