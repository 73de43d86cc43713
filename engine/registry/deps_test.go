package registry

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestNoBackendDeps: the catalog resolves families through the leaf
// engine/families, so listing and pulling models links no backend and no
// cgo WebGPU binding (docs/design/families.md).
func TestNoBackendDeps(t *testing.T) {
	gotool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(gotool, "list", "-deps", "hearth/engine/registry").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "/backend") || strings.Contains(pkg, "webgpu") || pkg == "hearth/engine" {
			t.Errorf("engine/registry depends on %s", pkg)
		}
	}
}
