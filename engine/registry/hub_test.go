package registry

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const validInfo = `{"_id":"x","id":"Qwen/Qwen3-0.6B","sha":"C1899DE289A04D12100DB370D81485CDF75E47CA","private":false,"gated":false,
"siblings":[{"rfilename":".gitattributes","blobId":"a6344aac8c09253b3b630fb776ae94478aa0275b","size":1570},
{"rfilename":"config.json","blobId":"18ca6e1a3ee8f6ec31dba3ba7a1e9bd3ab4e3c1c","size":726},
{"rfilename":"model.safetensors","blobId":"3ffb6d8c2ba0a8f1cbb6f6e1e4ba8b9d0c6e5e3f","size":1503300328,
 "lfs":{"sha256":"F47F71177F32BCD101B7573EC9171E6A57F4F4D31148D38E382306F42996874B","size":1503300328,"pointerSize":135}},
{"rfilename":"subdir/tokenizer.json","blobId":"aeb13307a71acd8fe81861d94ad54ab689df773f","size":11422654}]}`

func TestDecodeRepoInfo(t *testing.T) {
	info, err := decodeRepoInfo(strings.NewReader(validInfo))
	if err != nil {
		t.Fatal(err)
	}
	if info.Commit != "c1899de289a04d12100db370d81485cdf75e47ca" || len(info.Files) != 4 {
		t.Fatalf("decoded %+v", info)
	}
	st := info.Files[2]
	if st.Name != "model.safetensors" || !st.LFS || st.Size != 1503300328 || st.Etag != "f47f71177f32bcd101b7573ec9171e6a57f4f4d31148d38e382306f42996874b" {
		t.Errorf("model.safetensors decoded as %+v", st)
	}
	if c := info.Files[1]; c.LFS || c.Etag != "18ca6e1a3ee8f6ec31dba3ba7a1e9bd3ab4e3c1c" || c.Size != 726 {
		t.Errorf("config.json decoded as %+v", c)
	}
	bad := []struct{ name, body, contains string }{
		{"not JSON", `<html>`, "revision info"},
		{"short sha", `{"sha":"abc","siblings":[]}`, "not a 40-digit commit"},
		{"traversal", `{"sha":"` + commit("a") + `","siblings":[{"rfilename":"../../etc/passwd"}]}`, "not a relative path"},
		{"absolute", `{"sha":"` + commit("a") + `","siblings":[{"rfilename":"/etc/passwd"}]}`, "not a relative path"},
		{"backslash", `{"sha":"` + commit("a") + `","siblings":[{"rfilename":"a\\..\\b"}]}`, "not a relative path"},
		{"dot segment", `{"sha":"` + commit("a") + `","siblings":[{"rfilename":"a/./b"}]}`, "not a relative path"},
		{"twice", `{"sha":"` + commit("a") + `","siblings":[{"rfilename":"a"},{"rfilename":"a"}]}`, "listed twice"},
		{"bad lfs hash", `{"sha":"` + commit("a") + `","siblings":[{"rfilename":"m","lfs":{"sha256":"zz","size":1}}]}`, "LFS sha256"},
		{"negative size", `{"sha":"` + commit("a") + `","siblings":[{"rfilename":"m","blobId":"` + commit("b") + `","size":-1}]}`, "no valid size"},
	}
	for _, tt := range bad {
		if _, err := decodeRepoInfo(strings.NewReader(tt.body)); err == nil || !strings.Contains(err.Error(), tt.contains) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.contains)
		}
	}
}

func FuzzRepoInfo(f *testing.F) {
	f.Add([]byte(validInfo))
	f.Add([]byte(`{"sha":"` + commit("a") + `","siblings":[{"rfilename":"a/b.json","blobId":"` + commit("b") + `","size":3}]}`))
	f.Add([]byte(`{"sha":"` + commit("a") + `","siblings":[{"rfilename":"..","lfs":{"sha256":"` + commit("a") + commit("a")[:24] + `","size":1}}]}`))
	f.Add([]byte(`{"sha":null,"siblings":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := decodeRepoInfo(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		if len(info.Commit) != 40 || !isHex(info.Commit) || strings.ToLower(info.Commit) != info.Commit {
			t.Fatalf("accepted commit %q", info.Commit)
		}
		for _, f := range info.Files {
			if !filepath.IsLocal(filepath.FromSlash(f.Name)) || strings.Contains(f.Name, "\\") {
				t.Fatalf("accepted file name %q outside the repo", f.Name)
			}
			if f.Size < 0 {
				t.Fatalf("accepted size %d", f.Size)
			}
			if f.Etag != "" && !(len(f.Etag) == 40 || len(f.Etag) == 64) || !isHex(f.Etag) || strings.ContainsAny(f.Etag, "ABCDEF") {
				t.Fatalf("accepted etag %q", f.Etag)
			}
		}
	})
}

func TestHubError(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		code      string
		haveToken bool
		want      error
		contains  string
	}{
		{"gated", 401, "GatedRepo", false, ErrAuth, "is gated: accept its terms on the model page, then set HF_TOKEN"},
		{"gated with a token", 403, "GatedRepo", true, ErrAuth, "check that HF_TOKEN is valid"},
		{"not found", 404, "RepoNotFound", false, ErrNotFound, "if it is private, set HF_TOKEN"},
		{"401 for a stranger", 401, "RepoNotFound", false, ErrNotFound, "not on the hub"},
		{"no revision", 404, "RevisionNotFound", true, ErrNotFound, "has no revision v2"},
		{"plain 403", 403, "", false, ErrAuth, "403 Forbidden"},
		{"server error", 502, "", false, nil, "the hub answered 502 Bad Gateway for v2: upstream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			if tt.code != "" {
				rec.Header().Set("X-Error-Code", tt.code)
			}
			rec.WriteHeader(tt.status)
			rec.WriteString(`{"error":"upstream"}`)
			resp := rec.Result()
			err := hubError(resp, "org/model", "v2", tt.haveToken)
			if tt.want != nil && !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("hubError = %v, want %v containing %q", err, tt.want, tt.contains)
			}
		})
	}
}

func TestFileHeaders(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	tests := []struct {
		name     string
		header   map[string]string
		length   int64
		etag     string
		size     int64
		contains string // in the error; "" for success
	}{
		{"LFS redirect", map[string]string{"X-Linked-Etag": `"` + strings.ToUpper(sha) + `"`, "X-Linked-Size": "1234", "X-Repo-Commit": commit("c")}, 0, sha, 1234, ""},
		{"small file", map[string]string{"ETag": `W/"` + commit("b") + `"`}, 726, commit("b"), 726, ""},
		{"mirror etag", map[string]string{"ETag": `"5d41402abc4b2a76-3"`}, 5, "5d41402abc4b2a76-3", 5, ""},
		{"other commit", map[string]string{"ETag": `"` + commit("b") + `"`, "X-Repo-Commit": commit("d")}, 1, "", 0, "served commit"},
		{"size not a number", map[string]string{"X-Linked-Etag": sha, "X-Linked-Size": "12abc"}, 0, "", 0, `X-Linked-Size "12abc"`},
		{"negative size", map[string]string{"X-Linked-Etag": sha, "X-Linked-Size": "-1"}, 0, "", 0, "no usable ETag and size"},
		{"unknown size", map[string]string{"ETag": commit("b")}, -1, "", 0, "no usable ETag and size"},
		{"no etag", nil, 5, "", 0, "no usable ETag"},
		{"etag with a path", map[string]string{"ETag": `"../../refs/main"`}, 5, "", 0, `etag "../../refs/main"`},
		{"etag dot-dot", map[string]string{"ETag": `".."`}, 5, "", 0, "no usable ETag"},
		{"etag of a partial blob", map[string]string{"ETag": `"x.incomplete"`}, 5, "", 0, "no usable ETag"},
		{"etag too long", map[string]string{"ETag": strings.Repeat("a", 100_000)}, 5, "", 0, "… (100000 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			etag, size, err := fileHeaders(h, tt.length, commit("c"))
			if tt.contains == "" && (err != nil || etag != tt.etag || size != tt.size) {
				t.Errorf("fileHeaders = %q, %d, %v; want %q, %d", etag, size, err, tt.etag, tt.size)
			}
			if tt.contains != "" && (err == nil || !strings.Contains(err.Error(), tt.contains) || len(err.Error()) > 400) {
				t.Errorf("fileHeaders error %.400v, want one containing %q", err, tt.contains)
			}
		})
	}
}

// FuzzHubHeaders feeds the headers and bodies of the hub's answers Pull
// reads besides the revision info (a file's HEAD, a range answer, an error
// answer) to their parsers: none may panic, an accepted etag must be a
// plain blob name, and no error may grow with the input.
func FuzzHubHeaders(f *testing.F) {
	f.Add(`"`+strings.Repeat("ab", 32)+`"`, "", "1234", int64(0), commit("c"), "bytes 100-199/200", 404, "RepoNotFound", "", `{"error":"Repository not found"}`)
	f.Add("", `W/"`+commit("b")+`"`, "", int64(726), "", "bytes 0-0/1", 401, "GatedRepo", "Access to model x is restricted.", "")
	f.Add("../x", "", "-5", int64(-1), commit("d"), "bytes -1-", 500, "", "", "<html>")
	f.Add("..", ".", "99999999999999999999", int64(3), "", "", 429, "EntryNotFound", strings.Repeat("m", 1000), strings.Repeat("{", 600))
	f.Fuzz(func(t *testing.T, linkedEtag, etag, linkedSize string, length int64, repoCommit, contentRange string, status int, code, msg, body string) {
		h := http.Header{}
		for k, v := range map[string]string{"X-Linked-Etag": linkedEtag, "ETag": etag, "X-Linked-Size": linkedSize, "X-Repo-Commit": repoCommit} {
			if v != "" {
				h.Set(k, v)
			}
		}
		got, size, err := fileHeaders(h, length, commit("c"))
		if err == nil {
			if !plainName(got) || got != strings.ToLower(got) || size < 0 || filepath.Base(got) != got {
				t.Fatalf("accepted etag %q, size %d", got, size)
			}
		} else if len(err.Error()) > 600 {
			t.Fatalf("a %d-byte error", len(err.Error()))
		}
		if start, ok := contentRangeStart(contentRange); ok && !strings.Contains(contentRange, strconv.FormatInt(start, 10)) {
			t.Fatalf("contentRangeStart(%q) = %d", contentRange, start)
		}
		if status < 100 || status > 999 {
			status = 500
		}
		rec := httptest.NewRecorder()
		if code != "" {
			rec.Header().Set("X-Error-Code", code)
		}
		if msg != "" {
			rec.Header().Set("X-Error-Message", msg)
		}
		rec.WriteHeader(status)
		rec.WriteString(body)
		err = hubError(rec.Result(), "org/model", "main", false)
		if err == nil || len(err.Error()) > 1000 {
			t.Fatalf("hubError = %v", err)
		}
	})
}
