package cpu

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestProfile profiles decode steps of the two-layer decoder: every
// non-fused node is counted once per run, the fused q/k/v and gate/up
// groups appear as one matmul key of their summed rows with the bytes of
// all their weights (4-bit levels, bf16 scales and biases), the pool counts loops, and the output is the same as
// without the profile.
func TestProfile(t *testing.T) {
	b := New(Options{Threads: 2})
	defer b.Close()
	d := newDecoder(t, b, rand.New(rand.NewPCG(5, 6)))
	run := func() []float32 { return d.logits(t, b, []int32{9}, 3) }
	d.logits(t, b, []int32{3, 1, 4}, 0) // the prompt
	plain := run()
	p := &Profile{}
	b.SetProfile(p)
	const runs = 3
	var got []float32
	for i := 0; i < runs; i++ {
		got = run()
	}
	b.SetProfile(nil)
	for i := range plain {
		if got[i] != plain[i] {
			t.Fatalf("logit %d: %v profiled, %v not", i, got[i], plain[i])
		}
	}
	if p.Runs != runs || p.RunTime <= 0 {
		t.Fatalf("profile has %d runs, %v, want %d", p.Runs, p.RunTime, runs)
	}
	qkv := ProfileKey{Op: "MatMul", Rows: 4*32 + 2*2*32, Cols: 128, M: 1, Format: "q4g64"}
	e := p.Nodes[qkv]
	if e == nil {
		var keys []string
		for k := range p.Nodes {
			keys = append(keys, k.Op+"/"+k.Format)
		}
		t.Fatalf("no entry %+v; have %s", qkv, strings.Join(keys, ", "))
	}
	if e.Count != 2*runs {
		t.Errorf("fused q/k/v counted %d times in %d runs of 2 layers", e.Count, runs)
	}
	if want := int64(runs * 2 * (4*32 + 2*2*32) * (128/2 + 2*2*128/64)); e.Bytes != want {
		t.Errorf("fused q/k/v read %d bytes, want %d", e.Bytes, want)
	}
	if a := p.Nodes[ProfileKey{Op: "Attention"}]; a == nil || a.Count != 2*runs {
		t.Errorf("attention entry %+v, want %d nodes", a, 2*runs)
	}
	var sb strings.Builder
	p.Write(&sb)
	if !strings.Contains(sb.String(), "GB/s") {
		t.Errorf("Write printed %q", sb.String())
	}
}
