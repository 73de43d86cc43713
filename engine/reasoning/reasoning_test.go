package reasoning

import (
	"os"
	"testing"
)

// The templates are copies of the checkpoints' chat templates (see
// engine/template/testdata/templates for their provenance).
func TestDetect(t *testing.T) {
	tests := []struct {
		file string
		want Tags
	}{
		{"qwen3.jinja", Think},
		{"llama3_1.jinja", Tags{}},
	}
	if got := Detect("{% if add_generation_prompt %}<｜Assistant｜><think>\n{% endif %}"); got != Think {
		t.Errorf("Detect of a template that only opens the block = %q, want %q", got, Think)
	}
	for _, tt := range tests {
		src, err := os.ReadFile("testdata/templates/" + tt.file)
		if err != nil {
			t.Fatal(err)
		}
		if got := Detect(string(src)); got != tt.want {
			t.Errorf("Detect(%s) = %q, want %q", tt.file, got, tt.want)
		}
	}
}

func TestPrefilled(t *testing.T) {
	tests := []struct {
		name, prompt string
		want         bool
	}{
		{"qwen3.5 generation prompt", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n", true},
		{"deepseek-r1", "<｜User｜>hi<｜Assistant｜><think>\n", true},
		{"thinking off", "<|im_start|>assistant\n<think>\n\n</think>\n\n", false},
		{"qwen3 generation prompt", "<|im_start|>assistant\n", false},
		{"tag in the question", "<|im_start|>user\nwhat is <think>?<|im_end|>\n<|im_start|>assistant\n", false},
	}
	for _, tt := range tests {
		if got := Think.Prefilled(tt.prompt); got != tt.want {
			t.Errorf("%s: Prefilled = %v, want %v", tt.name, got, tt.want)
		}
	}
	if (Tags{}).Prefilled("<think>\n") {
		t.Error("the zero Tags found a prefilled block")
	}
}

var parseTests = []struct {
	name      string
	prefilled bool
	in        string
	thinking  string
	content   string
}{
	{"no thinking", false, "Hello there.", "", "Hello there."},
	{"no thinking, leading space kept", false, "\n Hello", "", "\n Hello"},
	{"thinking then answer", false, "<think>\nLet me see.\n</think>\n\nParis.", "Let me see.", "Paris."},
	{"empty thinking", false, "<think>\n\n</think>\n\nParis.", "", "Paris."},
	{"whitespace before the tag", false, "\n<think>a</think>b", "a", "b"},
	{"unclosed at the end", false, "<think>\nstill going", "still going", ""},
	{"only the open tag", false, "<think>", "", ""},
	{"part of the open tag", false, "<thin", "", "<thin"},
	{"tag later is the answer's", false, "Use <think>x</think> tags.", "", "Use <think>x</think> tags."},
	{"second block is the answer's", false, "<think>a</think>b<think>c</think>", "a", "b<think>c</think>"},
	{"prefilled", true, "Let me see.\n</think>\n\nParis.", "Let me see.", "Paris."},
	{"prefilled, tag repeated", true, "<think>\nhm</think>ok", "hm", "ok"},
	{"prefilled, unclosed", true, "still going\n", "still going", ""},
	{"prefilled, empty reply", true, "", "", ""},
	{"multi-line thinking", false, "<think>one\n\ntwo  \n</think>three\n", "one\n\ntwo", "three\n"},
	{"tool call after thinking", false, "<think>call it</think>\n<tool_call>\n{}\n</tool_call>", "call it", "<tool_call>\n{}\n</tool_call>"},
	{"close tag alone", false, "</think>answer", "", "</think>answer"},
	{"multibyte", true, "日本語</think>答え", "日本語", "答え"},
}

func TestParse(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			th, c := Parse(Think, tt.prefilled, tt.in)
			if th != tt.thinking || c != tt.content {
				t.Errorf("Parse(%q) = %q, %q, want %q, %q", tt.in, th, c, tt.thinking, tt.content)
			}
		})
	}
}

// TestStreamBytes feeds every case a byte at a time: tags split anywhere
// still split the reply the same way.
func TestStreamBytes(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStream(Think, tt.prefilled)
			var th, c string
			for i := 0; i < len(tt.in); i++ {
				a, b := s.Feed(tt.in[i : i+1])
				th, c = th+a, c+b
			}
			a, b := s.Close()
			th, c = th+a, c+b
			if th != tt.thinking || c != tt.content {
				t.Errorf("byte by byte: %q, %q, want %q, %q", th, c, tt.thinking, tt.content)
			}
		})
	}
}

// TestStreamEarly checks that text is released as soon as it is decided:
// thinking before the close tag arrives, the answer without waiting for
// the end.
func TestStreamEarly(t *testing.T) {
	s := NewStream(Think, false)
	steps := []struct{ in, thinking, content string }{
		{"<th", "", ""},
		{"ink>\nI ", "I", ""},
		{"think ", " think", ""},
		{"</th", "", ""},
		{"ink>\n\n", "", ""},
		{"Paris", "", "Paris"},
		{".", "", "."},
	}
	for i, st := range steps {
		th, c := s.Feed(st.in)
		if th != st.thinking || c != st.content {
			t.Fatalf("step %d Feed(%q) = %q, %q, want %q, %q", i, st.in, th, c, st.thinking, st.content)
		}
	}
	if th, c := s.Close(); th != "" || c != "" {
		t.Errorf("Close = %q, %q, want nothing left", th, c)
	}
}

func TestState(t *testing.T) {
	s := NewStream(Think, true)
	if s.Answering() {
		t.Error("a prefilled stream is answering at the start")
	}
	s.Feed("a</think>")
	if !s.Answering() || !s.Thought() {
		t.Errorf("after the close tag: Answering %v, Thought %v, want both", s.Answering(), s.Thought())
	}
	s = NewStream(Think, false)
	if s.Answering() {
		t.Error("a stream that has seen nothing is answering")
	}
	s.Feed("Hi")
	if !s.Answering() || s.Thought() {
		t.Errorf("a reply without thinking: Answering %v, Thought %v, want true, false", s.Answering(), s.Thought())
	}
	if th, c := Parse(Tags{}, true, "<think>a</think>"); th != "" || c != "<think>a</think>" {
		t.Errorf("zero Tags: %q, %q, want everything as content", th, c)
	}
}
