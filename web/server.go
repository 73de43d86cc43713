// Package web is Hearth's HTTP server: the OpenAI- and Anthropic-compatible
// API, Hearth's own /api routes, SSE streaming, request validation, and the
// origin and host checks that keep browsers on other sites out.
package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"hearth/engine"
	"hearth/engine/pool"
	"hearth/engine/registry"
	"hearth/web/ui"
)

// DefaultMaxBodyBytes bounds a request body: room for a long conversation
// and, later, base64 media (a few images or a short clip).
const DefaultMaxBodyBytes = 32 << 20

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
	MaxBodyBytes int64  // 0 means DefaultMaxBodyBytes
	Version      string // reported by /api/version
	Logger       *slog.Logger
}

// Server is the HTTP engine.
type Server struct {
	opt  Options
	log  *slog.Logger
	pool *pool.Pool

	mu     sync.Mutex
	http   *http.Server
	closed bool
}

// New makes a server. Call Serve to accept connections.
func New(opt Options) *Server {
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = DefaultMaxBodyBytes
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Server{opt: opt, log: log, pool: opt.Pool}
}

// Serve accepts connections on ln until Shutdown. The host check applies
// when ln is bound to a loopback address.
func (s *Server) Serve(ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.handler(ln.Addr()),
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

// Shutdown stops accepting connections and waits for open requests (up to
// ctx's deadline), then closes the rest.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	hs := s.http
	s.mu.Unlock()
	if hs == nil {
		return nil
	}
	err := hs.Shutdown(ctx)
	if err != nil {
		hs.Close()
	}
	return err
}

// handler builds the routes for a server bound to addr.
func (s *Server) handler(addr net.Addr) http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Pre(s.guard(newOriginPolicy(addr, s.opt.Origins)))
	e.Use(s.limitBody)

	e.GET("/health", s.health)
	e.GET("/api/version", s.version)
	e.GET("/api/ps", s.ps)
	e.GET("/api/tags", s.tags)
	e.POST("/api/pull", s.pull)
	e.POST("/api/tokenize", s.tokenize)
	e.POST("/api/detokenize", s.detokenize)
	e.POST("/api/chat", s.ollamaChat)
	e.POST("/api/show", s.show)
	e.POST("/api/generate", s.ollamaGenerate)

	e.GET("/v1/models", s.models)
	e.GET("/v1/models/*", s.model)
	e.POST("/v1/chat/completions", s.chat)
	e.POST("/v1/completions", s.completions)
	e.POST("/v1/messages", s.messages)

	// The web chat: every other GET (and HEAD) path, so a typo under /v1/
	// or /api/ still gets a JSON 404.
	chat := echo.WrapHandler(ui.Handler())
	page := func(c echo.Context) error {
		if p := c.Request().URL.Path; strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/api/") {
			for _, r := range e.Routes() {
				if r.Path == p {
					return echo.ErrMethodNotAllowed
				}
			}
			return echo.ErrNotFound
		}
		return chat(c)
	}
	e.GET("/*", page)
	e.HEAD("/*", page)
	return e
}

// limitBody bounds every request body; reading past the limit yields an
// *http.MaxBytesError, answered with 413.
func (s *Server) limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > s.opt.MaxBodyBytes {
			return &http.MaxBytesError{Limit: s.opt.MaxBodyBytes}
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, s.opt.MaxBodyBytes)
		return next(c)
	}
}

// generator is what a handler needs of a loaded model: an *engine.Runner
// (tests also drive the response writers with scripted deltas).
type generator interface {
	Generate(ctx context.Context, req engine.Request, emit func(engine.Delta) error) (engine.Usage, error)
}
