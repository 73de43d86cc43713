package nn

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"hearth/engine/config"
	"hearth/engine/tensor"
)

func TestNewRope(t *testing.T) {
	r, err := NewRope(config.Rope{Type: "default", Theta: 10000, PartialRotaryFactor: 1}, 16, 256)
	def := r.Table(1)
	if err != nil {
		t.Fatal(err)
	}
	if def.Dims != 16 || len(def.InvFreq) != 8 || def.InvFreq[0] != 1 {
		t.Fatalf("default rope = %+v", def)
	}
	if want := 1 / math.Pow(10000, 2.0/16); math.Abs(float64(def.InvFreq[1])-want) > 1e-7 {
		t.Errorf("InvFreq[1] = %v, want %v", def.InvFreq[1], want)
	}
	rl, _ := NewRope(config.Rope{Type: "linear", Theta: 10000, Factor: 4, PartialRotaryFactor: 1}, 16, 256)
	lin := rl.Table(1)
	if lin.InvFreq[1] != def.InvFreq[1]/4 {
		t.Errorf("linear InvFreq[1] = %v, want %v", lin.InvFreq[1], def.InvFreq[1]/4)
	}
	// llama3: short wavelengths kept, long ones divided by factor
	r3, err := NewRope(config.Rope{Type: "llama3", Theta: 10000, Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 32, PartialRotaryFactor: 1}, 16, 256)
	if err != nil {
		t.Fatal(err)
	}
	l3 := r3.Table(1)
	if l3.InvFreq[0] != def.InvFreq[0] || l3.InvFreq[7] != def.InvFreq[7]/8 {
		t.Errorf("llama3 InvFreq = %v (default %v)", l3.InvFreq, def.InvFreq)
	}
	rp, _ := NewRope(config.Rope{Type: "default", Theta: 10000, PartialRotaryFactor: 0.5}, 16, 256)
	if partial := rp.Table(1); partial.Dims != 8 {
		t.Errorf("partial rope Dims = %d, want 8", partial.Dims)
	}
	for _, bad := range []config.Rope{
		{Type: "yarn-ish", Theta: 10000, PartialRotaryFactor: 1},
		{Type: "llama3", Theta: 10000, Factor: 8, PartialRotaryFactor: 1},
	} {
		if _, err := NewRope(bad, 16, 256); err == nil || !strings.Contains(err.Error(), "rope") {
			t.Errorf("NewRope(%+v) error = %v, want a rope error", bad, err)
		}
	}
}

// TestYarn compares the yarn table with transformers' formulas worked by
// hand in float64: head_dim 32, theta 1e4, original context 1024 put the
// correction range at [floor(2.83), ceil(8.85)] = [2, 9], so dims 0-1 keep
// the original frequency, 9-15 are divided by factor and 2-8 blend.
func TestYarn(t *testing.T) {
	base := config.Rope{Type: "yarn", Theta: 10000, Factor: 4, OriginalMaxPositionEmbeddings: 1024, PartialRotaryFactor: 1,
		Params: map[string]json.RawMessage{"factor": json.RawMessage("4")}}
	want := func(low, high float64, factor float64) []float64 {
		out := make([]float64, 16)
		for i := range out {
			ext := 1 / math.Pow(10000, float64(2*i)/32)
			ramp := math.Min(math.Max((float64(i)-low)/(high-low), 0), 1)
			out[i] = ext/factor*ramp + ext*(1-ramp)
		}
		return out
	}
	corr := func(rot float64) float64 { return 32 * math.Log(1024/(rot*2*math.Pi)) / (2 * math.Log(10000)) }
	if lo, hi := math.Floor(corr(32)), math.Ceil(corr(1)); lo != 2 || hi != 9 {
		t.Fatalf("correction range [%v, %v], want [2, 9]", lo, hi)
	}
	check := func(name string, c config.Rope, wantInv []float64, wantScale float64) {
		t.Helper()
		r, err := NewRope(c, 32, 4096)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		tab := r.Table(1)
		if len(tab.InvFreq) != len(wantInv) {
			t.Fatalf("%s: %d frequencies", name, len(tab.InvFreq))
		}
		for i, w := range wantInv {
			if d := math.Abs(float64(tab.InvFreq[i])-w) / w; d > 1e-6 {
				t.Errorf("%s: InvFreq[%d] = %v, want %v", name, i, tab.InvFreq[i], w)
			}
		}
		if math.Abs(float64(tab.Scale)-wantScale) > 1e-6 {
			t.Errorf("%s: Scale = %v, want %v", name, tab.Scale, wantScale)
		}
	}
	inv := want(2, 9, 4)
	ext5 := 1 / math.Pow(10000, 10.0/32)
	if inv[1] != 1/math.Pow(10000, 2.0/32) || !(inv[5] < ext5 && inv[5] > ext5/4) || math.Abs(inv[12]*4-1/math.Pow(10000, 24.0/32)) > 1e-15 {
		t.Fatal("hand table is not in the three regimes")
	}
	check("default", base, inv, 0.1*math.Log(4)+1)

	noTrunc := base
	noTrunc.Params = map[string]json.RawMessage{"factor": json.RawMessage("4"), "truncate": json.RawMessage("false")}
	check("truncate false", noTrunc, want(corr(32), corr(1), 4), 0.1*math.Log(4)+1)

	ms := base
	ms.Params = map[string]json.RawMessage{"factor": json.RawMessage("4"), "mscale": json.RawMessage("0.707"), "mscale_all_dim": json.RawMessage("0.5")}
	check("mscale", ms, inv, (0.1*0.707*math.Log(4)+1)/(0.1*0.5*math.Log(4)+1))

	af := base
	af.Params = map[string]json.RawMessage{"factor": json.RawMessage("4"), "attention_factor": json.RawMessage("1.25"), "beta_fast": json.RawMessage("16"), "beta_slow": json.RawMessage("2")}
	check("attention_factor and betas", af, want(math.Floor(corr(16)), math.Ceil(corr(2)), 4), 1.25)

	// No factor: transformers takes max_position_embeddings / original.
	nf := base
	nf.Params = map[string]json.RawMessage{}
	check("factor from lengths", nf, inv, 0.1*math.Log(4)+1)

	bad := base
	bad.Params = map[string]json.RawMessage{"factor": json.RawMessage("4"), "beta_fast": json.RawMessage(`"x"`)}
	if _, err := NewRope(bad, 32, 4096); err == nil || !strings.Contains(err.Error(), "beta_fast") {
		t.Errorf("bad beta_fast: error %v", err)
	}
}

// TestYarnSpellings reads yarn from legacy rope_scaling with "type" and from
// transformers 5's rope_parameters with "rope_type"; both give one table.
func TestYarnSpellings(t *testing.T) {
	head := `"model_type":"qwen3","hidden_size":64,"num_attention_heads":2,"num_hidden_layers":1,"vocab_size":8,"max_position_embeddings":4096,`
	var tables []*tensor.Rope
	for _, cfg := range []string{
		`{` + head + `"rope_theta":10000,"rope_scaling":{"type":"yarn","factor":4,"original_max_position_embeddings":1024}}`,
		`{` + head + `"rope_parameters":{"rope_type":"yarn","rope_theta":10000,"factor":4,"original_max_position_embeddings":1024}}`,
		`{` + head + `"original_max_position_embeddings":1024,"rope_parameters":{"rope_type":"yarn","rope_theta":10000,"factor":4}}`,
	} {
		c, err := config.Parse([]byte(cfg), nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewRope(c.Rope, c.HeadDim, c.MaxPositionEmbeddings)
		if err != nil {
			t.Fatalf("%s: %v", cfg, err)
		}
		tables = append(tables, r.Table(1))
	}
	for i, tab := range tables[1:] {
		if !reflect.DeepEqual(tab, tables[0]) {
			t.Errorf("spelling %d: %+v, want %+v", i+1, tab, tables[0])
		}
	}
	if tables[0].Scale == 1 {
		t.Error("yarn attention factor not applied")
	}
}

// TestDynamicNTK: the default table within max_position_embeddings; past it
// theta·(factor·L/max − (factor−1))^(d/(d−2)) for the pass's length L.
func TestDynamicNTK(t *testing.T) {
	c := config.Rope{Type: "dynamic", Theta: 10000, Factor: 2, PartialRotaryFactor: 1,
		Params: map[string]json.RawMessage{"factor": json.RawMessage("2")}}
	r, err := NewRope(c, 16, 20)
	if err != nil {
		t.Fatal(err)
	}
	def, _ := NewRope(config.Rope{Type: "default", Theta: 10000, PartialRotaryFactor: 1}, 16, 20)
	if !reflect.DeepEqual(r.Table(20), def.Table(20)) {
		t.Errorf("within max positions: %+v, want the default table", r.Table(20))
	}
	base := 10000 * math.Pow(2*24.0/20-1, 16.0/14)
	got := r.Table(24)
	for i, f := range got.InvFreq {
		want := 1 / math.Pow(base, float64(2*i)/16)
		if d := math.Abs(float64(f)-want) / want; d > 1e-6 {
			t.Errorf("InvFreq[%d] at length 24 = %v, want %v", i, f, want)
		}
	}
	if r.Table(24) != got || r.Table(25) == got {
		t.Error("tables are not per length")
	}
	if err := r.CheckPass(0, 24); err != nil {
		t.Errorf("one pass from 0: %v", err)
	}
	if err := r.CheckPass(16, 20); err != nil {
		t.Errorf("cached pass within max positions: %v", err)
	}
	if err := r.CheckPass(16, 21); err == nil || !strings.Contains(err.Error(), "max_position_embeddings 20") {
		t.Errorf("cached pass past max positions: error %v", err)
	}
	if err := def.CheckPass(16, 400); err != nil {
		t.Errorf("default rope: %v", err)
	}
	if _, err := NewRope(config.Rope{Type: "dynamic", Theta: 10000, Factor: 1, PartialRotaryFactor: 1, Params: map[string]json.RawMessage{}}, 16, 20); err == nil {
		t.Error("dynamic without factor accepted")
	}
}
