// Command hearth is Hearth's program: a local LLM engine with an OpenAI-
// and Anthropic-compatible HTTP API.
//
//	hearth [serve]            start the server (the default command)
//	hearth menu               start the server with the menu-bar app (the default in Hearth.app)
//	hearth run MODEL [PROMPT] chat in the terminal, or answer PROMPT
//	hearth ls [--available]   list the models in the Hugging Face cache, or the catalog
//	hearth ps                 show what the running server has loaded
//	hearth pull MODEL         download a model (a catalog name such as llama3.2, or org/name)
//	hearth rm MODEL           delete a model from the Hugging Face cache
//	hearth version            print the version
//
// Settings enter here, from flags and HEARTH_* variables, and travel down
// as options; nothing below app/ reads the environment (except the
// registry's Hugging Face variables, read through registry.HubCache).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hearth/engine/registry"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
)

// version is the program's version (set at build time with
// -ldflags "-X main.version=…").
var version = "0.1.0-dev"

func main() {
	c := &cli{ctx: context.Background(), env: osEnv{}, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	if err := c.run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage was asked for and printed
		}
		fmt.Fprintln(os.Stderr, "hearth:", err)
		os.Exit(1)
	}
}

// command is one subcommand.
type command struct {
	name, usage, summary string
	run                  func(c *cli, args []string) error
}

// cli is what every command gets: its context, environment and streams.
type cli struct {
	ctx    context.Context // cancelled to stop a command (tests); serve adds SIGINT/SIGTERM
	env    getenv
	stdin  *os.File
	stdout io.Writer
	stderr io.Writer

	reg struct { // the process's one registry (registry())
		once sync.Once
		r    *registry.Registry
	}
}

// getenv reads a variable; tests pass a map instead of the process
// environment.
type getenv interface{ Getenv(string) string }

type osEnv struct{}

func (osEnv) Getenv(k string) string { return os.Getenv(k) }

func commands() []command {
	return []command{
		{"serve", "serve [flags]", "start the HTTP server (the default)", (*cli).serve},
		{"menu", "menu [flags]", "start the server with the menu-bar app (the default in Hearth.app)", (*cli).menu},
		{"run", "run [flags] MODEL [PROMPT]", "chat with MODEL in the terminal, or answer PROMPT", (*cli).runModel},
		{"ls", "ls [--available]", "list the models in the Hugging Face cache (--available: the catalog of models to pull)", (*cli).ls},
		{"ps", "ps [flags]", "show what the running server has loaded", (*cli).ps},
		{"pull", "pull MODEL", "download MODEL (a catalog name such as llama3.2, or org/name) into the Hugging Face cache", (*cli).pull},
		{"rm", "rm MODEL", "delete MODEL from the Hugging Face cache", (*cli).rm},
		{"bench", "bench [flags]", "measure prefill and decode speed on a model or a synthetic one", (*cli).bench},
		{"version", "version", "print the version", (*cli).version},
	}
}

// context is the command's context.
func (c *cli) context() context.Context { return c.ctx }

// run dispatches args to a command.
func (c *cli) run(args []string) error {
	args = dropFinderArgs(args)
	if len(args) > 0 {
		switch args[0] {
		case "help", "--help", "-help", "-h":
			c.usage(c.stdout)
			return nil
		case "--version", "-version", "-v":
			return c.version(nil)
		}
	}
	name := defaultCommand(executable())
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	var names []string
	for _, cmd := range commands() {
		if cmd.name == name {
			return cmd.run(c, args)
		}
		names = append(names, cmd.name)
	}
	c.usage(c.stderr)
	return fmt.Errorf("unknown command %q (commands: %s)", name, strings.Join(names, ", "))
}

func (c *cli) usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: hearth COMMAND [flags]")
	fmt.Fprintln(w)
	for _, cmd := range commands() {
		fmt.Fprintf(w, "  %-28s %s\n", cmd.usage, cmd.summary)
	}
	fmt.Fprintln(w, "\nRun hearth COMMAND -h for a command's flags.")
}

// flags makes a command's flag set, printing its usage to stderr.
func (c *cli) flags(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		fmt.Fprintf(c.stderr, "Usage: hearth %s\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

func (c *cli) version(args []string) error {
	fmt.Fprintf(c.stdout, "hearth %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
