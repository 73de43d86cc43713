package web

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"hearth/engine"
	"hearth/engine/checkpoint"
	"hearth/engine/config"
	"hearth/engine/template"
)

// showRequest is Ollama's POST /api/show.
type showRequest struct {
	Model string `json:"model"`
	Name  string `json:"name"` // Ollama's older spelling
}

// showResponse is what Ollama's clients read from /api/show: the chat
// template, the sampling defaults as Modelfile parameter lines, details,
// capabilities and model_info's "<family>.context_length" (which clients
// such as Continue and Open WebUI use to size prompts).
type showResponse struct {
	Modelfile    string         `json:"modelfile"`
	Parameters   string         `json:"parameters"`
	Template     string         `json:"template"`
	Details      details        `json:"details"`
	ModelInfo    map[string]any `json:"model_info"`
	Capabilities []string       `json:"capabilities"`
	ModifiedAt   time.Time      `json:"modified_at"`
	// Hearth's own: how it runs the model.
	Graph    string `json:"graph"`
	Tier     string `json:"tier"`
	Fidelity string `json:"fidelity,omitempty"`
}

// show serves POST /api/show from the checkpoint's files; it does not load
// the model.
func (s *Server) show(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var in showRequest
	if err := decodeJSON(body, &in); err != nil {
		return err
	}
	name := cmp.Or(in.Model, in.Name, s.pool.Default().ID)
	m, err := s.catalogEntry(name)
	if err != nil {
		return err
	}
	// Ollama's family and architecture are the checkpoint's model_type
	// ("llama", "qwen3"), as in /api/tags and /api/ps; Hearth's family
	// (which code runs it) is Graph.
	arch := m.ModelType
	out := showResponse{
		Modelfile:    fmt.Sprintf("# Hearth serves %s from %s\n", m.ID, m.dir),
		Details:      detailsOf(arch, m.Parameters, m.Quantization),
		ModelInfo:    map[string]any{"general.architecture": arch, "general.parameter_count": m.Parameters},
		Capabilities: []string{"completion"},
		ModifiedAt:   time.Unix(m.Created, 0).UTC(),
		Graph:        m.Family,
		Tier:         m.Tier,
		Fidelity:     m.Fidelity,
	}
	out.Details.ParentModel = m.aliasOf
	if m.ContextLength > 0 {
		out.ModelInfo[arch+".context_length"] = m.ContextLength
	}
	for _, capability := range m.Capabilities {
		if capability == "embeddings" {
			capability = "embedding" // Ollama's word (POST /api/embed)
		}
		out.Capabilities = append(out.Capabilities, capability)
	}
	if t, err := template.Load(m.dir); err == nil {
		out.Template = t.Source()
	}
	ck := m.checkpoint
	if ck == nil {
		ck, _ = checkpoint.Read(m.dir)
	}
	if ck != nil {
		out.Parameters = modelfileParameters(ck.Config.Generation)
	}
	return c.JSON(http.StatusOK, out)
}

// modelfileParameters writes the sampling defaults a checkpoint's
// generation_config.json gives (engine.SamplingDefaults) the way Ollama's
// "parameters" field does: one "name value" line each, in its option names.
func modelfileParameters(g config.Generation) string {
	d := engine.SamplingDefaults(g)
	var b strings.Builder
	line := func(name string, v any) { fmt.Fprintf(&b, "%-15s%v\n", name, v) }
	if d.Temperature > 0 {
		line("temperature", d.Temperature)
	}
	if d.TopK > 0 {
		line("top_k", d.TopK)
	}
	if d.TopP > 0 {
		line("top_p", d.TopP)
	}
	if d.MinP > 0 {
		line("min_p", d.MinP)
	}
	if d.RepetitionPenalty > 0 && d.RepetitionPenalty != 1 {
		line("repeat_penalty", d.RepetitionPenalty)
	}
	return b.String()
}
