// Read-only file mapping on unix (linux, darwin) through syscall.Mmap.

//go:build unix

package weights

import (
	"fmt"
	"path/filepath"
	"syscall"
)

// mapFile maps the file at path read-only. An empty file maps to an empty
// slice (mmap refuses zero lengths).
func mapFile(path string) ([]byte, error) {
	f, size, err := openSized(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size == 0 {
		return []byte{}, nil
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", filepath.Base(path), err)
	}
	return data, nil
}

// unmapFile releases a mapping made by mapFile.
func unmapFile(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	return syscall.Munmap(data)
}
