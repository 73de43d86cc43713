package web

import (
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"hearth/engine/checkpoint"
	"hearth/engine/fit"
	"hearth/engine/pool"
	"hearth/engine/registry"
)

// modelEntry is one model of GET /v1/models: OpenAI's fields, then what a
// user choosing a model wants to know (tier, capabilities, context, fit).
type modelEntry struct {
	ID            string   `json:"id"`
	Object        string   `json:"object"` // "model"
	Created       int64    `json:"created"`
	OwnedBy       string   `json:"owned_by"`
	ModelType     string   `json:"model_type,omitempty"`
	Family        string   `json:"family"`
	Tier          string   `json:"tier"`
	Fidelity      string   `json:"fidelity,omitempty"`
	Capabilities  []string `json:"capabilities"`
	ContextLength int      `json:"context_length"`
	Parameters    int64    `json:"parameters"`
	SizeBytes     int64    `json:"size_bytes"`
	Quantization  string   `json:"quantization"`
	Fit           *fitBody `json:"fit,omitempty"`
	Default       bool     `json:"default"`
	Loaded        bool     `json:"loaded"`

	dir        string                 // the checkpoint, for /api/show
	checkpoint *checkpoint.Checkpoint // the registry's reading of dir; nil when it has none
	aliasOf    string                 // the model an alias names (Ollama's parent_model)
}

// fitBody is fit.Verdict on the wire.
type fitBody struct {
	Status           fit.Status `json:"status"` // "fits", "tight", "won't fit"
	ContextTokens    int        `json:"context_tokens"`
	NeedBytes        int64      `json:"need_bytes"`
	AvailableBytes   int64      `json:"available_bytes"`
	MaxContextTokens int        `json:"max_context_tokens"`
}

// catalog lists the servable models: the registry's, with the pool's
// default named by its id, and whatever is loaded.
func (s *Server) catalog() ([]modelEntry, error) {
	def := s.pool.Default()
	loaded := map[string]bool{}
	for _, st := range s.pool.Loaded() {
		loaded[st.Dir] = true
		s.sawCapabilities(st.Dir, st.Capabilities)
	}
	var judge func(registry.Record) fit.Verdict
	if m, err := fit.System(); err == nil {
		judge = registry.FitAt(m, s.opt.ContextTokens)
	}
	var recs []registry.Record
	if s.opt.Registry != nil {
		var err error
		if recs, err = s.opt.Registry.List(); err != nil {
			return nil, err
		}
	}
	out := []modelEntry{}
	seen := map[string]bool{}
	for _, r := range recs {
		if !r.Servable() || seen[r.Dir] {
			continue
		}
		seen[r.Dir] = true
		e := modelEntry{ID: r.Name(), Object: "model", Created: modTime(r.Dir), OwnedBy: owner(r.ID),
			ModelType: r.ModelType, Family: r.Family, Tier: r.Tier, Fidelity: r.Fidelity, Capabilities: s.capabilitiesOf(r.Dir, r.Capabilities),
			ContextLength: r.ContextTokens, Parameters: r.Params, SizeBytes: r.Bytes, Quantization: r.Quantization,
			Loaded: loaded[r.Dir], dir: r.Dir, checkpoint: r.Checkpoint}
		if r.Dir == def.Dir {
			e.ID, e.OwnedBy, e.Default = def.ID, "local", true
		}
		if judge != nil {
			v := judge(r)
			e.Fit = &fitBody{Status: v.Status, ContextTokens: v.ContextTokens, NeedBytes: v.NeedBytes,
				AvailableBytes: v.AvailableBytes, MaxContextTokens: v.MaxContextTokens}
		}
		out = append(out, e)
	}
	// Loaded models (and the default) the registry does not list.
	for _, st := range s.pool.Loaded() {
		if seen[st.Dir] {
			continue
		}
		seen[st.Dir] = true
		out = append(out, modelEntry{ID: st.ID, Object: "model", Created: st.LoadedAt.Unix(), OwnedBy: owner(st.ID),
			ModelType: st.ModelType, Family: st.Family, Tier: st.Tier, Fidelity: st.Fidelity, Capabilities: s.capabilitiesOf(st.Dir, nil),
			ContextLength: st.ContextTokens, Parameters: st.Params, SizeBytes: st.WeightBytes, Quantization: st.Quantization,
			Default: st.Dir == def.Dir, Loaded: true, dir: st.Dir})
	}
	if def.Dir != "" && !seen[def.Dir] {
		e := modelEntry{ID: def.ID, Object: "model", Created: modTime(def.Dir), OwnedBy: "local", Capabilities: s.capabilitiesOf(def.Dir, nil), Default: true, dir: def.Dir}
		if ck, _ := checkpoint.Read(def.Dir); ck != nil && ck.Config != nil {
			e.ModelType, e.ContextLength, e.Quantization, e.checkpoint = ck.Config.ModelType, ck.Config.MaxPositionEmbeddings, ck.Quantization(), ck
			if ck.Weights != nil {
				e.Parameters, e.SizeBytes = ck.Weights.ParamCount, ck.Weights.Bytes
			}
		}
		out = append(out, e)
	}
	// Aliases (POST /api/copy), each listed as the model it names, under
	// its own id.
	models := len(out)
	for _, a := range s.aliases() {
		for _, e := range out[:models] {
			if e.dir == a.rec.Dir {
				e.ID, e.OwnedBy, e.Default, e.aliasOf = a.Name, "local", false, a.Target
				out = append(out, e)
				break
			}
		}
	}
	return out, nil
}

// sawCapabilities notes what the engine reports a loaded model can do.
func (s *Server) sawCapabilities(dir string, caps []string) {
	s.capsMu.Lock()
	defer s.capsMu.Unlock()
	if s.caps == nil {
		s.caps = map[string][]string{}
	}
	s.caps[dir] = caps
}

// capabilitiesOf is what the model in dir can do, sorted: what the engine
// reported when it was last loaded (its vision only when the tower loaded
// and its family runs it), else what its files say (listed, the
// registry's reading: towers present and run by the family).
func (s *Server) capabilitiesOf(dir string, listed []string) []string {
	s.capsMu.Lock()
	caps, ok := s.caps[dir]
	s.capsMu.Unlock()
	if !ok {
		caps = listed
	}
	out := slices.Clone(caps)
	if out == nil {
		out = []string{}
	}
	slices.Sort(out)
	return out
}

// alias is one entry of the registry's alias table with the record of the
// model it names.
type alias struct {
	registry.Alias
	rec registry.Record
}

// aliases lists the registry's aliases whose model can be found (one
// whose repo was removed by hand is left out).
func (s *Server) aliases() []alias {
	if s.opt.Registry == nil {
		return nil
	}
	list, err := s.opt.Registry.Aliases()
	if err != nil {
		s.log.Warn("aliases", "err", err)
		return nil
	}
	var out []alias
	for _, a := range list {
		if rec, err := s.opt.Registry.ResolveName(a.Name); err == nil || rec.Dir != "" {
			out = append(out, alias{Alias: a, rec: rec})
		}
	}
	return out
}

// owner is the organisation of "org/name", or "local".
func owner(id string) string {
	if org, _, ok := strings.Cut(id, "/"); ok && org != "" && !strings.HasPrefix(id, "/") {
		return org
	}
	return "local"
}

func modTime(dir string) int64 {
	if st, err := os.Stat(dir); err == nil {
		return st.ModTime().Unix()
	}
	return 0
}

// models serves GET /v1/models.
func (s *Server) models(c echo.Context) error {
	list, err := s.catalog()
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"object": "list", "data": list})
}

// model serves GET /v1/models/{id}. Ids contain a slash, which clients
// send as is or percent-encoded (the OpenAI SDKs send "org%2Fname").
func (s *Server) model(c echo.Context) error {
	id, err := url.PathUnescape(c.Param("*"))
	if err != nil {
		return badRequest("model", "model id %s is not a valid URL path", registry.QuoteName(c.Param("*")))
	}
	m, err := s.catalogEntry(id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, m)
}

// catalogEntry finds a servable model by its id (Ollama's ":latest" tag
// allowed), or by any other name the registry resolves over HTTP (a short
// name, a revision). An unknown name gets the registry's not-found error,
// the same as every route that takes a model gives.
func (s *Server) catalogEntry(id string) (modelEntry, error) {
	list, err := s.catalog()
	if err != nil {
		return modelEntry{}, err
	}
	id = pool.Untagged(id)
	for _, m := range list {
		if m.ID == id {
			return m, nil
		}
	}
	if s.opt.Registry == nil {
		return modelEntry{}, registry.UnknownName(id)
	}
	rec, err := s.opt.Registry.ResolveName(id)
	if err != nil {
		return modelEntry{}, err
	}
	for _, m := range list {
		if m.dir == rec.Dir {
			return m, nil
		}
	}
	return modelEntry{}, registry.UnknownName(id)
}

// tagEntry is one model of GET /api/tags (Ollama's listing), unsupported
// ones included with the reason.
type tagEntry struct {
	Name       string    `json:"name"`
	Model      string    `json:"model"`
	ModifiedAt time.Time `json:"modified_at"`
	Size       int64     `json:"size"`
	Digest     string    `json:"digest"`
	Details    details   `json:"details"`
	Tier       string    `json:"tier"`
	Servable   bool      `json:"servable"`
	Reason     string    `json:"reason,omitempty"`

	dir string // the checkpoint, to list its aliases beside it
}

// details is Ollama's model details, as /api/tags, /api/ps and /api/show
// give them. Ollama's family is the architecture, which for a Hugging
// Face checkpoint is its model_type ("llama", "qwen3"); Hearth's own
// family (which code runs it: "universal" or a targeted port) is given
// apart, as "family" in /api/ps and /v1/models and "graph" in /api/show.
type details struct {
	ParentModel       string   `json:"parent_model"` // for an alias, the model it names
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"` // "1.7B", as Ollama writes it
	QuantizationLevel string   `json:"quantization_level"`
}

func detailsOf(modelType string, params int64, quant string) details {
	d := details{Format: "safetensors", Family: modelType, ParameterSize: paramSize(params), QuantizationLevel: quant}
	if modelType != "" {
		d.Families = []string{modelType}
	}
	return d
}

// dirDetails reads the details and weight bytes of a checkpoint the
// registry does not list (a --model directory outside the cache) from its
// files (config and safetensors headers).
func dirDetails(dir string) (details, int64) {
	ck, _ := checkpoint.Read(dir)
	if ck == nil || ck.Config == nil {
		return detailsOf("", 0, ""), 0
	}
	var params, bytes int64
	if ck.Weights != nil {
		params, bytes = ck.Weights.ParamCount, ck.Weights.Bytes
	}
	return detailsOf(ck.Config.ModelType, params, ck.Quantization()), bytes
}

// tags serves GET /api/tags.
func (s *Server) tags(c echo.Context) error {
	var recs []registry.Record
	if s.opt.Registry != nil {
		var err error
		if recs, err = s.opt.Registry.List(); err != nil {
			return err
		}
	}
	def := s.pool.Default()
	out := []tagEntry{}
	seen := map[string]bool{}
	for _, r := range recs {
		seen[r.Dir] = true
		t := tagEntry{Name: r.Name(), Model: r.Name(), Size: r.Bytes, Digest: r.Digest, Tier: r.Tier, Servable: r.Servable(), Reason: r.Reason, dir: r.Dir}
		if r.Dir == def.Dir {
			t.Name, t.Model = def.ID, def.ID
		}
		if st, err := os.Stat(r.Dir); err == nil {
			t.ModifiedAt = st.ModTime().UTC()
		}
		t.Details = detailsOf(r.ModelType, r.Params, r.Quantization)
		if e := r.Err(); e != nil && t.Reason == "" {
			t.Reason = e.Error()
		}
		out = append(out, t)
	}
	// Loaded models and the default that the registry does not list (a
	// --model directory outside the cache): Ollama clients pick models
	// from this list.
	for _, st := range s.pool.Loaded() {
		if !seen[st.Dir] {
			seen[st.Dir] = true
			t := tagEntry{Name: st.ID, Model: st.ID, ModifiedAt: st.LoadedAt.UTC(), Size: st.WeightBytes, Digest: registry.DirDigest(st.Dir), Tier: st.Tier, Servable: true, dir: st.Dir}
			t.Details = detailsOf(st.ModelType, st.Params, st.Quantization)
			out = append(out, t)
		}
	}
	if def.Dir != "" && !seen[def.Dir] {
		t := tagEntry{Name: def.ID, Model: def.ID, Digest: registry.DirDigest(def.Dir), Servable: true, dir: def.Dir}
		t.Details, t.Size = dirDetails(def.Dir)
		if st, err := os.Stat(def.Dir); err == nil {
			t.ModifiedAt = st.ModTime().UTC()
		}
		out = append(out, t)
	}
	// Aliases (POST /api/copy): each as the model it names, under its own
	// name, with that model as parent_model (as Ollama lists a copy).
	models := len(out)
	for _, a := range s.aliases() {
		for _, e := range out[:models] {
			if e.dir == a.rec.Dir {
				e.Name, e.Model, e.Details.ParentModel = a.Name, a.Name, a.Target
				out = append(out, e)
				break
			}
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"models": out})
}

// paramSize is a parameter count as Ollama's details give it ("1.7B"), or
// "" when unknown.
func paramSize(n int64) string {
	if n <= 0 {
		return ""
	}
	return registry.FormatParams(n)
}
