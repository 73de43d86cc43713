package ui

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"hearth/engine/registry/registrytest"
	"hearth/internal/testmodels"
)

// catalogEntry is what the browser tests read of GET /api/catalog.
type catalogEntry struct {
	Name        string `json:"name"`
	Repo        string `json:"repo"`
	Recommended bool   `json:"recommended"`
}

// catalogOf returns the server's catalog, or nil when it has none (404).
func catalogOf(t *testing.T, base string) []catalogEntry {
	t.Helper()
	resp, err := http.Get(base + "/api/catalog")
	if err != nil {
		t.Fatalf("GET /api/catalog: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	var body struct {
		Models []catalogEntry `json:"models"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/catalog: status %d, %v", resp.StatusCode, err)
	}
	return body.Models
}

// TestBrowserModels drives the model panel against a server on a first
// run (an empty Hugging Face cache) whose hub is a local fake serving
// chat-tiny: the catalog and its first-run recommendation, a pull with its
// progress bar (the hub stalls in the middle of the weights), cancelled and
// then resumed, delete, and a hub that cannot be reached.
//
// The catalog subtest needs GET /api/catalog and the delete subtest
// DELETE /api/delete. With a catalog, the pull takes the recommended entry
// (the fake hub serves its repo) from the empty conversation; without one,
// it pulls hearth-test/pulled by name.
func TestBrowserModels(t *testing.T) {
	browserNeeds(t)
	if testing.Short() {
		t.Skip("skipping the browser tests in -short mode")
	}
	srv := startHearth(t, t.TempDir())
	name, repo := "hearth-test/pulled", "hearth-test/pulled"
	cat := catalogOf(t, srv.base())
	if i := slices.IndexFunc(cat, func(e catalogEntry) bool { return e.Recommended }); i >= 0 {
		name, repo = cat[i].Name, cat[i].Repo
	}
	hub := registrytest.NewHub(t, repo)
	dir := filepath.Join(testmodels.Root(), "chat-tiny")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		hub.Files[e.Name()] = registrytest.File{Data: b, LFS: strings.HasSuffix(e.Name(), ".safetensors")}
	}
	// The weights stall after 4 kB until the pull is cancelled.
	hub.Stall("model.safetensors", 4096)
	srv.env = append(srv.env, "HF_ENDPOINT="+hub.URL)
	if err := srv.restart(); err != nil {
		t.Fatal(err)
	}
	ctl := control(t, map[string]func() error{"hub/clear": func() error { hub.Clear(); return nil }})
	env := func(t *testing.T) driverEnv {
		return driverEnv{out: t.ArtifactDir(), models: srv.models, control: ctl,
			vars: map[string]string{"name": name, "repo": repo, "catalog": map[bool]string{true: "1"}[cat != nil]}}
	}

	t.Run("catalog", func(t *testing.T) {
		if cat == nil {
			t.Fatal("GET /api/catalog answered 404: the model panel's catalog needs it")
		}
		runDriver(t, "catalog", srv.base()+"/", env(t))
	})
	t.Run("pull", func(t *testing.T) {
		runDriver(t, "pull", srv.base()+"/", env(t))
		// The cancelled pull stopped on the server: the browser's abort
		// reached it, and its download ended.
		if !regexp.MustCompile(`msg=pull model=\S+ err=[^\n]*context canceled`).MatchString(srv.logs.String()) {
			t.Errorf("the server's log shows no pull stopped by the client")
		}
		n := 0
		for _, s := range hub.Transfers() {
			if strings.HasPrefix(s, "GET model.safetensors") {
				n++
			}
		}
		if n < 2 {
			t.Errorf("the hub saw %q; want the weights asked for twice (stalled, then again)", hub.Transfers())
		}
	})
	t.Run("delete", func(t *testing.T) {
		runDriver(t, "delete", srv.base()+"/", env(t))
	})
	t.Run("hub-offline", func(t *testing.T) {
		// A hub address where nothing listens.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "http://" + ln.Addr().String()
		ln.Close()
		off := startHearth(t, t.TempDir(), "HF_ENDPOINT="+dead)
		runDriver(t, "hub-offline", off.base()+"/", driverEnv{out: t.ArtifactDir(), models: off.models})
	})
}
