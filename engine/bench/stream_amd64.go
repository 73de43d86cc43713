package bench

import "golang.org/x/sys/cpu"

// stream reads buf (whose length is a multiple of 128) and returns a
// checksum of it, with 32-byte vector loads where the CPU has AVX2.
func stream(buf []byte) uint64 {
	if cpu.X86.HasAVX2 && len(buf) > 0 {
		return streamAVX2(&buf[0], len(buf))
	}
	return streamGo(buf)
}

//go:noescape
func streamAVX2(p *byte, n int) uint64
