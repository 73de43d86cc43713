// Command darwincheck type-checks the macOS build of this module on a
// machine without the macOS SDK, so Go-side mistakes in darwin-only code
// fail CI on Linux.
//
//	go run ./tools/darwincheck [-arch arm64,amd64] [-tags tags] [-v] [packages]
//
// For each architecture it lists the darwin build (go list -deps -json
// with GOOS=darwin CGO_ENABLED=1), finds this module's packages whose
// darwin file set differs from the Linux one of the same architecture
// (a _darwin.go file, a darwin build tag, a package only darwin builds),
// and type-checks them with go/types, their dependencies (standard
// library and modules) from source too. import "C" is faked (go/types'
// FakeImportC: an empty package whose every name is accepted), so the C
// side goes unchecked: no C compiler, header or framework is involved.
// Every error in a checked package is printed as file:line:col, and the
// exit status is 1 when there is one. Packages default to ./...
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	arches := flag.String("arch", "arm64,amd64", "darwin architectures to check, comma-separated")
	tags := flag.String("tags", "", "build tags, as go build -tags")
	verbose := flag.Bool("v", false, "list the packages checked and the dependencies' errors")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "Usage: darwincheck [-arch arm64,amd64] [-tags tags] [-v] [packages]")
		flag.PrintDefaults()
	}
	flag.Parse()
	patterns := flag.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	failed := false
	for _, arch := range strings.Split(*arches, ",") {
		res, err := Check(Options{Dir: ".", Arch: strings.TrimSpace(arch), Tags: *tags, Patterns: patterns})
		if err != nil {
			fmt.Fprintln(os.Stderr, "darwincheck:", err)
			os.Exit(2)
		}
		for _, e := range res.Errors {
			fmt.Println(e)
		}
		if *verbose {
			for _, p := range res.Checked {
				fmt.Fprintf(os.Stderr, "darwin/%s: checked %s (darwin-only: %s)\n", res.Arch, p.ImportPath, strings.Join(p.DarwinOnly, ", "))
			}
			for _, e := range res.DepErrors {
				fmt.Fprintf(os.Stderr, "darwin/%s: dependency: %s\n", res.Arch, e)
			}
		}
		fmt.Fprintf(os.Stderr, "darwin/%s: %d packages with darwin-only files checked (%d dependencies), %d errors\n",
			res.Arch, len(res.Checked), res.Deps, len(res.Errors))
		failed = failed || len(res.Errors) > 0
	}
	if failed {
		os.Exit(1)
	}
}
