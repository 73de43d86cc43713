package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// field is one key of a JSON object, in the order the client sent it
// (chat templates print tools and arguments with tojson, in that order).
type field struct {
	key string
	val json.RawMessage
}

// object is a JSON object with its key order kept.
type object []field

// parseObject reads raw as a JSON object, keeping key order.
func parseObject(raw json.RawMessage) (object, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var o object
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, ok := tok.(string)
		if !ok {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		o = append(o, field{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	return o, true
}

func (o object) get(key string) json.RawMessage {
	for _, f := range o {
		if f.key == key {
			return f.val
		}
	}
	return nil
}

func (o object) set(key string, v json.RawMessage) object {
	for i, f := range o {
		if f.key == key {
			o[i].val = v
			return o
		}
	}
	return append(o, field{key, v})
}

// MarshalJSON writes the object with its key order kept.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(f.val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// mustJSON marshals v, which is always marshalable here.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// chatRoles are the roles chat templates know.
var chatRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

// chatMessages validates an OpenAI messages array and rewrites what chat
// templates cannot take verbatim, as vLLM does:
//   - content given as an array of text parts becomes one string, the
//     parts joined with "\n";
//   - content with images (image_url or input_image parts) or video
//     (video_url) stays an array: each text part {"type": "text", "text"}
//     and each media part {"type": "image"} or {"type": "video"}, which
//     is what Hugging Face chat templates test for; where the bytes are
//     is returned in the order the parts appear (audio and files are
//     refused: not supported yet);
//   - role "developer" becomes "system";
//   - an assistant's reasoning (vLLM's newer name) is also given as
//     reasoning_content, which Qwen3-style templates read;
//   - an assistant tool call's function.arguments given as a JSON string
//     (as the OpenAI API sends it) becomes the object it encodes, which is
//     what templates print with tojson.
func chatMessages(raw json.RawMessage) (json.RawMessage, []mediaRef, error) {
	if isNull(raw) {
		return nil, nil, badRequest("messages", "messages: required (an array of at least one message)")
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil, nil, badRequest("messages", "messages: expected an array of message objects")
	}
	if len(msgs) == 0 {
		return nil, nil, badRequest("messages", "messages: at least one message is required")
	}
	out := make([]object, len(msgs))
	var refs []mediaRef
	for i, m := range msgs {
		o, err := chatMessage(i, m, &refs)
		if err != nil {
			return nil, nil, err
		}
		out[i] = o
	}
	return mustJSON(out), refs, nil
}

// chatMessage normalizes messages[i], adding its media to refs.
func chatMessage(i int, raw json.RawMessage, refs *[]mediaRef) (object, error) {
	at := fmt.Sprintf("messages[%d]", i)
	o, ok := parseObject(raw)
	if !ok {
		return nil, badRequest(at, "%s: expected an object with a role and content", at)
	}
	var role string
	if err := json.Unmarshal(o.get("role"), &role); err != nil || role == "" {
		return nil, badRequest(at+".role", "%s.role: expected one of system, developer, user, assistant, tool", at)
	}
	if !chatRoles[role] {
		return nil, badRequest(at+".role", "%s.role: unknown role %q (expected system, developer, user, assistant or tool)", at, role)
	}
	if role == "developer" {
		o = o.set("role", mustJSON("system"))
	}
	content := o.get("content")
	switch {
	case isNull(content):
		if role != "assistant" {
			return nil, badRequest(at+".content", "%s.content: required for role %q", at, role)
		}
	case content[0] == '"':
	case content[0] == '[':
		parts, err := contentParts(at+".content", role, content, refs)
		if err != nil {
			return nil, err
		}
		o = o.set("content", parts)
	default:
		return nil, badRequest(at+".content", "%s.content: expected a string or an array of content parts", at)
	}
	if rc := o.get("reasoning_content"); rc != nil && !isNull(rc) && rc[0] != '"' {
		return nil, badRequest(at+".reasoning_content", "%s.reasoning_content: expected a string", at)
	}
	if r := o.get("reasoning"); o.get("reasoning_content") == nil && r != nil && len(r) > 0 && r[0] == '"' {
		// vLLM's newer name for the same field
		o = append(o, field{"reasoning_content", r})
	}
	if calls := o.get("tool_calls"); !isNull(calls) {
		fixed, err := toolCallArgs(at+".tool_calls", calls)
		if err != nil {
			return nil, err
		}
		o = o.set("tool_calls", fixed)
	}
	return o, nil
}

// contentPart is one part of an OpenAI content array (the fields of every
// kind read here).
type contentPart struct {
	Type     string          `json:"type"`
	Text     *string         `json:"text"`
	ImageURL json.RawMessage `json:"image_url"` // {"url", "detail"}, or the URL (input_image)
	VideoURL json.RawMessage `json:"video_url"` // vLLM's {"url"}
	FileID   *string         `json:"file_id"`   // input_image of an uploaded file
	// InputAudio is {"data": base64, "format": "wav", "mp3", …}; the
	// format is read from the bytes, as for every medium.
	InputAudio *struct {
		Data   *string `json:"data"`
		Format string  `json:"format"`
	} `json:"input_audio"`
}

// contentParts reads a content array: text parts alone become one string
// (joined with "\n"); with media, the parts stay a list of text parts and
// placeholders, and the media go to refs.
func contentParts(at, role string, raw json.RawMessage, refs *[]mediaRef) (json.RawMessage, error) {
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, badRequest(at, "%s: expected an array of content parts ({\"type\": \"text\", \"text\": …})", at)
	}
	texts := make([]string, 0, len(parts))
	var list []json.RawMessage // set once a media part is seen
	for j, p := range parts {
		pat := fmt.Sprintf("%s[%d]", at, j)
		switch p.Type {
		case "text", "input_text":
			if p.Text == nil {
				return nil, badRequest(pat+".text", "%s.text: required for a text part", pat)
			}
			if list != nil {
				list = append(list, textPart(*p.Text))
			} else {
				texts = append(texts, *p.Text)
			}
		case "image_url", "input_image", "video_url":
			kind, field := kindImage, p.ImageURL
			fieldAt := pat + ".image_url"
			if p.Type == "video_url" {
				kind, field, fieldAt = kindVideo, p.VideoURL, pat+".video_url"
			}
			if role != "user" {
				return nil, badRequest(pat, "%s: %s content is accepted in user messages only (this message's role is %s)", pat, kind, role)
			}
			if p.Type == "input_image" && p.FileID != nil && isNull(field) {
				return nil, badRequest(pat+".file_id", "%s.file_id: uploaded files are not supported (Hearth keeps no files); send image_url as a base64 data URL", pat)
			}
			u, src, err := mediaURL(fieldAt, field)
			if err != nil {
				return nil, err
			}
			ref, err := sourceRef(pat, src, kind, u)
			if err != nil {
				return nil, err
			}
			*refs = append(*refs, ref)
			list = withPlaceholder(list, texts, kind)
		case "input_audio":
			if role != "user" {
				return nil, badRequest(pat, "%s: audio content is accepted in user messages only (this message's role is %s)", pat, role)
			}
			if p.InputAudio == nil || p.InputAudio.Data == nil {
				return nil, badRequest(pat+".input_audio.data", "%s.input_audio.data: required (the audio, base64)", pat)
			}
			*refs = append(*refs, mediaRef{at: pat, src: pat + ".input_audio.data", kind: kindAudio, data: *p.InputAudio.Data, bare: true})
			list = withPlaceholder(list, texts, kindAudio)
		case "file", "input_file":
			return nil, badRequest(pat, "%s: %s content is not supported yet (text, images, video and audio only)", pat, p.Type)
		default:
			return nil, badRequest(pat+".type", "%s.type: unknown content part type %q", pat, p.Type)
		}
	}
	if list == nil {
		return mustJSON(strings.Join(texts, "\n")), nil
	}
	return mustJSON(list), nil
}

// textPart is {"type": "text", "text": t}.
func textPart(t string) json.RawMessage {
	return mustJSON(object{{"type", mustJSON("text")}, {"text", mustJSON(t)}})
}

// toolCallArgs turns each tool call's string arguments into an object.
func toolCallArgs(at string, raw json.RawMessage) (json.RawMessage, error) {
	var calls []json.RawMessage
	if err := json.Unmarshal(raw, &calls); err != nil {
		return nil, badRequest(at, "%s: expected an array of tool calls", at)
	}
	out := make([]object, len(calls))
	for j, c := range calls {
		cat := fmt.Sprintf("%s[%d]", at, j)
		o, ok := parseObject(c)
		if !ok {
			return nil, badRequest(cat, "%s: expected an object", cat)
		}
		fn, ok := parseObject(o.get("function"))
		if !ok {
			return nil, badRequest(cat+".function", "%s.function: expected an object with name and arguments", cat)
		}
		if args := fn.get("arguments"); len(args) > 0 && args[0] == '"' {
			var s string
			if err := json.Unmarshal(args, &s); err != nil {
				return nil, badRequest(cat+".function.arguments", "%s.function.arguments: %v", cat, err)
			}
			var v json.RawMessage
			if strings.TrimSpace(s) == "" {
				v = json.RawMessage("{}")
			} else if err := json.Unmarshal([]byte(s), &v); err != nil {
				return nil, badRequest(cat+".function.arguments", "%s.function.arguments: not valid JSON: %v", cat, err)
			}
			fn = fn.set("arguments", v)
			o = o.set("function", mustJSON(fn))
		}
		out[j] = o
	}
	return mustJSON(out), nil
}

// validateTools checks an OpenAI tools array's shape.
func validateTools(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var tools []struct {
		Type     string `json:"type"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		return badRequest("tools", "tools: expected an array of {\"type\": \"function\", \"function\": {…}}")
	}
	for i, t := range tools {
		if t.Type != "function" {
			return badRequest(fmt.Sprintf("tools[%d].type", i), "tools[%d].type: only \"function\" tools are supported, got %q", i, t.Type)
		}
		if t.Function == nil || t.Function.Name == "" {
			return badRequest(fmt.Sprintf("tools[%d].function.name", i), "tools[%d].function.name: required", i)
		}
	}
	return nil
}
