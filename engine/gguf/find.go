package gguf

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// laterSplit matches the splits after the first (NAME-0000K-of-0000N.gguf,
// K > 1), which Open finds from the first.
var laterSplit = regexp.MustCompile(`-(\d{5})-of-\d{5}\.gguf$`)

// Find says which GGUF model path names, for the code that reads a
// checkpoint's parts (weights, tokenizer, chat template) from the one
// path a user gives: path itself when it is a .gguf file, or the one
// model a folder without config.json holds (a file, or the first of its
// splits; llama.cpp's mmproj-* projector files set aside). file is ""
// when path names none; models lists a folder's GGUF models (sorted) when
// it holds several, for the error that asks to name one.
func Find(path string) (file string, models []string) {
	if isFile(path) {
		return path, nil
	}
	if _, err := os.Stat(filepath.Join(path, "config.json")); err == nil {
		return "", nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return "", nil
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(strings.ToLower(name), "mmproj") {
			continue
		}
		if m := laterSplit.FindStringSubmatch(name); m != nil && m[1] != "00001" {
			continue
		}
		if isFile(filepath.Join(path, name)) {
			models = append(models, name)
		}
	}
	if len(models) == 1 {
		return filepath.Join(path, models[0]), nil
	}
	sort.Strings(models)
	return "", models
}

// isFile reports whether path names a regular file (through links)
// ending in .gguf.
func isFile(path string) bool {
	if !strings.EqualFold(filepath.Ext(path), ".gguf") {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}
