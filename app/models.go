package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"hearth/assets"
	"hearth/engine"
	"hearth/engine/fit"
	"hearth/engine/pool"
	"hearth/engine/registry"
	"hearth/engine/tensor"
)

// registry is the process's model registry over the Hugging Face cache,
// made on first use, with the built-in starter model registered when it
// can be extracted, and the model catalog's short names ("llama3.2"). One registry keeps its memo of records, so the menu's
// listing every few seconds reads only what changed.
func (c *cli) registry() *registry.Registry {
	c.reg.once.Do(func() {
		home, _ := homeDir(c.env)
		c.reg.r = registry.New(c.hub().CacheDir).WithCatalog(c.catalog(nil)).WithAliases(c.aliasPath()).
			WithStores(registry.DefaultStores(c.env.Getenv, home))
		if def, err := c.defaultModel(); err == nil {
			c.reg.r.WithBuiltin(registry.Builtin{ID: def.ID, Dir: def.Dir})
		}
	})
	return c.reg.r
}

// resolveModel finds what the user named on the command line: a repo id
// in the cache, a short name, or a checkpoint directory. It refuses a model
// that cannot fit in memory, at the context, KV cache type and sequences
// fo asks for (a context of 0: the default a load uses), before any
// weight is read.
func (c *cli) resolveModel(name string, fo fit.Options) (pool.Model, error) {
	rec, err := c.registry().Resolve(name)
	if err != nil {
		return pool.Model{}, err
	}
	mem, err := fit.System()
	if err != nil {
		return modelOf(rec), nil // no reading of memory: the load itself will tell
	}
	return admit(rec, fo, mem)
}

// loadDraft loads the draft model --draft names, as --model is resolved
// (a cached repo, a short name or a directory, checked to fit), on the
// target's backend. It stays loaded for the process; each runner drafts
// with it through a sequence of its own where the tokenizers agree
// (engine.RunnerOptions.DraftModel).
func (c *cli) loadDraft(name string, opt engine.Options) (*engine.Model, error) {
	m, err := c.resolveModel(name, fit.Options{KV: opt.KV})
	if err != nil {
		return nil, err
	}
	return engine.Load(m.Dir, opt)
}

// registryResolve is the server's resolver: names from HTTP requests reach
// only models in the Hugging Face cache and the built-in one, never a path
// (registry.ResolveName); the --model directory is served as the default,
// by the id the server reports for it. It does no memory check: the pool
// judges each load against the models already resident.
func (c *cli) registryResolve(name string) (pool.Model, error) {
	rec, err := c.registry().ResolveName(name)
	if err != nil {
		return pool.Model{}, err
	}
	return modelOf(rec), nil
}

// modelOf is the loadable model a record names.
func modelOf(rec registry.Record) pool.Model {
	m := pool.Model{ID: rec.Name(), Dir: rec.Dir, Shape: rec.Shape}
	if rec.Revision == "" && !rec.Builtin && rec.Store == "" {
		m.ID = filepath.Base(rec.Dir)
	}
	return m
}

// admit turns a record into a loadable model after the memory check (for
// commands that load without the pool's admission: run, bench, and the
// server's default model before its pool exists).
func admit(rec registry.Record, fo fit.Options, mem fit.Memory) (pool.Model, error) {
	m := modelOf(rec)
	fo.ContextTokens = registry.LoadContext(rec, fo.ContextTokens)
	if _, err := fit.Admit(m.ID, rec.Shape, fo, mem); err != nil {
		return pool.Model{}, err
	}
	return m, nil
}

// ls prints the models in the Hugging Face cache (and the built-in one),
// or with --available the catalog of models to pull.
func (c *cli) ls(args []string) error {
	fs := c.flags("ls", "ls [flags]")
	ctx := fs.Int("ctx", 0, "judge fit at this context length (0 = the default a load uses)")
	kvFlag := fs.String("kv", "f32", "judge fit with this KV cache type: f32, q8 or q4 (as hearth serve --kv)")
	avail := fs.Bool("available", false, "list the model catalog instead: models to pull by short name, best fit for this machine first")
	if err := fs.Parse(args); err != nil {
		return err
	}
	kv, err := tensor.ParseKVType(*kvFlag)
	if err != nil {
		return fmt.Errorf("--kv: %w", err)
	}
	if *avail {
		return c.available(*ctx)
	}
	reg := c.registry()
	recs, err := reg.List()
	if err != nil {
		return err
	}
	var judge func(registry.Record) fit.Verdict
	if mem, err := fit.System(); err == nil {
		judge = registry.FitAtKV(mem, *ctx, kv)
	}
	if err := registry.Table(c.stdout, recs, judge); err != nil {
		return err
	}
	noun := "models"
	if len(recs) == 1 {
		noun = "model"
	}
	fmt.Fprintf(c.stdout, "\n%d %s (the Hugging Face cache is %s)\n", len(recs), noun, reg.CacheDir())
	if aliases, err := reg.Aliases(); err == nil && len(aliases) > 0 {
		fmt.Fprintf(c.stdout, "\naliases (POST /api/copy made them; hearth rm NAME removes one):\n")
		for _, a := range aliases {
			fmt.Fprintf(c.stdout, "  %s → %s\n", a.Name, a.Target)
		}
	}
	return nil
}

// hub reads the Hugging Face settings (HF_HOME, HF_HUB_CACHE, HF_ENDPOINT,
// HF_TOKEN) through the registry's one reader.
func (c *cli) hub() registry.Env {
	home, _ := os.UserHomeDir()
	return registry.HubEnv(c.env.Getenv, home)
}

// pullModel downloads name ("org/name", "org/name@revision", or a catalog
// short name such as "llama3.2" or "qwen3:8b") into the cache.
func (c *cli) pullModel(ctx context.Context, name string, progress func(registry.Progress)) error {
	target, err := c.registry().Catalog().PullTarget(name)
	if err != nil {
		return err
	}
	repo, rev, _ := strings.Cut(target, "@")
	env := c.hub()
	return registry.Pull(ctx, registry.PullOptions{Endpoint: env.Endpoint, Token: env.Token, CacheDir: env.CacheDir, Repo: repo, Revision: rev}, progress)
}

// pull downloads models into the Hugging Face cache and says how well
// Hearth supports each.
func (c *cli) pull(args []string) error {
	fs := c.flags("pull", "pull MODEL[@REVISION]... (a catalog name such as llama3.2, or a Hugging Face repo id)")
	catalog := fs.Bool("catalog", false, "update the model catalog (hearth ls --available) from the URL in HEARTH_CATALOG_URL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *catalog {
		return c.pullCatalog(ctx)
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("pull: name a model, e.g. hearth pull llama3.2 or hearth pull Qwen/Qwen3-0.6B (hearth ls --available lists the catalog)")
	}
	c.catalog(c.stderr) // say so if a fetched catalog is being ignored
	for _, name := range fs.Args() {
		bar := registry.NewBar(c.stderr)
		if err := c.pullModel(ctx, name, bar.Update); err != nil {
			bar.End() // the error goes on a line of its own
			return err
		}
		rec, err := c.registry().Resolve(name)
		switch {
		case err != nil:
			fmt.Fprintf(c.stdout, "%s: downloaded, but Hearth cannot serve it: %v\n", name, err)
		default:
			run := rec.Name()
			if !strings.Contains(name, "/") {
				run = name // a catalog name: it runs by that name too
			}
			fmt.Fprintf(c.stdout, "%s: %s tier (%s), %s; run: hearth run %s\n", rec.Name(), rec.Tier, rec.Family, fit.FormatBytes(rec.Bytes), run)
		}
	}
	return nil
}

// rm deletes models from the Hugging Face cache.
func (c *cli) rm(args []string) error {
	fs := c.flags("rm", "rm MODEL...")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("rm: name a model (hearth ls lists them)")
	}
	cache := c.hub().CacheDir
	for _, name := range fs.Args() {
		if pool.Untagged(name) == assets.StarterID {
			return fmt.Errorf("rm: %s is built into hearth and cannot be removed (it takes no space in the cache)", name)
		}
		if tool, rest, ok := strings.Cut(name, ":"); ok && (tool == "ollama" || tool == "lmstudio") {
			owner, how := "Ollama", "ollama rm "+rest
			if tool == "lmstudio" {
				owner, how = "LM Studio", "LM Studio's My Models deletes it"
			}
			return fmt.Errorf("rm: %s is %s's download, which hearth serves where it lies and does not delete (%s)", name, owner, how)
		}
		// An alias goes alone: the model it names stays.
		if removed, err := c.registry().RemoveAlias(name); err != nil {
			return fmt.Errorf("rm: %w", err)
		} else if removed {
			fmt.Fprintf(c.stdout, "deleted the alias %s\n", name)
			continue
		}
		if err := registry.Remove(cache, name); err != nil {
			return fmt.Errorf("rm: %w", err)
		}
		fmt.Fprintf(c.stdout, "deleted %s\n", name)
	}
	return nil
}
