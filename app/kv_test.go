package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"hearth/engine/fit"
	"hearth/engine/registry"
	"hearth/engine/tensor"
	"hearth/internal/testmodels"
)

// TestServeKVQ8 runs `hearth serve --kv q8` and chats with it over HTTP;
// /api/ps reports the q8 cache.
func TestServeKVQ8(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	c, _, errs := newCLI(t, "", mapEnv{"HEARTH_PORT": "0"})
	c.ctx, c.stdout = ctx, pw
	done := make(chan error, 1)
	dir := filepath.Join(testmodels.Root(), "chat-tiny")
	go func() {
		done <- c.run([]string{"serve", "--threads", "1", "--quiet", "--backend", "cpu", "--kv", "q8", "--model", dir})
		pw.Close()
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	url := ""
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			go io.Copy(io.Discard, pr)
			break
		}
	}
	if url == "" {
		t.Fatalf("no banner; serve: %v; stderr %s", <-done, errs.String())
	}
	body := `{"model":"chat-tiny","messages":[{"role":"user","content":"hello"}],"temperature":0,"max_tokens":5}`
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var chat struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	err = json.NewDecoder(resp.Body).Decode(&chat)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || len(chat.Choices) != 1 || chat.Usage.CompletionTokens == 0 {
		t.Fatalf("chat: %d %v %+v", resp.StatusCode, err, chat)
	}
	resp, err = http.Get(url + "/api/ps")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ps struct {
		Models []struct {
			KVCache string `json:"kv_cache"`
			Size    int64  `json:"size"`
		} `json:"models"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ps); err != nil || len(ps.Models) != 1 || ps.Models[0].KVCache != "q8" {
		t.Errorf("/api/ps: %v %+v, want one model with kv_cache q8", err, ps)
	}
}

// TestKVFlagErrors: a --kv the engine has no cache for is refused by name.
func TestKVFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--quiet", "--kv", "q2"},
		{"ls", "--kv", "int8"},
	} {
		c, _, _ := newCLI(t, "", mapEnv{"HEARTH_PORT": "0"})
		if err := c.run(args); err == nil || !strings.Contains(err.Error(), "--kv") || !strings.Contains(err.Error(), "f32, q8 or q4") {
			t.Errorf("%q = %v, want a --kv error naming f32, q8 and q4", args, err)
		}
	}
}

// TestAdmitCountsKV: the memory check before run, bench and serve load
// their model judges the cache the flags ask for. A model whose 32K-token
// f32 cache does not fit beside its weights is refused at f32 and admitted
// at q4, and --parallel's sequences count too.
func TestAdmitCountsKV(t *testing.T) {
	const gb = 1 << 30
	var layers []fit.Layer
	for range 32 {
		layers = append(layers, fit.Layer{Kind: fit.Full, KVHeads: 8, HeadDim: 128})
	}
	// f32: 2·32·8·128·4 = 256 KiB a token, 8 GiB at 32K; q4 about a
	// sixth of that
	rec := registry.Record{Dir: "/models/acme-8b", Shape: fit.Shape{WeightBytes: 4 * gb, Layers: layers, Hidden: 4096, QDim: 4096,
		Intermediate: 14336, Vocab: 128256, MaxContextTokens: 131072}}
	mem := fit.Memory{TotalBytes: 16 * gb, AvailableBytes: 10 * gb}
	ctx := fit.Options{ContextTokens: 32768}
	if _, err := admit(rec, ctx, mem); err == nil {
		t.Fatal("admitted at f32: 4 GB of weights and 8 GB of cache in 10 GB")
	}
	q4 := ctx
	q4.KV = tensor.KVQ4
	if _, err := admit(rec, q4, mem); err != nil {
		t.Fatalf("refused at q4: %v", err)
	}
	q4.Sequences = 8
	if _, err := admit(rec, q4, mem); err == nil {
		t.Fatal("admitted 8 sequences of a 32K q4 cache (about 11 GB) in 10 GB")
	}
}
