// Package reasoning splits a reasoning model's reply into its thinking and
// its answer, for the families whose chat templates mark the thinking with
// tags: Qwen3, Qwen 3.5, QwQ, DeepSeek-R1 and its distills write
// <think>…</think> before the answer.
//
// A reply is thinking when it opens with the open tag, or when the prompt
// already opened it (templates that end the generation prompt with
// "<think>\n", so the reply starts inside the block). The thinking runs to
// the close tag, or to the end of a reply that never closes it (cut by
// max_tokens); the rest is the answer, which tool-call parsing reads next.
// Whitespace around the thinking and between the close tag and the answer
// is dropped, as Ollama does. A reply that does not open with the tag is
// all answer: a tag later in the text is the answer's own.
//
// A Stream reads the reply in pieces, holding back only text that may be
// part of a tag (and whitespace that may turn out to precede one), so any
// chunking yields the same thinking and answer as Parse.
package reasoning

import (
	"strings"
	"unicode"
)

// Tags are the markers around a reply's thinking. The zero Tags mark
// nothing: the whole reply is the answer.
type Tags struct {
	Open, Close string
}

// Think is the <think>…</think> pair of Qwen3, DeepSeek-R1 and the models
// that copied them.
var Think = Tags{Open: "<think>", Close: "</think>"}

// Detect returns the tags a chat template marks thinking with, from the
// tags it writes (the open one in a generation prompt, both around an
// earlier turn's reasoning_content) or strips from earlier turns, or the
// zero Tags.
func Detect(templateSource string) Tags {
	if strings.Contains(templateSource, Think.Open) || strings.Contains(templateSource, Think.Close) {
		return Think
	}
	return Tags{}
}

// Marked reports whether t marks anything.
func (t Tags) Marked() bool { return t.Open != "" && t.Close != "" }

// Prefilled reports whether a rendered prompt leaves the reply inside a
// thinking block: it ends with the open tag (and whitespace).
func (t Tags) Prefilled(prompt string) bool {
	return t.Marked() && strings.HasSuffix(strings.TrimRightFunc(prompt, unicode.IsSpace), t.Open)
}

// Parse splits a whole reply into its thinking and its answer; prefilled
// says the prompt opened the thinking block.
func Parse(t Tags, prefilled bool, reply string) (thinking, content string) {
	s := NewStream(t, prefilled)
	t1, c1 := s.Feed(reply)
	t2, c2 := s.Close()
	return t1 + t2, c1 + c2
}

type state int

const (
	start  state = iota // nothing but whitespace (or part of the open tag) yet
	opened              // after the open tag: leading whitespace is dropped
	inside              // inside the block
	closed              // after the close tag: whitespace before the answer is dropped
	answer              // the rest is content
)

// Stream splits a reply as it is generated. It is not safe for concurrent
// use.
type Stream struct {
	tags      Tags
	prefilled bool
	state     state
	thought   bool   // a thinking block was opened
	buf       string // received text not yet decided
}

// NewStream starts splitting a reply; prefilled says the prompt ended
// inside a thinking block. With tags that mark nothing, everything is
// content.
func NewStream(t Tags, prefilled bool) *Stream {
	s := &Stream{tags: t, prefilled: prefilled && t.Marked()}
	if !t.Marked() {
		s.state = answer
	}
	return s
}

// Answering reports whether the reply is past its thinking, or had none:
// what is fed now is answer.
func (s *Stream) Answering() bool { return s.state == closed || s.state == answer }

// Thought reports whether the reply (or its prompt) opened a thinking
// block.
func (s *Stream) Thought() bool { return s.thought }

// Feed adds the next piece of the reply and returns the thinking and the
// content that can be shown now.
func (s *Stream) Feed(delta string) (thinking, content string) {
	s.buf += delta
	return s.process(false)
}

// Close ends the reply and returns what was held back. An unclosed
// thinking block ends with the reply.
func (s *Stream) Close() (thinking, content string) {
	return s.process(true)
}

func isSpace(r rune) bool { return unicode.IsSpace(r) }

func (s *Stream) process(final bool) (string, string) {
	var think, content strings.Builder
	for {
		switch s.state {
		case start:
			t := strings.TrimLeftFunc(s.buf, isSpace)
			switch {
			case strings.HasPrefix(t, s.tags.Open):
				s.buf, s.state, s.thought = t[len(s.tags.Open):], opened, true
				continue
			case !final && strings.HasPrefix(s.tags.Open, t):
				// all whitespace, or the start of the open tag
				return think.String(), content.String()
			case s.prefilled:
				s.state, s.thought = opened, true
				continue
			}
			s.state = answer
			continue

		case opened:
			s.buf = strings.TrimLeftFunc(s.buf, isSpace)
			if s.buf == "" {
				return think.String(), content.String()
			}
			s.state = inside

		case inside:
			if i := strings.Index(s.buf, s.tags.Close); i >= 0 {
				think.WriteString(strings.TrimRightFunc(s.buf[:i], isSpace))
				s.buf, s.state = s.buf[i+len(s.tags.Close):], closed
				continue
			}
			if final {
				think.WriteString(strings.TrimRightFunc(s.buf, isSpace))
				s.buf = ""
				return think.String(), content.String()
			}
			// Hold back a possible close tag and the whitespace before it.
			head := s.buf[:len(s.buf)-partial(s.buf, s.tags.Close)]
			text := strings.TrimRightFunc(head, isSpace)
			think.WriteString(text)
			s.buf = s.buf[len(text):]
			return think.String(), content.String()

		case closed:
			s.buf = strings.TrimLeftFunc(s.buf, isSpace)
			if s.buf == "" {
				return think.String(), content.String()
			}
			s.state = answer

		case answer:
			content.WriteString(s.buf)
			s.buf = ""
			return think.String(), content.String()
		}
	}
}

// partial is the length of the longest suffix of s that is a proper prefix
// of tag.
func partial(s, tag string) int {
	for n := min(len(tag)-1, len(s)); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}
