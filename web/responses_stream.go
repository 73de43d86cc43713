package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"hearth/engine"
)

// Responses stream events, fields as the API documents them. Every event
// carries its type and a sequence_number that counts from 0.
type (
	responseEvent struct {
		Type           string         `json:"type"`
		Response       responseObject `json:"response"`
		SequenceNumber int            `json:"sequence_number"`
	}
	itemEvent struct {
		Type           string `json:"type"`
		OutputIndex    int    `json:"output_index"`
		Item           any    `json:"item"`
		SequenceNumber int    `json:"sequence_number"`
	}
	partEvent struct {
		Type           string `json:"type"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Part           any    `json:"part"` // outputText or reasoningPart
		SequenceNumber int    `json:"sequence_number"`
	}
	reasoningDeltaEvent struct {
		Type           string `json:"type"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Delta          string `json:"delta"`
		SequenceNumber int    `json:"sequence_number"`
	}
	reasoningDoneEvent struct {
		Type           string `json:"type"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Text           string `json:"text"`
		SequenceNumber int    `json:"sequence_number"`
	}
	textDeltaEvent struct {
		Type           string             `json:"type"`
		ItemID         string             `json:"item_id"`
		OutputIndex    int                `json:"output_index"`
		ContentIndex   int                `json:"content_index"`
		Delta          string             `json:"delta"`
		Logprobs       []tokenLogprobBody `json:"logprobs"`
		SequenceNumber int                `json:"sequence_number"`
	}
	textDoneEvent struct {
		Type           string             `json:"type"`
		ItemID         string             `json:"item_id"`
		OutputIndex    int                `json:"output_index"`
		ContentIndex   int                `json:"content_index"`
		Text           string             `json:"text"`
		Logprobs       []tokenLogprobBody `json:"logprobs"`
		SequenceNumber int                `json:"sequence_number"`
	}
	argsDeltaEvent struct {
		Type           string `json:"type"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		Delta          string `json:"delta"`
		SequenceNumber int    `json:"sequence_number"`
	}
	argsDoneEvent struct {
		Type           string `json:"type"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		Name           string `json:"name"`
		Arguments      string `json:"arguments"`
		SequenceNumber int    `json:"sequence_number"`
	}
)

// responseStream writes a Responses answer as the SDKs read it:
//
//	response.created, response.in_progress
//	for the thinking, first: response.output_item.added (a reasoning item),
//	  response.content_part.added (reasoning_text), response.reasoning_text.delta…,
//	  response.reasoning_text.done, response.content_part.done,
//	  response.output_item.done
//	per message item: response.output_item.added, response.content_part.added,
//	  response.output_text.delta…, response.output_text.done,
//	  response.content_part.done, response.output_item.done
//	per function call: response.output_item.added,
//	  response.function_call_arguments.delta (the whole arguments),
//	  response.function_call_arguments.done, response.output_item.done
//	response.completed (or response.incomplete at max_output_tokens)
//
// Each event is "event: TYPE\ndata: {json}\n\n", as OpenAI sends them, with
// no [DONE]. A failure after the stream started closes the open message
// item (status incomplete) and ends the stream with response.failed,
// whose response carries the error.
type responseStream struct {
	w    *sse
	seq  int
	resp responseObject // the response as it stands
}

// send writes one event, built with next() as its sequence number.
func (rs *responseStream) send(typ string, ev any) error {
	rs.seq++
	return rs.w.event(typ, ev)
}

// next is the sequence number of the event about to be sent.
func (rs *responseStream) next() int { return rs.seq }

func (rs *responseStream) whole(typ string) error {
	return rs.send(typ, responseEvent{Type: typ, Response: rs.resp, SequenceNumber: rs.next()})
}

func (rs *responseStream) reasoningAdded(index int, r reasoningItem) error {
	if err := rs.send("response.output_item.added", itemEvent{Type: "response.output_item.added", OutputIndex: index, Item: r, SequenceNumber: rs.next()}); err != nil {
		return err
	}
	return rs.send("response.content_part.added", partEvent{Type: "response.content_part.added", ItemID: r.ID, OutputIndex: index,
		Part: reasoningPart{Type: "reasoning_text"}, SequenceNumber: rs.next()})
}

func (rs *responseStream) reasoningDelta(index int, r reasoningItem, delta string) error {
	return rs.send("response.reasoning_text.delta", reasoningDeltaEvent{Type: "response.reasoning_text.delta", ItemID: r.ID, OutputIndex: index,
		Delta: delta, SequenceNumber: rs.next()})
}

func (rs *responseStream) reasoningDone(index int, r reasoningItem) error {
	part := r.Content[0]
	if err := rs.send("response.reasoning_text.done", reasoningDoneEvent{Type: "response.reasoning_text.done", ItemID: r.ID, OutputIndex: index,
		Text: part.Text, SequenceNumber: rs.next()}); err != nil {
		return err
	}
	if err := rs.send("response.content_part.done", partEvent{Type: "response.content_part.done", ItemID: r.ID, OutputIndex: index,
		Part: part, SequenceNumber: rs.next()}); err != nil {
		return err
	}
	return rs.send("response.output_item.done", itemEvent{Type: "response.output_item.done", OutputIndex: index, Item: r, SequenceNumber: rs.next()})
}

func (rs *responseStream) messageAdded(index int, m messageItem) error {
	if err := rs.send("response.output_item.added", itemEvent{Type: "response.output_item.added", OutputIndex: index, Item: m, SequenceNumber: rs.next()}); err != nil {
		return err
	}
	return rs.send("response.content_part.added", partEvent{Type: "response.content_part.added", ItemID: m.ID, OutputIndex: index,
		Part: newOutputText(), SequenceNumber: rs.next()})
}

func (rs *responseStream) textDelta(index int, m messageItem, delta string, lps []tokenLogprobBody) error {
	return rs.send("response.output_text.delta", textDeltaEvent{Type: "response.output_text.delta", ItemID: m.ID, OutputIndex: index,
		Delta: delta, Logprobs: lps, SequenceNumber: rs.next()})
}

func (rs *responseStream) messageDone(index int, m messageItem) error {
	part := m.Content[0]
	if err := rs.send("response.output_text.done", textDoneEvent{Type: "response.output_text.done", ItemID: m.ID, OutputIndex: index,
		Text: part.Text, Logprobs: part.Logprobs, SequenceNumber: rs.next()}); err != nil {
		return err
	}
	if err := rs.send("response.content_part.done", partEvent{Type: "response.content_part.done", ItemID: m.ID, OutputIndex: index,
		Part: part, SequenceNumber: rs.next()}); err != nil {
		return err
	}
	return rs.send("response.output_item.done", itemEvent{Type: "response.output_item.done", OutputIndex: index, Item: m, SequenceNumber: rs.next()})
}

// callDone writes a whole function call: the engine parses a call once it
// is complete, so its arguments arrive as one delta.
func (rs *responseStream) callDone(index int, fc functionCallItem) error {
	added := fc
	added.Status, added.Arguments = "in_progress", ""
	if err := rs.send("response.output_item.added", itemEvent{Type: "response.output_item.added", OutputIndex: index, Item: added, SequenceNumber: rs.next()}); err != nil {
		return err
	}
	if err := rs.send("response.function_call_arguments.delta", argsDeltaEvent{Type: "response.function_call_arguments.delta", ItemID: fc.ID,
		OutputIndex: index, Delta: fc.Arguments, SequenceNumber: rs.next()}); err != nil {
		return err
	}
	if err := rs.send("response.function_call_arguments.done", argsDoneEvent{Type: "response.function_call_arguments.done", ItemID: fc.ID,
		OutputIndex: index, Name: fc.Name, Arguments: fc.Arguments, SequenceNumber: rs.next()}); err != nil {
		return err
	}
	return rs.send("response.output_item.done", itemEvent{Type: "response.output_item.done", OutputIndex: index, Item: fc, SequenceNumber: rs.next()})
}

// streamResponses streams the answer (see responseStream).
func (s *Server) streamResponses(c echo.Context, g generator, job *responsesJob, resp responseObject) error {
	rs := &responseStream{w: newSSE(c), resp: resp}
	out := &responseOutput{maxCalls: job.maxCalls, logprobs: job.req.Logprobs, on: rs}
	started := false
	begin := func() error {
		if started {
			return nil
		}
		started = true
		if err := rs.whole("response.created"); err != nil {
			return err
		}
		return rs.whole("response.in_progress")
	}
	emit := func(d engine.Delta) error {
		if err := begin(); err != nil {
			return err
		}
		return out.add(d)
	}
	finish := func(u engine.Usage) error {
		if err := begin(); err != nil {
			return err
		}
		status, incomplete := statusOf(u)
		if err := out.finish(status); err != nil {
			return err
		}
		now := time.Now().Unix()
		rs.resp.Status, rs.resp.IncompleteDetails, rs.resp.Output, rs.resp.Usage, rs.resp.CompletedAt = status, incomplete, out.items, responseUsageOf(u), &now
		return rs.whole("response." + status)
	}
	fail := func(p problem) error {
		// The text so far stays, in an item marked incomplete.
		if err := out.close("incomplete"); err != nil {
			return err
		}
		code := p.Code
		switch {
		case code != "":
		case p.Status == http.StatusTooManyRequests:
			code = "rate_limit_exceeded"
		case p.Status < 500:
			code = "invalid_prompt"
		default:
			code = "server_error"
		}
		rs.resp.Status, rs.resp.Error, rs.resp.Output = "failed", &responseError{Code: code, Message: p.Message}, out.items
		return rs.whole("response.failed")
	}
	return s.generate(c, g, job.req, answer{
		kind: "responses stream", model: resp.Model, emit: emit, finish: finish,
		started: rs.w.begun, fail: fail,
	})
}
