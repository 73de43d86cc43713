package engine

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"hearth/engine/sample"
	"hearth/internal/testmodels"
)

// TestModelDraftIdentity: drafting with a model keeps greedy decoding
// token for token what plain decoding gives, for every manifest entry:
// full, sliding and recurrent caches (the draft's own sequence rewound, or
// rebuilt where a recurrent state cannot rewind). Two drafts each: the
// target's own weights, whose every guess stands, and the entry's 4-bit
// sibling where there is one (tiny random models: most guesses fail), so
// verification both keeps and rejects.
func TestModelDraftIdentity(t *testing.T) {
	m, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, e := range m.Entries {
		byName[e.Name] = e.Path()
	}
	for _, e := range m.Entries {
		if !strings.HasSuffix(e.Name, "-f32") {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			gold, err := e.Golden()
			if err != nil {
				t.Fatal(err)
			}
			model, err := Load(e.Path(), Options{Backend: "cpu", ChunkTokens: 8})
			if err != nil {
				t.Fatal(err)
			}
			defer model.Close()
			r := &Runner{model: model}
			prompt, n := gold.PromptIDs, 20
			if most := model.Checkpoint.Config.MaxPositionEmbeddings; most > 0 {
				n = min(n, most-len(prompt)-specMaxK-1)
			}
			req := &Request{Sample: sample.Options{Temperature: 0}}
			seq, err := model.NewSequence(len(prompt) + n)
			if err != nil {
				t.Fatal(err)
			}
			d, err := r.newDecoder(context.Background(), seq, req, prompt, false)
			if err != nil {
				t.Fatal(err)
			}
			plain := decodeAll(t, d, n)
			seq.Close()

			drafts := []string{e.Path()}
			if q4, ok := byName[strings.TrimSuffix(e.Name, "-f32")+"-q4g64"]; ok {
				drafts = append(drafts, q4)
			}
			for i, dir := range drafts {
				dm, err := Load(dir, Options{Backend: "cpu", ChunkTokens: 8})
				if err != nil {
					t.Fatal(err)
				}
				md, err := NewModelDraft(dm, len(prompt)+n+specMaxK+1)
				if err != nil {
					t.Fatal(err)
				}
				seq, err := model.NewSequence(len(prompt) + n)
				if err != nil {
					t.Fatal(err)
				}
				sp, err := r.newSpeculative(context.Background(), seq, req, prompt, md)
				if err != nil {
					t.Fatal(err)
				}
				got := decodeAll(t, sp, n)
				seq.Close()
				md.Close()
				dm.Close()
				if !slices.Equal(got, plain) {
					t.Fatalf("drafting with %s: %v\nplain %v", dir, got, plain)
				}
				if md.Err != nil || sp.stats.Drafted == 0 || i == 0 && sp.stats.Accepted != sp.stats.Drafted {
					t.Errorf("drafting with %s: %d drafted, %d accepted, error %v", dir, sp.stats.Drafted, sp.stats.Accepted, md.Err)
				}
				t.Logf("%s: %d of %d drafted tokens accepted in %d passes", dir, sp.stats.Accepted, sp.stats.Drafted, sp.stats.Passes)
			}
		})
	}
}

// TestRunnerDraftModel: a runner given a draft model of its own vocabulary
// drafts with it (the usage counts drafts) and answers as without it; a
// target of another vocabulary decodes plainly and Info says why.
func TestRunnerDraftModel(t *testing.T) {
	target, draft, other := testmodels.Root()+"/chat-tiny", testmodels.Root()+"/chat-tiny", testmodels.Root()+"/gemma3_vision-f32"
	if _, err := os.Stat(other); err != nil {
		t.Fatal(err)
	}
	dm, err := Load(draft, Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	answer := func(opt RunnerOptions) (string, Usage, Info) {
		t.Helper()
		opt.Options = Options{Backend: "cpu"}
		r, err := Open(target, opt)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var text strings.Builder
		u, err := r.Generate(context.Background(), Request{Prompt: "hello there", MaxTokens: 16, Sample: sample.Options{Temperature: 0}},
			func(d Delta) error { text.WriteString(d.Content); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return text.String(), u, r.Info()
	}
	plainText, _, _ := answer(RunnerOptions{})
	text, u, info := answer(RunnerOptions{DraftModel: dm})
	if text != plainText || u.Drafted == 0 || info.DraftNote != "" {
		t.Errorf("with the draft model: %q (drafted %d, note %q); plain %q", text, u.Drafted, info.DraftNote, plainText)
	}
	r, err := Open(other, RunnerOptions{Options: Options{Backend: "cpu"}, DraftModel: dm})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if note := r.Info().DraftNote; !strings.Contains(note, "not drafting") {
		t.Errorf("a target of another vocabulary: DraftNote %q", note)
	}
}
