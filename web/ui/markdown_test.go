package ui

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"

	"hearth/internal/testenv"
)

// renderTimeout bounds one render: a regular expression or loop that goes
// quadratic or worse on some input shows up as a failure, not a hang.
const renderTimeout = 5 * time.Second

var update = flag.Bool("update", false, "rewrite testdata/markdown/*.html from the renderer")

// mdRenderer is a node process running e2e/md_render.js: the page's own
// Markdown code, fed one JSON line per document.
type mdRenderer struct {
	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

var (
	mdOnce sync.Once
	mdProc *mdRenderer
	mdErr  error
)

// renderer starts (once per test process) the node renderer, skipping t
// when node is absent.
func renderer(t testing.TB) *mdRenderer {
	t.Helper()
	_, err := exec.LookPath("node")
	testenv.Need(t, "node (Node.js, to run the chat's JavaScript)", err == nil)
	mdOnce.Do(func() {
		cmd := exec.Command("node", filepath.Join("e2e", "md_render.js"))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			mdErr = err
			return
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			mdErr = err
			return
		}
		if err := cmd.Start(); err != nil {
			mdErr = err
			return
		}
		mdProc = &mdRenderer{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	})
	if mdErr != nil {
		t.Fatalf("start node md_render.js: %v", mdErr)
	}
	return mdProc
}

func (r *mdRenderer) render(md string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	req, _ := json.Marshal(map[string]string{"md": md})
	if _, err := r.in.Write(append(req, '\n')); err != nil {
		return "", fmt.Errorf("write to md_render.js: %w", err)
	}
	type answer struct {
		line []byte
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		line, err := r.out.ReadBytes('\n')
		ch <- answer{line, err}
	}()
	var line []byte
	select {
	case a := <-ch:
		if a.err != nil {
			return "", fmt.Errorf("read from md_render.js: %w", a.err)
		}
		line = a.line
	case <-time.After(renderTimeout):
		// The renderer is wedged; kill it so later calls fail fast.
		r.cmd.Process.Kill()
		return "", fmt.Errorf("markdown renderer took more than %v on %d bytes", renderTimeout, len(md))
	}
	var resp struct{ HTML, Err string }
	if err := json.Unmarshal(line, &resp); err != nil {
		return "", fmt.Errorf("md_render.js answered %q: %w", line, err)
	}
	if resp.Err != "" {
		return "", fmt.Errorf("markdown renderer threw: %s", resp.Err)
	}
	return resp.HTML, nil
}

func TestMarkdownGolden(t *testing.T) {
	r := renderer(t)
	files, err := filepath.Glob(filepath.Join("testdata", "markdown", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/markdown/*.md (%v)", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".md")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.render(string(src))
			if err != nil {
				t.Fatal(err)
			}
			if err := checkSafe(got); err != nil {
				t.Errorf("unsafe output: %v\n%s", err, got)
			}
			golden := strings.TrimSuffix(f, ".md") + ".html"
			if *update {
				if err := os.WriteFile(golden, []byte(got+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestMarkdownGolden -update and review the diff)", err)
			}
			if got != strings.TrimSuffix(string(want), "\n") {
				t.Errorf("render(%s) =\n%s\nwant\n%s", filepath.Base(f), got, want)
			}
		})
	}
}

// allowed lists the elements and attributes the renderer may produce.
var allowed = map[string][]string{
	"p": nil, "h1": nil, "h2": nil, "h3": nil, "h4": nil, "h5": nil, "h6": nil,
	"blockquote": nil, "ul": nil, "ol": {"start"}, "li": nil, "hr": nil,
	"table": nil, "thead": nil, "tbody": nil, "tr": nil, "th": {"class"}, "td": {"class"},
	"strong": nil, "em": nil, "del": nil, "code": {"class"}, "br": nil,
	"a":     {"href", "rel", "target"},
	"input": {"type", "checked", "disabled"},
	"pre":   {"data-lang"},
	"span":  {"class"},
}

var void = map[string]bool{"br": true, "hr": true, "input": true}

// checkSafe reports the first element, attribute or URL in h that the
// renderer must never produce, or an unbalanced tag.
func checkSafe(h string) error {
	z := html.NewTokenizer(strings.NewReader(h))
	var stack []string
	for {
		switch z.Next() {
		case html.ErrorToken:
			if z.Err() == io.EOF {
				if len(stack) > 0 {
					return fmt.Errorf("unclosed <%s>", stack[len(stack)-1])
				}
				return nil
			}
			return z.Err()
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			attrs, ok := allowed[tok.Data]
			if !ok {
				return fmt.Errorf("element <%s>", tok.Data)
			}
			for _, a := range tok.Attr {
				if !contains(attrs, a.Key) {
					return fmt.Errorf("attribute %s on <%s>", a.Key, tok.Data)
				}
				if a.Key == "href" {
					u := strings.ToLower(a.Val)
					if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "mailto:") {
						return fmt.Errorf("href %q", a.Val)
					}
				}
				if a.Key == "class" && strings.ContainsAny(a.Val, "\"'<>") {
					return fmt.Errorf("class %q", a.Val)
				}
			}
			if !void[tok.Data] {
				stack = append(stack, tok.Data)
			}
		case html.EndTagToken:
			tok := z.Token()
			if len(stack) == 0 || stack[len(stack)-1] != tok.Data {
				return fmt.Errorf("unbalanced </%s>", tok.Data)
			}
			stack = stack[:len(stack)-1]
		case html.CommentToken, html.DoctypeToken:
			return fmt.Errorf("markup %q", z.Raw())
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// FuzzMarkdown feeds model-like output to the page's Markdown renderer:
// it must never throw, and its output must hold only allowed elements,
// attributes and link schemes, balanced.
func FuzzMarkdown(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "markdown", "*.md"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	for _, s := range []string{
		"", "*", "**", "***a***", "_a_b_", "~~", "`", "``", "[", "[](", "[a](<javascript:x>)", "![", "$", "$$", "$$\n",
		"|", "|-|\n|", "a|b\n-|-", "> > > > >", "- - - -", "1.", "1. a\n   - b\n     1. c", "```", "~~~\n", "\\", "<", "<http://",
		"http://a.b/<script>", "[x](http://a\"onmouseover=\"b)", "<think>", "\t- a\n\t\t- b", "\r\n\r", "\u0000", "# ", "######## x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		r := renderer(t)
		got, err := r.render(md)
		if err != nil {
			t.Fatalf("render(%q): %v", md, err)
		}
		if err := checkSafe(got); err != nil {
			t.Fatalf("render(%q) is unsafe: %v\n%s", md, err, got)
		}
	})
}
