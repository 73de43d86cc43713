// Listing the darwin build and type-checking it.

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"go/version"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Options say what to check.
type Options struct {
	Dir      string   // where go list runs: inside the module
	Arch     string   // GOARCH of the darwin build
	Tags     string   // build tags, as go build -tags
	Patterns []string // packages, as go list takes them
	Env      []string // added to the environment of go list
}

// Result is one architecture's check.
type Result struct {
	Arch      string
	Checked   []Target  // the packages checked in full
	Deps      int       // dependencies type-checked (declarations only)
	Errors    []Finding // errors in the checked packages: any fails the check
	DepErrors []string  // errors in dependencies (reported with -v only)
}

// Target is a package of the module whose darwin build differs from its
// Linux one.
type Target struct {
	ImportPath string
	DarwinOnly []string // its files that only the darwin build compiles
}

// Finding is one error in a checked package.
type Finding struct {
	Pos        token.Position
	Msg        string
	Arch       string
	DarwinOnly bool // the file is compiled only on darwin
}

func (f Finding) String() string {
	where := "darwin/" + f.Arch
	if f.DarwinOnly {
		where += ", darwin-only file"
	}
	return fmt.Sprintf("%s: %s (%s)", f.Pos, f.Msg, where)
}

// listed is the part of go list -json this tool reads.
type listed struct {
	ImportPath string
	Name       string
	Dir        string
	Standard   bool
	DepOnly    bool
	Module     *struct {
		Path      string
		Main      bool
		GoVersion string
	}
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
	ImportMap  map[string]string
	Error      *struct{ Err string }
	DepsErrors []*struct{ Err string }
}

func (p *listed) files() []string { return append(append([]string{}, p.GoFiles...), p.CgoFiles...) }

// goList runs go list -e -json for goos/arch with cgo on.
func goList(opt Options, goos string, deps bool) ([]*listed, error) {
	args := []string{"list", "-e", "-json=ImportPath,Name,Dir,Standard,DepOnly,Module,GoFiles,CgoFiles,Imports,ImportMap,Error,DepsErrors"}
	if deps {
		args = append(args, "-deps")
	}
	if opt.Tags != "" {
		args = append(args, "-tags", opt.Tags)
	}
	cmd := exec.Command("go", append(args, opt.Patterns...)...)
	cmd.Dir = opt.Dir
	cmd.Env = append(append(os.Environ(), opt.Env...), "GOOS="+goos, "GOARCH="+opt.Arch, "CGO_ENABLED=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list (GOOS=%s GOARCH=%s): %w: %s", goos, opt.Arch, err, strings.TrimSpace(stderr.String()))
	}
	var pkgs []*listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		pkgs = append(pkgs, &p)
	}
	return pkgs, nil
}

// Check type-checks the darwin build of opt.Arch.
func Check(opt Options) (*Result, error) {
	darwin, err := goList(opt, "darwin", true)
	if err != nil {
		return nil, err
	}
	linux, err := goList(opt, "linux", false)
	if err != nil {
		return nil, err
	}
	linuxFiles := map[string]map[string]bool{}
	for _, p := range linux {
		set := map[string]bool{}
		for _, f := range p.files() {
			set[f] = true
		}
		linuxFiles[p.ImportPath] = set
	}

	res := &Result{Arch: opt.Arch}
	byPath := map[string]*listed{}
	targets := map[string]map[string]bool{} // import path → its darwin-only files
	for _, p := range darwin {
		byPath[p.ImportPath] = p
		if p.DepOnly || p.Standard {
			continue
		}
		only := map[string]bool{}
		for _, f := range p.files() {
			if !linuxFiles[p.ImportPath][f] {
				only[f] = true
			}
		}
		if len(only) == 0 {
			continue
		}
		targets[p.ImportPath] = only
		t := Target{ImportPath: p.ImportPath}
		for f := range only {
			t.DarwinOnly = append(t.DarwinOnly, f)
		}
		sort.Strings(t.DarwinOnly)
		res.Checked = append(res.Checked, t)
	}

	// What the targets import, transitively.
	need := map[string]bool{}
	var visit func(string)
	visit = func(path string) {
		if need[path] {
			return
		}
		need[path] = true
		if p := byPath[path]; p != nil {
			for _, imp := range p.Imports {
				visit(imp)
			}
		}
	}
	for path := range targets {
		visit(path)
	}

	fset := token.NewFileSet()
	done := map[string]*types.Package{"unsafe": types.Unsafe}
	for _, p := range darwin { // go list -deps lists dependencies first
		if !need[p.ImportPath] || p.ImportPath == "unsafe" || p.ImportPath == "C" {
			continue
		}
		only, isTarget := targets[p.ImportPath]
		var errs []error
		if p.Error != nil {
			errs = append(errs, errors.New(p.Error.Err))
		}
		for _, e := range p.DepsErrors {
			errs = append(errs, errors.New(e.Err))
		}
		var files []*ast.File
		for _, name := range p.files() {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				errs = append(errs, err)
			}
			if f != nil {
				files = append(files, f)
			}
		}
		conf := types.Config{
			Importer:         importer{from: p, done: done},
			FakeImportC:      true,
			IgnoreFuncBodies: !isTarget,
			Sizes:            types.SizesFor("gc", opt.Arch),
			GoVersion:        goVersion(p),
			Error:            func(err error) { errs = append(errs, err) },
		}
		pkg, _ := conf.Check(p.ImportPath, fset, files, nil)
		done[p.ImportPath] = pkg
		if !isTarget {
			res.Deps++
			for _, e := range errs {
				res.DepErrors = append(res.DepErrors, p.ImportPath+": "+e.Error())
			}
			continue
		}
		for _, e := range errs {
			res.Errors = append(res.Errors, finding(opt, e, only))
		}
	}
	sort.Slice(res.Checked, func(i, j int) bool { return res.Checked[i].ImportPath < res.Checked[j].ImportPath })
	return res, nil
}

// finding places err, with its file relative to opt.Dir.
func finding(opt Options, err error, only map[string]bool) Finding {
	f := Finding{Msg: err.Error(), Arch: opt.Arch}
	var te types.Error
	var se scanner.ErrorList
	switch {
	case errors.As(err, &te):
		f.Pos, f.Msg = te.Fset.Position(te.Pos), te.Msg
	case errors.As(err, &se) && len(se) > 0:
		f.Pos, f.Msg = se[0].Pos, se[0].Msg
	}
	if f.Pos.Filename != "" {
		f.DarwinOnly = only[filepath.Base(f.Pos.Filename)]
		if abs, err := filepath.Abs(opt.Dir); err == nil {
			if rel, err := filepath.Rel(abs, f.Pos.Filename); err == nil && !strings.HasPrefix(rel, "..") {
				f.Pos.Filename = rel
			}
		}
	}
	return f
}

// goVersion is the language version a package is checked at: its
// module's go line ("" for the standard library: the toolchain's).
func goVersion(p *listed) string {
	if p.Standard || p.Module == nil || p.Module.GoVersion == "" {
		return ""
	}
	return version.Lang("go" + p.Module.GoVersion)
}

// importer resolves one package's imports to the packages checked before
// it.
type importer struct {
	from *listed
	done map[string]*types.Package
}

func (im importer) Import(path string) (*types.Package, error) {
	if r, ok := im.from.ImportMap[path]; ok {
		path = r
	}
	if p := im.done[path]; p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("%s imports %q, which the darwin build does not list", im.from.ImportPath, path)
}
