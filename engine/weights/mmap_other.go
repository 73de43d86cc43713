// File reading where there is no unix mmap: the whole file is read into
// memory, which is correct but costs RAM.

//go:build !unix

package weights

import "io"

// mapFile reads the file at path into memory.
func mapFile(path string) ([]byte, error) {
	f, size, err := openSized(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, err
	}
	return data, nil
}

// unmapFile releases nothing: the data is ordinary memory.
func unmapFile([]byte) error { return nil }

// allocAnon falls back to the Go heap where there is no unix mmap.
func allocAnon(n int) ([]byte, error) { return make([]byte, n), nil }

func freeAnon([]byte) error { return nil }
