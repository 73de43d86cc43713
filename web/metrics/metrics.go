// Package metrics is Hearth's GET /metrics: request, token and latency
// counters per model in the Prometheus text format, through the official
// client library, plus what the engine reports live at scrape time
// (queues, the prompt cache's memory and hits, speculative acceptance).
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is one server's registry.
type Metrics struct {
	reg              *prometheus.Registry
	requests         *prometheus.CounterVec
	promptTokens     *prometheus.CounterVec
	completionTokens *prometheus.CounterVec
	ttft             *prometheus.HistogramVec
	perToken         *prometheus.HistogramVec
	drafted          *prometheus.CounterVec
	accepted         *prometheus.CounterVec
}

// Live is what the engine reports at each scrape, one entry per loaded
// model.
type Live interface {
	LiveStats() []ModelStats
}

// ModelStats is one loaded model's state now.
type ModelStats struct {
	Model            string
	Queued           int    // requests waiting
	Running          int    // requests decoding
	BatchSize        int    // sequences in the last decode step
	BatchPasses      uint64 // batched decode passes run (Parallel > 1)
	BatchRows        uint64 // sequences those passes carried: rows/passes is the mean batch
	PromptCacheBytes int64  // memory the prompt cache keeps (finished sequences)
	PromptLookups    uint64
	PromptHits       uint64 // lookups that reused a cached prefix
	PromptHitToken   uint64 // prompt tokens read from the cache instead of computed
}

// New makes the registry; live may be nil.
func New(live Live) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	model := []string{"model"}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_requests_total", Help: "API requests answered, by model, route and HTTP status.",
	}, []string{"model", "route", "code"})
	m.promptTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_prompt_tokens_total", Help: "Prompt tokens read.",
	}, model)
	m.completionTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_completion_tokens_total", Help: "Tokens generated.",
	}, model)
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "hearth_time_to_first_token_seconds", Help: "From the request's arrival to its first token.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 14), // 10 ms … 82 s
	}, model)
	m.perToken = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "hearth_time_per_output_token_seconds", Help: "Decode time per generated token after the first.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 12), // 1 ms … 2 s
	}, model)
	m.drafted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_speculative_drafted_tokens_total", Help: "Tokens proposed by speculative decoding.",
	}, model)
	m.accepted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_speculative_accepted_tokens_total", Help: "Drafted tokens the model kept.",
	}, model)
	m.reg.MustRegister(m.requests, m.promptTokens, m.completionTokens, m.ttft, m.perToken, m.drafted, m.accepted,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	if live != nil {
		m.reg.MustRegister(liveCollector{live})
	}
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Usage is what one finished request cost.
type Usage struct {
	PromptTokens, CompletionTokens int
	TimeToFirstToken, Decode       time.Duration
	Drafted, Accepted              int
}

// Request counts one answered API request by model ("" when none was
// named or found), route and HTTP status.
func (m *Metrics) Request(model, route string, code int) {
	m.requests.WithLabelValues(model, route, strconv.Itoa(code)).Inc()
}

// Generation records what a finished generation cost.
func (m *Metrics) Generation(model string, u Usage) {
	m.promptTokens.WithLabelValues(model).Add(float64(u.PromptTokens))
	m.completionTokens.WithLabelValues(model).Add(float64(u.CompletionTokens))
	if u.CompletionTokens > 0 {
		m.ttft.WithLabelValues(model).Observe(u.TimeToFirstToken.Seconds())
	}
	if u.CompletionTokens > 1 {
		m.perToken.WithLabelValues(model).Observe(u.Decode.Seconds() / float64(u.CompletionTokens-1))
	}
	if u.Drafted > 0 {
		m.drafted.WithLabelValues(model).Add(float64(u.Drafted))
		m.accepted.WithLabelValues(model).Add(float64(u.Accepted))
	}
}

// liveCollector turns the engine's state into gauges at scrape time.
type liveCollector struct{ live Live }

var (
	queuedDesc  = prometheus.NewDesc("hearth_queue_requests", "Requests waiting for the model.", []string{"model"}, nil)
	runningDesc = prometheus.NewDesc("hearth_running_requests", "Requests the model is decoding.", []string{"model"}, nil)
	batchDesc   = prometheus.NewDesc("hearth_batch_size", "Sequences in the model's last decode step.", []string{"model"}, nil)
	passesDesc  = prometheus.NewDesc("hearth_batch_passes_total", "Batched decode passes run (a model serving requests in parallel).", []string{"model"}, nil)
	rowsDesc    = prometheus.NewDesc("hearth_batch_rows_total", "Sequences the batched decode passes carried; over hearth_batch_passes_total, the mean batch size.", []string{"model"}, nil)
	kvDesc      = prometheus.NewDesc("hearth_prompt_cache_bytes", "Memory the prompt cache keeps: finished sequences held for reuse.", []string{"model"}, nil)
	lookupDesc  = prometheus.NewDesc("hearth_prompt_cache_lookups_total", "Prompts looked up in the prompt cache.", []string{"model"}, nil)
	hitDesc     = prometheus.NewDesc("hearth_prompt_cache_hits_total", "Lookups that reused a cached prefix.", []string{"model"}, nil)
	hitTokDesc  = prometheus.NewDesc("hearth_prompt_cache_hit_tokens_total", "Prompt tokens read from the cache.", []string{"model"}, nil)
)

func (liveCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queuedDesc, runningDesc, batchDesc, passesDesc, rowsDesc, kvDesc, lookupDesc, hitDesc, hitTokDesc} {
		ch <- d
	}
}

func (c liveCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.live.LiveStats() {
		ch <- prometheus.MustNewConstMetric(queuedDesc, prometheus.GaugeValue, float64(s.Queued), s.Model)
		ch <- prometheus.MustNewConstMetric(runningDesc, prometheus.GaugeValue, float64(s.Running), s.Model)
		ch <- prometheus.MustNewConstMetric(batchDesc, prometheus.GaugeValue, float64(s.BatchSize), s.Model)
		ch <- prometheus.MustNewConstMetric(passesDesc, prometheus.CounterValue, float64(s.BatchPasses), s.Model)
		ch <- prometheus.MustNewConstMetric(rowsDesc, prometheus.CounterValue, float64(s.BatchRows), s.Model)
		ch <- prometheus.MustNewConstMetric(kvDesc, prometheus.GaugeValue, float64(s.PromptCacheBytes), s.Model)
		ch <- prometheus.MustNewConstMetric(lookupDesc, prometheus.CounterValue, float64(s.PromptLookups), s.Model)
		ch <- prometheus.MustNewConstMetric(hitDesc, prometheus.CounterValue, float64(s.PromptHits), s.Model)
		ch <- prometheus.MustNewConstMetric(hitTokDesc, prometheus.CounterValue, float64(s.PromptHitToken), s.Model)
	}
}
