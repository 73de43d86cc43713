package engine_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/sample"
	"hearth/internal/testenv"
	"hearth/internal/testmodels"
)

// TestDeviceArgmaxMatchesHost decodes greedily twice from the same prompt,
// once reading the logits back and picking with sample.Argmax, once with
// ForwardArgmax (the backend picks, 4 bytes come back), and wants the same
// ids at every step, on the cpu and the gpu backends. The prefill is
// chunked so the argmax graph runs on several prompt chunks too.
func TestDeviceArgmaxMatchesHost(t *testing.T) {
	for _, backend := range []string{"cpu", "gpu"} {
		for _, name := range []string{"llama-f32", "gemma2-f32", "mixtral-f32", "qwen3-q4g64"} {
			t.Run(backend+"/"+name, func(t *testing.T) {
				m, err := engine.Load(filepath.Join(testmodels.Root(), name), engine.Options{Backend: backend, ChunkTokens: 4})
				if backend == "gpu" && err != nil {
					testenv.Need(t, "a gpu backend ("+err.Error()+")", false)
				}
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				prompt := []int32{3, 141, 59, 26, 53, 58, 97, 93, 238, 46, 264}
				const steps = 24
				host := decode(t, m, prompt, steps, func(s *engine.Sequence, toks []int32) (int32, error) {
					logits, err := s.Forward(context.Background(), toks, false)
					if err != nil {
						return 0, err
					}
					return sample.Argmax(logits), nil
				})
				device := decode(t, m, prompt, steps, func(s *engine.Sequence, toks []int32) (int32, error) {
					return s.ForwardArgmax(context.Background(), toks)
				})
				for i := range host {
					if host[i] != device[i] {
						t.Fatalf("step %d: device argmax %d, host argmax %d (host %v, device %v)", i, device[i], host[i], host, device)
					}
				}
				checkGreedy(t, m, prompt, host)
			})
		}
	}
}

// checkGreedy decodes with Sequence.Greedy (on the gpu backend one step
// ahead of the reads, fed on the device) and wants want's tokens, and Next
// to fail after Next(false) and after Close; then it closes before reading
// any token, and stops after a few tokens with a step queued past them, and
// checks each time that the sequence holds exactly the prompt and the
// tokens fed, by decoding on from there with ForwardArgmax.
func checkGreedy(t *testing.T, m *engine.Model, prompt, want []int32) {
	t.Helper()
	ctx := context.Background()
	s, err := m.NewSequence(len(prompt) + len(want) + 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gr, err := s.Greedy(ctx, prompt)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		id, err := gr.Next(i+1 < len(want))
		if err != nil {
			t.Fatal(err)
		}
		if id != want[i] {
			t.Fatalf("greedy step %d: %d, want %d", i, id, want[i])
		}
	}
	if _, err := gr.Next(true); err == nil {
		t.Error("Next after Next(false) did not fail")
	}
	gr.Close()
	if got := s.Len(); got != len(prompt)+len(want)-1 {
		t.Fatalf("after a full decode the sequence holds %d tokens, want %d", got, len(prompt)+len(want)-1)
	}
	if _, err := gr.Next(true); err == nil {
		t.Error("Next after Close did not fail")
	}

	// closed before any token is read: the prompt stays, whole
	s1, err := m.NewSequence(len(prompt) + 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	if gr, err = s1.Greedy(ctx, prompt); err != nil {
		t.Fatal(err)
	}
	gr.Close()
	if got := s1.Len(); got != len(prompt) {
		t.Fatalf("closed unread, the sequence holds %d tokens, want the prompt's %d", got, len(prompt))
	}
	if id, err := s1.ForwardArgmax(ctx, want[:1]); err != nil || id != want[1] {
		t.Fatalf("decoding on after an unread Close: %d, %v (want %d)", id, err, want[1])
	}

	const k = 5 // stop early, as at an end of sequence, with a step queued
	s2, err := m.NewSequence(len(prompt) + len(want))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	s = s2
	gr, err = s.Greedy(ctx, prompt)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < k; i++ {
		if id, err := gr.Next(true); err != nil || id != want[i] {
			t.Fatalf("greedy step %d: %d, %v (want %d)", i, id, err, want[i])
		}
	}
	gr.Close()
	if got := s.Len(); got != len(prompt)+k-1 {
		t.Fatalf("after stopping at token %d the sequence holds %d tokens, want %d", k, got, len(prompt)+k-1)
	}
	for i := k - 1; i < k+2; i++ {
		id, err := s.ForwardArgmax(ctx, []int32{want[i]})
		if err != nil {
			t.Fatal(err)
		}
		if id != want[i+1] {
			t.Fatalf("decoding on after Close: step %d gives %d, want %d", i+1, id, want[i+1])
		}
	}
}

func decode(t *testing.T, m *engine.Model, prompt []int32, steps int, next func(*engine.Sequence, []int32) (int32, error)) []int32 {
	t.Helper()
	s, err := m.NewSequence(len(prompt) + steps)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []int32
	toks := prompt
	for range steps {
		id, err := next(s, toks)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		toks = []int32{id}
	}
	return ids
}

// TestGreedyRequestPathsAgree runs one greedy chat request without
// logprobs (the backend picks each token) and with them (the logits come
// back and the host picks): the answers must be the same text.
func TestGreedyRequestPathsAgree(t *testing.T) {
	for _, backend := range []string{"cpu", "gpu"} {
		t.Run(backend, func(t *testing.T) { greedyRequestPathsAgree(t, backend) })
	}
}

// greedyRequestPathsAgree: on the gpu backend the device-picked path runs
// one step ahead (Sequence.Greedy) and stops at an end of sequence it could
// not foresee.
func greedyRequestPathsAgree(t *testing.T, backend string) {
	r, err := engine.Open(filepath.Join(testmodels.Root(), "chat-tiny"), engine.RunnerOptions{Options: engine.Options{Backend: backend}})
	if backend == "gpu" && err != nil {
		testenv.Need(t, "a gpu backend ("+err.Error()+")", false)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	device, ud, _ := collect(t, r, engine.Request{Messages: hello, MaxTokens: 20})
	host, uh, deltas := collect(t, r, engine.Request{Messages: hello, MaxTokens: 20, Logprobs: true})
	if device != host || ud.CompletionTokens != uh.CompletionTokens || ud.FinishReason != uh.FinishReason {
		t.Fatalf("device-picked answer %q (%d tokens, %s) differs from host-picked %q (%d tokens, %s)",
			device, ud.CompletionTokens, ud.FinishReason, host, uh.CompletionTokens, uh.FinishReason)
	}
	n := 0
	for _, d := range deltas {
		n += len(d.Logprobs)
	}
	if n != uh.CompletionTokens {
		t.Fatalf("the host path gave %d logprobs for %d tokens", n, uh.CompletionTokens)
	}
	// a stop string ends the decode with a step queued past it; the next
	// request on the same runner is unaffected
	if len(device) < 8 {
		t.Fatalf("answer %q too short to stop inside", device)
	}
	stop := device[4:8]
	got, u, _ := collect(t, r, engine.Request{Messages: hello, MaxTokens: 20, Stop: []string{stop}})
	if want := device[:strings.Index(device, stop)]; got != want || u.FinishReason != "stop" {
		t.Fatalf("with stop %q: %q (%s), want %q (stop)", stop, got, u.FinishReason, want)
	}
	if again, _, _ := collect(t, r, engine.Request{Messages: hello, MaxTokens: 20}); again != device {
		t.Fatalf("the same request again gave %q, first %q", again, device)
	}
}
