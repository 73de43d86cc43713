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
	// preTokenize calls yield with each word p splits into, in order, one
	// at a time (a long text is never split in full ahead of the model). It
	// stops as soon as yield returns false, and reports whether it went to
	// the end.
	preTokenize(p piece, yield func(piece) bool) bool
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

// split cuts p at the matches of pat and yields the pieces behavior keeps,
// dropping empty ones: NormalizedString::split, walked one match at a time.
func split(p piece, pat pattern, behavior splitBehavior, invert bool, yield func(piece) bool) bool {
	sp := splitter{p: p, behavior: behavior, yield: yield}
	var m matcher
	last := 0
	for {
		var mt span
		var ok bool
		if mt, m, ok = pat.next(p.s, m); !ok {
			break
		}
		if mt.start > last && !sp.add(part{span{last, mt.start}, invert}) {
			return false
		}
		if !sp.add(part{mt, !invert}) {
			return false
		}
		last = mt.end
	}
	if last < len(p.s) && !sp.add(part{span{last, len(p.s)}, invert}) {
		return false
	}
	return sp.flush()
}

// splitter takes the parts of a piece in order and yields the pieces its
// behavior makes of them. It holds back at most one part: the merging
// behaviors look one part ahead.
type splitter struct {
	p         piece
	behavior  splitBehavior
	yield     func(piece) bool
	cur       span // the part held back
	have      bool
	prevMatch bool // whether the previous part matched
}

func (sp *splitter) emit(s span) bool {
	if s.end <= s.start {
		return true
	}
	return sp.yield(piece{s: sp.p.s[s.start:s.end], first: sp.p.first && s.start == 0})
}

// add takes the next part; it returns false when yield did.
func (sp *splitter) add(pt part) bool {
	switch sp.behavior {
	case behaviorRemoved:
		if pt.match {
			return true
		}
		return sp.emit(pt.span)
	case behaviorIsolated:
		return sp.emit(pt.span)
	case behaviorMergedWithPrevious, behaviorContiguous:
		merge := pt.match && !sp.prevMatch
		if sp.behavior == behaviorContiguous {
			merge = pt.match == sp.prevMatch
		}
		sp.prevMatch = pt.match
		if merge && sp.have {
			sp.cur.end = pt.end
			return true
		}
		ok := !sp.have || sp.emit(sp.cur)
		sp.cur, sp.have = pt.span, true
		return ok
	case behaviorMergedWithNext:
		// The reference folds from the right: a match joins the part
		// after it when that part is not a match. Only matches are held.
		if sp.have {
			if !pt.match {
				sp.have = false
				return sp.emit(span{sp.cur.start, pt.end})
			}
			ok := sp.emit(sp.cur)
			sp.cur = pt.span
			return ok
		}
		if pt.match {
			sp.cur, sp.have = pt.span, true
			return true
		}
		return sp.emit(pt.span)
	}
	return true
}

// flush yields the part held back, if any.
func (sp *splitter) flush() bool {
	if !sp.have {
		return true
	}
	sp.have = false
	return sp.emit(sp.cur)
}

// charPattern matches, each on its own, the characters of one kind (the
// reference's Pattern for Fn(char) -> bool, and for a char).
type charPattern struct {
	kind uint8 // charNumeric, charSpace or charIs
	r    rune
}

const (
	charNumeric = iota
	charSpace
	charIs
)

func (c charPattern) next(s string, m matcher) (span, matcher, bool) {
	cats := categories()
	for m.pos < len(s) {
		r, size := utf8.DecodeRuneInString(s[m.pos:])
		i := m.pos
		m.pos += size
		var hit bool
		switch c.kind {
		case charNumeric:
			hit = cats.isNumeric(r)
		case charSpace:
			hit = cats.isSpace(r)
		default:
			hit = r == c.r
		}
		if hit {
			return span{i, m.pos}, m, true
		}
	}
	return span{}, m, false
}

type splitPre struct {
	pat      pattern
	behavior splitBehavior
	invert   bool
}

func (sp *splitPre) preTokenize(p piece, yield func(piece) bool) bool {
	return split(p, sp.pat, sp.behavior, sp.invert, yield)
}

// gpt2Pattern is the ByteLevel pre-tokenizer's own regex.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// byteLevelPre is the ByteLevel pre-tokenizer. Its byte-to-character mapping
// is implicit: it must come last, and the model then works on raw bytes.
type byteLevelPre struct {
	addPrefixSpace bool
	re             pattern // nil unless use_regex
}

func (b *byteLevelPre) preTokenize(p piece, yield func(piece) bool) bool {
	if b.addPrefixSpace && !strings.HasPrefix(p.s, " ") {
		p.s = " " + p.s
	}
	if b.re == nil {
		return yield(p)
	}
	return split(p, b.re, behaviorIsolated, false, yield)
}

type digitsPre struct{ individual bool }

func (d digitsPre) preTokenize(p piece, yield func(piece) bool) bool {
	behavior := behaviorContiguous
	if d.individual {
		behavior = behaviorIsolated
	}
	return split(p, charPattern{kind: charNumeric}, behavior, false, yield)
}

type whitespaceSplitPre struct{}

func (whitespaceSplitPre) preTokenize(p piece, yield func(piece) bool) bool {
	return split(p, charPattern{kind: charSpace}, behaviorRemoved, false, yield)
}

type charDelimiterPre rune

func (c charDelimiterPre) preTokenize(p piece, yield func(piece) bool) bool {
	return split(p, charPattern{kind: charIs, r: rune(c)}, behaviorRemoved, false, yield)
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

func (m *metaspacePre) preTokenize(p piece, yield func(piece) bool) bool {
	rep := string(m.replacement)
	p.s = strings.ReplaceAll(p.s, " ", rep)
	if (m.scheme == prependAlways || (m.scheme == prependFirst && p.first)) && !strings.HasPrefix(p.s, rep) {
		p.s = rep + p.s
	}
	if !m.split {
		if p.s == "" {
			return true
		}
		return yield(p)
	}
	return split(p, literalPattern(rep), behaviorMergedWithNext, false, yield)
}

// preTokenizerSeq runs each pre-tokenizer on every piece the previous
// yields, as it yields it.
type preTokenizerSeq []preTokenizer

func (q preTokenizerSeq) preTokenize(p piece, yield func(piece) bool) bool {
	if len(q) == 0 {
		return yield(p)
	}
	// The closures are made once per call, not once per piece.
	next := yield
	for i := len(q) - 1; i > 0; i-- {
		pt, to := q[i], next
		next = func(c piece) bool { return pt.preTokenize(c, to) }
	}
	return q[0].preTokenize(p, next)
}
