package embedding

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPool(t *testing.T) {
	h := []float32{1, 2, 3, 4, 3, 0} // 3 tokens of 2
	c := &Config{Pooling: Mean}
	if v, _ := c.Pool(h, 2); v[0] != 7.0/3 || v[1] != 2 {
		t.Errorf("mean = %v", v)
	}
	c = &Config{Pooling: LastToken, Normalize: true}
	if v, _ := c.Pool(h, 2); v[0] != 1 || v[1] != 0 {
		t.Errorf("last token normalized = %v", v)
	}
	if _, err := c.Pool(h, 4); err == nil {
		t.Error("6 values as rows of 4: no error")
	}
	v := Truncate([]float32{3, 4, 12}, 2)
	if len(v) != 2 || math.Abs(float64(v[0])-0.6) > 1e-7 || math.Abs(float64(v[1])-0.8) > 1e-7 {
		t.Errorf("truncate = %v", v)
	}
	z := []float32{0, 0}
	if Normalize(z); z[0] != 0 || z[1] != 0 {
		t.Errorf("zero vector = %v", z)
	}
}

func TestRead(t *testing.T) {
	tr := `{"path":"","type":"sentence_transformers.models.Transformer"}`
	pool := `{"path":"1_Pooling","type":"sentence_transformers.models.Pooling"}`
	norm := `{"path":"2_Normalize","type":"sentence_transformers.models.Normalize"}`
	for _, tc := range []struct {
		name, modules, pooling, readme string
		want                           Config
		err                            string
	}{
		{"qwen3-embedding", "[" + tr + "," + pool + "," + norm + "]", `{"pooling_mode_lasttoken": true, "pooling_mode_mean_tokens": false}`, "| MRL Support |", Config{LastToken, true, true}, ""},
		{"mean, no normalize", "[" + tr + "," + pool + "]", `{"pooling_mode_mean_tokens": true}`, "", Config{Mean, false, false}, ""},
		{"matryoshka tag", "[" + tr + "," + pool + "]", `{"pooling_mode_mean_tokens": true}`, "tags:\n- loss:MatryoshkaLoss\n", Config{Mean, false, true}, ""},
		{"no pooling", "[" + tr + "," + norm + "]", "", "", Config{}, "Normalize before Pooling"},
		{"dense", "[" + tr + "," + pool + `,{"path":"2_Dense","type":"sentence_transformers.models.Dense"}]`, `{"pooling_mode_mean_tokens": true}`, "", Config{}, `module "2_Dense"`},
		{"cls", "[" + tr + "," + pool + "]", `{"pooling_mode_cls_token": true}`, "", Config{}, "pooling_mode_cls_token is not supported"},
		{"two modes", "[" + tr + "," + pool + "]", `{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true}`, "", Config{}, "2 pooling modes"},
		{"no pooling config", "[" + tr + "," + pool + "]", "", "", Config{}, "the Pooling module's config"},
		{"not json", "{", "", "", Config{}, "modules.json"},
		{"escape", "[" + tr + `,{"path":"../../etc","type":"sentence_transformers.models.Pooling"}]`, "", "", Config{}, "the Pooling module's config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "modules.json"), []byte(tc.modules), 0o644)
			if tc.pooling != "" {
				os.Mkdir(filepath.Join(dir, "1_Pooling"), 0o755)
				os.WriteFile(filepath.Join(dir, "1_Pooling", "config.json"), []byte(tc.pooling), 0o644)
			}
			if tc.readme != "" {
				os.WriteFile(filepath.Join(dir, "README.md"), []byte(tc.readme), 0o644)
			}
			c, err := Read(dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || *c != tc.want {
				t.Fatalf("Read = %+v, %v; want %+v", c, err, tc.want)
			}
		})
	}
	if _, err := Read(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no modules.json") {
		t.Errorf("empty dir: %v", err)
	}
}
