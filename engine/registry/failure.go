// What a pull that did not finish leaves in the cache, and how the listing
// tells the cases apart: a failed pull (its reason kept in a note), an
// interrupted one (partial .incomplete blobs a new pull resumes), or a repo
// folder with neither.

package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// failureNote is the file, in a repo's cache folder, that says why
// Hearth's last pull of it failed. A pull removes it when it starts to
// download; a failure writes it; Remove deletes it with the repo.
const failureNote = ".hearth-pull-error.json"

// pullFailure is the content of the failure note.
type pullFailure struct {
	Revision string `json:"revision"`
	File     string `json:"file,omitempty"` // the file that failed, when one did
	Corrupt  bool   `json:"corrupt,omitempty"`
	Error    string `json:"error"`
}

// maxNoteBytes bounds the note Hearth reads back (it writes far less).
const maxNoteBytes = 16 << 10

// writeFailure records f in repoDir, when that folder exists (a pull
// refused before it downloaded anything leaves the cache as it was).
func writeFailure(repoDir string, f pullFailure) {
	if _, err := os.Stat(repoDir); err != nil {
		return
	}
	if len(f.Error) > 1000 {
		f.Error = f.Error[:1000] + "…"
	}
	b, err := json.Marshal(f)
	if err != nil {
		return
	}
	tmp := filepath.Join(repoDir, failureNote+".hearth-tmp")
	if os.WriteFile(tmp, b, 0o644) == nil {
		os.Rename(tmp, filepath.Join(repoDir, failureNote))
	}
}

// clearFailure removes repoDir's failure note.
func clearFailure(repoDir string) {
	os.Remove(filepath.Join(repoDir, failureNote))
}

// readFailure reads repoDir's failure note; ok is false when there is
// none or it is unreadable.
func readFailure(repoDir string) (f pullFailure, ok bool) {
	fh, err := os.Open(filepath.Join(repoDir, failureNote))
	if err != nil {
		return f, false
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxNoteBytes))
	if err != nil || json.Unmarshal(b, &f) != nil || f.Error == "" {
		return pullFailure{}, false
	}
	return f, true
}

// partialBlobs counts the .incomplete blobs of repoDir.
func partialBlobs(repoDir string) int {
	m, _ := filepath.Glob(filepath.Join(repoDir, "blobs", "*.incomplete"))
	return len(m)
}

// noSnapshot says why repo, a cache folder with no snapshot, cannot be
// served, and what to do: pull again to download a failed pull afresh,
// or to resume an interrupted one.
func noSnapshot(repoDir, repo string) error {
	if f, ok := readFailure(repoDir); ok {
		name := repo
		if f.Revision != "" && f.Revision != "main" {
			name += "@" + f.Revision
		}
		if f.Corrupt {
			file := f.File
			if file == "" {
				file = "a file"
			}
			return fmt.Errorf("no snapshots: the last pull failed verification (%s did not match the hub's hash, and was deleted); run hearth pull %s again to download it afresh", QuoteName(file), name)
		}
		return fmt.Errorf("no snapshots: the last pull failed (%s); run hearth pull %s again", strings.TrimPrefix(f.Error, "pull "+repo+": "), name)
	}
	switch n := partialBlobs(repoDir); n {
	case 0:
		return fmt.Errorf("no snapshots: an interrupted download; run hearth pull %s again", repo)
	case 1:
		return fmt.Errorf("no snapshots: an interrupted download (1 partial file); run hearth pull %s again to resume it", repo)
	default:
		return fmt.Errorf("no snapshots: an interrupted download (%d partial files); run hearth pull %s again to resume it", n, repo)
	}
}

// errPullFailed is the cause that cancels the other downloads of a pull
// when one file fails (their partial blobs are then removed, where a
// caller's cancellation keeps them for a resume).
var errPullFailed = errors.New("another file of the pull failed")
