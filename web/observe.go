package web

import (
	"strings"

	"github.com/labstack/echo/v4"

	"hearth/engine"
	"hearth/engine/pool"
	"hearth/web/metrics"
)

// modelKey is where a handler leaves the model it served, for the
// request counter.
const modelKey = "hearth.model"

// observe counts every API request (not the web chat's files) by the
// model it named, its route and the status it got.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		path := c.Path()
		if !strings.HasPrefix(path, "/v1/") && !strings.HasPrefix(path, "/api/") {
			return err
		}
		code := c.Response().Status
		if err != nil && !c.Response().Committed {
			code = classify(err).Status
		}
		model, _ := c.Get(modelKey).(string)
		s.metrics.Request(model, path, code)
		return err
	}
}

// observeGeneration records a finished generation's tokens and times.
func (s *Server) observeGeneration(model string, u engine.Usage) {
	s.metrics.Generation(model, metrics.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		TimeToFirstToken: u.TimeToFirstToken, Decode: u.DecodeDuration, Drafted: u.Drafted, Accepted: u.Accepted})
}

// poolLive reports the pool's loaded models to the metrics at scrape
// time. A model runs one request at a time, or up to Info.Parallel
// batched ones: the rest wait.
type poolLive struct{ p *pool.Pool }

func (l poolLive) LiveStats() []metrics.ModelStats {
	if l.p == nil {
		return nil
	}
	var out []metrics.ModelStats
	for _, st := range l.p.Loaded() {
		running := min(st.Active, max(st.Parallel, 1))
		batch := min(st.Active, 1)
		if st.Parallel > 1 {
			batch = min(int(st.LastBatch), running) // 0 once every stream has ended
		}
		out = append(out, metrics.ModelStats{Model: st.ID, Running: running, Queued: st.Active - running, BatchSize: batch,
			BatchPasses: uint64(st.BatchPasses), BatchRows: uint64(st.BatchRows),
			PromptCacheBytes: st.PromptCacheBytes, PromptLookups: st.PromptLookups, PromptHits: st.PromptHits, PromptHitToken: st.PromptHitTokens})
	}
	return out
}

// metricsHandler serves GET /metrics.
func (s *Server) metricsHandler(c echo.Context) error {
	s.metrics.Handler().ServeHTTP(c.Response(), c.Request())
	return nil
}
