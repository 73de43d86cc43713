package toolcall

import (
	"strings"
	"testing"
)

// benchStream feeds a reply with 64 KB of arguments in 4-byte pieces.
func benchStream(b *testing.B, f Format, open, close string) {
	args := `{"text": "` + strings.Repeat("lorem ipsum {dolor} [sit] ", 2600) + `"}`
	reply := open + args + close
	b.SetBytes(int64(len(reply)))
	for b.Loop() {
		s := NewStream(f)
		n := 0
		for i := 0; i < len(reply); i += 4 {
			_, calls := s.Feed(reply[i:min(i+4, len(reply))])
			n += len(calls)
		}
		_, calls, err := s.Close()
		if n += len(calls); err != nil || n != 1 {
			b.Fatalf("%d calls, err %v", n, err)
		}
	}
}

func BenchmarkStreamHermes(b *testing.B) {
	benchStream(b, Hermes, `<tool_call>{"name": "f", "arguments": `, `}</tool_call>`)
}
func BenchmarkStreamLlama3(b *testing.B) { benchStream(b, Llama3, `{"name": "f", "parameters": `, `}`) }
func BenchmarkStreamMistral(b *testing.B) {
	benchStream(b, Mistral, `[TOOL_CALLS]f[ARGS]`, ``)
}
func BenchmarkStreamGemma(b *testing.B) {
	benchStream(b, Gemma, "```tool_code\nf(text=", ")\n```")
}
