package ui

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"hearth/internal/testenv"
)

func TestHandler(t *testing.T) {
	h := Handler()
	tests := []struct {
		name, method, path string
		status             int
		contentType        string
		bodyHas            string
	}{
		{"index", "GET", "/", 200, "text/html; charset=utf-8", `<script type="module" src="js/main.js">`},
		{"index by name", "GET", "/index.html", 200, "text/html; charset=utf-8", "<title>Hearth</title>"},
		{"stylesheet", "GET", "/app.css", 200, "text/css; charset=utf-8", "prefers-color-scheme: dark"},
		{"module", "GET", "/js/main.js", 200, "text/javascript; charset=utf-8", "import"},
		{"icon", "GET", "/favicon.svg", 200, "image/svg+xml", "<svg"},
		{"head", "HEAD", "/", 200, "text/html; charset=utf-8", ""},
		{"unknown file", "GET", "/nope.js", 404, "text/plain; charset=utf-8", "not found"},
		{"directory", "GET", "/js/", 404, "text/plain; charset=utf-8", "not found"},
		{"directory without slash", "GET", "/js", 404, "text/plain; charset=utf-8", "not found"},
		{"traversal", "GET", "/js/../../ui.go", 404, "text/plain; charset=utf-8", "not found"},
		{"the Go source is not served", "GET", "/ui.go", 404, "text/plain; charset=utf-8", "not found"},
		{"post", "POST", "/", 405, "text/plain; charset=utf-8", "method not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.status {
				t.Fatalf("%s %s: status %d, want %d", tt.method, tt.path, rec.Code, tt.status)
			}
			hd := rec.Header()
			if got := hd.Get("Content-Type"); got != tt.contentType {
				t.Errorf("Content-Type = %q, want %q", got, tt.contentType)
			}
			if got := hd.Get("Content-Security-Policy"); got != CSP {
				t.Errorf("Content-Security-Policy = %q, want %q", got, CSP)
			}
			if got := hd.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
			}
			if !strings.Contains(rec.Body.String(), tt.bodyHas) {
				t.Errorf("body lacks %q", tt.bodyHas)
			}
			if tt.method == "HEAD" && rec.Body.Len() != 0 {
				t.Errorf("HEAD answered %d body bytes", rec.Body.Len())
			}
			if tt.status == 405 && hd.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow = %q", hd.Get("Allow"))
			}
		})
	}
}

func TestHandlerRevalidates(t *testing.T) {
	h := Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/app.css", nil))
	etag := rec.Header().Get("ETag")
	if etag == "" || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q: want an ETag and no-cache", etag, rec.Header().Get("Cache-Control"))
	}
	req := httptest.NewRequest("GET", "/app.css", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Errorf("If-None-Match with the current ETag: status %d, want 304", rec.Code)
	}
}

func TestCSPDirectives(t *testing.T) {
	want := map[string]string{
		"default-src": "'self'", "script-src": "'self'", "style-src": "'self'",
		"img-src": "'self' data: blob:", "media-src": "'self' data: blob:", "connect-src": "'self'",
		"object-src": "'none'", "frame-ancestors": "'none'",
	}
	got := map[string]string{}
	for _, d := range strings.Split(CSP, ";") {
		name, val, _ := strings.Cut(strings.TrimSpace(d), " ")
		got[name] = val
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("CSP %s = %q, want %q", k, got[k], v)
		}
	}
	if strings.Contains(CSP, "unsafe") {
		t.Errorf("CSP allows something unsafe: %s", CSP)
	}
}

// staticFiles returns the embedded files by path under static/.
func staticFiles(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		out[strings.TrimPrefix(p, "static/")] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNoInlineCode holds the page to its CSP: no inline script, style
// attribute or <style>, no event-handler attribute, no absolute URL, and
// every referenced file embedded.
func TestNoInlineCode(t *testing.T) {
	files := staticFiles(t)
	for name, body := range files {
		if path.Ext(name) != ".html" {
			continue
		}
		z := html.NewTokenizer(strings.NewReader(body))
		for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
			if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
				continue
			}
			tok := z.Token()
			if tok.Data == "style" {
				t.Errorf("%s: a <style> element", name)
			}
			src := ""
			for _, a := range tok.Attr {
				switch {
				case a.Key == "style":
					t.Errorf("%s: style attribute on <%s>", name, tok.Data)
				case strings.HasPrefix(a.Key, "on"):
					t.Errorf("%s: event handler %s on <%s>", name, a.Key, tok.Data)
				case a.Key == "src" || a.Key == "href":
					if a.Key == "src" {
						src = a.Val
					}
					if strings.HasPrefix(a.Val, "#") {
						continue
					}
					if strings.Contains(a.Val, ":") || strings.HasPrefix(a.Val, "//") {
						t.Errorf("%s: <%s %s=%q> leaves the origin", name, tok.Data, a.Key, a.Val)
					} else if _, ok := files[a.Val]; !ok {
						t.Errorf("%s: <%s %s=%q> is not embedded", name, tok.Data, a.Key, a.Val)
					}
				}
			}
			if tok.Data == "script" && src == "" {
				t.Errorf("%s: an inline <script>", name)
			}
		}
	}
}

var importRe = regexp.MustCompile(`(?m)^\s*import\s+(?:[^'"]+from\s+)?['"]([^'"]+)['"]|import\(['"]([^'"]+)['"]\)`)

// TestModulesResolve checks that every import in the page's modules names
// an embedded file by a relative path (a typo would otherwise surface only
// in a browser).
func TestModulesResolve(t *testing.T) {
	files := staticFiles(t)
	n := 0
	for name, body := range files {
		if path.Ext(name) != ".js" {
			continue
		}
		for _, m := range importRe.FindAllStringSubmatch(body, -1) {
			spec := m[1] + m[2]
			n++
			if !strings.HasPrefix(spec, "./") && !strings.HasPrefix(spec, "../") {
				t.Errorf("%s imports %q: only relative imports of embedded files work", name, spec)
				continue
			}
			target := path.Join(path.Dir(name), spec)
			if _, ok := files[target]; !ok {
				t.Errorf("%s imports %q: no such embedded file %q", name, spec, target)
			}
		}
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s uses %s: the page builds DOM nodes only", name, bad)
			}
		}
	}
	if n < 10 {
		t.Errorf("found only %d imports; is the pattern broken?", n)
	}
	if _, ok := files["js/main.js"]; !ok {
		t.Error("js/main.js is not embedded")
	}
}

// TestJS runs the unit tests of the page's pure modules (Markdown,
// highlighting, SSE, thinking, attachments, conversations, stats) in Node.
func TestJS(t *testing.T) {
	_, err := exec.LookPath("node")
	testenv.Need(t, "node (Node.js, to run the chat's JavaScript)", err == nil)
	cmd := exec.Command("node", "--test", "e2e/unit/")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test e2e/unit/: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^# pass [1-9]`).Match(out) || !regexp.MustCompile(`(?m)^# fail 0$`).Match(out) {
		t.Fatalf("node --test ran no passing tests:\n%s", out)
	}
}
