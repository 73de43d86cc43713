// Package testenv decides whether a test that needs a system package or a
// fetched file skips or fails, like the standard library's internal/testenv.
package testenv

import (
	"os"
	"testing"
)

// RequireAll reports whether HEARTH_REQUIRE_ALL=1, under which a missing
// system package fails a test instead of skipping it (CI sets it).
func RequireAll() bool { return os.Getenv("HEARTH_REQUIRE_ALL") == "1" }

// Need skips t with the reason when ok is false, or fails it when
// HEARTH_REQUIRE_ALL=1.
func Need(t testing.TB, what string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if RequireAll() {
		t.Fatalf("%s is required (HEARTH_REQUIRE_ALL=1) but absent", what)
	}
	t.Skipf("skipping: %s is absent", what)
}
