package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"hearth/engine"
	"hearth/engine/sample"
	"hearth/web"
)

// chat is a conversation with a loaded model in the terminal.
type chat struct {
	c       *cli
	r       *engine.Runner
	opt     sample.Options
	max     int
	verbose bool
	system  string
	history []map[string]string // user and assistant turns
}

func (c *cli) runModel(args []string) error {
	fs := c.flags("run", "run [flags] MODEL [PROMPT]")
	rf := c.runnerFlags(fs)
	// Unset sampling flags take the model's defaults, as the server does.
	temp := fs.Float64("temperature", 0, "sampling temperature, 0 = greedy (default: the model's generation_config.json, else 1, as the server)")
	topP := fs.Float64("top-p", 0, "nucleus sampling probability mass, 1 = off (default: the model's, else off)")
	topK := fs.Int("top-k", 0, "sample among the k most likely tokens, 0 = off (default: the model's, else off)")
	seed := fs.Int64("seed", -1, "random seed (-1 = random)")
	maxTokens := fs.Int("max-tokens", 0, "most tokens per answer (0 = until the context is full)")
	system := fs.String("system", "", "system prompt")
	verbose := fs.Bool("verbose", false, "print token counts and speed after each answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return errors.New("run: MODEL is required (a model you pulled, by its catalog name or repo id, a checkpoint directory, or a .gguf file)")
	}
	var sp web.SamplingParams
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "temperature":
			sp.Temperature = temp
		case "top-p":
			sp.TopP = topP
		case "top-k":
			sp.TopK = topK
		}
	})
	if *seed >= 0 {
		sp.Seed = seed
	}
	if _, err := web.ChatSampling(sp, sample.Options{}); err != nil { // a bad flag fails before the load
		return fmt.Errorf("run: %w", err)
	}
	prompt := strings.Join(fs.Args()[1:], " ")
	if !isTerminal(c.stdin) {
		in, err := io.ReadAll(c.stdin)
		if err != nil {
			return fmt.Errorf("run: read stdin: %w", err)
		}
		if s := strings.TrimSpace(string(in)); s != "" {
			if prompt != "" {
				prompt += "\n\n"
			}
			prompt += s
		}
		if prompt == "" {
			return errors.New("run: no prompt (stdin was empty and no PROMPT was given)")
		}
	}
	fo, err := rf.fit()
	if err != nil {
		return err
	}
	m, err := c.resolveModel(fs.Arg(0), fo)
	if err != nil {
		return err
	}
	opt, err := rf.options(1)
	if err != nil {
		return err
	}
	opt.ID = m.ID
	r, err := engine.Open(m.Dir, opt)
	if err != nil {
		return err
	}
	defer r.Close()

	so, err := web.ChatSampling(sp, r.Defaults())
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	ch := &chat{c: c, r: r, opt: so, max: *maxTokens, verbose: *verbose, system: *system}
	if prompt != "" {
		return ch.say(c.context(), prompt)
	}
	return ch.repl()
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

const replHelp = `Commands:
  /clear   forget the conversation
  /bye     leave (Ctrl-D too)
  """      start or end a multi-line message
Ctrl-C stops an answer.`

// repl reads messages from the terminal until /bye or end of input.
func (ch *chat) repl() error {
	out := ch.c.stdout
	info := ch.r.Info()
	fmt.Fprintf(out, "%s (%s, %s). Type /? for help.\n", info.ID, info.Family, info.Backend)
	in := bufio.NewScanner(ch.c.stdin)
	in.Buffer(make([]byte, 64<<10), 4<<20)
	for {
		fmt.Fprint(out, ">>> ")
		if !in.Scan() {
			fmt.Fprintln(out)
			return in.Err()
		}
		line := in.Text()
		switch strings.TrimSpace(line) {
		case "":
			continue
		case "/bye", "/exit", "/quit":
			return nil
		case "/clear":
			ch.history = ch.history[:0]
			fmt.Fprintln(out, "(conversation cleared)")
			continue
		case "/?", "/help":
			fmt.Fprintln(out, replHelp)
			continue
		case `"""`:
			var lines []string
			for in.Scan() && strings.TrimSpace(in.Text()) != `"""` {
				lines = append(lines, in.Text())
			}
			line = strings.Join(lines, "\n")
		}
		ctx, stop := signal.NotifyContext(ch.c.context(), os.Interrupt)
		err := ch.say(ctx, line)
		stop()
		var ce *engine.ContextError
		switch {
		case errors.Is(err, context.Canceled):
			fmt.Fprintln(out, "^C")
		case errors.As(err, &ce):
			fmt.Fprintf(out, "%v; /clear starts over\n", err)
		case err != nil:
			return err
		}
	}
}

// say sends a user message and streams the answer to stdout. The
// exchange joins the history only when the answer completes.
func (ch *chat) say(ctx context.Context, text string) error {
	turn := map[string]string{"role": "user", "content": text}
	var msgs []map[string]string
	if ch.system != "" {
		msgs = append(msgs, map[string]string{"role": "system", "content": ch.system})
	}
	msgs = append(append(msgs, ch.history...), turn)
	raw, err := json.Marshal(msgs)
	if err != nil {
		return err
	}
	var answer strings.Builder
	req := engine.Request{Messages: raw, MaxTokens: ch.max, Sample: ch.opt}
	start := time.Now()
	thinking := false // the thinking is being shown: as ollama run, between markers
	u, err := ch.r.Generate(ctx, req, func(d engine.Delta) error {
		var out strings.Builder
		if d.Thinking != "" && !thinking {
			thinking = true
			out.WriteString("Thinking...\n")
		}
		out.WriteString(d.Thinking)
		if d.Content != "" && thinking {
			thinking = false
			out.WriteString("\n...done thinking.\n\n")
		}
		out.WriteString(d.Content)
		answer.WriteString(d.Content)
		_, err := io.WriteString(ch.c.stdout, out.String())
		return err
	})
	if thinking {
		fmt.Fprint(ch.c.stdout, "\n...done thinking.\n")
	}
	if answer.Len() > 0 && !strings.HasSuffix(answer.String(), "\n") {
		fmt.Fprintln(ch.c.stdout)
	}
	if err != nil {
		return err
	}
	ch.history = append(ch.history, turn, map[string]string{"role": "assistant", "content": answer.String()})
	if ch.verbose {
		rate := 0.0
		if u.DecodeDuration > 0 && u.CompletionTokens > 1 {
			rate = float64(u.CompletionTokens-1) / u.DecodeDuration.Seconds()
		}
		fmt.Fprintf(ch.c.stderr, "prompt %d tokens in %s, answer %d tokens at %.1f tokens/s, first token after %s, total %s (%s)\n",
			u.PromptTokens, u.PrefillDuration.Round(time.Millisecond), u.CompletionTokens, rate,
			u.TimeToFirstToken.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), u.FinishReason)
	}
	return nil
}
