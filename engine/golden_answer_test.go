package engine

import (
	"context"
	"testing"
)

// wantGoldenAnswer checks a golden conversation with media: req's prompt
// is the reference processor's ids (expanded: its text, for the failure
// message), and Generate gives its greedy ids after them.
func wantGoldenAnswer(t *testing.T, r *Runner, req Request, name string, promptIDs, greedy []int32, expanded string) {
	t.Helper()
	req.MaxTokens, req.Logprobs = len(greedy), true
	pl, err := r.Prompter().PromptMedia(context.Background(), &req)
	if err != nil {
		t.Fatal(err)
	}
	if !equal(pl.IDs, promptIDs) {
		t.Fatalf("%s: prompt ids\n%v, want\n%v (%q)", name, pl.IDs, promptIDs, expanded)
	}
	var got []int32
	u, err := r.Generate(context.Background(), req, func(d Delta) error {
		for _, lp := range d.Logprobs {
			got = append(got, lp.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !equal(got, greedy) || u.PromptTokens != len(promptIDs) {
		t.Fatalf("%s: ids %v after %d prompt tokens, want %v after %d", name, got, u.PromptTokens, greedy, len(promptIDs))
	}
}
