package tokenizer

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Parsing of the small tokenizer.json components: normalizers,
// pre-tokenizers, decoders and post-processors.

// jsonPattern is a Split/Replace pattern: {"String": …} or {"Regex": …}.
type jsonPattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

func (p *jsonPattern) compile() (pattern, error) {
	switch {
	case p == nil:
		return nil, fmt.Errorf("missing pattern")
	case p.String != nil:
		return literalPattern(*p.String), nil
	case p.Regex != nil:
		return compilePattern(*p.Regex)
	}
	return nil, fmt.Errorf("pattern is neither String nor Regex")
}

// component holds the fields of any component we read; each type uses some.
type component struct {
	Type string `json:"type"`

	Normalizers   []json.RawMessage `json:"normalizers"`
	PreTokenizers []json.RawMessage `json:"pretokenizers"`
	Decoders      []json.RawMessage `json:"decoders"`
	Processors    []json.RawMessage `json:"processors"`

	Pattern  *jsonPattern `json:"pattern"`
	Content  *string      `json:"content"`
	Prepend  string       `json:"prepend"`
	Behavior string       `json:"behavior"`
	Invert   bool         `json:"invert"`

	AddPrefixSpace   *bool   `json:"add_prefix_space"`
	UseRegex         *bool   `json:"use_regex"`
	IndividualDigits bool    `json:"individual_digits"`
	Replacement      string  `json:"replacement"`
	PrependScheme    *string `json:"prepend_scheme"`
	Split            *bool   `json:"split"`
	Delimiter        string  `json:"delimiter"`
	StripLeft        *bool   `json:"strip_left"`
	StripRight       *bool   `json:"strip_right"`
	Start            int     `json:"start"`
	Stop             int     `json:"stop"`

	Single        []map[string]templateItem `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int32 `json:"ids"`
	} `json:"special_tokens"`
	Sep []any `json:"sep"`
	Cls []any `json:"cls"`
}

// templateItem is {"id": "A"} for a Sequence, {"id": "<s>"} for a SpecialToken.
type templateItem struct {
	ID string `json:"id"`
}

func parseComponent(raw []byte) (*component, error) {
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

var normalizerTypes = []string{"NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Prepend", "Replace", "Strip", "StripAccents", "Sequence"}

func parseNormalizer(raw []byte) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	c, err := parseComponent(raw)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "NFC":
		return unicodeNorm{norm.NFC}, nil
	case "NFD":
		return unicodeNorm{norm.NFD}, nil
	case "NFKC":
		return unicodeNorm{norm.NFKC}, nil
	case "NFKD":
		return unicodeNorm{norm.NFKD}, nil
	case "Lowercase":
		return lowercase{}, nil
	case "Prepend":
		return prepend(c.Prepend), nil
	case "Replace":
		pat, err := c.Pattern.compile()
		if err != nil {
			return nil, fmt.Errorf("Replace: %w", err)
		}
		return replace{pat: pat, content: deref(c.Content)}, nil
	case "Strip":
		return strip{left: derefBool(c.StripLeft, true), right: derefBool(c.StripRight, true)}, nil
	case "StripAccents":
		return stripAccents{}, nil
	case "Sequence":
		seq, err := parseSequence(c.Normalizers, parseNormalizer)
		if err != nil || len(seq) == 0 {
			return nil, err
		}
		return normalizerSeq(seq), nil
	}
	return nil, unsupported("normalizer", c.Type, normalizerTypes...)
}

var preTokenizerTypes = []string{"ByteLevel", "Split", "Digits", "Metaspace", "WhitespaceSplit", "CharDelimiterSplit", "Sequence"}

func parsePreTokenizer(raw []byte) (preTokenizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	c, err := parseComponent(raw)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "ByteLevel":
		b := &byteLevelPre{addPrefixSpace: derefBool(c.AddPrefixSpace, true)}
		if derefBool(c.UseRegex, true) {
			if b.re, err = compilePattern(gpt2Pattern); err != nil {
				return nil, err
			}
		}
		return b, nil
	case "Split":
		pat, err := c.Pattern.compile()
		if err != nil {
			return nil, fmt.Errorf("Split: %w", err)
		}
		behavior, ok := splitBehaviors[c.Behavior]
		if !ok {
			return nil, fmt.Errorf("Split: unknown behavior %q", c.Behavior)
		}
		return &splitPre{pat: pat, behavior: behavior, invert: c.Invert}, nil
	case "Digits":
		return digitsPre{individual: c.IndividualDigits}, nil
	case "WhitespaceSplit":
		return whitespaceSplitPre{}, nil
	case "CharDelimiterSplit":
		r, size := utf8.DecodeRuneInString(c.Delimiter)
		if size == 0 || size != len(c.Delimiter) {
			return nil, fmt.Errorf("CharDelimiterSplit: delimiter %q is not one character", c.Delimiter)
		}
		return charDelimiterPre(r), nil
	case "Metaspace":
		rep, scheme, err := metaspaceOptions(c)
		if err != nil {
			return nil, err
		}
		return &metaspacePre{replacement: rep, scheme: scheme, split: derefBool(c.Split, true)}, nil
	case "Sequence":
		seq, err := parseSequence(c.PreTokenizers, parsePreTokenizer)
		switch {
		case err != nil || len(seq) == 0:
			return nil, err
		case len(seq) == 1:
			return seq[0], nil
		}
		return preTokenizerSeq(seq), nil
	}
	return nil, unsupported("pre-tokenizer", c.Type, preTokenizerTypes...)
}

// metaspaceOptions reads replacement and prepend_scheme (or the older
// add_prefix_space) of a Metaspace pre-tokenizer or decoder.
func metaspaceOptions(c *component) (rune, string, error) {
	rep, size := utf8.DecodeRuneInString(c.Replacement)
	if size == 0 || size != len(c.Replacement) {
		return 0, "", fmt.Errorf("Metaspace: replacement %q is not one character", c.Replacement)
	}
	scheme := prependAlways
	switch {
	case c.PrependScheme != nil:
		scheme = *c.PrependScheme
	case c.AddPrefixSpace != nil && !*c.AddPrefixSpace:
		scheme = prependNever
	}
	if scheme != prependAlways && scheme != prependFirst && scheme != prependNever {
		return 0, "", fmt.Errorf("Metaspace: unknown prepend_scheme %q", scheme)
	}
	return rep, scheme, nil
}

var decoderTypes = []string{"ByteLevel", "Replace", "ByteFallback", "Fuse", "Strip", "Metaspace", "Sequence"}

func parseDecoder(raw []byte) (decoder, error) {
	if isNull(raw) {
		return nil, nil
	}
	c, err := parseComponent(raw)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "ByteLevel":
		return byteLevelDec{}, nil
	case "Replace":
		pat, err := c.Pattern.compile()
		if err != nil {
			return nil, fmt.Errorf("Replace: %w", err)
		}
		return replaceDec{pat: pat, content: deref(c.Content)}, nil
	case "ByteFallback":
		return byteFallbackDec{}, nil
	case "Fuse":
		return fuseDec{}, nil
	case "Strip":
		r, size := utf8.DecodeRuneInString(deref(c.Content))
		if size == 0 || size != len(deref(c.Content)) {
			return nil, fmt.Errorf("Strip: content %q is not one character", deref(c.Content))
		}
		return stripDec{content: r, start: c.Start, stop: c.Stop}, nil
	case "Metaspace":
		rep, scheme, err := metaspaceOptions(c)
		if err != nil {
			return nil, err
		}
		return metaspaceDec{replacement: rep, scheme: scheme}, nil
	case "Sequence":
		seq, err := parseSequence(c.Decoders, parseDecoder)
		switch {
		case err != nil:
			return nil, err
		case len(seq) == 1:
			return seq[0], nil
		}
		return decoderSeq(seq), nil
	}
	return nil, unsupported("decoder", c.Type, decoderTypes...)
}

var postProcessorTypes = []string{"TemplateProcessing", "ByteLevel", "BertProcessing", "RobertaProcessing", "Sequence"}

// parsePostProcessor returns the single-sequence template: the parts Encode
// emits with addSpecial, exactly one of them the sequence itself.
func parsePostProcessor(raw []byte, t *Tokenizer) ([]templatePart, error) {
	parts := []templatePart{{}}
	if isNull(raw) {
		return parts, nil
	}
	return applyPostProcessor(raw, t, parts)
}

func applyPostProcessor(raw []byte, t *Tokenizer, inner []templatePart) ([]templatePart, error) {
	c, err := parseComponent(raw)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "ByteLevel":
		return inner, nil
	case "Sequence":
		for i, r := range c.Processors {
			if inner, err = applyPostProcessor(r, t, inner); err != nil {
				return nil, fmt.Errorf("Sequence[%d]: %w", i, err)
			}
		}
		return inner, nil
	case "TemplateProcessing":
		var out []templatePart
		seqs := 0
		for i, item := range c.Single {
			if seq, ok := item["Sequence"]; ok {
				if seq.ID != "A" {
					return nil, fmt.Errorf("TemplateProcessing: single[%d] is sequence %q, want \"A\"", i, seq.ID)
				}
				seqs++
				out = append(out, inner...)
				continue
			}
			sp, ok := item["SpecialToken"]
			if !ok {
				return nil, fmt.Errorf("TemplateProcessing: single[%d] is neither Sequence nor SpecialToken", i)
			}
			st, ok := c.SpecialTokens[sp.ID]
			if !ok {
				return nil, fmt.Errorf("TemplateProcessing: special token %q is not in special_tokens", sp.ID)
			}
			out = append(out, templatePart{ids: append([]int32{}, st.IDs...)})
		}
		if seqs != 1 {
			// A template without the text (or with it twice) would drop or
			// repeat the prompt; transformers' files always have it once.
			return nil, fmt.Errorf("TemplateProcessing: single has the sequence %d times, want once", seqs)
		}
		return out, nil
	case "BertProcessing", "RobertaProcessing":
		cls, err := templateToken(c.Cls)
		if err != nil {
			return nil, fmt.Errorf("%s: cls: %w", c.Type, err)
		}
		sep, err := templateToken(c.Sep)
		if err != nil {
			return nil, fmt.Errorf("%s: sep: %w", c.Type, err)
		}
		out := append([]templatePart{{ids: []int32{cls}}}, inner...)
		return append(out, templatePart{ids: []int32{sep}}), nil
	}
	return nil, unsupported("post-processor", c.Type, postProcessorTypes...)
}

// templateToken reads a ["token", id] pair of BertProcessing/RobertaProcessing.
func templateToken(pair []any) (int32, error) {
	if len(pair) != 2 {
		return 0, fmt.Errorf("want [token, id]")
	}
	id, ok := pair[1].(float64)
	if !ok {
		return 0, fmt.Errorf("want [token, id]")
	}
	return int32(id), nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefBool(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// parseSequence parses the items of a Sequence component, keeping those
// that are not no-ops (nil); an error names the item.
func parseSequence[T comparable](items []json.RawMessage, parse func([]byte) (T, error)) ([]T, error) {
	var out []T
	var none T
	for i, raw := range items {
		v, err := parse(raw)
		if err != nil {
			return nil, fmt.Errorf("Sequence[%d]: %w", i, err)
		}
		if v != none {
			out = append(out, v)
		}
	}
	return out, nil
}
