package tokenizer

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"hearth/internal/testenv"
)

// benchSeed and benchBytes make the 1 MB text tools/tokgold/bench.js times
// the reference on.
const (
	benchSeed  = 2
	benchBytes = 1 << 20
)

// BenchmarkEncode1MB encodes 1 MB of mixed text (prose, code, CJK, emoji,
// numbers) with each tokenizer, as tools/tokgold/bench.js does.
func BenchmarkEncode1MB(b *testing.B) {
	text := readCorpus(b).mixedText(benchSeed, benchBytes)
	for _, name := range allTokenizers {
		b.Run(name, func(b *testing.B) {
			tk := loadFresh(b, name)
			b.SetBytes(int64(len(text)))
			cpu := cpuTime()
			for b.Loop() {
				tk.Encode(text, false)
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkDecode1MB decodes the ids of the same text.
func BenchmarkDecode1MB(b *testing.B) {
	text := readCorpus(b).mixedText(benchSeed, benchBytes)
	for _, name := range realTokenizers {
		b.Run(name, func(b *testing.B) {
			tk := loadFresh(b, name)
			ids := tk.Encode(text, false)
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for b.Loop() {
				tk.Decode(ids, false)
			}
		})
	}
}

// BenchmarkLoadGemma3 loads Gemma 3's 33 MB tokenizer.json.
func BenchmarkLoadGemma3(b *testing.B) {
	benchmarkLoad(b, "gemma3")
}

// BenchmarkLoad loads each real tokenizer.
func BenchmarkLoad(b *testing.B) {
	for _, name := range realTokenizers {
		b.Run(name, func(b *testing.B) { benchmarkLoad(b, name) })
	}
}

func benchmarkLoad(b *testing.B, name string) {
	loadFresh(b, name) // skips when absent
	runtime.GC()
	cpu := cpuTime()
	for b.Loop() {
		if _, err := Load(tokenizerDir(name)); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// loadFresh loads a tokenizer for one benchmark, outside the tests' cache,
// so that earlier benchmarks leave no large live heap behind.
func loadFresh(b *testing.B, name string) *Tokenizer {
	dir := tokenizerDir(name)
	_, err := os.Stat(filepath.Join(dir, "tokenizer.json"))
	testenv.Need(b, dir+"/tokenizer.json (run tools/fetch-tokenizers.sh)", err == nil)
	tk, err := Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	return tk
}

// cpuTime returns the CPU time (user and system, all threads) this process
// has used. On a shared machine it is steadier than the wall clock, and
// tools/tokgold/bench.js reports the same measure for the reference.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports CPU milliseconds per operation since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}
