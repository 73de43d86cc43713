package web

import (
	"encoding/json"
	"errors"

	"hearth/engine"
	"hearth/engine/grammar"
)

// outputFormat turns an API's structured-output request into the
// engine's constraint, compiling a schema here so that one the grammar
// cannot express is a 400 naming its keyword before anything streams.
// field is the API's name for it (response_format, text.format, format).
func outputFormat(field string, jsonObject bool, schema json.RawMessage) (*engine.Format, error) {
	if jsonObject {
		return &engine.Format{JSONObject: true}, nil
	}
	if isNullOrEmpty(schema) {
		return nil, badRequest(field, "%s: json_schema needs a schema", field)
	}
	if _, err := grammar.Schema(schema); err != nil {
		var se *grammar.SchemaError
		if errors.As(err, &se) {
			return nil, badRequest(field, "%s: the schema cannot constrain output: %s", field, se.Error())
		}
		return nil, err
	}
	return &engine.Format{Schema: schema}, nil
}
