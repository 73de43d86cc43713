package web

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"hearth/engine/pool"
	"hearth/engine/registry"
	"hearth/internal/testmodels"
)

// startEmbedServer serves the Qwen3-Embedding-shaped test model as the
// default and chat-tiny (no embeddings) by name.
func startEmbedServer(t *testing.T) (*testServer, string) {
	t.Helper()
	dir := testmodels.EmbedDir(t, "lasttoken")
	embed := pool.Model{ID: "qwen3_embed-f32", Dir: dir}
	reg := registry.New(t.TempDir(), dir, chatTiny().Dir)
	ts := startServer(t, func(c *serverConfig) {
		c.model = embed
		c.opt.Registry = reg
		c.pool.Resolve = func(name string) (pool.Model, error) {
			if name == "chat-tiny" {
				return chatTiny(), nil
			}
			return pool.Model{}, fmt.Errorf("%w: %s", registry.ErrNotFound, name)
		}
	})
	return ts, embed.ID
}

func within(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); d > tol {
			t.Fatalf("%s[%d] = %v, want %v (|diff| %.3g > %g)", what, i, got[i], want[i], d, tol)
		}
	}
}

type openAIEmbeddings struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// vectors decodes the response's embeddings, floats or base64.
func (r openAIEmbeddings) vectors(t *testing.T) [][]float32 {
	t.Helper()
	var out [][]float32
	for i, d := range r.Data {
		if d.Object != "embedding" || d.Index != i {
			t.Fatalf("data[%d] = %s %d", i, d.Object, d.Index)
		}
		var v []float32
		var s string
		if json.Unmarshal(d.Embedding, &s) == nil {
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil || len(raw)%4 != 0 {
				t.Fatalf("data[%d]: bad base64 %q", i, s)
			}
			for j := 0; j < len(raw); j += 4 {
				v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(raw[j:])))
			}
		} else if err := json.Unmarshal(d.Embedding, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func postEmbeddings(t *testing.T, ts *testServer, body string) openAIEmbeddings {
	t.Helper()
	r := ts.do(t, http.MethodPost, "/v1/embeddings", body, nil)
	var out openAIEmbeddings
	if r.Status != 200 || json.Unmarshal(r.Body, &out) != nil || out.Object != "list" {
		t.Fatalf("%s: %d %s", body, r.Status, r.Body)
	}
	return out
}

func TestEmbeddingsOpenAI(t *testing.T) {
	ts, id := startEmbedServer(t)
	g := testmodels.LoadEmbedGolden(t)
	var ids [][]int32
	total := 0
	for _, c := range g.Cases {
		ids = append(ids, c.InputIDs)
		total += len(c.InputIDs)
	}
	idsJSON, _ := json.Marshal(ids)
	var floats [][]float32
	for _, format := range []string{"float", "base64"} {
		out := postEmbeddings(t, ts, fmt.Sprintf(`{"model":%q,"input":%s,"encoding_format":%q}`, id, idsJSON, format))
		if out.Model != id || out.Usage.PromptTokens != total || out.Usage.TotalTokens != total {
			t.Errorf("%s: model %q usage %+v, want %d tokens", format, out.Model, out.Usage, total)
		}
		vs := out.vectors(t)
		if len(vs) != len(g.Cases) {
			t.Fatalf("%s: %d vectors", format, len(vs))
		}
		for i, c := range g.Cases {
			within(t, fmt.Sprintf("%s input %d", format, i), vs[i], c.LastToken, 1e-5)
		}
		if floats == nil {
			floats = vs
		} else if !slices.EqualFunc(floats, vs, slices.Equal) {
			t.Error("base64 and float differ")
		}
	}
	// One array of ids, and dimensions.
	c := g.Cases[1]
	one, _ := json.Marshal(c.InputIDs)
	out := postEmbeddings(t, ts, fmt.Sprintf(`{"input":%s,"dimensions":%d}`, one, c.Dims))
	within(t, "dimensions", out.vectors(t)[0], c.Cut, 1e-5)

	// Texts: a string, and an array of strings, each ending in the
	// tokenizer's <|endoftext|>.
	single := postEmbeddings(t, ts, `{"input":"hello world"}`).vectors(t)
	many := postEmbeddings(t, ts, `{"input":["hi","hello world","a third text"]}`)
	if vs := many.vectors(t); len(vs) != 3 || !slices.Equal(vs[1], single[0]) || slices.Equal(vs[0], vs[1]) {
		t.Errorf("texts: %d vectors", len(vs))
	}
	norm := 0.0
	for _, x := range single[0] {
		norm += float64(x) * float64(x)
	}
	if math.Abs(norm-1) > 1e-5 || len(single[0]) != 64 {
		t.Errorf("text vector: %d dims, squared norm %v", len(single[0]), norm)
	}

	long := `[` + strings.Repeat("1,", 256) + `1]`
	for _, tc := range []struct{ body, param, want string }{
		{`{"input":""}`, "input", "must not be empty"},
		{`{"input":[]}`, "input", "must not be empty"},
		{`{}`, "input", "required"},
		{`{"input":[1,-2]}`, "input", "input[1]: expected a token id"},
		{`{"input":[[1],[]]}`, "input", "input[1]: must not be empty"},
		{`{"input":["a",2]}`, "input", "input[1]: expected a string"},
		{`{"input":[[1],` + long + `]}`, "input", "input[1]: 257 tokens exceed the model's context of 256"},
		{`{"input":[1,2,600]}`, "input", "outside the vocabulary"},
		{`{"input":"` + strings.Repeat("x,", 300) + `"}`, "input", "input[0]: at least 257 tokens exceed the model's context of 256"},
		{`{"input":[` + strings.Repeat(`"a",`, 256) + `"a"]}`, "input", "at most 256"},
		{`{"input":"a","encoding_format":"int8"}`, "encoding_format", "not one of float, base64"},
		{`{"input":"a","dimensions":0}`, "dimensions", "at least 1"},
		{`{"input":"a","dimensions":65}`, "dimensions", "outside [1, 64]"},
		{`{"model":"chat-tiny","input":"a"}`, "model", `model "chat-tiny" does not support embeddings`},
	} {
		r := ts.do(t, http.MethodPost, "/v1/embeddings", tc.body, nil)
		var e struct {
			Error struct{ Message, Type, Param string } `json:"error"`
		}
		if r.Status != 400 || json.Unmarshal(r.Body, &e) != nil || e.Error.Param != tc.param || !strings.Contains(e.Error.Message, tc.want) || e.Error.Type != "invalid_request_error" {
			t.Errorf("%.60s: %d %s; want 400 param %s %q", tc.body, r.Status, r.Body, tc.param, tc.want)
		}
	}

	// The capability is listed for the embedding model only.
	var list modelList
	if r := ts.do(t, http.MethodGet, "/v1/models", "", nil); r.Status != 200 || json.Unmarshal(r.Body, &list) != nil {
		t.Fatalf("/v1/models = %d %s", r.Status, r.Body)
	}
	for _, m := range list.Data {
		if want := m.ID == id; slices.Contains(m.Capabilities, "embeddings") != want {
			t.Errorf("%s: capabilities %v", m.ID, m.Capabilities)
		}
	}
	r := ts.do(t, http.MethodPost, "/api/show", fmt.Sprintf(`{"model":%q}`, id), nil)
	var show struct{ Capabilities []string }
	if r.Status != 200 || json.Unmarshal(r.Body, &show) != nil || !slices.Contains(show.Capabilities, "embedding") {
		t.Errorf("/api/show = %d %s", r.Status, r.Body)
	}
}

func TestEmbeddingsOllama(t *testing.T) {
	ts, id := startEmbedServer(t)
	type embedOut struct {
		Model           string      `json:"model"`
		Embeddings      [][]float32 `json:"embeddings"`
		TotalDuration   int64       `json:"total_duration"`
		LoadDuration    int64       `json:"load_duration"`
		PromptEvalCount int         `json:"prompt_eval_count"`
	}
	embed := func(body string) embedOut {
		t.Helper()
		r := ts.do(t, http.MethodPost, "/api/embed", body, nil)
		var out embedOut
		if r.Status != 200 || json.Unmarshal(r.Body, &out) != nil {
			t.Fatalf("%.80s: %d %s", body, r.Status, r.Body)
		}
		return out
	}
	openai := postEmbeddings(t, ts, `{"input":["hi","hello world"]}`)
	one := embed(`{"model":"` + id + `","input":"hello world"}`)
	two := embed(`{"input":["hi","hello world"]}`)
	if one.Model != id || len(one.Embeddings) != 1 || one.PromptEvalCount == 0 || one.TotalDuration <= 0 || one.TotalDuration < one.LoadDuration {
		t.Errorf("one = %+v", one)
	}
	if want := openai.vectors(t); len(two.Embeddings) != 2 || !slices.Equal(two.Embeddings[0], want[0]) || !slices.Equal(two.Embeddings[1], one.Embeddings[0]) || two.PromptEvalCount != openai.Usage.PromptTokens {
		t.Errorf("two = %d vectors, %d tokens", len(two.Embeddings), two.PromptEvalCount)
	}
	if cut := embed(`{"input":"hello world","dimensions":16}`); len(cut.Embeddings[0]) != 16 {
		t.Errorf("dimensions 16: %d", len(cut.Embeddings[0]))
	}
	// An empty input loads the model and answers no embeddings.
	if e := embed(`{"input":[]}`); e.Embeddings == nil || len(e.Embeddings) != 0 {
		t.Errorf("empty = %+v", e)
	}
	// Truncate: by default a long input is cut to the context.
	long := strings.Repeat("x,", 300)
	if e := embed(`{"input":"` + long + `"}`); e.PromptEvalCount != 256 || len(e.Embeddings) != 1 {
		t.Errorf("truncated: %d tokens", e.PromptEvalCount)
	}

	legacy := ts.do(t, http.MethodPost, "/api/embeddings", `{"prompt":"hello world"}`, nil)
	var lg struct{ Embedding []float32 }
	if legacy.Status != 200 || json.Unmarshal(legacy.Body, &lg) != nil || !slices.Equal(lg.Embedding, one.Embeddings[0]) {
		t.Errorf("/api/embeddings = %d %s", legacy.Status, legacy.Body)
	}
	if r := ts.do(t, http.MethodPost, "/api/embeddings", `{"prompt":""}`, nil); r.Status != 200 || string(r.Body) != "{\"embedding\":[]}\n" {
		t.Errorf("empty prompt = %d %q", r.Status, r.Body)
	}

	for _, tc := range []struct{ path, body, want string }{
		{"/api/embed", `{"input":"` + long + `","truncate":false}`, "input[0]: at least 257 tokens exceed the model's context of 256"},
		{"/api/embed", `{"input":[1,2]}`, "expected a string or an array of strings"},
		{"/api/embed", `{"input":"a","dimensions":-1}`, "at least 1"},
		{"/api/embed", `{"model":"chat-tiny","input":"a"}`, `model "chat-tiny" does not support embeddings`},
		{"/api/embeddings", `{"model":"chat-tiny","prompt":"a"}`, `model "chat-tiny" does not support embeddings`},
		{"/api/embed", `{"model":"nope","input":"a"}`, "nope"},
	} {
		r := ts.do(t, http.MethodPost, tc.path, tc.body, nil)
		var e struct{ Error string }
		if r.Status/100 != 4 || json.Unmarshal(r.Body, &e) != nil || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s %.60s: %d %s; want %q", tc.path, tc.body, r.Status, r.Body, tc.want)
		}
	}
}

// FuzzEmbeddingsInput: any input parses to texts or ids within bounds, or
// is a 400 on input; never a panic.
func FuzzEmbeddingsInput(f *testing.F) {
	for _, s := range []string{`"hi"`, `["a","b"]`, `[1,2,3]`, `[[1],[2,3]]`, `[]`, `[[]]`, `[1.5]`, `[-1]`, `["a",[1]]`, `[[1],"a"]`, `{}`, `null`, `[null]`, `[ 1 ]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := parseEmbedInput(raw)
		if err != nil {
			if p := classify(err); p.Status != 400 || p.Param != "input" {
				t.Fatalf("error %v classifies as %d %q, want 400 on input", err, p.Status, p.Param)
			}
			return
		}
		n := len(req.Texts) + len(req.IDs)
		if n == 0 || n > 256 || (len(req.Texts) > 0 && len(req.IDs) > 0) {
			t.Fatalf("%d texts, %d id lists", len(req.Texts), len(req.IDs))
		}
		for _, ids := range req.IDs {
			if len(ids) == 0 {
				t.Fatal("an empty id list")
			}
			for _, id := range ids {
				if id < 0 {
					t.Fatalf("id %d", id)
				}
			}
		}
	})
}
