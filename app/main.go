// Command hearth is Hearth's program: a local LLM engine. Until the HTTP
// server lands, it loads a model and prints what the engine sees and a
// greedy continuation of token ids.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"hearth/engine"
	"hearth/internal/testmodels"
)

const version = "0.1.0-dev"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "hearth:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	cmd := "info"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "version":
		fmt.Println("hearth", version)
		return nil
	case "info":
		return info(args)
	default:
		return fmt.Errorf("unknown command %q (commands: info, version)", cmd)
	}
}

func info(args []string) error {
	fs := flag.NewFlagSet("info", flag.ContinueOnError)
	ids := fs.String("prompt-ids", "1,17,42,7", "comma-separated prompt token ids")
	steps := fs.Int("n", 8, "greedy steps")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir := fs.Arg(0)
	if dir == "" {
		// The smallest oracle-checked test model (random weights: it
		// produces ids, not meaningful text).
		dir = testmodels.Root() + "/qwen3-q4g64"
	}
	var prompt []int32
	for _, s := range strings.Split(*ids, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("--prompt-ids: %q is not an integer", s)
		}
		prompt = append(prompt, int32(v))
	}
	m, err := engine.Load(dir, engine.Options{})
	if err != nil {
		return err
	}
	defer m.Close()
	c := m.Config
	fmt.Printf("model     %s\nfamily    %s (%s)\nfidelity  %s\nbackend   %s\nshape     %d layers, hidden %d, %d heads (%d kv) × %d, vocab %d\n",
		dir, m.Family.Name, m.Family.Tier, m.Family.Fidelity, m.Backend(), c.NumHiddenLayers, c.HiddenSize, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, c.VocabSize)
	seq, err := m.NewSequence(len(prompt) + *steps)
	if err != nil {
		return err
	}
	defer seq.Close()
	logits, err := seq.Forward(context.Background(), prompt, false)
	if err != nil {
		return err
	}
	var out []string
	for i := 0; i < *steps; i++ {
		best := 0
		for j, v := range logits {
			if v > logits[best] {
				best = j
			}
		}
		out = append(out, strconv.Itoa(best))
		if i+1 < *steps {
			if logits, err = seq.Forward(context.Background(), []int32{int32(best)}, false); err != nil {
				return err
			}
		}
	}
	fmt.Printf("greedy    %v → %s\n", prompt, strings.Join(out, ","))
	return nil
}
