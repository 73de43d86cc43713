package bench

import (
	"bytes"
	"testing"
)

// TestStream checks the vector streaming read against the portable one.
func TestStream(t *testing.T) {
	buf := make([]byte, 128*37)
	for i := range buf {
		buf[i] = byte(i*7 + i>>8)
	}
	if got, want := stream(buf), streamGo(buf); got != want {
		t.Errorf("stream = %d, streamGo = %d", got, want)
	}
	if got := stream(bytes.Repeat([]byte{1}, 0)); got != 0 {
		t.Errorf("stream(empty) = %d, want 0", got)
	}
}

func TestMeasureBandwidth(t *testing.T) {
	bw := MeasureBandwidth(4<<20, 2, 3)
	if bw.GBPerS <= 0 || len(bw.Passes) != 3 || bw.Threads != 2 || bw.Bytes != 4<<20 {
		t.Errorf("MeasureBandwidth = %+v", bw)
	}
}

func BenchmarkBandwidth(b *testing.B) {
	for i := 0; i < b.N; i++ {
		bw := MeasureBandwidth(1<<30, 2, 5)
		b.ReportMetric(bw.GBPerS, "GB/s")
	}
}
