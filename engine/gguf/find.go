package gguf

import (
	"io"
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
// path a user gives: path itself when it is a GGUF file (named .gguf, or
// a file that starts with GGUF's magic: Ollama's blobs have no
// extension), or the one model a folder without config.json holds
// (Models). file is "" when path names none; models lists a folder's
// GGUF models when it holds several, for the error that asks to name one.
func Find(path string) (file string, models []string) {
	if isFile(path) || hasMagic(path) {
		return path, nil
	}
	if _, err := os.Stat(filepath.Join(path, "config.json")); err == nil {
		return "", nil
	}
	models = Models(path)
	if len(models) == 1 {
		return filepath.Join(path, models[0]), nil
	}
	return "", models
}

// Models lists the GGUF models in folder dir, sorted: its .gguf files, the
// first of a split (NAME-00001-of-0000N.gguf) standing for the split,
// llama.cpp's mmproj-* projector files set aside. Nil when there are none
// or dir cannot be read.
func Models(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var models []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(strings.ToLower(name), "mmproj") {
			continue
		}
		if m := laterSplit.FindStringSubmatch(name); m != nil && m[1] != "00001" {
			continue
		}
		if isFile(filepath.Join(dir, name)) {
			models = append(models, name)
		}
	}
	sort.Strings(models)
	return models
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

// hasMagic reports whether path is a regular file that starts with
// GGUF's magic.
func hasMagic(path string) bool {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [4]byte
	_, err = io.ReadFull(f, head[:])
	return err == nil && string(head[:]) == "GGUF"
}
