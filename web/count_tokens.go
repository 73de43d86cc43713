package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"hearth/engine"
)

// countTokensResponse is Anthropic's POST /v1/messages/count_tokens answer.
type countTokensResponse struct {
	InputTokens int `json:"input_tokens"`
}

// countTokens serves POST /v1/messages/count_tokens: the input_tokens that
// /v1/messages reports for the same model, system, messages and tools
// (max_tokens and the sampling fields are not needed, and not checked).
// The conversation is rendered with the model's chat template and
// tokenized, as a generation's prompt is, without loading the model onto
// a backend (Pool.Prompter). A prompt that leaves no room in the model's
// context for one generated token is refused as /v1/messages refuses it.
// Images are checked and decoded as for /v1/messages, and passed to the
// prompter with the request.
func (s *Server) countTokens(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var in messagesRequest
	if err := decodeJSON(body, &in); err != nil {
		return err
	}
	msgs, tools, refs, err := in.prompt()
	if err != nil {
		return err
	}
	p, err := s.pool.Prompter(in.Model)
	if err != nil {
		return err
	}
	if tools != nil && !p.ToolCalls() {
		return noToolCalls(p.ID)
	}
	req := &engine.Request{Messages: msgs, Tools: tools}
	if len(refs) > 0 {
		// Images are checked and decoded as /v1/messages would: a model
		// without vision refuses them, and a bad image is a 400 here too.
		t := target{media: refs}
		if err := s.loadMedia(c.Request().Context(), s.promptInfo(p.ID), &t); err != nil {
			return err
		}
		req.Images = t.req.Images
	}
	ids, err := p.Prompt(c.Request().Context(), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, countTokensResponse{InputTokens: len(ids)})
}

// promptInfo is what count_tokens knows of a model it does not load: its
// id and, from the model list, its capabilities.
func (s *Server) promptInfo(id string) engine.Info {
	info := engine.Info{ID: id}
	if m, err := s.catalogEntry(id); err == nil {
		info.Capabilities = m.Capabilities
	}
	return info
}
