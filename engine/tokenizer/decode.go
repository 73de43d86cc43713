package tokenizer

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// decoder turns token strings back into text, one step of the reference's
// decode_chain: each step maps the list of strings to a new list.
type decoder interface {
	decodeChain(tokens []string) []string
}

// byteLevelDec maps byte-level characters back to bytes; a token with any
// other character keeps its own UTF-8 bytes. The result is one string.
type byteLevelDec struct{}

func (byteLevelDec) decodeChain(tokens []string) []string {
	var b []byte
	for _, tok := range tokens {
		var ok bool
		if b, ok = unByteLevel(b, tok); !ok {
			b = append(b, tok...)
		}
	}
	return []string{lossyUTF8(b)}
}

type replaceDec struct {
	pat     pattern
	content string
}

func (r replaceDec) decodeChain(tokens []string) []string {
	for i, tok := range tokens {
		tokens[i] = replaceAll(r.pat, tok, r.content)
	}
	return tokens
}

// byteFallbackDec turns runs of <0xNN> tokens into text; a run that is not
// valid UTF-8 becomes one U+FFFD per byte.
type byteFallbackDec struct{}

func (byteFallbackDec) decodeChain(tokens []string) []string {
	out := tokens[:0:0]
	var run []byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		if utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			for range run {
				out = append(out, "\uFFFD")
			}
		}
		run = run[:0]
	}
	for _, tok := range tokens {
		if b, ok := fallbackByte(tok); ok {
			run = append(run, b)
			continue
		}
		flush()
		out = append(out, tok)
	}
	flush()
	return out
}

// fallbackByte parses a <0xNN> token as the reference does (u8::from_str_radix
// on the two characters after "<0x", which also accepts "+N").
func fallbackByte(tok string) (byte, bool) {
	if len(tok) != 6 || !strings.HasPrefix(tok, "<0x") || tok[5] != '>' {
		return 0, false
	}
	digits := tok[3:5]
	if digits[0] == '+' {
		digits = digits[1:]
	}
	v, err := strconv.ParseUint(digits, 16, 8)
	if err != nil {
		return 0, false
	}
	return byte(v), true
}

type fuseDec struct{}

func (fuseDec) decodeChain(tokens []string) []string {
	return []string{strings.Join(tokens, "")}
}

// stripDec removes up to start leading and stop trailing content characters
// from each token.
type stripDec struct {
	content     rune
	start, stop int
}

func (d stripDec) decodeChain(tokens []string) []string {
	for i, tok := range tokens {
		chars := []rune(tok)
		lo := 0
		for lo < d.start && lo < len(chars) && chars[lo] == d.content {
			lo++
		}
		hi := len(chars)
		for n := 0; n < d.stop && hi > 0 && chars[hi-1] == d.content; n++ {
			hi--
		}
		if hi < lo {
			hi = lo
		}
		tokens[i] = string(chars[lo:hi])
	}
	return tokens
}

// metaspaceDec turns the replacement character back into spaces, dropping it
// from the first token unless the prepend scheme is "never".
type metaspaceDec struct {
	replacement rune
	scheme      string
}

func (d metaspaceDec) decodeChain(tokens []string) []string {
	for i, tok := range tokens {
		drop := i == 0 && d.scheme != prependNever
		tokens[i] = strings.Map(func(r rune) rune {
			switch {
			case r != d.replacement:
				return r
			case drop:
				return -1
			}
			return ' '
		}, tok)
	}
	return tokens
}

type decoderSeq []decoder

func (q decoderSeq) decodeChain(tokens []string) []string {
	for _, d := range q {
		tokens = d.decodeChain(tokens)
	}
	return tokens
}
