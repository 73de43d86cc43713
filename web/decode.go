package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hearth/engine/sample"
	"io"
	"reflect"
	"strings"

	"github.com/labstack/echo/v4"
)

// readBody reads the whole request body (bounded by the server's limit).
func readBody(c echo.Context) ([]byte, error) {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	return body, nil
}

// decodeJSON decodes body into dst the way the OpenAI API does: unknown
// fields are ignored, but a known field of the wrong type is rejected with
// its name.
func decodeJSON(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("", "the request body is empty; send a JSON object")
	}
	err := json.Unmarshal(body, dst)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return badRequest("", "the request body must be a JSON object, got %s", jsonKind(te.Value))
		}
		field := jsonPath(te.Field)
		return badRequest(field, "%s: expected %s, got %s", field, goKind(te.Type), jsonKind(te.Value))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return badRequest("", "malformed JSON at byte %d: %v", se.Offset, se)
	}
	return badRequest("", "malformed JSON: %v", err)
}

// embedded are the Go names of the structs embedded in request types,
// which encoding/json puts in a field path.
var embedded = map[string]bool{"samplingParams": true, "openAIParams": true, "ollamaCommon": true}

// jsonPath drops the Go names of embedded structs from a field path
// ("samplingParams.temperature" → "temperature").
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	out := parts[:0]
	for _, p := range parts {
		if !embedded[p] {
			out = append(out, p)
		}
	}
	return strings.Join(out, ".")
}

// jsonKind names a JSON value kind as UnmarshalTypeError reports it
// ("string", "number 1.5", "array", …).
func jsonKind(v string) string {
	switch {
	case v == "object" || v == "array":
		return "an " + v
	case strings.HasPrefix(v, "number"):
		return v
	case v == "bool":
		return "a boolean"
	case v == "":
		return "a value of the wrong type"
	}
	return "a " + v
}

// goKind names the JSON kind a Go type expects.
func goKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another type"
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) == 0 || string(s) == "null"
}

// isNullOrEmpty is isNull, or an empty array ("[]"): a list field that
// asks for nothing.
func isNullOrEmpty(raw json.RawMessage) bool {
	return isNull(raw) || string(raw) == "[]"
}

// stringList decodes a field that is a string or an array of strings (stop,
// stop_sequences). Empty strings are dropped.
func stringList(field string, raw json.RawMessage, maxItems int) ([]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badRequest(field, "%s: expected a string or an array of strings", field)
	}
	if len(many) > maxItems {
		return nil, badRequest(field, "%s: at most %d strings are allowed, got %d", field, maxItems, len(many))
	}
	out := many[:0]
	for _, s := range many {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// checkRange rejects a parameter outside r (or NaN).
func checkRange(field string, v *float64, r sample.Range) error {
	if v != nil && !r.Contains(*v) {
		return badRequest(field, "%s: %v is out of range [%v, %v]", field, *v, r.Lo, r.Hi)
	}
	return nil
}
