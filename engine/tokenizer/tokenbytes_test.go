package tokenizer

import (
	"bytes"
	"testing"
)

// TestTokenBytes checks that the bytes of each token of an encoded text,
// joined, are the text's decoding after its first token (which a
// decoder may treat apart).
func TestTokenBytes(t *testing.T) {
	text := "Hello, world! {\"key\": [1, 2.5, \"naïve café 日本語 🙂\"]}\n\tdef f(x):\n    return x ** 2  # done"
	for _, name := range []string{"qwen3", "llama3", "llama2", "gemma3", "syn_metaspace", "syn_gpt2"} {
		t.Run(name, func(t *testing.T) {
			var tk *Tokenizer
			if len(name) > 4 && name[:4] == "syn_" {
				var err error
				if tk, err = Load(tokenizerDir(name)); err != nil {
					t.Fatal(err)
				}
			} else {
				tk = loadReal(t, name)
			}
			ids := tk.Encode(text, false)
			var got []byte
			for _, id := range ids[1:] {
				b, ok := tk.TokenBytes(id)
				if !ok {
					t.Fatalf("token %d has no bytes", id)
				}
				got = append(got, b...)
			}
			whole, first := tk.Decode(ids, false), tk.Decode(ids[:1], false)
			want := []byte(whole[len(first):])
			if !bytes.Equal(got, want) {
				t.Errorf("joined token bytes %q\nwant %q", got, want)
			}
			for _, id := range tk.EOS() {
				if _, ok := tk.TokenBytes(id); ok {
					t.Errorf("EOS %d has bytes", id)
				}
			}
		})
	}
}
