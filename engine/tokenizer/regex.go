package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// span is a byte range [start, end) of a string.
type span struct{ start, end int }

// pattern finds the non-overlapping matches of a Split or Replace pattern.
type pattern interface {
	// next returns the match in s that follows those m has walked past,
	// and m moved past it; matches come left to right, the way the
	// reference's Oniguruma find_iter reports them. A caller walks a long
	// text one match at a time and can stop anywhere. m goes by value so
	// that a walk allocates nothing.
	next(s string, m matcher) (span, matcher, bool)
}

// matcher is where a walk through the matches of one string stands. The
// zero value starts at the beginning.
type matcher struct {
	pos     int  // where the search resumes
	matched bool // a match has been reported
	done    bool // no match is left
	lastEnd int  // the end of the last match reported
	// fallbackRegex: the last match, and a rune index with its byte offset
	re           *regexp2.Match
	runes, bytes int
}

// findAll appends every match of p in s to dst.
func findAll(p pattern, dst []span, s string) []span {
	var m matcher
	for {
		var sp span
		var ok bool
		if sp, m, ok = p.next(s, m); !ok {
			return dst
		}
		dst = append(dst, sp)
	}
}

// compilePattern compiles a tokenizer.json regex. The subset of Oniguruma
// syntax that pre-tokenizer patterns use runs on our own backtracking matcher
// (with the reference's Unicode tables); anything else falls back to regexp2.
func compilePattern(expr string) (pattern, error) {
	if re, err := parseRegex(expr); err == nil {
		return re, nil
	}
	re, err := regexp2.Compile(expr, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", expr, err)
	}
	return &fallbackRegex{re: re}, nil
}

// literalPattern matches a fixed string (a "String" pattern in tokenizer.json).
type literalPattern string

func (p literalPattern) next(s string, m matcher) (span, matcher, bool) {
	if p == "" || m.done || m.pos+len(p) > len(s) {
		return span{}, m, false
	}
	j := strings.Index(s[m.pos:], string(p))
	if j < 0 {
		m.done = true
		return span{}, m, false
	}
	j += m.pos
	m.pos = j + len(p)
	return span{j, m.pos}, m, true
}

// fallbackRegex runs a pattern our matcher does not support through regexp2
// (.NET syntax, Go's Unicode tables).
type fallbackRegex struct{ re *regexp2.Regexp }

func (f *fallbackRegex) next(s string, m matcher) (span, matcher, bool) {
	if m.done {
		return span{}, m, false
	}
	var rm *regexp2.Match
	var err error
	if m.re == nil {
		rm, err = f.re.FindStringMatch(s)
	} else {
		rm, err = f.re.FindNextMatch(m.re)
	}
	if err != nil || rm == nil {
		m.done, m.re = true, nil
		return span{}, m, false
	}
	m.re = rm
	start := m.byteAt(s, rm.Index)
	return span{start, m.byteAt(s, rm.Index+rm.Length)}, m, true
}

// byteAt returns the byte offset of rune index r of s. regexp2 reports
// positions in runes, and a walk asks for them in increasing order, so the
// offset is counted on from the last one asked.
func (m *matcher) byteAt(s string, r int) int {
	for m.runes < r && m.bytes < len(s) {
		_, size := utf8.DecodeRuneInString(s[m.bytes:])
		m.bytes += size
		m.runes++
	}
	return m.bytes
}

// miniRegex is a backtracking matcher for the regex subset of pre-tokenizer
// patterns: alternation, groups (?:…) (?i:…), lookahead (?=…) (?!…),
// greedy and lazy quantifiers, and classes of literals, ranges, \s \S \d \D
// and \p{…}/\P{…} general categories.
type miniRegex struct {
	alts [][]*reNode // top-level alternatives, tried in order
	cats *gcTable
}

type reKind uint8

const (
	reChar  reKind = iota // one character of cls, repeated min..max times
	reGroup               // one of alts, repeated min..max times
	reLook                // zero-width lookahead of alts (negated when neg)
)

// reNode is one item of a sequence.
type reNode struct {
	kind     reKind
	cls      *charClass
	alts     [][]*reNode
	min, max int // max < 0 is unbounded
	lazy     bool
	neg      bool
}

// reCont is what remains to match after the current sequence ends: the rest
// of an enclosing sequence, or another round of a repeated group.
type reCont struct {
	seq   []*reNode
	i     int
	rep   *reNode // when set: continue repetition rep after count rounds
	count int
	start int // where the latest round began (to stop empty rounds)
	next  *reCont
}

func (m *miniRegex) next(s string, st matcher) (span, matcher, bool) {
	for !st.done && st.pos <= len(s) {
		start, end := -1, -1
		for p := st.pos; ; {
			if e := m.matchAt(s, p); e >= 0 {
				start, end = p, e
				break
			}
			if p >= len(s) {
				break
			}
			_, size := utf8.DecodeRuneInString(s[p:])
			p += size
		}
		if start < 0 {
			break
		}
		if start == end && st.matched && st.lastEnd == end {
			// Never accept an empty match right after the previous match.
			if st.pos >= len(s) {
				break
			}
			_, size := utf8.DecodeRuneInString(s[st.pos:])
			st.pos += size
			continue
		}
		st.pos, st.lastEnd, st.matched = end, end, true
		return span{start, end}, st, true
	}
	st.done = true
	return span{}, st, false
}

// matchAt returns the end of the leftmost-first match starting at pos, or -1.
func (m *miniRegex) matchAt(s string, pos int) int {
	for _, alt := range m.alts {
		if e := m.run(s, alt, 0, pos, nil); e >= 0 {
			return e
		}
	}
	return -1
}

// run matches seq[i:] at pos and then k; it returns the match end or -1.
func (m *miniRegex) run(s string, seq []*reNode, i, pos int, k *reCont) int {
	for ; i < len(seq); i++ {
		n := seq[i]
		switch n.kind {
		case reChar:
			if n.min == 1 && n.max == 1 {
				r, size := utf8.DecodeRuneInString(s[pos:])
				if size == 0 || !n.cls.has(m.cats, r) {
					return -1
				}
				pos += size
				continue
			}
			return m.repeatChar(s, seq, i, pos, k)
		case reLook:
			found := false
			for _, alt := range n.alts {
				if m.run(s, alt, 0, pos, nil) >= 0 {
					found = true
					break
				}
			}
			if found == n.neg {
				return -1
			}
		case reGroup:
			return m.repeatGroup(s, n, 0, pos, -1, &reCont{seq: seq, i: i + 1, next: k})
		}
	}
	if k == nil {
		return pos
	}
	return m.resume(s, pos, k)
}

func (m *miniRegex) resume(s string, pos int, k *reCont) int {
	if k == nil {
		return pos
	}
	if k.rep != nil {
		return m.repeatGroup(s, k.rep, k.count, pos, k.start, k.next)
	}
	return m.run(s, k.seq, k.i, pos, k.next)
}

// repeatChar matches seq[i] (a repeated class) and then the rest.
func (m *miniRegex) repeatChar(s string, seq []*reNode, i, pos int, k *reCont) int {
	n := seq[i]
	if n.lazy {
		count := 0
		for {
			if count >= n.min {
				if e := m.run(s, seq, i+1, pos, k); e >= 0 {
					return e
				}
			}
			if n.max >= 0 && count >= n.max {
				return -1
			}
			r, size := utf8.DecodeRuneInString(s[pos:])
			if size == 0 || !n.cls.has(m.cats, r) {
				return -1
			}
			pos += size
			count++
		}
	}
	end, count := pos, 0
	for n.max < 0 || count < n.max {
		r, size := utf8.DecodeRuneInString(s[end:])
		if size == 0 || !n.cls.has(m.cats, r) {
			break
		}
		end += size
		count++
	}
	if count < n.min {
		return -1
	}
	if i+1 == len(seq) && k == nil {
		return end
	}
	for {
		if e := m.run(s, seq, i+1, end, k); e >= 0 {
			return e
		}
		if count == n.min {
			return -1
		}
		_, size := utf8.DecodeLastRuneInString(s[:end])
		end -= size
		count--
	}
}

// repeatGroup matches further rounds of group n (count done so far) and then k.
func (m *miniRegex) repeatGroup(s string, n *reNode, count, pos, last int, k *reCont) int {
	more := (n.max < 0 || count < n.max) && pos != last
	if n.lazy && count >= n.min {
		if e := m.resume(s, pos, k); e >= 0 {
			return e
		}
	}
	if more {
		next := &reCont{rep: n, count: count + 1, start: pos, next: k}
		for _, alt := range n.alts {
			if e := m.run(s, alt, 0, pos, next); e >= 0 {
				return e
			}
		}
	}
	if !n.lazy && count >= n.min {
		return m.resume(s, pos, k)
	}
	return -1
}
