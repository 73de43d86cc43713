package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"hearth/engine/fit"
	"hearth/engine/registry"
)

// catalogModel is one model of GET /api/catalog: a catalog entry judged
// for this machine. The web chat's model panel reads these fields.
type catalogModel struct {
	Name          string   `json:"name"`  // the short name to pull it by
	Names         []string `json:"names"` // every short name, Name first
	Repo          string   `json:"repo"`
	Parameters    int64    `json:"parameters"`
	SizeBytes     int64    `json:"size_bytes"`
	Estimated     bool     `json:"estimated"` // parameters and size_bytes are the catalog's estimates until pulled
	Quantization  string   `json:"quantization"`
	ContextLength int      `json:"context_length"`
	Capabilities  []string `json:"capabilities"`
	Tier          string   `json:"tier"`
	Fit           *fitBody `json:"fit,omitempty"` // as /v1/models gives it; absent when memory is unknown
	Downloaded    bool     `json:"downloaded"`
	Recommended   bool     `json:"recommended"` // the best model that fits this machine (at most one)
}

// modelCatalog is the catalog the registry resolves short names with, else
// the one built in.
func (s *Server) modelCatalog() *registry.Catalog {
	if s.opt.Registry != nil {
		if c := s.opt.Registry.Catalog(); c != nil {
			return c
		}
	}
	return registry.BuiltinCatalog()
}

// catalogList serves GET /api/catalog: the models Hearth can pull by short
// name, best for this machine first (registry.Catalog.Offers), each with
// the fit verdict /v1/models gives a local model at the server's context,
// and whether it is downloaded already.
func (s *Server) catalogList(c echo.Context) error {
	var judge func(registry.Record) fit.Verdict
	if m, err := fit.System(); err == nil {
		judge = registry.FitAt(m, s.opt.ContextTokens)
	}
	have := map[string]bool{}
	if s.opt.Registry != nil {
		recs, err := s.opt.Registry.List()
		if err != nil {
			return err
		}
		for _, r := range recs {
			if r.Revision != "" { // a snapshot: a pull that finished
				have[r.ID] = true
			}
		}
	}
	cat := s.modelCatalog()
	out := []catalogModel{}
	for _, o := range cat.Offers(judge, func(repo string) bool { return have[repo] }) {
		m := catalogModel{Name: o.Name(), Names: o.Names, Repo: o.Repo, Parameters: o.Params, SizeBytes: o.Bytes,
			Estimated: o.Estimated, Quantization: o.Quantization, ContextLength: o.ContextTokens,
			Capabilities: o.Capabilities, Tier: o.Tier, Downloaded: o.Downloaded, Recommended: o.Recommended}
		if v := o.Fit; v != nil {
			m.Fit = &fitBody{Status: v.Status, ContextTokens: v.ContextTokens, NeedBytes: v.NeedBytes,
				AvailableBytes: v.AvailableBytes, MaxContextTokens: v.MaxContextTokens}
		}
		out = append(out, m)
	}
	return c.JSON(http.StatusOK, map[string]any{"updated": cat.Updated, "models": out})
}
