package registry

import (
	"errors"
	"net/http/httptest"
	"path/filepath"
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
