package web

import (
	"cmp"
	"errors"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/labstack/echo/v4"

	"hearth/engine/pool"
	"hearth/engine/registry"
)

// Ollama's model management routes: DELETE /api/delete and POST
// /api/copy. Both answer {"status": "success"} (Ollama answers 200 with
// no body; its clients read only the status).

// deleteRequest is DELETE /api/delete.
type deleteRequest struct {
	Model string `json:"model"`
	Name  string `json:"name"` // Ollama's older spelling, which ollama-js still sends
}

// copyRequest is POST /api/copy.
type copyRequest struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// errNoRegistry answers a copy on a server that keeps no model registry
// (only tests build one), so no alias table.
var errNoRegistry = &apiError{status: http.StatusNotImplemented, code: "not_implemented",
	msg: "this server keeps no model registry, so no alias table: models cannot be copied"}

var success = map[string]string{"status": "success"}

// deleteModel serves DELETE /api/delete. An alias (made by /api/copy) is
// removed alone; the model it names stays. Any other name must be a
// downloaded repo, which is removed from the Hugging Face cache as hearth
// rm removes it, every revision with it, after the server unloads every
// loaded revision (a busy one takes no new request, and its files stay
// readable to the requests it is finishing). The built-in model, the
// server's default model and directories outside the cache are refused.
func (s *Server) deleteModel(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var in deleteRequest
	if err := decodeJSON(body, &in); err != nil {
		return err
	}
	name := pool.Untagged(strings.TrimSpace(cmp.Or(in.Model, in.Name)))
	if name == "" {
		return badRequest("model", "model: required (the name of the model to delete)")
	}
	refuse := func(why string) error {
		return &apiError{status: http.StatusBadRequest, param: "model", code: "model_not_deletable", msg: registry.QuoteName(name) + " " + why}
	}
	const outside = "is served from a directory outside the Hugging Face cache (--model); hearth deletes only downloaded models"
	def := s.pool.Default()
	reg := s.opt.Registry
	if reg == nil {
		if name == def.ID {
			return refuse(outside)
		}
		return registry.UnknownName(name)
	}
	if ok, err := reg.RemoveAlias(name); err != nil {
		return err
	} else if ok {
		s.log.Info("deleted alias", "alias", name)
		return c.JSON(http.StatusOK, success)
	}
	rec, err := reg.ResolveName(name)
	if rec.Dir == "" { // unknown (an unservable record still comes back)
		if errors.Is(err, registry.ErrNotFound) && name == def.ID {
			return refuse(outside)
		}
		return err
	}
	switch {
	case rec.Builtin:
		return refuse("is built into hearth and cannot be deleted (it takes no space in the cache)")
	case rec.Revision == "":
		return refuse("is a directory registered with hearth, not a download; hearth does not delete it")
	case strings.Contains(name, "@"):
		return refuse("names one revision; deleting removes a repo with every revision, so name it as " + registry.QuoteName(rec.ID))
	case rec.Dir == def.Dir || strings.HasPrefix(def.Dir, registry.RepoDir(reg.CacheDir(), rec.ID)+string(filepath.Separator)):
		return refuse("is this server's default model (--model); serve another one before deleting it")
	}
	repoDir := registry.RepoDir(reg.CacheDir(), rec.ID) + string(filepath.Separator)
	for _, st := range s.pool.Loaded() {
		if strings.HasPrefix(st.Dir, repoDir) {
			if _, err := s.pool.Unload(st.ID); err != nil {
				// A runner that has not stopped: it reads its files
				// through mmap, which survives their deletion, and
				// closes when its request stops.
				s.log.Warn("delete: unload", "model", st.ID, "err", err)
			}
		}
	}
	if err := reg.RemoveRepo(rec.ID); err != nil {
		return err
	}
	s.log.Info("deleted model", "model", rec.ID)
	return c.JSON(http.StatusOK, success)
}

// copyModel serves POST /api/copy. In Hearth a copy is an alias: a second
// name for a model in the cache (or the built-in one), kept in the
// registry's alias table, with which the model is found on every route
// that takes a model; no file is copied. An alias of a repo follows the
// repo's name (a new pull of refs/main moves both). Copying onto an
// existing alias moves the alias; a destination that names a model
// already is refused.
func (s *Server) copyModel(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var in copyRequest
	if err := decodeJSON(body, &in); err != nil {
		return err
	}
	src := pool.Untagged(strings.TrimSpace(in.Source))
	dst := pool.Untagged(strings.TrimSpace(in.Destination))
	def := s.pool.Default()
	switch {
	case src == "":
		return badRequest("source", "source: required (the model to copy)")
	case dst == "":
		return badRequest("destination", "destination: required (the new name)")
	case s.opt.Registry == nil && src != def.ID:
		return registry.UnknownName(src)
	case s.opt.Registry == nil:
		return errNoRegistry
	}
	if dst == def.ID {
		return badRequest("destination", "destination: %s already names a model; pick another name", registry.QuoteName(dst))
	}
	rec, err := s.opt.Registry.Copy(src, dst)
	switch {
	case errors.Is(err, registry.ErrNameTaken), errors.Is(err, registry.ErrInvalidName):
		return badRequest("destination", "destination: %v", err)
	case errors.Is(err, registry.ErrNotFound) && src == def.ID:
		return badRequest("source", "source: %s is served from a directory outside the Hugging Face cache (--model); copy names models in the cache and the built-in one", registry.QuoteName(src))
	case err != nil:
		return err
	}
	s.log.Info("copied model", "source", rec.Name(), "alias", dst)
	return c.JSON(http.StatusOK, success)
}
