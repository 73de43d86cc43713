package web

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"hearth/engine"
)

// embeddingsRequest is POST /v1/embeddings (OpenAI).
type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
}

type embeddingsResponse struct {
	Object string           `json:"object"`
	Data   []embeddingEntry `json:"data"`
	Model  string           `json:"model"`
	Usage  embeddingsUsage  `json:"usage"`
}

type embeddingEntry struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string of little-endian float32s
}

type embeddingsUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// parseEmbedInput reads OpenAI's input: a string, an array of strings, an
// array of token ids, or an array of such arrays.
func parseEmbedInput(raw json.RawMessage) (engine.EmbedRequest, error) {
	var req engine.EmbedRequest
	if isNull(raw) {
		return req, badRequest("input", "input: required (a string, an array of strings, an array of token ids or an array of such arrays)")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return req, badRequest("input", "input: must not be empty")
		}
		req.Texts = []string{s}
		return req, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return req, badRequest("input", "input: expected a string, an array of strings, an array of token ids or an array of such arrays")
	}
	if len(items) == 0 {
		return req, badRequest("input", "input: must not be empty")
	}
	if len(items) > engine.MaxEmbedInputs {
		return req, badRequest("input", "input: %d inputs; at most %d per request", len(items), engine.MaxEmbedInputs)
	}
	switch bytes.TrimSpace(items[0])[0] {
	case '"':
		for i, it := range items {
			var s string
			if err := json.Unmarshal(it, &s); err != nil {
				return req, badRequest("input", "input[%d]: expected a string like input[0], got %s", i, it)
			}
			if s == "" {
				return req, badRequest("input", "input[%d]: must not be empty", i)
			}
			req.Texts = append(req.Texts, s)
		}
	case '[':
		for i, it := range items {
			ids, err := tokenIDs(it, "input[%d]", i)
			if err != nil {
				return req, err
			}
			req.IDs = append(req.IDs, ids)
		}
	default:
		ids, err := tokenIDs(raw, "input", 0)
		if err != nil {
			return req, err
		}
		req.IDs = [][]int32{ids}
	}
	return req, nil
}

// tokenIDs reads a non-empty array of token ids; at names it for errors
// (a format with one %d, the input's index).
func tokenIDs(raw json.RawMessage, at string, index int) ([]int32, error) {
	name := at
	if at != "input" {
		name = fmt.Sprintf(at, index)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badRequest("input", "%s: expected an array of token ids", name)
	}
	if len(items) == 0 {
		return nil, badRequest("input", "%s: must not be empty", name)
	}
	ids := make([]int32, len(items))
	for i, it := range items {
		var f float64
		if c := bytes.TrimSpace(it)[0]; (c != '-' && (c < '0' || c > '9')) || json.Unmarshal(it, &f) != nil || f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
			return nil, badRequest("input", "%s[%d]: expected a token id (a non-negative integer), got %s", name, i, it)
		}
		ids[i] = int32(f)
	}
	return ids, nil
}

// embeddings serves POST /v1/embeddings.
func (s *Server) embeddings(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var in embeddingsRequest
	if err := decodeJSON(body, &in); err != nil {
		return err
	}
	req, err := parseEmbedInput(in.Input)
	if err != nil {
		return err
	}
	switch in.EncodingFormat {
	case "", "float", "base64":
	default:
		return badRequest("encoding_format", "encoding_format: %q is not one of float, base64", in.EncodingFormat)
	}
	if in.Dimensions != nil {
		if *in.Dimensions < 1 {
			return badRequest("dimensions", "dimensions: must be at least 1, got %d", *in.Dimensions)
		}
		req.Dimensions = *in.Dimensions
	}
	r, release, err := s.embedRunner(c, in.Model, nil, req.Dimensions)
	if err != nil {
		return err
	}
	defer release()
	res, err := r.Embed(c.Request().Context(), req)
	if err != nil {
		return embedError(err)
	}
	out := embeddingsResponse{Object: "list", Data: make([]embeddingEntry, len(res.Embeddings)), Model: r.Info().ID,
		Usage: embeddingsUsage{PromptTokens: res.PromptTokens, TotalTokens: res.PromptTokens}}
	for i, v := range res.Embeddings {
		out.Data[i] = embeddingEntry{Object: "embedding", Index: i, Embedding: v}
		if in.EncodingFormat == "base64" {
			out.Data[i].Embedding = float32Base64(v)
		}
	}
	return c.JSON(http.StatusOK, out)
}

// embedRunner gets the named model and checks that it serves embeddings
// (and dimensions, when asked): a model without the capability is a 400
// naming it. The caller must call release.
func (s *Server) embedRunner(c echo.Context, model string, keep *time.Duration, dims int) (*engine.Runner, func(), error) {
	r, release, err := s.pool.Acquire(c.Request().Context(), model, keep)
	if err != nil {
		return nil, nil, err
	}
	c.Set(modelKey, r.Info().ID)
	if err := r.CanEmbed(); err != nil {
		release()
		return nil, nil, badRequest("model", "%v", err)
	}
	if err := r.CheckDimensions(dims); err != nil {
		release()
		return nil, nil, badRequest("dimensions", "%v", err)
	}
	return r, release, nil
}

// embedError names the parameter at fault in the engine's refusals.
func embedError(err error) error {
	var ie *engine.InputError
	var ce *engine.ContextError
	if errors.As(err, &ie) || errors.As(err, &ce) {
		return badRequest("input", "%v", err)
	}
	return err
}

// float32Base64 is v as OpenAI's base64 encoding_format sends it: the
// little-endian float32 bytes, base64 (standard, padded).
func float32Base64(v []float32) string {
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// ollamaEmbedRequest is POST /api/embed (Ollama).
type ollamaEmbedRequest struct {
	Model      string          `json:"model"`
	Input      json.RawMessage `json:"input"`
	Truncate   *bool           `json:"truncate"`
	Dimensions *int            `json:"dimensions"`
	KeepAlive  json.RawMessage `json:"keep_alive"`
	Options    json.RawMessage `json:"options"`
}

type ollamaEmbedResponse struct {
	Model           string      `json:"model"`
	Embeddings      [][]float32 `json:"embeddings"`
	TotalDuration   int64       `json:"total_duration"`
	LoadDuration    int64       `json:"load_duration"`
	PromptEvalCount int         `json:"prompt_eval_count"`
}

// ollamaEmbed serves POST /api/embed: input a string or an array of
// strings; truncate (default true, as Ollama) cuts a long input to the
// context. An empty input loads the model and answers no embeddings, as
// Ollama does.
func (s *Server) ollamaEmbed(c echo.Context) error {
	start := time.Now()
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var in ollamaEmbedRequest
	if err := decodeJSON(body, &in); err != nil {
		return err
	}
	keep, err := keepAliveOf(in.KeepAlive)
	if err != nil {
		return err
	}
	var req engine.EmbedRequest
	var one string
	switch {
	case isNull(in.Input):
	case json.Unmarshal(in.Input, &one) == nil:
		if one != "" {
			req.Texts = []string{one}
		}
	default:
		if err := json.Unmarshal(in.Input, &req.Texts); err != nil {
			return badRequest("input", "input: expected a string or an array of strings")
		}
		if len(req.Texts) > engine.MaxEmbedInputs {
			return badRequest("input", "input: %d inputs; at most %d per request", len(req.Texts), engine.MaxEmbedInputs)
		}
	}
	req.Truncate = in.Truncate == nil || *in.Truncate
	if in.Dimensions != nil {
		if *in.Dimensions < 1 {
			return badRequest("dimensions", "dimensions: must be at least 1, got %d", *in.Dimensions)
		}
		req.Dimensions = *in.Dimensions
	}
	r, release, err := s.embedRunner(c, in.Model, keep, req.Dimensions)
	if err != nil {
		return err
	}
	defer release()
	load := time.Since(start)
	out := ollamaEmbedResponse{Model: r.Info().ID, Embeddings: [][]float32{}}
	if len(req.Texts) > 0 {
		res, err := r.Embed(c.Request().Context(), req)
		if err != nil {
			return embedError(err)
		}
		out.Embeddings, out.PromptEvalCount = res.Embeddings, res.PromptTokens
	}
	out.LoadDuration, out.TotalDuration = load.Nanoseconds(), time.Since(start).Nanoseconds()
	return c.JSON(http.StatusOK, out)
}

// ollamaEmbeddingsRequest is Ollama's legacy POST /api/embeddings.
type ollamaEmbeddingsRequest struct {
	Model     string          `json:"model"`
	Prompt    string          `json:"prompt"`
	KeepAlive json.RawMessage `json:"keep_alive"`
	Options   json.RawMessage `json:"options"`
}

// ollamaEmbeddings serves the legacy POST /api/embeddings: one prompt, one
// embedding (an empty prompt: an empty one, as Ollama answers); a long
// prompt is truncated like /api/embed's default.
func (s *Server) ollamaEmbeddings(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var in ollamaEmbeddingsRequest
	if err := decodeJSON(body, &in); err != nil {
		return err
	}
	keep, err := keepAliveOf(in.KeepAlive)
	if err != nil {
		return err
	}
	r, release, err := s.embedRunner(c, in.Model, keep, 0)
	if err != nil {
		return err
	}
	defer release()
	out := map[string][]float32{"embedding": {}}
	if in.Prompt != "" {
		res, err := r.Embed(c.Request().Context(), engine.EmbedRequest{Texts: []string{in.Prompt}, Truncate: true})
		if err != nil {
			return embedError(err)
		}
		out["embedding"] = res.Embeddings[0]
	}
	return c.JSON(http.StatusOK, out)
}
