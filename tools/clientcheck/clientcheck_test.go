// Package clientcheck runs the official OpenAI, Anthropic and Ollama
// JavaScript clients (check.mjs) against a real Hearth server serving the
// built-in starter model, with a Hugging Face cache that holds two more
// models pulled from stand-in hubs: chat-tiny with a tool-calling chat
// template, for the function-tool, copy and delete checks, and chat-tiny
// with a template that opens the thinking, for the reasoning checks (and
// more: a Whisper model, a chat model that hears, and an embedding model of
// Qwen3-Embedding's shape for the embeddings checks). Set it up
// with `npm ci` in tools/clientcheck.
package clientcheck

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"hearth/engine"
	"hearth/engine/pool"
	"hearth/engine/registry"
	"hearth/engine/registry/registrytest"
	"hearth/engine/whisper/whispertest"
	"hearth/internal/testenv"
	"hearth/internal/testmodels"
	"hearth/web"
)

// starterID is assets.StarterID; the test serves the repository's copy of
// the starter model (assets/starter) rather than extracting the embedded
// one.
const starterID = "hearth/starter"

// toolRepo is the cached model check.mjs may call tools on, copy and
// delete.
const toolRepo = "acme/tiny-tools"

// thinkRepo is the cached model whose replies check.mjs reads as thinking.
const thinkRepo = "acme/tiny-thinking"

// toolTemplate is a chat template that offers tools and writes Hermes
// <tool_call> markup, so the server treats the model as tool-capable.
const toolTemplate = "{%- if tools %}<|im_start|>system\n{% for t in tools %}{{ t.function.name }}\n{% endfor %}<|im_end|>\n{% endif %}" +
	"{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}" +
	"{%- for tc in m.tool_calls or [] %}<tool_call>{{ tc.function.name }}</tool_call>{% endfor %}<|im_end|>\n{% endfor %}" +
	"{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"

// thinkTemplate opens a <think> block in the generation prompt, as Qwen
// 3.5's template does: the whole of a reply that never closes it is
// thinking.
const thinkTemplate = "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}" +
	"{%- if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}"

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// tinyHub serves chat-tiny, with the chat template tmpl, as repo.
func tinyHub(t *testing.T, repo, tmpl string) *registrytest.Hub {
	t.Helper()
	h := registrytest.NewHub(t, repo)
	dir := filepath.Join(testmodels.Root(), "chat-tiny")
	for _, name := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		h.Files[name] = registrytest.File{Data: b, LFS: strings.HasSuffix(name, ".safetensors")}
	}
	cfg, _ := json.Marshal(map[string]any{"eos_token": "<|im_end|>", "chat_template": tmpl, "model_max_length": 256})
	h.Files["tokenizer_config.json"] = registrytest.File{Data: cfg}
	return h
}

// whisperRepo is the cached Whisper checkpoint check.mjs transcribes with.
const whisperRepo = "acme/tiny-whisper"

// whisperHub serves a tiny random-weight Whisper checkpoint as repo.
func whisperHub(t *testing.T, repo string) *registrytest.Hub {
	t.Helper()
	dir := t.TempDir()
	if err := whispertest.Write(dir, 13, false); err != nil {
		t.Fatal(err)
	}
	return dirHub(t, repo, dir)
}

// hearingRepo is the cached chat model that takes audio (the tiny Gemma 4
// with its audio tower) check.mjs sends input_audio parts and
// transcriptions to.
const hearingRepo = "acme/tiny-hearing"

// embedRepo is the cached embedding model (Qwen3-Embedding's shape)
// check.mjs embeds with.
const embedRepo = "acme/tiny-embed"

// treeHub serves every file under dir, folders included (a
// sentence-transformers checkpoint's 1_Pooling/config.json), as repo.
func treeHub(t *testing.T, repo, dir string) *registrytest.Hub {
	t.Helper()
	h := registrytest.NewHub(t, repo)
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		name, _ := filepath.Rel(dir, path)
		h.Files[filepath.ToSlash(name)] = registrytest.File{Data: b, LFS: strings.HasSuffix(name, ".safetensors")}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// dirHub serves every file of dir but its goldens as repo.
func dirHub(t *testing.T, repo, dir string) *registrytest.Hub {
	t.Helper()
	h := registrytest.NewHub(t, repo)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "golden.json" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		h.Files[e.Name()] = registrytest.File{Data: b, LFS: strings.HasSuffix(e.Name(), ".safetensors")}
	}
	return h
}

func TestOfficialClients(t *testing.T) {
	node, err := exec.LookPath("node")
	testenv.Need(t, "node (apt-get install nodejs)", err == nil)
	_, err1 := os.Stat(filepath.Join("node_modules", "openai", "package.json"))
	_, err2 := os.Stat(filepath.Join("node_modules", "@anthropic-ai", "sdk", "package.json"))
	_, err3 := os.Stat(filepath.Join("node_modules", "ollama", "package.json"))
	testenv.Need(t, "the openai, @anthropic-ai/sdk and ollama npm packages (run npm ci in tools/clientcheck)", err1 == nil && err2 == nil && err3 == nil)
	starter := filepath.Join(repoRoot(), "assets", "starter")
	if _, err := os.Stat(filepath.Join(starter, "model.safetensors")); err != nil {
		t.Fatalf("the starter model: %v", err)
	}

	cache := t.TempDir()
	for _, hub := range []*registrytest.Hub{tinyHub(t, toolRepo, toolTemplate), tinyHub(t, thinkRepo, thinkTemplate), whisperHub(t, whisperRepo),
		dirHub(t, hearingRepo, filepath.Join(testmodels.Root(), "gemma4_audio-f32")), treeHub(t, embedRepo, testmodels.EmbedDir(t, "lasttoken"))} {
		if err := registry.Pull(context.Background(), registry.PullOptions{Endpoint: hub.URL, CacheDir: cache, Repo: hub.Repo}, nil); err != nil {
			t.Fatal(err)
		}
	}
	reg := registry.New(cache).WithBuiltin(registry.Builtin{ID: starterID, Dir: starter}).WithAliases(filepath.Join(t.TempDir(), "aliases.json"))
	p := pool.New(pool.Options{
		// Parallel: the clients meet a server that batches (n choices and
		// concurrent requests decode together).
		Runner:  engine.RunnerOptions{Options: engine.Options{Threads: 1, Backend: "cpu"}, Parallel: 4},
		Default: pool.Model{ID: starterID, Dir: starter},
		Resolve: func(name string) (pool.Model, error) { // as app wires it
			rec, err := reg.ResolveName(name)
			if err != nil {
				return pool.Model{}, err
			}
			return pool.Model{ID: rec.Name(), Dir: rec.Dir, Shape: rec.Shape}, nil
		},
	})
	defer p.Close()
	s := web.New(web.Options{Pool: p, Registry: reg, Version: "clientcheck"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "check.mjs", "http://"+ln.Addr().String(), starterID, toolRepo, thinkRepo, whisperRepo, hearingRepo, embedRepo).CombinedOutput()
	t.Logf("check.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("check.mjs: %v", err)
	}
}
