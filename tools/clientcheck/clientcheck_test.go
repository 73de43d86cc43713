// Package clientcheck runs the official OpenAI, Anthropic and Ollama
// JavaScript clients (check.mjs) against a real Hearth server serving chat-tiny. Set it
// up with `npm ci` in tools/clientcheck.
package clientcheck

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"hearth/engine"
	"hearth/engine/pool"
	"hearth/internal/testenv"
	"hearth/internal/testmodels"
	"hearth/web"
)

func TestOfficialClients(t *testing.T) {
	node, err := exec.LookPath("node")
	testenv.Need(t, "node (apt-get install nodejs)", err == nil)
	_, err1 := os.Stat(filepath.Join("node_modules", "openai", "package.json"))
	_, err2 := os.Stat(filepath.Join("node_modules", "@anthropic-ai", "sdk", "package.json"))
	_, err3 := os.Stat(filepath.Join("node_modules", "ollama", "package.json"))
	testenv.Need(t, "the openai, @anthropic-ai/sdk and ollama npm packages (run npm ci in tools/clientcheck)", err1 == nil && err2 == nil && err3 == nil)

	p := pool.New(pool.Options{
		Runner:  engine.RunnerOptions{Options: engine.Options{Threads: 1}},
		Default: pool.Model{ID: "chat-tiny", Dir: filepath.Join(testmodels.Root(), "chat-tiny")},
	})
	defer p.Close()
	s := web.New(web.Options{Pool: p, Version: "clientcheck"})
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

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "check.mjs", "http://"+ln.Addr().String(), "chat-tiny").CombinedOutput()
	t.Logf("check.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("check.mjs: %v", err)
	}
}
