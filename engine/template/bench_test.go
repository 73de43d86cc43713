package template

import (
	"context"
	"testing"
)

// BenchmarkRender renders Qwen3's template for a tool-call round trip.
func BenchmarkRender(b *testing.B) {
	conv := readConversations(b)["tool_call_object_arguments"]
	tmpl := loadTestTemplate(b, "qwen3")
	opt := conv.options()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tmpl.Render(context.Background(), conv.Messages, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad compiles gpt-oss's 16 KB template.
func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		if _, err := Load("testdata/templates/gpt-oss"); err != nil {
			b.Fatal(err)
		}
	}
}
