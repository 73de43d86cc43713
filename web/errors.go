package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"hearth/engine"
	"hearth/engine/family"
	"hearth/engine/fit"
	"hearth/engine/pool"
	"hearth/engine/registry"
	"hearth/engine/template"
	"hearth/media"
)

// apiError is a failure the server itself raises, with its status, the
// request parameter at fault (if any) and a machine-readable code.
type apiError struct {
	status int
	param  string
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

// badRequest is a 400 naming the parameter at fault.
func badRequest(param, format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, param: param, msg: fmt.Sprintf(format, args...)}
}

// problem is a classified failure: what every API's error body is built
// from.
type problem struct {
	Status  int
	Param   string
	Code    string
	Message string
}

// classify is the one place where an error becomes an HTTP status and a
// message a user reads. The chain goes to the log; the body gets the
// message, never a Go type name.
func classify(err error) problem {
	var (
		ae  *apiError
		ce  *engine.ContextError
		re  *engine.RequestError
		te  *template.Error
		mbe *http.MaxBytesError
		he  *echo.HTTPError
		fe  *fit.Error
		le  *engine.LoadError
		hub *registry.HubError
		off *registry.OfflineError
	)
	switch {
	case errors.As(err, &ae):
		return problem{Status: ae.status, Param: ae.param, Code: ae.code, Message: ae.msg}
	case errors.As(err, &ce):
		return problem{Status: http.StatusBadRequest, Param: "messages", Code: "context_length_exceeded", Message: ce.Message("max_tokens")}
	case errors.As(err, &te):
		// The model's template failed on this request: it raised, or ran
		// past a render limit (named in the message).
		return problem{Status: http.StatusBadRequest, Param: "messages", Code: "template_error", Message: te.Error()}
	case errors.As(err, &re):
		return problem{Status: http.StatusBadRequest, Message: re.Error()}
	case errors.Is(err, engine.ErrQueueFull):
		return problem{Status: http.StatusTooManyRequests, Code: "rate_limit_exceeded", Message: err.Error()}
	case errors.Is(err, engine.ErrClosed):
		return problem{Status: http.StatusServiceUnavailable, Code: "model_unloading", Message: err.Error()}
	case errors.Is(err, media.ErrMedia):
		// A picture or clip the engine found bad (its preprocessing):
		// the input's fault, in media's words.
		return problem{Status: http.StatusBadRequest, Code: "invalid_media", Message: mediaMessage(err)}
	case errors.Is(err, family.ErrUnsupported):
		return problem{Status: http.StatusBadRequest, Param: "model", Code: "model_unsupported", Message: err.Error()}
	case errors.Is(err, registry.ErrNotFound):
		return problem{Status: http.StatusNotFound, Param: "model", Code: "model_not_found", Message: err.Error()}
	case errors.Is(err, registry.ErrAmbiguous), errors.Is(err, registry.ErrDrafter), errors.Is(err, registry.ErrInvalidName):
		return problem{Status: http.StatusBadRequest, Param: "model", Message: err.Error()}
	case errors.As(err, &off):
		// No connection to the hub at all: most often this machine is
		// offline, which the message says in one sentence.
		return problem{Status: http.StatusBadGateway, Code: "hub_unreachable", Message: err.Error()}
	case errors.As(err, &hub):
		// The hub failed or answered what a pull cannot use: a bad gateway,
		// with the hub's reason.
		return problem{Status: http.StatusBadGateway, Code: "hub_error", Message: err.Error()}
	case errors.Is(err, registry.ErrAuth):
		// The hub refused the server's credentials (a gated or private
		// repo): not the client's own authentication.
		return problem{Status: http.StatusForbidden, Param: "model", Code: "hub_access_denied", Message: err.Error()}
	case errors.As(err, &fe):
		return problem{Status: http.StatusBadRequest, Param: "model", Code: "insufficient_memory", Message: err.Error()}
	case errors.Is(err, registry.ErrUnservable), errors.As(err, &le):
		// A model that cannot run as it is on disk (unservable, or a broken
		// checkpoint): the request's fault, the server itself is fine.
		return problem{Status: http.StatusBadRequest, Param: "model", Code: "model_load_failed", Message: err.Error()}
	case errors.Is(err, pool.ErrNoModel):
		return problem{Status: http.StatusBadRequest, Param: "model", Message: "model is required: " + err.Error()}
	case errors.As(err, &mbe):
		return problem{Status: http.StatusRequestEntityTooLarge, Code: "request_too_large",
			Message: fmt.Sprintf("the request body is larger than %d bytes", mbe.Limit)}
	case errors.As(err, &he):
		msg := strings.ToLower(http.StatusText(he.Code))
		if s, ok := he.Message.(string); ok && s != "" {
			msg = s
		}
		return problem{Status: he.Code, Message: msg}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The client is gone (or gave up); 499 is never seen by it.
		return problem{Status: 499, Message: "the request was cancelled"}
	default:
		return problem{Status: http.StatusInternalServerError, Message: err.Error()}
	}
}

// dialect is the error shape a route answers in.
type dialect int

const (
	dialectOpenAI    dialect = iota // {"error":{"message","type","param","code"}}
	dialectAnthropic                // {"type":"error","error":{"type","message"}}
	dialectNative                   // {"error":"message"} (Ollama's shape, for /api/*)
)

func dialectOf(path string) dialect {
	switch {
	case path == "/v1/messages" || strings.HasPrefix(path, "/v1/messages/"):
		return dialectAnthropic
	case strings.HasPrefix(path, "/v1/"):
		return dialectOpenAI
	default:
		return dialectNative
	}
}

// openAIType is the OpenAI error "type" for a status.
func openAIType(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusNotFound:
		return "invalid_request_error"
	}
	if status >= 500 {
		return "server_error"
	}
	return "invalid_request_error"
}

// anthropicType is the Anthropic error "type" for a status.
func anthropicType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// Error bodies, with their fields in the order each API documents.
type (
	openAIError struct {
		Error openAIErrorDetail `json:"error"`
	}
	openAIErrorDetail struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	anthropicError struct {
		Type  string               `json:"type"` // "error"
		Error anthropicErrorDetail `json:"error"`
	}
	anthropicErrorDetail struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	nativeError struct {
		Error string `json:"error"`
	}
)

// errorBody is the JSON body for p in the dialect d.
func errorBody(d dialect, p problem) any {
	switch d {
	case dialectAnthropic:
		return anthropicError{Type: "error", Error: anthropicErrorDetail{Type: anthropicType(p.Status), Message: p.Message}}
	case dialectOpenAI:
		e := openAIErrorDetail{Message: p.Message, Type: openAIType(p.Status)}
		if p.Param != "" {
			e.Param = &p.Param
		}
		if p.Code != "" {
			e.Code = &p.Code
		}
		return openAIError{Error: e}
	default:
		return nativeError{Error: p.Message}
	}
}

// handleError is echo's HTTPErrorHandler: it logs the chain and answers in
// the route's dialect, unless the response has already started (then the
// stream writers report it in-band).
func (s *Server) handleError(err error, c echo.Context) {
	r := c.Request()
	switch {
	case errors.Is(err, echo.ErrNotFound):
		err = &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("no route %s %s (docs/api.md lists the routes)", r.Method, r.URL.Path)}
	case errors.Is(err, echo.ErrMethodNotAllowed):
		err = &apiError{status: http.StatusMethodNotAllowed, msg: fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path)}
	}
	p := classify(err)
	s.log.Info("request failed", "method", r.Method, "path", r.URL.Path, "status", p.Status, "err", err)
	if c.Response().Committed || p.Status == 499 {
		return
	}
	if r.Method == http.MethodHead {
		c.NoContent(p.Status)
		return
	}
	c.JSON(p.Status, errorBody(dialectOf(r.URL.Path), p))
}
