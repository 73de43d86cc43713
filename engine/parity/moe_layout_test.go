package parity

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/tensor"
	"hearth/engine/weights"
	"hearth/internal/testmodels"
)

// TestMoELayouts holds the expert layouts that no oracle entry is saved in
// to the same goldens: each MoE f32 entry (transformers 5.17 saves one
// module per expert) is rewritten into transformers 5's fused parameters
// (<block>.experts.gate_up_proj [E, 2I, H] and .down_proj [E, H, I], with
// Mixtral's block named "mlp" as transformers 5 names it) and into mlx-lm's
// dense stacked switch_mlp, and must still match its golden.
func TestMoELayouts(t *testing.T) {
	m, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range m.Entries {
		if e.Variant != "f32" || !slices.Contains([]string{"qwen3_moe", "qwen2_moe", "mixtral", "olmoe", "qwen3_5_moe_text"}, e.ModelType) {
			continue
		}
		n++
		for _, layout := range []string{"fused", "switch_mlp"} {
			t.Run(e.Name+"/"+layout, func(t *testing.T) {
				dir := t.TempDir()
				rewriteExperts(t, e.Path(), dir, layout)
				rel, err := filepath.Rel(testmodels.Root(), dir)
				if err != nil {
					t.Fatal(err)
				}
				moved := e
				moved.Dir = rel
				checkEntry(t, moved, engine.Options{Backend: "cpu"})
			})
		}
	}
	if n != 5 {
		t.Errorf("found %d MoE f32 entries, want 5", n)
	}
}

var expertName = regexp.MustCompile(`^(.*)\.experts\.(\d+)\.(\w+)\.weight$`)

// rewriteExperts copies the checkpoint in src to dst with every block's
// per-expert tensors replaced by the stacked layout named.
func rewriteExperts(t *testing.T, src, dst, layout string) {
	set, err := weights.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	role := map[string]int{"gate_proj": 0, "w1": 0, "up_proj": 1, "w3": 1, "down_proj": 2, "w2": 2}
	type stack struct {
		parts [3][][]byte
		shape [3][]int
	}
	blocks := map[string]*stack{}
	var out []tensor.Weight
	for _, name := range set.Names() {
		info, _ := set.Info(name)
		data, _ := set.Bytes(name)
		mm := expertName.FindStringSubmatch(name)
		if mm == nil {
			out = append(out, tensor.Weight{Name: name, DType: info.DType, Shape: info.Shape, Data: data})
			continue
		}
		r, ok := role[mm[3]]
		if !ok || info.DType != tensor.F32 {
			t.Fatalf("%s: not a dense gate, up or down expert weight", name)
		}
		b := blocks[mm[1]]
		if b == nil {
			b = &stack{}
			blocks[mm[1]] = b
		}
		// names sort experts 0, 1, 10, 2, ...: place each by its index
		e, _ := strconv.Atoi(mm[2]) // the pattern matched digits
		for len(b.parts[r]) <= e {
			b.parts[r] = append(b.parts[r], nil)
		}
		b.parts[r][e] = data
		b.shape[r] = info.Shape
	}
	cat := func(parts [][]byte) []byte {
		var d []byte
		for _, p := range parts {
			d = append(d, p...)
		}
		return d
	}
	for block, b := range blocks {
		e := len(b.parts[0])
		gate, up, down := b.shape[0], b.shape[1], b.shape[2]
		switch layout {
		case "fused":
			// transformers 5 names Mixtral's block_sparse_moe "mlp"
			if base, ok := strings.CutSuffix(block, ".block_sparse_moe"); ok {
				block = base + ".mlp"
			}
			var gu []byte
			for i := 0; i < e; i++ {
				gu = append(append(gu, b.parts[0][i]...), b.parts[1][i]...)
			}
			out = append(out,
				tensor.Weight{Name: block + ".experts.gate_up_proj", DType: tensor.F32, Shape: []int{e, gate[0] + up[0], gate[1]}, Data: gu},
				tensor.Weight{Name: block + ".experts.down_proj", DType: tensor.F32, Shape: []int{e, down[0], down[1]}, Data: cat(b.parts[2])})
		case "switch_mlp":
			for r, proj := range []string{"gate_proj", "up_proj", "down_proj"} {
				out = append(out, tensor.Weight{Name: block + ".switch_mlp." + proj + ".weight", DType: tensor.F32,
					Shape: []int{e, b.shape[r][0], b.shape[r][1]}, Data: cat(b.parts[r])})
			}
		}
	}
	if len(blocks) == 0 {
		t.Fatal("no per-expert tensors to rewrite")
	}
	if layout == "fused" { // the renamed Mixtral router
		for i := range out {
			if base, ok := strings.CutSuffix(out[i].Name, ".block_sparse_moe.gate.weight"); ok {
				out[i].Name = base + ".mlp.gate.weight"
			}
		}
	}
	if err := weights.Write(filepath.Join(dst, "model.safetensors"), out, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "generation_config.json", "golden.json"} {
		raw, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
