package gguf

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the header parser: it must return a
// File whose every tensor lies inside the file, or an error wrapping
// ErrFormat; never panic or allocate by a declared count.
func FuzzParse(f *testing.F) {
	f.Add(writeSample(f, sampleKV(), sampleTensors()))
	f.Add(writeSample(f, sampleKV()[:3], nil))
	f.Add(writeSample(f, nil, sampleTensors()[:1]))
	f.Add([]byte("GGUF\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		for _, ti := range file.Tensors {
			if ti.Offset < file.DataStart || ti.Size < 0 || ti.Offset+ti.Size > int64(len(b)) {
				t.Fatalf("tensor %q at %d+%d outside the %d-byte file (data at %d)", ti.Name, ti.Offset, ti.Size, len(b), file.DataStart)
			}
		}
	})
}
