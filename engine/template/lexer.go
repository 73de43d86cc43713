package template

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

const (
	filterPrefix = "__hearth_f_"
	finalizeName = "__hearth_finalize"
)

// rewrite lexes a chat template exactly as Python Jinja2's lexer does with
// trim_blocks=True and lstrip_blocks=True, and writes an equivalent template
// for ardanlabs/jinja in which every whitespace decision is already made:
//
//   - newlines are normalized to "\n" and one trailing newline is dropped
//     (keep_trailing_newline=False);
//   - "-" and "+" markers, lstrip_blocks and trim_blocks are applied here,
//     and every stretch of literal text becomes a string-literal output tag,
//     so the library's own trimming finds no text to change;
//   - comments are dropped and {% raw %} bodies become literal text;
//   - string literals are decoded as Python's unicode-escape codec does and
//     re-encoded in the subset the library decodes;
//   - every {{ expression }} is wrapped as {{ (expression)|__hearth_finalize }}
//     so output is printed as Python's str() prints it;
//   - filters in the filters table are renamed to filterPrefix+name, which
//     Render supplies (the library looks a filter up among its built-ins
//     first and then in the render data).
//
// Line numbers are kept: newlines that the rewrite removes are re-inserted
// as whitespace before the closing delimiter of the tag written before
// them, so the library's "line N" errors point into the original source.
func rewrite(src string) (string, error) {
	src = normalizeNewlines(src)
	w := rewriter{src: src, lineStart: true}
	if err := w.run(); err != nil {
		return "", err
	}
	w.flush()
	return w.out.String(), nil
}

// normalizeNewlines turns "\r\n" and "\r" into "\n" and drops one trailing
// newline, as jinja2.lexer.Lexer.tokeniter does.
func normalizeNewlines(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.TrimSuffix(s, "\n")
}

type rewriter struct {
	src       string
	pos       int
	out       strings.Builder
	srcLines  int    // newlines consumed from src
	outLines  int    // newlines written to out
	closer    string // the last tag's closing delimiter, not yet written
	lineStart bool   // the last token ended a line (Jinja's line_starting)
}

// syntaxError is a template that Jinja2's lexer rejects.
type syntaxError struct {
	line int
	msg  string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

func (w *rewriter) errorf(at int, format string, args ...any) error {
	return &syntaxError{line: 1 + strings.Count(w.src[:at], "\n"), msg: fmt.Sprintf(format, args...)}
}

func (w *rewriter) run() error {
	for w.pos < len(w.src) {
		start, kind, sign := nextTag(w.src, w.pos)
		if start < 0 {
			w.text(w.src[w.pos:])
			w.consume(len(w.src))
			return nil
		}
		text := w.src[w.pos:start]
		rawEnd := -1
		if kind == '%' {
			rawEnd = matchRawBegin(w.src, start)
		}
		switch {
		case sign == '-':
			text = strings.TrimRightFunc(text, pyIsSpace)
		case sign != '+' && kind != '{':
			text = lstripBlock(text, w.lineStart)
		}
		w.text(text)
		w.consume(start)
		var err error
		switch {
		case rawEnd >= 0:
			err = w.raw(rawEnd)
		case kind == '#':
			err = w.comment()
		default:
			err = w.tag(kind)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// nextTag finds the next "{{", "{%" or "{#" at or after pos and the
// whitespace-control sign that follows it ('-', '+' or 0).
func nextTag(s string, pos int) (start int, kind byte, sign byte) {
	for i := pos; i+1 < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		switch s[i+1] {
		case '{', '%', '#':
			if i+2 < len(s) && (s[i+2] == '-' || s[i+2] == '+') {
				sign = s[i+2]
			}
			return i, s[i+1], sign
		}
	}
	return -1, 0, 0
}

// lstripBlock applies lstrip_blocks to the text before a block or comment
// tag: whitespace between the last newline (or the start of a line) and the
// tag is removed.
func lstripBlock(text string, lineStart bool) string {
	l := strings.LastIndexByte(text, '\n') + 1
	if l == 0 && !lineStart {
		return text
	}
	tail := text[l:]
	if tail != "" && strings.TrimLeftFunc(tail, pyIsSpace) == "" {
		return text[:l]
	}
	return text
}

// consume advances pos to end, counting the newlines passed.
func (w *rewriter) consume(end int) {
	seg := w.src[w.pos:end]
	w.srcLines += strings.Count(seg, "\n")
	if seg != "" {
		w.lineStart = seg[len(seg)-1] == '\n'
	}
	w.pos = end
}

// open starts a new tag in the output. The previous tag's closing
// delimiter was held back so that the newlines the output owes the source
// (from stripped whitespace and comments) go inside it, before the new tag:
// the library then counts lines as the source does.
func (w *rewriter) open(s, closer string) {
	w.flush()
	w.out.WriteString(s)
	w.outLines += strings.Count(s, "\n")
	w.closer = closer
}

// flush writes the owed newlines and the held-back closing delimiter.
func (w *rewriter) flush() {
	n := w.srcLines - w.outLines
	if n > 0 && w.closer == "" {
		w.out.WriteString("{{ ''")
		w.closer = " }}"
	}
	if n > 0 {
		w.out.WriteString(strings.Repeat("\n", n))
		w.outLines += n
	}
	w.out.WriteString(w.closer)
	w.closer = ""
}

// text writes literal template data as a string-literal output tag.
func (w *rewriter) text(s string) {
	if s != "" {
		w.open("{{ "+quote(s), " }}")
	}
}

// quote encodes s as a string literal that ardanlabs/jinja decodes back to
// s: it understands only \\ \' \" \n \t, so other characters stay raw.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// comment skips a {# ... #} comment, applying its closing marker.
func (w *rewriter) comment() error {
	open := w.pos
	body := w.pos + 2
	if body < len(w.src) && (w.src[body] == '-' || w.src[body] == '+') {
		body++
	}
	i := strings.Index(w.src[body:], "#}")
	if i < 0 {
		return w.errorf(open, "missing end of comment tag")
	}
	end := body + i // index of "#}"
	var close int
	switch {
	case end > body && w.src[end-1] == '+':
		close = end + 2
	case end > body && w.src[end-1] == '-':
		close = skipSpace(w.src, end+2)
	default:
		close = end + 2
		if close < len(w.src) && w.src[close] == '\n' {
			close++
		}
	}
	w.consume(close)
	return nil
}

// matchRawBegin reports the end of a "{% raw %}" tag starting at i, or -1.
func matchRawBegin(s string, i int) int {
	j := i + 2
	if j < len(s) && (s[j] == '-' || s[j] == '+') {
		j++
	}
	j = skipSpace(s, j)
	if !strings.HasPrefix(s[j:], "raw") {
		return -1
	}
	j += 3
	k := skipSpace(s, j)
	if k == j && k < len(s) && isNameByte(s[k]) {
		return -1 // {% rawfoo %}
	}
	switch {
	case strings.HasPrefix(s[k:], "-%}"):
		return skipSpace(s, k+3)
	case strings.HasPrefix(s[k:], "%}"):
		return k + 2
	}
	return -1
}

// raw copies the body of a {% raw %} block as literal text.
func (w *rewriter) raw(bodyStart int) error {
	open := w.pos
	w.consume(bodyStart)
	for i := bodyStart; ; {
		start, kind, sign := nextTag(w.src, i)
		if start < 0 {
			return w.errorf(open, "missing end of raw directive")
		}
		if kind != '%' {
			i = start + 2
			continue
		}
		j := start + 2
		if sign != 0 {
			j++
		}
		j = skipSpace(w.src, j)
		if !strings.HasPrefix(w.src[j:], "endraw") {
			i = start + 2
			continue
		}
		k := skipSpace(w.src, j+6)
		var close int
		switch {
		case strings.HasPrefix(w.src[k:], "+%}"):
			close = k + 3
		case strings.HasPrefix(w.src[k:], "-%}"):
			close = skipSpace(w.src, k+3)
		case strings.HasPrefix(w.src[k:], "%}"):
			close = k + 2
			if close < len(w.src) && w.src[close] == '\n' {
				close++
			}
		default:
			i = start + 2
			continue
		}
		body := w.src[bodyStart:start]
		switch {
		case sign == '-':
			body = strings.TrimRightFunc(body, pyIsSpace)
		case sign != '+':
			body = lstripBlock(body, w.lineStart)
		}
		w.text(body)
		w.consume(close)
		return nil
	}
}

func skipSpace(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !pyIsSpace(r) {
			break
		}
		i += n
	}
	return i
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// closeTag writes the rewritten tag and consumes the source through close.
func (w *rewriter) closeTag(kind byte, body string, close int) {
	if kind == '{' {
		w.open("{{ ("+body+")|"+finalizeName, " }}")
	} else {
		w.open("{% "+body, " %}")
	}
	w.consume(close)
}
