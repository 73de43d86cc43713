package grammar

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// formats are the string formats the grammar writes as patterns.
var formats = map[string]string{
	"date":      `^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$`,
	"time":      `^([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$`,
	"date-time": `^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$`,
	"uuid":      `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`,
	"email":     `^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}$`,
	"ipv4":      `^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$`,
}

func formatNames() []string {
	var names []string
	for k := range formats {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// pattern reads a JSON string whose content matches the regular
// expression src (RE2 syntax, which covers the ECMA patterns schemas
// use). As JSON Schema says, an unanchored pattern matches anywhere in
// the string: text may come before and after the match.
func (c *compiler) pattern(src, path, keyword string) frag {
	b := c.b
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return c.fail(path, keyword, "%v", err)
	}
	re = re.Simplify()
	startAnchored, endAnchored := false, false
	if re.Op == syntax.OpConcat && len(re.Sub) > 0 {
		if op := re.Sub[0].Op; op == syntax.OpBeginText || op == syntax.OpBeginLine {
			startAnchored, re.Sub = true, re.Sub[1:]
		}
		if n := len(re.Sub); n > 0 {
			if op := re.Sub[n-1].Op; op == syntax.OpEndText || op == syntax.OpEndLine {
				endAnchored, re.Sub = true, re.Sub[:n-1]
			}
		}
	}
	body := c.regex(re, path, keyword)
	parts := []frag{b.lit(`"`)}
	if !startAnchored {
		parts = append(parts, b.star(b.jsonChar()))
	}
	parts = append(parts, body)
	if !endAnchored {
		parts = append(parts, b.star(b.jsonChar()))
	}
	parts = append(parts, b.lit(`"`))
	return b.seq(parts...)
}

func (c *compiler) regex(re *syntax.Regexp, path, keyword string) frag {
	b := c.b
	if c.err != nil {
		return b.empty()
	}
	switch re.Op {
	case syntax.OpEmptyMatch:
		return b.empty()
	case syntax.OpLiteral:
		parts := make([]frag, len(re.Rune))
		for i, r := range re.Rune {
			ranges := []rune{r, r}
			if re.Flags&syntax.FoldCase != 0 {
				ranges = foldRanges(r)
			}
			parts[i] = c.runeClass(ranges)
		}
		return b.seq(parts...)
	case syntax.OpCharClass:
		return c.runeClass(re.Rune)
	case syntax.OpAnyCharNotNL:
		return c.runeClass([]rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune})
	case syntax.OpAnyChar:
		return c.runeClass([]rune{0, unicode.MaxRune})
	case syntax.OpCapture:
		return c.regex(re.Sub[0], path, keyword)
	case syntax.OpStar:
		return b.star(c.regex(re.Sub[0], path, keyword))
	case syntax.OpPlus:
		return b.seq(c.regex(re.Sub[0], path, keyword), b.star(c.regex(re.Sub[0], path, keyword)))
	case syntax.OpQuest:
		return b.opt(c.regex(re.Sub[0], path, keyword))
	case syntax.OpRepeat:
		if re.Min > maxBoundedCount || re.Max > maxBoundedCount {
			return c.fail(path, keyword, "repetition {%d,%d} is above %d", re.Min, re.Max, maxBoundedCount)
		}
		return b.rep(func() frag { return c.regex(re.Sub[0], path, keyword) }, re.Min, re.Max)
	case syntax.OpConcat:
		parts := make([]frag, len(re.Sub))
		for i, sub := range re.Sub {
			parts[i] = c.regex(sub, path, keyword)
		}
		return b.seq(parts...)
	case syntax.OpAlternate:
		parts := make([]frag, len(re.Sub))
		for i, sub := range re.Sub {
			parts[i] = c.regex(sub, path, keyword)
		}
		return b.alt(parts...)
	}
	return c.fail(path, keyword, "%s is not supported inside a pattern", opName(re.Op))
}

func opName(op syntax.Op) string {
	switch op {
	case syntax.OpBeginLine, syntax.OpBeginText:
		return "a start anchor (^) not at the start"
	case syntax.OpEndLine, syntax.OpEndText:
		return "an end anchor ($) not at the end"
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return `a word boundary (\b)`
	}
	return fmt.Sprintf("regexp op %d", op)
}

// foldRanges is r and its case variants, as rune ranges.
func foldRanges(r rune) []rune {
	out := []rune{r, r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		out = append(out, f, f)
	}
	return out
}

// runeClass reads one character from the rune ranges (pairs lo, hi), as
// it is written inside a JSON string: '"', '\' and control characters as
// their escapes, every other character as UTF-8 (surrogates excluded).
func (c *compiler) runeClass(ranges []rune) frag {
	b := c.b
	var alts []frag
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		// The characters JSON escapes, one by one.
		for r := lo; r <= hi && r < 0x20; r++ {
			alts = append(alts, b.lit(jsonEscape(r)))
		}
		for _, r := range []rune{'"', '\\'} {
			if lo <= r && r <= hi {
				alts = append(alts, b.lit(jsonEscape(r)))
			}
		}
		lo = max(lo, 0x20)
		for _, span := range splitAround(lo, hi, '"', '\\', 0xd800, 0xdfff) {
			utf8Sequences(span[0], span[1], func(seq [][2]byte) {
				parts := make([]frag, len(seq))
				for j, p := range seq {
					parts[j] = b.ranges(p[0], p[1])
				}
				alts = append(alts, b.seq(parts...))
			})
		}
	}
	if len(alts) == 0 {
		return c.fail("#", "pattern", "a character class that matches nothing")
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return b.alt(alts...)
}

func jsonEscape(r rune) string {
	switch r {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\n':
		return `\n`
	case '\t':
		return `\t`
	case '\r':
		return `\r`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// splitAround cuts [lo, hi] around the single runes a, b and the range
// [sLo, sHi], returning what is left as ranges.
func splitAround(lo, hi, a, b, sLo, sHi rune) [][2]rune {
	out := [][2]rune{{lo, hi}}
	cut := func(x, y rune) {
		var next [][2]rune
		for _, s := range out {
			if y < s[0] || x > s[1] {
				next = append(next, s)
				continue
			}
			if s[0] < x {
				next = append(next, [2]rune{s[0], x - 1})
			}
			if y < s[1] {
				next = append(next, [2]rune{y + 1, s[1]})
			}
		}
		out = next
	}
	cut(a, a)
	cut(b, b)
	cut(sLo, sHi)
	return out
}

// utf8Sequences calls emit with byte-range sequences whose union encodes
// exactly the runes [lo, hi] (no surrogates in the range): the usual
// split at encoding-length and continuation-byte boundaries.
func utf8Sequences(lo, hi rune, emit func([][2]byte)) {
	if lo > hi {
		return
	}
	for _, edge := range []rune{0x7f, 0x7ff, 0xffff} {
		if lo <= edge && edge < hi {
			utf8Sequences(lo, edge, emit)
			utf8Sequences(edge+1, hi, emit)
			return
		}
	}
	n := utf8.RuneLen(lo)
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				utf8Sequences(lo, lo|m, emit)
				utf8Sequences((lo|m)+1, hi, emit)
				return
			}
			if hi&m != m {
				utf8Sequences(lo, (hi&^m)-1, emit)
				utf8Sequences(hi&^m, hi, emit)
				return
			}
		}
	}
	a, z := make([]byte, 4), make([]byte, 4)
	utf8.EncodeRune(a, lo)
	utf8.EncodeRune(z, hi)
	seq := make([][2]byte, n)
	for i := range n {
		seq[i] = [2]byte{a[i], z[i]}
	}
	emit(seq)
}
