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

// allocAnon returns n zeroed bytes of anonymous memory outside the Go
// heap, for freeAnon.
func allocAnon(n int) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("allocate %d bytes: %w", n, err)
	}
	return b, nil
}

func freeAnon(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return syscall.Munmap(b)
}
