package web

import (
	"testing"
)

func TestChatMessages(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"string content passes verbatim",
			`[{"role":"user","content":"hi","name":"bob"}]`,
			`[{"role":"user","content":"hi","name":"bob"}]`},
		{"text parts are joined",
			`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`,
			`[{"role":"user","content":"a\nb"}]`},
		{"developer is system",
			`[{"role":"developer","content":"rules"}]`,
			`[{"role":"system","content":"rules"}]`},
		{"string arguments become the object, keys in order",
			`[{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{\"z\":1,\"a\":[2]}"}}]}]`,
			`[{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":{"z":1,"a":[2]}}}]}]`},
		{"empty arguments are an empty object",
			`[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":""}}]}]`,
			`[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{}}}]}]`},
		{"object arguments pass",
			`[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{"b":1}}}]}]`,
			`[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{"b":1}}}]}]`},
		{"reasoning_content passes verbatim",
			`[{"role":"assistant","content":"4","reasoning_content":"2+2"}]`,
			`[{"role":"assistant","content":"4","reasoning_content":"2+2"}]`},
		{"reasoning is also reasoning_content",
			`[{"role":"assistant","content":"4","reasoning":"2+2"}]`,
			`[{"role":"assistant","content":"4","reasoning":"2+2","reasoning_content":"2+2"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := chatMessages([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("chatMessages(%s)\n = %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestAnthropicConversion(t *testing.T) {
	body := `{"max_tokens":9,"system":[{"type":"text","text":"s1"},{"type":"text","text":"s2"}],
	"messages":[
		{"role":"user","content":"what is the weather"},
		{"role":"assistant","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"checking"},{"type":"tool_use","id":"tu1","name":"weather","input":{"city":"Paris","days":2}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":"sunny"},{"type":"text","text":"thanks"}]}],
	"tools":[{"name":"weather","description":"forecast","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],
	"stop_sequences":["","END"],"temperature":0.5,"top_k":3}`
	job, err := parseMessages([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	wantMsgs := `[{"role":"system","content":"s1\ns2"},{"role":"user","content":"what is the weather"},` +
		`{"role":"assistant","content":"checking","reasoning_content":"x","tool_calls":[{"id":"tu1","type":"function","function":{"name":"weather","arguments":{"city":"Paris","days":2}}}]},` +
		`{"role":"tool","tool_call_id":"tu1","content":"sunny"},{"role":"user","content":"thanks"}]`
	if string(job.req.Messages) != wantMsgs {
		t.Errorf("messages\n = %s\nwant %s", job.req.Messages, wantMsgs)
	}
	wantTools := `[{"type":"function","function":{"name":"weather","description":"forecast","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	if string(job.req.Tools) != wantTools {
		t.Errorf("tools\n = %s\nwant %s", job.req.Tools, wantTools)
	}
	if len(job.req.Stop) != 1 || job.req.Stop[0] != "END" || job.req.MaxTokens != 9 || job.req.Sample.Temperature != 0.5 || job.req.Sample.TopK != 3 {
		t.Errorf("request = %+v", job.req)
	}
}

func TestSamplingDefaults(t *testing.T) {
	job, err := parseChat([]byte(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if o := job.req.Sample; o.Temperature != defaultTemperature || o.TopP != 0 || o.Seed != nil {
		t.Errorf("defaults = %+v, want temperature %v and nothing else", o, defaultTemperature)
	}
	job, err = parseChat([]byte(`{"messages":[{"role":"user","content":"hi"}],"temperature":0,"seed":-1,"tool_choice":"none","tools":[{"type":"function","function":{"name":"f"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if o := job.req.Sample; o.Temperature != 0 || o.Seed == nil || *o.Seed != ^uint64(0) {
		t.Errorf("options = %+v", o)
	}
	if job.req.Tools != nil {
		t.Errorf("tool_choice none still offers the tools")
	}
}
