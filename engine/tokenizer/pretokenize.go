package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// piece is a pre-tokenized word, or text still to split.
type piece struct {
	s     string
	first bool // s starts at offset 0 of the input (Metaspace "first")
}

// preTokenizer splits normalized text into the words the model encodes.
type preTokenizer interface {
	// preTokenize appends the pieces p splits into to dst.
	preTokenize(e *encoder, dst []piece, p piece) []piece
}

// splitBehavior is SplitDelimiterBehavior: what becomes of each match.
type splitBehavior uint8

const (
	behaviorRemoved splitBehavior = iota
	behaviorIsolated
	behaviorMergedWithPrevious
	behaviorMergedWithNext
	behaviorContiguous
)

var splitBehaviors = map[string]splitBehavior{
	"Removed": behaviorRemoved, "Isolated": behaviorIsolated, "MergedWithPrevious": behaviorMergedWithPrevious,
	"MergedWithNext": behaviorMergedWithNext, "Contiguous": behaviorContiguous,
}

// part is a span of a piece and whether it matched the pattern.
type part struct {
	span
	match bool
}

// splitPieces cuts p at matches (sorted, non-overlapping) and appends the
// pieces behavior keeps, dropping empty ones: NormalizedString::split.
func splitPieces(e *encoder, dst []piece, p piece, matches []span, behavior splitBehavior, invert bool) []piece {
	s := p.s
	parts := e.parts[:0]
	last := 0
	for _, m := range matches {
		if m.start > last {
			parts = append(parts, part{span{last, m.start}, invert})
		}
		parts = append(parts, part{m, !invert})
		last = m.end
	}
	if last < len(s) {
		parts = append(parts, part{span{last, len(s)}, invert})
	}
	e.parts = parts
	emit := func(sp span) {
		if sp.end > sp.start {
			dst = append(dst, piece{s: s[sp.start:sp.end], first: p.first && sp.start == 0})
		}
	}
	switch behavior {
	case behaviorRemoved:
		for _, pt := range parts {
			if !pt.match {
				emit(pt.span)
			}
		}
	case behaviorIsolated:
		for _, pt := range parts {
			emit(pt.span)
		}
	case behaviorMergedWithPrevious, behaviorContiguous:
		var cur span
		have, prevMatch := false, false
		for _, pt := range parts {
			merge := pt.match && !prevMatch
			if behavior == behaviorContiguous {
				merge = pt.match == prevMatch
			}
			if merge && have {
				cur.end = pt.end
			} else {
				if have {
					emit(cur)
				}
				cur, have = pt.span, true
			}
			prevMatch = pt.match
		}
		if have {
			emit(cur)
		}
	case behaviorMergedWithNext:
		// The reference folds from the right; collect spans backwards.
		var rev []span
		prevMatch := false
		for i := len(parts) - 1; i >= 0; i-- {
			pt := parts[i]
			if pt.match && !prevMatch && len(rev) > 0 {
				rev[len(rev)-1].start = pt.start
			} else {
				rev = append(rev, pt.span)
			}
			prevMatch = pt.match
		}
		for i := len(rev) - 1; i >= 0; i-- {
			emit(rev[i])
		}
	}
	return dst
}

// charMatches returns each character of s for which f holds as its own
// match (the reference's Pattern for Fn(char) -> bool).
func charMatches(dst []span, s string, f func(rune) bool) []span {
	for i, r := range s {
		if f(r) {
			dst = append(dst, span{i, i + utf8.RuneLen(r)})
		}
	}
	return dst
}

type splitPre struct {
	pat      pattern
	behavior splitBehavior
	invert   bool
}

func (sp *splitPre) preTokenize(e *encoder, dst []piece, p piece) []piece {
	e.spans = sp.pat.findAll(e.spans[:0], p.s)
	return splitPieces(e, dst, p, e.spans, sp.behavior, sp.invert)
}

// gpt2Pattern is the ByteLevel pre-tokenizer's own regex.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// byteLevelPre is the ByteLevel pre-tokenizer. Its byte-to-character mapping
// is implicit: it must come last, and the model then works on raw bytes.
type byteLevelPre struct {
	addPrefixSpace bool
	re             pattern // nil unless use_regex
}

func (b *byteLevelPre) preTokenize(e *encoder, dst []piece, p piece) []piece {
	if b.addPrefixSpace && !strings.HasPrefix(p.s, " ") {
		p.s = " " + p.s
	}
	if b.re == nil {
		return append(dst, p)
	}
	e.spans = b.re.findAll(e.spans[:0], p.s)
	return splitPieces(e, dst, p, e.spans, behaviorIsolated, false)
}

type digitsPre struct{ individual bool }

func (d digitsPre) preTokenize(e *encoder, dst []piece, p piece) []piece {
	cats := categories()
	e.spans = charMatches(e.spans[:0], p.s, cats.isNumeric)
	behavior := behaviorContiguous
	if d.individual {
		behavior = behaviorIsolated
	}
	return splitPieces(e, dst, p, e.spans, behavior, false)
}

type whitespaceSplitPre struct{}

func (whitespaceSplitPre) preTokenize(e *encoder, dst []piece, p piece) []piece {
	e.spans = charMatches(e.spans[:0], p.s, categories().isSpace)
	return splitPieces(e, dst, p, e.spans, behaviorRemoved, false)
}

type charDelimiterPre rune

func (c charDelimiterPre) preTokenize(e *encoder, dst []piece, p piece) []piece {
	e.spans = charMatches(e.spans[:0], p.s, func(r rune) bool { return r == rune(c) })
	return splitPieces(e, dst, p, e.spans, behaviorRemoved, false)
}

// Metaspace prepend schemes.
const (
	prependAlways = "always"
	prependFirst  = "first"
	prependNever  = "never"
)

type metaspacePre struct {
	replacement rune
	scheme      string
	split       bool
}

func (m *metaspacePre) preTokenize(e *encoder, dst []piece, p piece) []piece {
	rep := string(m.replacement)
	p.s = strings.ReplaceAll(p.s, " ", rep)
	if (m.scheme == prependAlways || (m.scheme == prependFirst && p.first)) && !strings.HasPrefix(p.s, rep) {
		p.s = rep + p.s
	}
	if !m.split {
		if p.s == "" {
			return dst
		}
		return append(dst, p)
	}
	e.spans = literalPattern(rep).findAll(e.spans[:0], p.s)
	return splitPieces(e, dst, p, e.spans, behaviorMergedWithNext, false)
}

// preTokenizerSeq runs each pre-tokenizer on every piece the previous made.
type preTokenizerSeq []preTokenizer

func (q preTokenizerSeq) preTokenize(e *encoder, dst []piece, p piece) []piece {
	cur := []piece{p}
	var next []piece
	for i, pt := range q {
		if i == len(q)-1 {
			for _, c := range cur {
				dst = pt.preTokenize(e, dst, c)
			}
			return dst
		}
		next = next[:0]
		for _, c := range cur {
			next = pt.preTokenize(e, next, c)
		}
		cur, next = next, cur
	}
	return append(dst, cur...)
}
