package web

import (
	"time"

	"github.com/labstack/echo/v4"

	"hearth/engine"
)

// target is what a parsed generation request names, whatever its API:
// every route's job embeds it.
type target struct {
	model    string
	keep     *time.Duration // the request's keep_alive; nil = the server's
	sampling sampling       // applied with the model's defaults once it is known
	req      engine.Request
	// media are the request's images and video, read and decoded into
	// req.Images once the model is known (Server.loadMedia).
	media []mediaRef
	// loadTime is how long getting the runner took (serveGeneration sets
	// it; Ollama reports it).
	loadTime time.Duration
	// warnings are what the answer's X-Hearth-Warning headers say: media
	// the model takes only in part (an audio clip past its longest).
	warnings []string
}

func (t *target) generation() *target { return t }

// warningHeader carries what an answer should know about its request
// beyond the API's fields: an audio clip cut to the model's longest.
const warningHeader = "X-Hearth-Warning"

// generationJob is a parsed request of one of the generation routes.
type generationJob interface {
	// generation is the job's target, or nil when the job needs no
	// runner (an Ollama load request, which answer handles alone).
	generation() *target
}

// serveGeneration is the prologue every generation route shares: read the
// body, parse it, get the runner of the model it names (loading it if
// needed), read and decode the request's media for it, answer, and
// release the runner. Each route keeps its parse and
// its answer.
func serveGeneration[J generationJob](s *Server, c echo.Context, parse func([]byte) (J, error), answer func(*engine.Runner, J) error) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	job, err := parse(body)
	if err != nil {
		return err
	}
	t := job.generation()
	if t == nil {
		return answer(nil, job)
	}
	start := time.Now()
	r, release, err := s.runnerFor(c, t)
	if err != nil {
		return err
	}
	defer release()
	c.Set(modelKey, r.Info().ID)
	t.loadTime = time.Since(start)
	if err := s.loadMedia(c.Request().Context(), r.Info(), t); err != nil {
		return err
	}
	for _, w := range t.warnings {
		c.Response().Header().Add(warningHeader, w)
	}
	return answer(r, job)
}

// runnerFor gets the model t names (loading it if needed, kept for t.keep)
// and fills t.req's sampling from the request's fields and the model's
// defaults. Tools offered to a model whose chat template has no tool-call
// format are refused. The caller must call release when its request is
// done.
func (s *Server) runnerFor(c echo.Context, t *target) (r *engine.Runner, release func(), err error) {
	r, release, err = s.pool.Acquire(c.Request().Context(), t.model, t.keep)
	if err != nil {
		return nil, nil, err
	}
	t.sampling.apply(&t.req, r.Defaults())
	info := r.Info()
	if t.req.Tools != nil && !hasCap(info, "tools") {
		release()
		return nil, nil, noToolCalls(info.ID)
	}
	return r, release, nil
}

// noToolCalls refuses tools offered to a model whose chat template has no
// tool-call format.
func noToolCalls(model string) error {
	return badRequest("tools", "tools: model %q does not support tool calls (its chat template has no tool-call format)", model)
}

// answer is how one API writes a generation: each route builds one per
// request and hands it to Server.generate, which owns what they share.
type answer struct {
	kind, model string // for the log line

	// emit takes each delta: writes a stream frame, or accumulates a
	// whole answer.
	emit func(engine.Delta) error
	// finish writes the end of the answer (the whole answer, or a
	// stream's closing frames).
	finish func(engine.Usage) error

	// Streams only: started reports whether anything has been written,
	// and fail writes an error in-band once it has.
	started func() bool
	fail    func(problem) error
}

func (a *answer) streaming() bool { return a.started != nil && a.started() }

// generate runs req on g through a, and sorts out how it ended. A failure
// before anything was written is returned, for the error handler to
// answer with its status. Once a stream has started, a failure is written
// in-band (unless the client left: a write error or the request's
// cancelled context has already stopped the generation) and nil is
// returned, as it is when the closing frames cannot be written. A
// generation stopped by Shutdown is a failure like any other
// (errShuttingDown), and is logged with the tokens it had counted.
func (s *Server) generate(c echo.Context, g generator, req engine.Request, a answer) error {
	ctx := c.Request().Context()
	u, err := g.Generate(ctx, req, a.emit)
	stopped := err != nil && halted(ctx)
	if stopped {
		err = errShuttingDown
	}
	s.logGeneration(a.kind, a.model, u, err)
	if err == nil {
		s.observeGeneration(a.model, u)
	}
	if err != nil {
		if !a.streaming() {
			return err
		}
		if (ctx.Err() == nil || stopped) && a.fail != nil {
			a.fail(classify(err))
		}
		return nil
	}
	if err := a.finish(u); err != nil && !a.streaming() {
		return err
	}
	return nil
}
