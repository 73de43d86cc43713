package template

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hearth/engine/gguf"
)

func ggufFile(t *testing.T, kv []gguf.KV) *gguf.File {
	t.Helper()
	var b bytes.Buffer
	if err := gguf.Write(&b, kv, nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func ggufStr(s string) gguf.Value { return gguf.Value{Type: gguf.TypeString, V: s} }
func ggufID(id int) gguf.Value    { return gguf.Value{Type: gguf.TypeUint32, V: uint64(id)} }

// templateGGUF is the metadata the converter writes for a test template:
// its source, and the BOS and EOS tokens as ids into the vocabulary.
func templateGGUF(source, toolUse string, s Special) []gguf.KV {
	tokens := []string{"<unk>", "<bos-none>", "<eos-none>"}
	kv := []gguf.KV{{Key: "tokenizer.chat_template", Value: ggufStr(source)}}
	if toolUse != "" {
		kv = append(kv, gguf.KV{Key: "tokenizer.chat_template.tool_use", Value: ggufStr(toolUse)})
	}
	if s.BOS != "" {
		tokens[1] = s.BOS
		kv = append(kv, gguf.KV{Key: "tokenizer.ggml.bos_token_id", Value: ggufID(1)})
	}
	if s.EOS != "" && s.EOS != s.BOS {
		tokens[2] = s.EOS
	}
	if s.EOS != "" {
		id := 2
		if s.EOS == s.BOS {
			id = 1
		}
		kv = append(kv, gguf.KV{Key: "tokenizer.ggml.eos_token_id", Value: ggufID(id)})
	}
	return append(kv, gguf.KV{Key: "tokenizer.ggml.tokens", Value: gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeString, V: tokens}})
}

// TestFromGGUF renders every test template's conversations from a GGUF
// file holding it and from its checkpoint directory: they must agree.
func TestFromGGUF(t *testing.T) {
	convs := readConversations(t)
	for _, name := range templateNames(t) {
		t.Run(name, func(t *testing.T) {
			want, err := Load(filepath.Join("testdata", "templates", name))
			if err != nil {
				t.Fatal(err)
			}
			sp := want.Special()
			got, err := FromGGUF(ggufFile(t, templateGGUF(want.Source(), "", Special{BOS: sp.BOS, EOS: sp.EOS})))
			if err != nil {
				t.Fatal(err)
			}
			if got.Special().BOS != sp.BOS || got.Special().EOS != sp.EOS {
				t.Errorf("Special() = %+v, want BOS %q, EOS %q", got.Special(), sp.BOS, sp.EOS)
			}
			want.now = func() time.Time { return goldenNow }
			got.now = want.now
			for _, c := range convs {
				w, werr := want.Render(context.Background(), c.Messages, c.options())
				g, gerr := got.Render(context.Background(), c.Messages, c.options())
				if g != w || (gerr == nil) != (werr == nil) {
					t.Errorf("%s: from GGUF %q, %v; from the directory %q, %v", c.Name, g, gerr, w, werr)
				}
			}
		})
	}
}

func TestFromGGUFToolUseAndErrors(t *testing.T) {
	tmpl, err := FromGGUF(ggufFile(t, templateGGUF("D{{ bos_token }}", "T{{ tools|length }}{{ eos_token }}", Special{BOS: "<s>", EOS: "</s>"})))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []byte(`[{"role":"user","content":"hi"}]`)
	if out, err := tmpl.Render(context.Background(), msgs, Options{}); err != nil || out != "D<s>" {
		t.Errorf("Render = %q, %v; want \"D<s>\"", out, err)
	}
	if out, err := tmpl.Render(context.Background(), msgs, Options{Tools: []byte(`[{"type":"function"}]`)}); err != nil || out != "T1</s>" {
		t.Errorf("Render with tools = %q, %v; want \"T1</s>\"", out, err)
	}

	// An id beyond the tokens leaves its name undefined.
	tmpl, err = FromGGUF(ggufFile(t, append(templateGGUF("{{ bos_token is defined }}", "", Special{}), gguf.KV{Key: "tokenizer.ggml.bos_token_id", Value: ggufID(3)})))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := tmpl.Render(context.Background(), msgs, Options{}); err != nil || out != "False" {
		t.Errorf("Render = %q, %v; want \"False\"", out, err)
	}

	_, err = FromGGUF(ggufFile(t, []gguf.KV{{Key: "tokenizer.ggml.model", Value: ggufStr("gpt2")}}))
	if !errors.Is(err, ErrNoTemplate) {
		t.Errorf("no template: %v, want ErrNoTemplate", err)
	}
	for _, tc := range []struct {
		kv   []gguf.KV
		want string
	}{
		{[]gguf.KV{{Key: "tokenizer.chat_template", Value: ggufID(1)}}, "tokenizer.chat_template: uint32, want a string"},
		{[]gguf.KV{{Key: "tokenizer.chat_template", Value: ggufStr("{% if %}")}}, "load chat template: tokenizer.chat_template"},
	} {
		if _, err := FromGGUF(ggufFile(t, tc.kv)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FromGGUF: %v, want an error with %q", err, tc.want)
		}
	}
}
