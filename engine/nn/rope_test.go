package nn

import (
	"math"
	"strings"
	"testing"

	"hearth/engine/config"
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
