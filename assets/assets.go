// Package assets holds what the Hearth binary carries: the starter model
// served when no other model is configured (and, with the menu-bar app, its
// icons).
package assets

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// StarterID is the name the starter model is served under.
const StarterID = "hearth/starter"

// Starter returns a directory holding the starter model (config, MLX 8-bit
// weights, tokenizer, chat template, NOTICE), extracting the embedded copy
// under cacheRoot/hearth/ on first use. Weights are read through mmap, so
// they need a real file; the directory name carries a hash of the contents,
// so a new binary never reads an old model.
func Starter(cacheRoot string) (string, error) {
	sum, err := starterDigest()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cacheRoot, "hearth", "starter-"+sum)
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("starter model: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".starter-*")
	if err != nil {
		return "", fmt.Errorf("starter model: %w", err)
	}
	defer os.RemoveAll(tmp)
	entries, err := fs.ReadDir(starter, "starter")
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		raw, err := starter.ReadFile("starter/" + e.Name())
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(tmp, e.Name()), raw, 0o644); err != nil {
			return "", fmt.Errorf("starter model: %w", err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process may have extracted it first.
		if _, statErr := os.Stat(filepath.Join(dir, "model.safetensors")); statErr == nil {
			return dir, nil
		}
		return "", fmt.Errorf("starter model: %w", err)
	}
	return dir, nil
}

// starterDigest is digest, computed once per process: the app resolves the
// starter at every registry it builds, and hashing 24 MB each time showed.
var starterDigest = sync.OnceValues(digest)

// digest hashes the embedded files (names and contents).
func digest() (string, error) {
	h := sha256.New()
	entries, err := fs.ReadDir(starter, "starter")
	if errors.Is(err, fs.ErrNotExist) {
		return "", errors.New("starter model: this binary was built without it (-tags nostarter)")
	}
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		raw, err := starter.ReadFile("starter/" + e.Name())
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", e.Name(), len(raw))
		h.Write(raw)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}
