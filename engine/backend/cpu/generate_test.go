package cpu

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"hearth/internal/testenv"
)

// TestGeneratedAssembly checks that kernels_amd64.s is what the generator
// writes today, so an edit to the generator cannot ship without the
// assembly it describes.
func TestGeneratedAssembly(t *testing.T) {
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	_, err := os.Stat(gobin)
	testenv.Need(t, "the go command", err == nil)
	out := filepath.Join(t.TempDir(), "k.s")
	cmd := exec.Command(gobin, "run", "gen_amd64.go", "gen_matvec_amd64.go", "gen_gemm_amd64.go", "gen_misc_amd64.go", "-o", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("running the generator: %v\n%s", err, msg)
	}
	got, _ := os.ReadFile(out)
	want, err := os.ReadFile("kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("kernels_amd64.s is stale: run go generate in engine/backend/cpu")
	}
}
