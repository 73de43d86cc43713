package assets

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStarterExtractsOnceAndCompletely(t *testing.T) {
	root := t.TempDir()
	dir, err := Starter(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json", "NOTICE"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	again, err := Starter(root)
	if err != nil || again != dir {
		t.Errorf("second Starter = %q, %v; want %q", again, err, dir)
	}
	leftovers, _ := filepath.Glob(filepath.Join(root, "hearth", ".starter-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary directories left behind: %v", leftovers)
	}
}
