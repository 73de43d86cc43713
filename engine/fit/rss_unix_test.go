//go:build unix

package fit_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// peakRSS is the process's peak resident set. File-backed pages of the
// mmap'd weights count once touched. On Linux it is VmHWM from
// /proc/self/status: getrusage's ru_maxrss would carry the parent's peak
// across fork+exec. Elsewhere it is ru_maxrss (bytes on macOS).
func peakRSS() (int64, bool) {
	if runtime.GOOS == "linux" {
		return procStatus("VmHWM")
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss), true
	}
	return int64(ru.Maxrss) * 1024, true
}

// currentRSS is the resident set now (VmRSS on Linux; the peak so far
// elsewhere, which at a process's start is the same thing).
func currentRSS() (int64, bool) {
	if runtime.GOOS == "linux" {
		return procStatus("VmRSS")
	}
	return peakRSS()
}

// procStatus reads one "Key:   N kB" line of /proc/self/status, in bytes.
func procStatus(key string) (int64, bool) {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != key {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		return n * 1024, err == nil
	}
	return 0, false
}

// detail says where the resident memory is now: anonymous (heap, KV) and
// file-backed (mmap'd weights), and the Go heap's own view.
func detail() string {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	anon, _ := procStatus("RssAnon")
	file, _ := procStatus("RssFile")
	return fmt.Sprintf("RssAnon %.1f MB, RssFile %.1f MB, HeapSys %.1f MB, HeapInuse %.1f MB, NumGC %d",
		float64(anon)/1e6, float64(file)/1e6, float64(ms.HeapSys)/1e6, float64(ms.HeapInuse)/1e6, ms.NumGC)
}
