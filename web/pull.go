package web

import (
	"cmp"
	"context"
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"hearth/engine/registry"
)

// PullFunc downloads a model ("org/name" or "org/name@revision") into the
// Hugging Face cache, reporting progress (registry.Pull with the app's
// hub settings).
type PullFunc func(ctx context.Context, name string, progress func(registry.Progress)) error

// pullRequest is POST /api/pull (Ollama's shape; "name" is its older
// spelling of "model").
type pullRequest struct {
	Model  string `json:"model"`
	Name   string `json:"name"`
	Stream *bool  `json:"stream"` // default true
}

// pullLine is one line of the NDJSON progress stream.
type pullLine struct {
	Status    string `json:"status"` // resolving, downloading, done, then success
	Repo      string `json:"repo,omitempty"`
	Commit    string `json:"commit,omitempty"`
	File      string `json:"file,omitempty"`
	Completed int64  `json:"completed,omitempty"`
	Total     int64  `json:"total,omitempty"`
	FilesDone int    `json:"files_done,omitempty"`
	Files     int    `json:"files,omitempty"`
}

// pull serves POST /api/pull: streamed, one JSON object per line while the
// download runs and {"status":"success"} at the end (or {"error": …});
// with "stream": false, one object when it is done. The name, a catalog
// short name ("llama3.2", "qwen3:8b") or a repo id, is checked first (400,
// or 404 with "did you mean" for a short name the catalog lacks), and a
// streamed answer starts only once the hub has resolved
// the revision, so an unknown repo (404), a refusal (403) or a hub fault
// (502) still gets its status; a failure after that is the stream's last
// line. A client that goes away cancels the pull; the next pull resumes
// the partial files.
func (s *Server) pull(c echo.Context) error {
	if s.opt.Pull == nil {
		return &apiError{status: http.StatusNotImplemented, msg: "this server cannot pull models (no hub configured)"}
	}
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var in pullRequest
	if err := decodeJSON(body, &in); err != nil {
		return err
	}
	asked := cmp.Or(in.Model, in.Name)
	if asked == "" {
		return badRequest("model", "model: required (a catalog name such as llama3.2, or a Hugging Face repo id such as Qwen/Qwen3-0.6B)")
	}
	// A catalog short name ("llama3.2", "qwen3:8b") pulls its repo; an
	// unknown one is a 404 with the nearest names.
	name, err := s.modelCatalog().PullTarget(asked)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if in.Stream != nil && !*in.Stream {
		err := s.opt.Pull(ctx, name, nil)
		s.log.Info("pull", "model", name, "err", err)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, pullLine{Status: "success"})
	}
	var (
		mu      sync.Mutex
		w       = newNDJSON(c)
		pending []pullLine // lines held until the revision is resolved
	)
	err = s.opt.Pull(ctx, name, func(p registry.Progress) {
		mu.Lock()
		defer mu.Unlock()
		line := pullLine{Status: p.Status, Repo: p.Repo, Commit: p.Commit, File: p.File,
			Completed: p.Completed, Total: p.Total, FilesDone: p.FilesDone, Files: p.Files}
		if p.Status == registry.StatusResolving && !w.begun() {
			pending = append(pending, line)
			return
		}
		for _, l := range pending {
			w.line(l)
		}
		pending = nil
		w.line(line)
	})
	s.log.Info("pull", "model", name, "err", err)
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		if !w.begun() {
			return err
		}
		w.line(nativeError{Error: classify(err).Message})
		return nil
	}
	for _, l := range pending {
		w.line(l)
	}
	w.line(pullLine{Status: "success"})
	return nil
}
