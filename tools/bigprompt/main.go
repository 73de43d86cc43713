// Command bigprompt measures what one huge chat message costs a runner: the
// time to its answer (a context error, for a small model), the bytes
// allocated, and the process's RSS before, right after and 10 s later
// (docs/design/hardening.md).
//
//	go run ./tools/bigprompt testdata/models/chat-tiny
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"hearth/engine"
)

// rss is /proc/self/status's VmRSS line (Linux).
func rss() string {
	b, _ := os.ReadFile("/proc/self/status")
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS") {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(out, " ")
}

func main() {
	r, err := engine.Open(os.Args[1], engine.RunnerOptions{ContextTokens: 2048})
	if err != nil {
		panic(err)
	}
	size := 32 << 20
	msg, _ := json.Marshal([]map[string]string{{"role": "user", "content": strings.Repeat("hello world, this is a long message. ", size/37+1)[:size]}})
	runtime.GC()
	fmt.Println("before request:", rss())
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	_, err = r.Generate(context.Background(), engine.Request{Messages: msg}, func(engine.Delta) error { return nil })
	el := time.Since(start)
	runtime.ReadMemStats(&ms1)
	fmt.Printf("request took %v: %v\nallocated during request: %d MB\n", el.Round(time.Millisecond), err, (ms1.TotalAlloc-ms0.TotalAlloc)>>20)
	fmt.Println("right after:", rss())
	time.Sleep(10 * time.Second)
	fmt.Println("10 s later:", rss())
	r.Close()
}
