package tokenizer

import (
	"errors"
	"fmt"
	"strconv"
	"unicode"
)

// errUnsupportedRegex marks syntax our matcher leaves to the regexp2 fallback.
var errUnsupportedRegex = errors.New("unsupported regex syntax")

// classItem is one member of a character class.
type classItem struct {
	kind   uint8 // itemRange, itemCats, itemSpace
	neg    bool  // \P{…}, \S, \D
	lo, hi rune
	mask   uint32 // general-category mask for itemCats
}

const (
	itemRange = iota
	itemCats
	itemSpace
)

// charClass is a set of characters: a bracket class, an escape such as \s or
// \p{L}, or one literal character.
type charClass struct {
	items  []classItem
	negate bool
	fold   bool      // case-insensitive: also match other cases of r
	ascii  [2]uint64 // has(r) for r < 128, precomputed
	// small is set when the class is a few ASCII characters, not negated:
	// above ASCII it then holds only the runes in wide (their other cases).
	small bool
	wide  []rune
}

func (c *charClass) has(t *gcTable, r rune) bool {
	if r >= 0 && r < 128 {
		return c.ascii[r>>6]>>(r&63)&1 != 0
	}
	if c.small {
		for _, w := range c.wide {
			if r == w {
				return true
			}
		}
		return false
	}
	return c.slow(t, r)
}

func (c *charClass) slow(t *gcTable, r rune) bool {
	in := c.raw(t, r)
	if !in && c.fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if c.raw(t, f) {
				in = true
				break
			}
		}
	}
	return in != c.negate
}

func (c *charClass) raw(t *gcTable, r rune) bool {
	for _, it := range c.items {
		var in bool
		switch it.kind {
		case itemRange:
			in = r >= it.lo && r <= it.hi
		case itemCats:
			in = it.mask>>t.category(r)&1 != 0
		case itemSpace:
			in = t.isSpace(r)
		}
		if in != it.neg {
			return true
		}
	}
	return false
}

// finish precomputes the ASCII membership table, and the runes above ASCII
// of a class of a few ASCII characters.
func (c *charClass) finish(t *gcTable) *charClass {
	for r := rune(0); r < 128; r++ {
		if c.slow(t, r) {
			c.ascii[r>>6] |= 1 << (r & 63)
		}
	}
	c.small = !c.negate
	for _, it := range c.items {
		if it.kind != itemRange || it.neg || it.hi >= 128 {
			c.small = false
		}
	}
	if c.small && c.fold {
		for r := rune(0); r < 128; r++ {
			if c.ascii[r>>6]>>(r&63)&1 == 0 {
				continue
			}
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				if f >= 128 {
					c.wide = append(c.wide, f)
				}
			}
		}
	}
	return c
}

// categoryMasks maps the \p{…} names we support to general-category masks.
var categoryMasks = func() map[string]uint32 {
	m := map[string]uint32{"L": maskL, "M": maskM, "N": maskN, "P": maskP, "S": maskS, "Z": maskZ, "C": maskC}
	for i, name := range gcNames {
		m[name] = 1 << i
	}
	return m
}()

// reParser parses the pattern subset described on miniRegex.
type reParser struct {
	src  []rune
	pos  int
	fold bool
	cats *gcTable
}

func parseRegex(expr string) (*miniRegex, error) {
	p := &reParser{src: []rune(expr), cats: categories()}
	alts, err := p.alternation()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.src) {
		return nil, fmt.Errorf("%w: unbalanced ')' at %d", errUnsupportedRegex, p.pos)
	}
	// (A|B)|C matches like A|B|C: splice whole-alternative groups in.
	var flat [][]*reNode
	for _, seq := range alts {
		if len(seq) == 1 && seq[0].kind == reGroup && seq[0].min == 1 && seq[0].max == 1 {
			flat = append(flat, seq[0].alts...)
			continue
		}
		flat = append(flat, seq)
	}
	return &miniRegex{alts: flat, cats: p.cats}, nil
}

func (p *reParser) more() bool { return p.pos < len(p.src) }
func (p *reParser) peek() rune { return p.src[p.pos] }

func (p *reParser) alternation() ([][]*reNode, error) {
	var alts [][]*reNode
	for {
		seq, err := p.sequence()
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		if p.more() && p.peek() == '|' {
			p.pos++
			continue
		}
		return alts, nil
	}
}

func (p *reParser) sequence() ([]*reNode, error) {
	var seq []*reNode
	for p.more() && p.peek() != '|' && p.peek() != ')' {
		n, err := p.atom()
		if err != nil {
			return nil, err
		}
		if err := p.quantifier(n); err != nil {
			return nil, err
		}
		seq = append(seq, n)
	}
	return seq, nil
}

func (p *reParser) atom() (*reNode, error) {
	r := p.peek()
	switch r {
	case '(':
		return p.group()
	case '[':
		p.pos++
		cls, err := p.class()
		if err != nil {
			return nil, err
		}
		return charNode(cls.finish(p.cats)), nil
	case '.':
		p.pos++
		cls := &charClass{items: []classItem{{kind: itemRange, lo: '\n', hi: '\n'}}, negate: true}
		return charNode(cls.finish(p.cats)), nil
	case '\\':
		item, err := p.escape()
		if err != nil {
			return nil, err
		}
		return charNode((&charClass{items: []classItem{item}, fold: p.fold}).finish(p.cats)), nil
	case '^', '$', '*', '+', '?':
		return nil, fmt.Errorf("%w: %q at %d", errUnsupportedRegex, r, p.pos)
	}
	p.pos++
	return charNode((&charClass{items: []classItem{{kind: itemRange, lo: r, hi: r}}, fold: p.fold}).finish(p.cats)), nil
}

func charNode(cls *charClass) *reNode { return &reNode{kind: reChar, cls: cls, min: 1, max: 1} }

func (p *reParser) group() (*reNode, error) {
	p.pos++ // (
	n := &reNode{kind: reGroup, min: 1, max: 1}
	saved := p.fold
	defer func() { p.fold = saved }()
	if p.more() && p.peek() == '?' {
		p.pos++
		switch {
		case p.hasPrefix(":"):
			p.pos++
		case p.hasPrefix("i:"):
			p.pos += 2
			p.fold = true
		case p.hasPrefix("-i:"):
			p.pos += 3
			p.fold = false
		case p.hasPrefix("="), p.hasPrefix("!"):
			n.kind, n.neg = reLook, p.peek() == '!'
			p.pos++
		default:
			return nil, fmt.Errorf("%w: group flags at %d", errUnsupportedRegex, p.pos)
		}
	}
	alts, err := p.alternation()
	if err != nil {
		return nil, err
	}
	if !p.more() || p.peek() != ')' {
		return nil, fmt.Errorf("%w: missing ')'", errUnsupportedRegex)
	}
	p.pos++
	n.alts = alts
	return n, nil
}

func (p *reParser) hasPrefix(s string) bool {
	rs := []rune(s)
	if p.pos+len(rs) > len(p.src) {
		return false
	}
	for i, r := range rs {
		if p.src[p.pos+i] != r {
			return false
		}
	}
	return true
}

// quantifier parses an optional ?, *, +, {n}, {n,} or {n,m} (then ? for lazy).
func (p *reParser) quantifier(n *reNode) error {
	if !p.more() {
		return nil
	}
	min, max := -1, -1
	switch p.peek() {
	case '?':
		min, max = 0, 1
		p.pos++
	case '*':
		min, max = 0, -1
		p.pos++
	case '+':
		min, max = 1, -1
		p.pos++
	case '{':
		end := p.pos + 1
		for end < len(p.src) && p.src[end] != '}' {
			end++
		}
		if end == len(p.src) {
			return nil // a literal '{', left for the next atom
		}
		var err error
		if min, max, err = parseBraces(string(p.src[p.pos+1 : end])); err != nil {
			return nil
		}
		p.pos = end + 1
	default:
		return nil
	}
	if n.kind == reLook {
		return fmt.Errorf("%w: quantified lookahead", errUnsupportedRegex)
	}
	n.min, n.max = min, max
	if p.more() && p.peek() == '?' {
		n.lazy = true
		p.pos++
	}
	if p.more() && (p.peek() == '+' || p.peek() == '*' || p.peek() == '?' || p.peek() == '{') {
		return fmt.Errorf("%w: stacked quantifiers at %d", errUnsupportedRegex, p.pos)
	}
	return nil
}

// parseBraces parses the inside of {n}, {n,} or {n,m}.
func parseBraces(s string) (min, max int, err error) {
	lo, hi, comma := s, s, false
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			lo, hi, comma = s[:i], s[i+1:], true
			break
		}
	}
	if min, err = strconv.Atoi(lo); err != nil || min < 0 {
		return 0, 0, errUnsupportedRegex
	}
	switch {
	case !comma:
		max = min
	case hi == "":
		max = -1
	default:
		if max, err = strconv.Atoi(hi); err != nil || max < min {
			return 0, 0, errUnsupportedRegex
		}
	}
	return min, max, nil
}

// class parses a bracket class after its '['.
func (p *reParser) class() (*charClass, error) {
	cls := &charClass{fold: p.fold}
	if p.more() && p.peek() == '^' {
		cls.negate = true
		p.pos++
	}
	first := true
	for {
		if !p.more() {
			return nil, fmt.Errorf("%w: missing ']'", errUnsupportedRegex)
		}
		r := p.peek()
		if r == ']' && !first {
			p.pos++
			return cls, nil
		}
		first = false
		var item classItem
		switch r {
		case '[', ']':
			return nil, fmt.Errorf("%w: nested class at %d", errUnsupportedRegex, p.pos)
		case '&':
			if p.hasPrefix("&&") {
				return nil, fmt.Errorf("%w: class intersection", errUnsupportedRegex)
			}
			p.pos++
			item = classItem{kind: itemRange, lo: r, hi: r}
		case '\\':
			var err error
			if item, err = p.escape(); err != nil {
				return nil, err
			}
		default:
			p.pos++
			item = classItem{kind: itemRange, lo: r, hi: r}
		}
		// A range a-b, unless '-' ends the class.
		if item.kind == itemRange && item.lo == item.hi && p.pos+1 < len(p.src) && p.peek() == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			var hi classItem
			if p.peek() == '\\' {
				var err error
				if hi, err = p.escape(); err != nil {
					return nil, err
				}
			} else if p.peek() == '[' {
				return nil, fmt.Errorf("%w: nested class at %d", errUnsupportedRegex, p.pos)
			} else {
				hi = classItem{kind: itemRange, lo: p.peek(), hi: p.peek()}
				p.pos++
			}
			if hi.kind != itemRange || hi.lo != hi.hi || hi.lo < item.lo {
				return nil, fmt.Errorf("%w: bad range at %d", errUnsupportedRegex, p.pos)
			}
			item.hi = hi.lo
		}
		cls.items = append(cls.items, item)
	}
}

// escape parses a backslash escape.
func (p *reParser) escape() (classItem, error) {
	p.pos++ // backslash
	if !p.more() {
		return classItem{}, fmt.Errorf("%w: trailing backslash", errUnsupportedRegex)
	}
	r := p.peek()
	p.pos++
	lit := func(c rune) (classItem, error) { return classItem{kind: itemRange, lo: c, hi: c}, nil }
	switch r {
	case 's', 'S':
		return classItem{kind: itemSpace, neg: r == 'S'}, nil
	case 'd', 'D':
		return classItem{kind: itemCats, mask: 1 << gcNd, neg: r == 'D'}, nil
	case 'p', 'P':
		name := ""
		if p.more() && p.peek() == '{' {
			end := p.pos + 1
			for end < len(p.src) && p.src[end] != '}' {
				end++
			}
			if end == len(p.src) {
				return classItem{}, fmt.Errorf("%w: missing '}'", errUnsupportedRegex)
			}
			name = string(p.src[p.pos+1 : end])
			p.pos = end + 1
		} else if p.more() {
			name = string(p.peek())
			p.pos++
		}
		mask, ok := categoryMasks[name]
		if !ok {
			return classItem{}, fmt.Errorf("%w: property %q", errUnsupportedRegex, name)
		}
		return classItem{kind: itemCats, mask: mask, neg: r == 'P'}, nil
	case 'r':
		return lit('\r')
	case 'n':
		return lit('\n')
	case 't':
		return lit('\t')
	case 'f':
		return lit('\f')
	case 'v':
		return lit('\v')
	case 'a':
		return lit(7)
	case 'e':
		return lit(0x1b)
	case 'x', 'u':
		return p.hexEscape(r)
	}
	if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
		return classItem{}, fmt.Errorf("%w: escape \\%c", errUnsupportedRegex, r)
	}
	return lit(r)
}

// hexEscape parses the digits of \xHH, \x{H…} or \uHHHH.
func (p *reParser) hexEscape(kind rune) (classItem, error) {
	var digits string
	switch {
	case kind == 'x' && p.more() && p.peek() == '{':
		end := p.pos + 1
		for end < len(p.src) && p.src[end] != '}' {
			end++
		}
		if end == len(p.src) {
			return classItem{}, fmt.Errorf("%w: missing '}'", errUnsupportedRegex)
		}
		digits = string(p.src[p.pos+1 : end])
		p.pos = end + 1
	default:
		n := 2
		if kind == 'u' {
			n = 4
		}
		if p.pos+n > len(p.src) {
			return classItem{}, fmt.Errorf("%w: short \\%c escape", errUnsupportedRegex, kind)
		}
		digits = string(p.src[p.pos : p.pos+n])
		p.pos += n
	}
	v, err := strconv.ParseUint(digits, 16, 32)
	if err != nil || v > unicode.MaxRune {
		return classItem{}, fmt.Errorf("%w: bad hex escape %q", errUnsupportedRegex, digits)
	}
	return classItem{kind: itemRange, lo: rune(v), hi: rune(v)}, nil
}
