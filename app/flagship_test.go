package main

import (
	"path/filepath"
	"strings"
	"testing"

	"hearth/internal/testmodels"
)

// TestLsFlagship: the targeted ports' tiny checkpoints, placed in a Hugging
// Face cache, are listed as targeted (not generic, not unsupported).
func TestLsFlagship(t *testing.T) {
	home := t.TempDir()
	repos := map[string]string{"google/gemma-4-tiny": "gemma4-f32", "google/gemma-4-tiny-moe": "gemma4_moe-q4g64",
		"Qwen/Qwen3.5-tiny": "qwen3_5-f32", "Qwen/Qwen3.5-tiny-moe": "qwen3_5_moe-q4g64"}
	for repo, model := range repos {
		cacheRepo(t, filepath.Join(home, "hub"), repo, filepath.Join(testmodels.Root(), model))
	}
	c, out, _ := newCLI(t, "", mapEnv{"HF_HOME": home})
	if err := c.run([]string{"ls"}); err != nil {
		t.Fatal(err)
	}
	for repo := range repos {
		var line string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, repo+" ") || strings.HasSuffix(l, repo) {
				line = l
			}
		}
		if !strings.Contains(line, "targeted") {
			t.Errorf("%s is not listed as targeted:\n%s", repo, out.String())
		}
	}
}
