package web

import (
	"encoding/json"
	"net/http"
	"os"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/process"

	"hearth/engine"
	"hearth/engine/pool"
	"hearth/engine/registry"
)

// health serves GET /health: the server is up (a model may still load on
// the first request).
func (s *Server) health(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// version serves GET /api/version.
func (s *Server) version(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"version": s.opt.Version})
}

func (s *Server) fingerprint() string { return "hearth-" + s.opt.Version }

// psResponse is GET /api/ps: the loaded model(s) and memory.
type psResponse struct {
	Models []psModel    `json:"models"`
	Memory memoryStatus `json:"memory"`
}

// psModel is one loaded model of GET /api/ps: Ollama's fields (name,
// model, size, digest, details, expires_at, size_vram), then Hearth's.
type psModel struct {
	Name      string    `json:"name"`
	Model     string    `json:"model"`
	Size      int64     `json:"size"`      // the memory the pool counts for it
	Digest    string    `json:"digest"`    // as /api/tags gives it
	SizeVRAM  int64     `json:"size_vram"` // of it, in the GPU's memory
	Details   details   `json:"details"`
	ExpiresAt time.Time `json:"expires_at,omitzero"` // omitted when kept until evicted

	ID            string    `json:"id"`
	ModelType     string    `json:"model_type"`
	Family        string    `json:"family"` // Hearth's family (universal, or a targeted port)
	Tier          string    `json:"tier"`
	Fidelity      string    `json:"fidelity"`
	Capabilities  []string  `json:"capabilities"`
	Backend       string    `json:"backend"`
	ContextLength int       `json:"context_length"`
	Parameters    int64     `json:"parameters"`
	WeightBytes   int64     `json:"weight_bytes"`
	Quantization  string    `json:"quantization"`
	KVCache       string    `json:"kv_cache"` // the KV cache's element type: f32, q8 or q4 (hearth serve --kv)
	Active        int       `json:"active_requests"`
	LoadedAt      time.Time `json:"loaded_at"`
}

func psModelOf(st pool.Status) psModel {
	m := psModel{Name: st.ID, Model: st.ID, Size: st.SizeBytes, Digest: registry.DirDigest(st.Dir), Details: detailsOf(st.ModelType, st.Params, st.Quantization),
		ExpiresAt: st.ExpiresAt, ID: st.ID, ModelType: st.ModelType, Family: st.Family, Tier: st.Tier, Fidelity: st.Fidelity,
		Capabilities: st.Capabilities, Backend: st.Backend, ContextLength: st.ContextTokens, Parameters: st.Params,
		WeightBytes: st.WeightBytes, Quantization: st.Quantization, KVCache: st.KVCache, Active: st.Active, LoadedAt: st.LoadedAt}
	if st.Backend != "cpu" { // a GPU backend holds the model in its memory (unified on a Mac)
		m.SizeVRAM = st.SizeBytes
	}
	return m
}

type memoryStatus struct {
	ProcessRSSBytes      uint64 `json:"process_rss_bytes"`
	SystemTotalBytes     uint64 `json:"system_total_bytes"`
	SystemAvailableBytes uint64 `json:"system_available_bytes"`
}

// ps serves GET /api/ps.
func (s *Server) ps(c echo.Context) error {
	out := psResponse{Models: []psModel{}}
	for _, st := range s.pool.Loaded() {
		out.Models = append(out.Models, psModelOf(st))
	}
	if p, err := process.NewProcessWithContext(c.Request().Context(), int32(os.Getpid())); err == nil {
		if m, err := p.MemoryInfo(); err == nil {
			out.Memory.ProcessRSSBytes = m.RSS
		}
	}
	if v, err := mem.VirtualMemoryWithContext(c.Request().Context()); err == nil {
		out.Memory.SystemTotalBytes, out.Memory.SystemAvailableBytes = v.Total, v.Available
	}
	return c.JSON(http.StatusOK, out)
}

// tokenizeRequest is POST /api/tokenize.
type tokenizeRequest struct {
	Model            string          `json:"model"`
	Text             string          `json:"text"`
	AddSpecialTokens *bool           `json:"add_special_tokens"` // default true, as in transformers
	KeepAlive        json.RawMessage `json:"keep_alive"`
}

// keepAliveOf reads a request's keep_alive as Ollama does: a duration
// string ("5m") or a number of seconds; 0 unloads the model after the
// request, negative keeps it loaded. Absent or null means the server's
// default (nil).
func keepAliveOf(raw json.RawMessage) (*time.Duration, error) {
	if isNull(raw) {
		return nil, nil
	}
	var (
		d   time.Duration
		err error
		f   float64
		str string
	)
	switch {
	case json.Unmarshal(raw, &f) == nil:
		d, err = pool.KeepAliveSeconds(f)
	case json.Unmarshal(raw, &str) == nil:
		d, err = pool.ParseKeepAlive(str)
	default:
		got := map[byte]string{'{': "an object", '[': "an array", 't': "a boolean", 'f': "a boolean"}[raw[0]]
		if got == "" {
			got = "a number out of range"
		}
		return nil, badRequest("keep_alive", "keep_alive: expected a duration string such as \"5m\" or a number of seconds, got %s", got)
	}
	if err != nil {
		return nil, badRequest("keep_alive", "%v", err)
	}
	return &d, nil
}

// tokenize serves POST /api/tokenize: the ids the model's tokenizer makes
// of text (what /v1/completions counts as prompt_tokens for a string
// prompt, with add_special_tokens true). It loads no model (Pool.Tokenizer).
func (s *Server) tokenize(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var in tokenizeRequest
	if err := decodeJSON(body, &in); err != nil {
		return err
	}
	if _, err := keepAliveOf(in.KeepAlive); err != nil {
		return err // accepted for Ollama's shape; counting loads no model
	}
	tok, id, err := s.pool.Tokenizer(in.Model)
	if err != nil {
		return err
	}
	add := in.AddSpecialTokens == nil || *in.AddSpecialTokens
	ids := tok.Encode(in.Text, add)
	if ids == nil {
		ids = []int32{}
	}
	return c.JSON(http.StatusOK, map[string]any{"model": id, "tokens": ids})
}

// detokenizeRequest is POST /api/detokenize.
type detokenizeRequest struct {
	Model             string          `json:"model"`
	Tokens            []int64         `json:"tokens"`
	SkipSpecialTokens bool            `json:"skip_special_tokens"`
	KeepAlive         json.RawMessage `json:"keep_alive"`
}

// detokenize serves POST /api/detokenize.
func (s *Server) detokenize(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var in detokenizeRequest
	if err := decodeJSON(body, &in); err != nil {
		return err
	}
	if _, err := keepAliveOf(in.KeepAlive); err != nil {
		return err
	}
	tok, id, err := s.pool.Tokenizer(in.Model)
	if err != nil {
		return err
	}
	ids := make([]int32, len(in.Tokens))
	for i, id := range in.Tokens {
		if id < 0 || id >= int64(tok.VocabSize()) {
			return badRequest("tokens", "tokens[%d]: %d is outside the vocabulary [0, %d)", i, id, tok.VocabSize())
		}
		ids[i] = int32(id)
	}
	return c.JSON(http.StatusOK, map[string]any{"model": id, "text": tok.Decode(ids, in.SkipSpecialTokens)})
}

// logGeneration logs one finished (or failed) generation.
func (s *Server) logGeneration(kind, model string, u engine.Usage, err error) {
	args := []any{"model", model, "prompt_tokens", u.PromptTokens, "completion_tokens", u.CompletionTokens,
		"finish", u.FinishReason, "ttft", u.TimeToFirstToken.Round(time.Microsecond),
		"prefill", u.PrefillDuration.Round(time.Microsecond), "decode", u.DecodeDuration.Round(time.Microsecond)}
	if err != nil {
		s.log.Info(kind+" ended", append(args, "err", err)...)
		return
	}
	if u.DecodeDuration > 0 && u.CompletionTokens > 1 {
		args = append(args, "tokens_per_s", float64(u.CompletionTokens-1)/u.DecodeDuration.Seconds())
	}
	s.log.Info(kind, args...)
}
