package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"hearth/engine"
	"hearth/internal/testenv"
)

// TestQuietStart starts the built binary the way a first start on a
// headless Linux machine goes (no login session and no display:
// XDG_RUNTIME_DIR, DISPLAY and WAYLAND_DISPLAY unset) and checks that
// nothing but Hearth's own lines reaches stderr: for serve, from the start
// through /health's answer to SIGINT; for run, up to its answer. The lines it keeps
// out are C libraries' (libwayland's "error: XDG_RUNTIME_DIR is invalid or
// not set in the environment.", printed through Mesa's Vulkan device-select
// layer and wgpu's GL backend; Mesa and Vulkan loader warnings), which
// only a separate process shows. Backend auto probes the GPU and declines
// an emulated one; gpu runs on it, and needs a Vulkan driver (lavapipe).
func TestQuietStart(t *testing.T) {
	tmp := t.TempDir()
	exe := filepath.Join(tmp, "hearth")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := headlessEnv(tmp)
	for _, backend := range []string{"auto", "gpu"} {
		t.Run("serve/"+backend, func(t *testing.T) {
			cmd := exec.Command(exe, "serve", "--port", "0", "--threads", "1", "--backend", backend)
			cmd.Env = env
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr syncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			first, url := readBanner(stdout)
			if url == "" {
				cmd.Wait()
				needGPU(t, backend, stderr.String())
				t.Fatalf("no banner; stderr:\n%s", stderr.String())
			}
			defer cmd.Process.Kill() // a failed check
			if !strings.Contains(first, url) || !strings.Contains(first, "chat") {
				t.Errorf("first line %q does not say where the chat is", first)
			}
			waitFor(t, "/health", func() (bool, bool) {
				resp, err := http.Get(url + "/health")
				if err != nil {
					return false, false
				}
				resp.Body.Close()
				return true, resp.StatusCode == http.StatusOK
			})
			// Stopped, the process has handed over all it wrote.
			cmd.Process.Signal(os.Interrupt)
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				t.Fatal("serve did not stop on SIGINT")
			}
			if lines := foreignLines(stderr.String()); len(lines) > 0 {
				t.Errorf("stderr has lines that are not Hearth's:\n%s", strings.Join(lines, "\n"))
			}
		})
		t.Run("run/"+backend, func(t *testing.T) {
			cmd := exec.Command(exe, "run", "--threads", "1", "--max-tokens", "2", "--backend", backend, "hearth/starter", "hi")
			cmd.Env = env
			cmd.Stdin = strings.NewReader("")
			var stderr syncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				needGPU(t, backend, stderr.String())
				t.Fatalf("run: %v; stderr:\n%s", err, stderr.String())
			}
			if lines := foreignLines(stderr.String()); len(lines) > 0 {
				t.Errorf("stderr has lines that are not Hearth's:\n%s", strings.Join(lines, "\n"))
			}
		})
	}
}

// headlessEnv is this process's environment without a login session, a
// display or a device choice, with caches under tmp.
func headlessEnv(tmp string) []string {
	drop := map[string]bool{"XDG_RUNTIME_DIR": true, "DISPLAY": true, "WAYLAND_DISPLAY": true, "WAYLAND_SOCKET": true,
		"NODEVICE_SELECT": true, "MESA_VK_DEVICE_SELECT": true, "DRI_PRIME": true, "XDG_CACHE_HOME": true}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] && !strings.HasPrefix(k, "HEARTH_") && !strings.HasPrefix(k, "HF_") {
			env = append(env, kv)
		}
	}
	return append(env, "HF_HOME="+filepath.Join(tmp, "hf"), "XDG_CACHE_HOME="+filepath.Join(tmp, "cache"))
}

// readBanner reads serve's stdout up to the line naming the address, and
// keeps draining it after.
func readBanner(r io.Reader) (first, url string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if first == "" {
			first = sc.Text()
		}
		if m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
	}
	go io.Copy(io.Discard, r)
	return first, url
}

// needGPU skips a gpu case that failed for want of a Vulkan driver (or of
// a GPU backend in this build), or fails it under HEARTH_REQUIRE_ALL=1.
func needGPU(t *testing.T, backend, stderr string) {
	t.Helper()
	if backend == "gpu" && strings.Contains(stderr, "gpu backend") {
		testenv.Need(t, "a Vulkan driver (apt-get install mesa-vulkan-drivers libvulkan1)", false)
	}
}

// foreignLines are the lines of stderr that Hearth did not write: its
// own start with "hearth:" (errors) or "time=" (the server's log).
func foreignLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if l != "" && !strings.HasPrefix(l, "hearth:") && !strings.HasPrefix(l, "time=") {
			out = append(out, l)
		}
	}
	return out
}

// TestBanner: serve's first line says where the chat is; with the starter
// a third says how to get a real model; with another model there is none.
func TestBanner(t *testing.T) {
	info := engine.Info{ID: "hearth/starter", Family: "universal", Backend: "cpu", ContextTokens: 2048}
	for _, starter := range []bool{true, false} {
		c, out, _ := newCLI(t, "", nil)
		c.banner("http://127.0.0.1:11435", info, starter, 150*time.Millisecond)
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		want := 2
		if starter {
			want = 3
		}
		if len(lines) != want {
			t.Fatalf("starter %v: %d lines, want %d:\n%s", starter, len(lines), want, out.String())
		}
		if !strings.Contains(lines[0], "listening on http://127.0.0.1:11435 ") || !strings.Contains(lines[0], "chat") {
			t.Errorf("first line %q does not say where the chat is", lines[0])
		}
		if !strings.HasPrefix(lines[1], "serving hearth/starter (universal, cpu, 2048 tokens of context; loaded in 150ms)") {
			t.Errorf("second line %q", lines[1])
		}
		if starter && (!strings.Contains(lines[2], "hearth pull NAME") || !strings.Contains(lines[2], "hearth ls --available")) {
			t.Errorf("starter line %q does not say how to get a real model", lines[2])
		}
	}
}
