package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// addedToken is one entry of tokenizer.json's added_tokens.
type addedToken struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// trie finds added tokens leftmost-longest in one left-to-right pass, like
// the reference's Aho–Corasick automaton (MatchKind::LeftmostLongest). At
// each position it walks at most as many bytes as the longest token.
type trie struct {
	root  [256]int32       // child of the root per byte, 0 = none
	edges map[uint64]int32 // node<<8 | byte → child, below the root
	term  []int32          // node → index into tokens, -1 = none
	toks  []*addedToken

	maxLen int  // the longest pattern, in bytes
	strips bool // some token has lstrip or rstrip (it takes in whitespace)
}

func newTrie() *trie {
	return &trie{edges: map[uint64]int32{}, term: []int32{-1}}
}

// add inserts pattern for tok; an earlier identical pattern wins.
func (t *trie) add(pattern string, tok *addedToken) {
	if pattern == "" {
		return
	}
	node := int32(0)
	for i := 0; i < len(pattern); i++ {
		b := pattern[i]
		var next int32
		if node == 0 {
			next = t.root[b]
		} else {
			next = t.edges[uint64(node)<<8|uint64(b)]
		}
		if next == 0 {
			next = int32(len(t.term))
			t.term = append(t.term, -1)
			if node == 0 {
				t.root[b] = next
			} else {
				t.edges[uint64(node)<<8|uint64(b)] = next
			}
		}
		node = next
	}
	if t.term[node] < 0 {
		t.term[node] = int32(len(t.toks))
		t.toks = append(t.toks, tok)
		t.maxLen = max(t.maxLen, len(pattern))
		t.strips = t.strips || tok.LStrip || tok.RStrip
	}
}

// longest returns the longest token that starts at s[i:], or nil.
func (t *trie) longest(s string, i int) (*addedToken, int) {
	node := t.root[s[i]]
	var best *addedToken
	end := 0
	for j := i + 1; node != 0; j++ {
		if k := t.term[node]; k >= 0 {
			best, end = t.toks[k], j
		}
		if j == len(s) {
			break
		}
		node = t.edges[uint64(node)<<8|uint64(s[j])]
	}
	return best, end
}

// segment is a piece of the input between added tokens (tok == nil), or an
// added token.
type segment struct {
	text  string
	tok   *addedToken
	first bool // text starts at offset 0 of the input
}

// split calls yield with the pieces of s, cut at the tokens t finds, in
// order: the reference's AddedVocabulary::find_matches, with single_word,
// lstrip and rstrip applied to each match. It finds each token only when
// the text before it has been taken, stops as soon as yield returns false,
// and reports whether it went to the end.
func (t *trie) split(s string, first bool, yield func(segment) bool) bool {
	if len(t.toks) == 0 {
		if s != "" {
			return yield(segment{text: s, first: first})
		}
		return true
	}
	startOffset := 0
	cats := categories()
	for i := 0; i < len(s); {
		if t.root[s[i]] == 0 {
			i++
			continue
		}
		tok, stop := t.longest(s, i)
		if tok == nil {
			i++
			continue
		}
		start := i
		i = stop // the automaton resumes after the match, whatever strip does
		if tok.SingleWord {
			r, _ := utf8.DecodeLastRuneInString(s[:start])
			before := start > 0 && isWordChar(cats, r)
			r, _ = utf8.DecodeRuneInString(s[stop:])
			after := stop < len(s) && isWordChar(cats, r)
			if before || after {
				continue
			}
		}
		if tok.LStrip {
			newStart := start
			for newStart > 0 {
				r, size := utf8.DecodeLastRuneInString(s[:newStart])
				if !cats.isSpace(r) {
					break
				}
				newStart -= size
			}
			start = max(newStart, startOffset)
		}
		if tok.RStrip {
			for stop < len(s) {
				r, size := utf8.DecodeRuneInString(s[stop:])
				if !cats.isSpace(r) {
					break
				}
				stop += size
			}
		}
		if startOffset < start && !yield(segment{text: s[startOffset:start], first: first && startOffset == 0}) {
			return false
		}
		if !yield(segment{tok: tok}) {
			return false
		}
		startOffset = stop
	}
	if startOffset < len(s) {
		return yield(segment{text: s[startOffset:], first: first && startOffset == 0})
	}
	return true
}

// isWordChar approximates the \w of Rust's regex crate (used for single_word):
// alphabetic, marks, decimal digits, connector punctuation, join controls.
func isWordChar(cats *gcTable, r rune) bool {
	const word = maskL | maskM | 1<<gcNd | 1<<gcNl | 1<<gcPc
	if 1<<cats.category(r)&word != 0 {
		return true
	}
	return unicode.Is(unicode.Join_Control, r) || unicode.Is(unicode.Other_Alphabetic, r)
}
