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
