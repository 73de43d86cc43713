// Command benchbin is `hearth bench` alone: the same flags
// (engine/bench.Flags) over the same bench.Run, without the rest of the
// app (server, web UI, tray, the embedded starter model), so the binary
// that travels to the device machine is small (targeted.sh beside this).
// --model takes a checkpoint directory only.
//
//	benchbin [bench] --synthetic gemma-4-e4b --backend gpu --json
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"hearth/engine/bench"
)

func main() {
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	model := fs.String("model", "", "a checkpoint directory")
	options := bench.Flags(fs)
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "bench" { // spelled like `hearth bench`
		args = args[1:]
	}
	fs.Parse(args)
	opt, err := options(os.Stderr)
	if err == nil && (*model == "") == (opt.Synthetic == "") {
		err = fmt.Errorf("bench: give exactly one of --model and --synthetic")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	opt.Model = *model
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := bench.Run(ctx, opt, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
