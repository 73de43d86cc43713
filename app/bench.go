package main

import (
	"fmt"

	"hearth/engine/bench"
	"hearth/engine/fit"
)

// bench measures prefill and decode speed, time to first token, peak
// memory and decode against the machine's read-bandwidth bound, on a model
// or on a synthetic model of a real checkpoint's shape (engine/bench).
func (c *cli) bench(args []string) error {
	fs := c.flags("bench", "bench [flags]")
	model := fs.String("model", "", "a model (repo id in the cache, a checkpoint directory, or a .gguf file)")
	options := bench.Flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	opt, err := options(c.stderr)
	if err != nil {
		return err
	}
	switch {
	case (*model == "") == (opt.Synthetic == ""):
		return fmt.Errorf("bench: give exactly one of --model and --synthetic")
	case *model != "":
		m, err := c.resolveModel(*model, fit.Options{KV: opt.Engine.KV})
		if err != nil {
			return err
		}
		opt.Model = m.Dir
	}
	_, err = bench.Run(c.context(), opt, c.stdout)
	return err
}
