// Package web is Hearth's HTTP server: the OpenAI- and Anthropic-compatible
// API, Hearth's own /api routes, SSE streaming, request validation, and the
// origin and host checks that keep browsers on other sites out.
package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"hearth/engine"
	"hearth/engine/pool"
	"hearth/engine/registry"
	"hearth/web/metrics"
	"hearth/web/ui"
)

// DefaultMaxBodyBytes bounds a request body: room for a long conversation
// and its media as base64 (DefaultMediaRequestBytes of it, 53 MiB so
// encoded; one 20 MiB picture is 27 MiB).
const DefaultMaxBodyBytes = 64 << 20

// DefaultBodyTimeout bounds how long a client may take to send a request
// body, so one trickling it a byte at a time cannot hold its connection.
const DefaultBodyTimeout = 60 * time.Second

// DefaultDrain is how long Shutdown lets open requests finish before it
// stops the ones still running.
const DefaultDrain = 10 * time.Second

// finalGrace is how long Shutdown waits, once the drain is over, for the
// stopped requests to write their final error events before it closes
// every connection.
const finalGrace = 2 * time.Second

// Options configure a Server. Everything the server knows comes from here;
// it reads no environment.
type Options struct {
	Pool *pool.Pool // the loaded model(s)
	// Registry lists the models on this machine for /v1/models and
	// /api/tags; nil lists only the pool's default and loaded models.
	Registry *registry.Registry
	// Pull fetches a model for POST /api/pull; nil answers 501.
	Pull PullFunc
	// ContextTokens is the context models are loaded with (0 = the
	// engine's default), at which /v1/models judges fit.
	ContextTokens int
	// Origins are the browser origins allowed besides the server's own:
	// exact origins ("https://app.example.com"), patterns with * in the
	// host or port ("http://localhost:*"), or "*" for any.
	Origins      []string
	MaxBodyBytes int64 // 0 means DefaultMaxBodyBytes
	// Media bounds the images and video of a request and says whether
	// their parts may name URLs to fetch (off by default).
	Media MediaOptions
	// BodyTimeout bounds the time from a request's headers to the end of
	// its body (0 means DefaultBodyTimeout); past it the request gets 408
	// and its connection is closed. It is a read deadline only: a long
	// streamed answer is never cut by it.
	BodyTimeout time.Duration
	// Drain is how long Shutdown lets open requests finish (0 means
	// DefaultDrain). A stream still running then ends with an error
	// event in its API's shape.
	Drain   time.Duration
	Version string // reported by /api/version
	Logger  *slog.Logger
}

// Server is the HTTP engine.
type Server struct {
	opt  Options
	log  *slog.Logger
	pool *pool.Pool

	// halt is cancelled, with errShuttingDown, when the drain is over:
	// every request still running stops.
	halt     context.Context
	haltWith context.CancelCauseFunc

	mu     sync.Mutex
	http   *http.Server
	closed bool

	fetchOnce sync.Once
	fetcher   *http.Client // media URL downloads (fetchClient)

	capsMu sync.Mutex
	caps   map[string][]string // by checkpoint directory: what the engine reported when it was loaded

	metrics *metrics.Metrics // GET /metrics

	transcribeOnce sync.Once
	transcribeSet  *transcriberSet // Whisper models (transcribe.go)
}

// errShuttingDown is how a request stopped by Shutdown ends: a 503, or a
// stream's final error event.
var errShuttingDown = &apiError{status: http.StatusServiceUnavailable, code: "server_shutting_down",
	msg: "the server is shutting down; the request was stopped before it finished"}

// halted reports whether ctx, a request's context, was cancelled by
// Shutdown (not by the client leaving).
func halted(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errShuttingDown)
}

// New makes a server. Call Serve to accept connections.
func New(opt Options) *Server {
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opt.BodyTimeout <= 0 {
		opt.BodyTimeout = DefaultBodyTimeout
	}
	if opt.Drain <= 0 {
		opt.Drain = DefaultDrain
	}
	opt.Media = opt.Media.withDefaults()
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	halt, haltWith := context.WithCancelCause(context.Background())
	return &Server{opt: opt, log: log, pool: opt.Pool, halt: halt, haltWith: haltWith, metrics: metrics.New(poolLive{opt.Pool})}
}

// Serve accepts connections on ln until Shutdown. The host check applies
// when ln is bound to a loopback address.
func (s *Server) Serve(ln net.Listener) error { return s.serve(ln, s.handler(ln.Addr())) }

// serve is Serve with the handler given (tests wrap it). There is no
// ReadTimeout or WriteTimeout: the body's deadline is set per request
// (limitBody), and a streamed answer may run as long as it generates.
func (s *Server) serve(ln net.Listener, h http.Handler) error {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.http = hs
	s.mu.Unlock()
	err := hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections and lets open requests finish for
// the drain time (Options.Drain, or until ctx ends if that is sooner).
// Requests still running then are stopped: a stream ends with an error
// event in its API's shape, any other request gets a 503, and their usage
// is logged. After a short grace for those last writes every connection
// is closed. The error is the drain's (context.DeadlineExceeded when
// requests had to be stopped).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	hs := s.http
	s.mu.Unlock()
	if hs == nil {
		s.haltWith(errShuttingDown)
		return nil
	}
	drain, cancel := context.WithTimeout(ctx, s.opt.Drain)
	defer cancel()
	err := hs.Shutdown(drain)
	s.haltWith(errShuttingDown)
	if err == nil {
		s.transcribers().close()
		return nil
	}
	grace, cancelGrace := context.WithTimeout(context.Background(), finalGrace)
	defer cancelGrace()
	if hs.Shutdown(grace) != nil {
		hs.Close()
	}
	return err
}

// handler builds the routes for a server bound to addr.
func (s *Server) handler(addr net.Addr) http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// known holds the API's paths (filled below): only they answer 405 to
	// a wrong method; any other path is a 404, whatever the method, even
	// though the web chat's GET /* matches every path.
	known := map[string]bool{}
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if errors.Is(err, echo.ErrMethodNotAllowed) && !known[c.Request().URL.Path] {
			err = echo.ErrNotFound
		}
		s.handleError(err, c)
	}
	e.Pre(s.guard(newOriginPolicy(addr, s.opt.Origins)))
	e.Use(s.observe, s.stopOnHalt, s.limitBody)

	e.GET("/health", s.health)
	e.GET("/metrics", s.metricsHandler)
	e.GET("/api/version", s.version)
	e.GET("/api/ps", s.ps)
	e.GET("/api/tags", s.tags)
	e.GET("/api/catalog", s.catalogList)
	e.POST("/api/pull", s.pull)
	e.POST("/api/tokenize", s.tokenize)
	e.POST("/api/detokenize", s.detokenize)
	e.POST("/api/chat", s.ollamaChat)
	e.POST("/api/show", s.show)
	e.POST("/api/generate", s.ollamaGenerate)
	e.POST("/api/embed", s.ollamaEmbed)
	e.POST("/api/embeddings", s.ollamaEmbeddings)
	e.DELETE("/api/delete", s.deleteModel)
	e.POST("/api/copy", s.copyModel)

	e.GET("/v1/models", s.models)
	e.GET("/v1/models/*", s.model)
	e.POST("/v1/chat/completions", s.chat)
	e.POST("/v1/completions", s.completions)
	e.POST("/v1/embeddings", s.embeddings)
	e.POST("/v1/messages", s.messages)
	e.POST("/v1/messages/count_tokens", s.countTokens)
	e.POST("/v1/responses", s.responses)
	e.POST("/v1/audio/transcriptions", s.transcribe("transcribe"))
	e.POST("/v1/audio/translations", s.transcribe("translate"))

	// The web chat: every other GET (and HEAD) path, so a typo under /v1/
	// or /api/ still gets a JSON 404.
	chat := echo.WrapHandler(ui.Handler())
	page := func(c echo.Context) error {
		if p := c.Request().URL.Path; strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/api/") {
			if known[p] {
				return echo.ErrMethodNotAllowed
			}
			return echo.ErrNotFound
		}
		return chat(c)
	}
	for _, r := range e.Routes() {
		known[r.Path] = true
	}
	e.GET("/*", page)
	e.HEAD("/*", page)
	return e
}

// stopOnHalt gives each request a context that Shutdown cancels when the
// drain is over. A request stopped so before it answered gets a 503
// (streams write their own final event: see Server.generate).
func (s *Server) stopOnHalt(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx, cancel := context.WithCancelCause(c.Request().Context())
		defer cancel(nil)
		stop := context.AfterFunc(s.halt, func() { cancel(errShuttingDown) })
		defer stop()
		c.SetRequest(c.Request().WithContext(ctx))
		err := next(c)
		if err != nil && halted(ctx) && errors.Is(err, context.Canceled) {
			err = errShuttingDown
		}
		return err
	}
}

// limitBody bounds every request body in size and in time: reading past
// the size limit yields an *http.MaxBytesError, answered with 413, and a
// body that has not arrived by the body timeout a 408.
func (s *Server) limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > s.opt.MaxBodyBytes {
			return &http.MaxBytesError{Limit: s.opt.MaxBodyBytes}
		}
		body := http.MaxBytesReader(c.Response(), r.Body, s.opt.MaxBodyBytes)
		if r.Body != nil && r.Body != http.NoBody {
			// Only with a body to read: a deadline set while the server's
			// background read is waiting (no body) would end the request.
			rc := http.NewResponseController(c.Response())
			if rc.SetReadDeadline(time.Now().Add(s.opt.BodyTimeout)) == nil {
				body = &timedBody{ReadCloser: body, c: c, rc: rc, timeout: s.opt.BodyTimeout}
			}
		}
		r.Body = body
		return next(c)
	}
}

// timedBody is a request body read under a deadline. The deadline is
// lifted once the whole body is read, so that it never ends a long
// answer. A body that fails to arrive (still arriving at the deadline:
// 408; too large; broken) closes its connection after the answer, so
// what remains of it is never read.
type timedBody struct {
	io.ReadCloser
	c       echo.Context
	rc      *http.ResponseController
	timeout time.Duration
	over    bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == nil || b.over {
		return n, err
	}
	b.over = true
	if err == io.EOF {
		b.rc.SetReadDeadline(time.Time{})
		return n, err
	}
	b.c.Response().Header().Set("Connection", "close")
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, &apiError{status: http.StatusRequestTimeout, code: "request_timeout",
			msg: fmt.Sprintf("the request body did not arrive within %s", b.timeout)}
	}
	return n, err
}

// generator is what a handler needs of a loaded model: an *engine.Runner
// (tests also drive the response writers with scripted deltas).
type generator interface {
	Generate(ctx context.Context, req engine.Request, emit func(engine.Delta) error) (engine.Usage, error)
}
