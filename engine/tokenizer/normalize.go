package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites the text between added tokens before pre-tokenization.
type normalizer interface {
	normalize(s string) string
}

type unicodeNorm struct{ form norm.Form } // NFC, NFD, NFKC, NFKD

func (n unicodeNorm) normalize(s string) string { return n.form.String(s) }

type lowercase struct{}

// normalize lowercases character by character with the full Unicode mapping
// (U+0130 → "i̇"), as Rust's char::to_lowercase does; no final-sigma rule.
func (lowercase) normalize(s string) string {
	var sb strings.Builder
	sb.Grow(len(s))
	for _, r := range s {
		if r == 0x130 {
			sb.WriteString("i\u0307")
			continue
		}
		sb.WriteRune(unicode.ToLower(r))
	}
	return sb.String()
}

type prepend string

func (p prepend) normalize(s string) string {
	if s == "" {
		return s
	}
	return string(p) + s
}

type replace struct {
	pat     pattern
	content string
}

func (r replace) normalize(s string) string {
	return replaceAll(r.pat, s, r.content)
}

// replaceAll replaces every match of pat in s with content.
func replaceAll(pat pattern, s, content string) string {
	if lit, ok := pat.(literalPattern); ok {
		if lit == "" {
			return s
		}
		return strings.ReplaceAll(s, string(lit), content)
	}
	var sb strings.Builder
	var m matcher
	last := 0
	for {
		var sp span
		var ok bool
		if sp, m, ok = pat.next(s, m); !ok {
			break
		}
		sb.WriteString(s[last:sp.start])
		sb.WriteString(content)
		last = sp.end
	}
	if last == 0 && sb.Len() == 0 {
		return s
	}
	sb.WriteString(s[last:])
	return sb.String()
}

// strip removes leading and/or trailing whitespace.
type strip struct{ left, right bool }

func (st strip) normalize(s string) string {
	cats := categories()
	if st.left {
		for s != "" {
			r, size := utf8.DecodeRuneInString(s)
			if !cats.isSpace(r) {
				break
			}
			s = s[size:]
		}
	}
	if st.right {
		for s != "" {
			r, size := utf8.DecodeLastRuneInString(s)
			if !cats.isSpace(r) {
				break
			}
			s = s[:len(s)-size]
		}
	}
	return s
}

// stripAccents removes combining marks (run it after NFD or NFKD).
type stripAccents struct{}

func (stripAccents) normalize(s string) string {
	cats := categories()
	return strings.Map(func(r rune) rune {
		if 1<<cats.category(r)&maskM != 0 {
			return -1
		}
		return r
	}, s)
}

type normalizerSeq []normalizer

func (q normalizerSeq) normalize(s string) string {
	for _, n := range q {
		s = n.normalize(s)
	}
	return s
}
