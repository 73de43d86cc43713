package grammar

// The JSON lexemes every schema grammar shares. Each is a rule of its own,
// made once per grammar, so the matcher's states for "inside a string" are
// the same wherever a string is read.

// maxIndent bounds the indent after a line break: the grammar may not let
// a model pad forever. 24 covers pretty-printing a few levels deep.
const maxIndent = 24

// Digit-count bounds keep numbers finite for the same reason, and every
// number the grammar allows within float64's range (at most 10^119).
const (
	maxIntDigits  = 20
	maxFracDigits = 20
	maxExpDigits  = 2
)

// Strings and numbers are rules of their own, shared by every place that
// reads one, so the mask's per-state cache (mask.go) knows their inner
// states once. What they call is written inline (a character, a digit):
// a call inside would make the cache's walks stop at every return.
// Whitespace is inline too, for the same reason.
type lexemes struct {
	str, num, integer, value int32
}

// ws reads the whitespace a JSON writer puts between tokens: nothing, one
// space, or a line break and an indent of spaces or tabs (llama.cpp's JSON
// grammar's rule). A model cannot fill its answer with blank lines.
func (b *builder) ws() frag {
	indent := b.rep(func() frag { return b.ranges('\t', '\t', ' ', ' ') }, 0, maxIndent)
	return b.opt(b.alt(b.lit(" "), b.seq(b.lit("\n"), indent)))
}

func (b *builder) lexemes() lexemes {
	var l lexemes
	l.str = b.newRule()
	b.define(l.str, b.seq(b.lit(`"`), b.star(b.jsonChar()), b.lit(`"`)))

	l.integer = b.newRule()
	b.define(l.integer, b.seq(b.opt(b.lit("-")), b.intDigits()))
	l.num = b.newRule()
	b.define(l.num, b.seq(b.opt(b.lit("-")), b.intDigits(),
		b.opt(b.seq(b.lit("."), b.rep(b.digit, 1, maxFracDigits))),
		b.opt(b.seq(b.ranges('e', 'e', 'E', 'E'), b.opt(b.ranges('+', '+', '-', '-')), b.rep(b.digit, 1, maxExpDigits)))))

	// Any JSON value (json_object mode, and {} or true schemas).
	l.value = b.newRule()
	obj, arr := b.newRule(), b.newRule()
	member := func() frag {
		return b.seq(b.call(l.str), b.ws(), b.lit(":"), b.ws(), b.call(l.value))
	}
	b.define(obj, b.seq(b.lit("{"), b.ws(), b.opt(b.seq(member(),
		b.star(b.seq(b.ws(), b.lit(","), b.ws(), member())), b.ws())), b.lit("}")))
	b.define(arr, b.seq(b.lit("["), b.ws(), b.opt(b.seq(b.call(l.value),
		b.star(b.seq(b.ws(), b.lit(","), b.ws(), b.call(l.value))), b.ws())), b.lit("]")))
	b.define(l.value, b.alt(b.call(obj), b.call(arr), b.call(l.str), b.call(l.num),
		b.lit("true"), b.lit("false"), b.lit("null")))
	return l
}

func (b *builder) digit() frag { return b.ranges('0', '9') }

// intDigits reads 0 or a number without leading zeros.
func (b *builder) intDigits() frag {
	return b.alt(b.lit("0"), b.seq(b.ranges('1', '9'), b.rep(b.digit, 0, maxIntDigits-1)))
}

// jsonChar reads one character of a JSON string's content: an escape, or
// one valid UTF-8 encoded character other than '"', '\' and controls.
func (b *builder) jsonChar() frag {
	hex := func() frag { return b.ranges('0', '9', 'a', 'f', 'A', 'F') }
	return b.alt(
		b.ranges(0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f),
		b.seq(b.lit(`\`), b.alt(b.ranges('"', '"', '\\', '\\', '/', '/', 'b', 'b', 'f', 'f', 'n', 'n', 'r', 'r', 't', 't'),
			b.seq(b.lit("u"), hex(), hex(), hex(), hex()))),
		b.utf8Multi(),
	)
}

// utf8Multi reads one well-formed multi-byte UTF-8 sequence (RFC 3629:
// no overlongs, no surrogates, nothing above U+10FFFF).
func (b *builder) utf8Multi() frag {
	cont := func() frag { return b.ranges(0x80, 0xbf) }
	return b.alt(
		b.seq(b.ranges(0xc2, 0xdf), cont()),
		b.seq(b.ranges(0xe0, 0xe0), b.ranges(0xa0, 0xbf), cont()),
		b.seq(b.ranges(0xe1, 0xec, 0xee, 0xef), cont(), cont()),
		b.seq(b.ranges(0xed, 0xed), b.ranges(0x80, 0x9f), cont()),
		b.seq(b.ranges(0xf0, 0xf0), b.ranges(0x90, 0xbf), cont(), cont()),
		b.seq(b.ranges(0xf1, 0xf3), cont(), cont(), cont()),
		b.seq(b.ranges(0xf4, 0xf4), b.ranges(0x80, 0x8f), cont(), cont()),
	)
}
