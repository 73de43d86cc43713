package bench

import (
	"flag"
	"io"
	"strings"
	"testing"

	"hearth/engine/tensor"
)

// TestKVFlags: --kv reaches the engine options, --decode-ctx the decode,
// and bad values are errors that name the flag.
func TestKVFlags(t *testing.T) {
	parse := func(args ...string) (Options, error) {
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		opts := Flags(fs)
		if err := fs.Parse(args); err != nil {
			return Options{}, err
		}
		return opts(io.Discard)
	}
	opt, err := parse("--kv", "q8", "--decode-ctx", "2048")
	if err != nil || opt.Engine.KV != tensor.KVQ8 || opt.DecodeContext != 2048 {
		t.Errorf("--kv q8 --decode-ctx 2048: %+v, %v", opt.Engine, err)
	}
	if opt, err := parse(); err != nil || opt.Engine.KV != tensor.KVF32 || opt.DecodeContext != 0 {
		t.Errorf("defaults: kv %v, decode context %d, %v", opt.Engine.KV, opt.DecodeContext, err)
	}
	for _, args := range [][]string{{"--kv", "fp8"}, {"--decode-ctx", "-1"}} {
		if _, err := parse(args...); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%q: %v, want an error naming %s", args, err, args[0])
		}
	}
}
