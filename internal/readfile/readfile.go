// Package readfile reads small files that come from outside (a model's
// config, a processor's), never more than a bound.
package readfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Bounded reads path whole, refusing a file over max bytes without
// reading past max+1.
func Bounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: over the %d-byte limit", filepath.Base(path), max)
	}
	return b, nil
}
