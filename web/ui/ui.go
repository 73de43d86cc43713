// Package ui serves Hearth's web chat: plain HTML, CSS and JavaScript
// modules embedded in the binary (no build step), sent with a strict
// Content-Security-Policy so the page can reach only its own origin.
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// CSP is the Content-Security-Policy of every response: scripts, styles,
// fetches and fonts from the page's own origin only (no inline code), and
// images and media also from data: and blob: URLs, which is how attachments
// are shown.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data: blob:; media-src 'self' data: blob:; connect-src 'self'; " +
	"font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// contentTypes maps the extensions under static/ to their media types;
// a file with any other extension is not served.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".json": "application/json",
}

type file struct {
	body        []byte
	contentType string
	etag        string
}

type handler struct {
	files map[string]file // keyed by URL path: "/", "/app.css", "/js/main.js"
}

// Handler returns the handler that serves the chat page at "/" and its
// assets below it. It answers GET and HEAD; other methods get 405, unknown
// paths 404. Responses revalidate with an ETag, so an upgraded binary's
// files are picked up at once.
func Handler() http.Handler {
	h := &handler{files: map[string]file{}}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			return nil
		}
		body, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		f := file{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		url := strings.TrimPrefix(p, "static")
		h.files[url] = f
		if url == "/index.html" {
			h.files["/"] = f
		}
		return nil
	})
	if err != nil {
		// The files are compiled in; failing to read them is a broken build.
		panic("ui: read embedded files: " + err.Error())
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	f, ok := h.files[r.URL.Path]
	if !ok {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	hd.Set("Content-Type", f.contentType)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", f.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
}
