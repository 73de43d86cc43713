package web

import (
	"encoding/json"

	"hearth/engine"
	"hearth/engine/sample"
)

// samplingParams are the sampling fields the OpenAI endpoints share, plus
// the common extensions (top_k, min_p, repetition_penalty) that vLLM,
// llama.cpp and LM Studio accept.
type samplingParams struct {
	Temperature       *float64 `json:"temperature"`
	TopP              *float64 `json:"top_p"`
	TopK              *int     `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	PresencePenalty   *float64 `json:"presence_penalty"`
	FrequencyPenalty  *float64 `json:"frequency_penalty"`
	Seed              *int64   `json:"seed"`
}

// defaultTemperature is OpenAI's and Anthropic's documented default, used
// when a request sets none.
const defaultTemperature = 1.0

// options validates the parameters (naming the first bad one) and makes
// sampler options. maxTemp is the API's upper bound (2 for OpenAI, 1 for
// Anthropic).
func (p *samplingParams) options(maxTemp float64) (sample.Options, error) {
	return p.optionsAs(maxTemp, nil)
}

// optionsAs is options for an API that spells the fields otherwise: name
// maps the OpenAI name to the request's in errors (nil = as is).
func (p *samplingParams) optionsAs(maxTemp float64, name func(string) string) (sample.Options, error) {
	if name == nil {
		name = func(s string) string { return s }
	}
	checks := []struct {
		field string
		v     *float64
		r     sample.Range
	}{
		{"temperature", p.Temperature, sample.Range{Lo: sample.TemperatureRange.Lo, Hi: min(maxTemp, sample.TemperatureRange.Hi)}},
		{"top_p", p.TopP, sample.TopPRange},
		{"min_p", p.MinP, sample.MinPRange},
		{"presence_penalty", p.PresencePenalty, sample.PenaltyRange},
		{"frequency_penalty", p.FrequencyPenalty, sample.PenaltyRange},
		{"repetition_penalty", p.RepetitionPenalty, sample.RepetitionPenaltyRange},
	}
	for _, c := range checks {
		if err := checkRange(name(c.field), c.v, c.r); err != nil {
			return sample.Options{}, err
		}
	}
	if p.TopK != nil && *p.TopK < 0 {
		return sample.Options{}, badRequest(name("top_k"), "%s: %d must not be negative", name("top_k"), *p.TopK)
	}
	if p.RepetitionPenalty != nil && *p.RepetitionPenalty == 0 {
		return sample.Options{}, badRequest(name("repetition_penalty"), "%s: must be positive (1 = off)", name("repetition_penalty"))
	}
	o := sample.Options{Temperature: defaultTemperature}
	set := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&o.Temperature, p.Temperature)
	set(&o.TopP, p.TopP)
	set(&o.MinP, p.MinP)
	set(&o.RepetitionPenalty, p.RepetitionPenalty)
	set(&o.PresencePenalty, p.PresencePenalty)
	set(&o.FrequencyPenalty, p.FrequencyPenalty)
	if p.TopK != nil {
		o.TopK = *p.TopK
	}
	if p.Seed != nil {
		s := uint64(*p.Seed)
		o.Seed = &s
	}
	return o, nil
}

// withDefaults returns p with the fields the request left unset taken
// from the model's own defaults (its generation_config.json), as Ollama
// and LM Studio do; fields the model does not set stay unset.
func (p samplingParams) withDefaults(d sample.Options) samplingParams {
	fill := func(dst **float64, v float64) {
		if *dst == nil && v != 0 {
			*dst = &v
		}
	}
	// A model that decodes greedily says so with top_k 1; a request that
	// asks for a temperature wants sampling, so that default does not apply.
	greedy := d.TopK == 1
	fill(&p.Temperature, d.Temperature)
	fill(&p.TopP, d.TopP)
	fill(&p.MinP, d.MinP)
	fill(&p.RepetitionPenalty, d.RepetitionPenalty)
	if p.TopK == nil && d.TopK != 0 && !(greedy && p.Temperature != nil) {
		k := d.TopK
		p.TopK = &k
	}
	return p
}

// sampling keeps a request's sampling fields until the model is known, so
// that its defaults can fill the unset ones.
type sampling struct {
	params  samplingParams
	maxTemp float64
}

// apply sets req.Sample from the request's fields and the model's defaults.
// Defaults that fall outside this API's ranges are ignored.
func (s sampling) apply(req *engine.Request, defaults sample.Options) {
	p := s.params.withDefaults(defaults)
	if opt, err := p.options(s.maxTemp); err == nil {
		req.Sample = opt
	}
}

// SamplingParams are the sampling fields of a request made outside HTTP
// (hearth run's flags), nil when unset.
type SamplingParams = samplingParams

// ChatSampling is the sampler options the chat routes give a request that
// sets only p's fields, for a model whose generation_config.json defaults
// are d (engine.Runner.Defaults): the request's values, else the model's,
// else the API's. hearth run samples through it, so that the terminal and
// the server agree. The error names a field of p that is out of range.
func ChatSampling(p SamplingParams, d sample.Options) (sample.Options, error) {
	opt, err := p.options(2)
	if err != nil {
		return sample.Options{}, err
	}
	req := engine.Request{Sample: opt}
	sampling{params: p, maxTemp: 2}.apply(&req, d)
	return req.Sample, nil
}

// openAIParams are the fields /v1/chat/completions and /v1/completions share.
type openAIParams struct {
	Model         string         `json:"model"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options"`
	samplingParams
	MaxTokens *int            `json:"max_tokens"`
	Stop      json.RawMessage `json:"stop"`
	N         *int            `json:"n"`
	LogitBias json.RawMessage `json:"logit_bias"`
	// Speculative is Hearth's extension: turn speculative decoding on or
	// off for this request (where the server drafts: hearth serve --draft).
	Speculative *bool `json:"speculative"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// maxStops bounds the stop strings of one request (OpenAI allows 4; we are
// more lenient but keep the matcher cheap).
const maxStops = 16

// common validates the shared fields. maxTokens is the effective limit
// (max_completion_tokens wins over max_tokens for chat).
func (p *openAIParams) common(maxTokens *int, maxTokensField string) (sample.Options, []string, int, error) {
	if p.N != nil && (*p.N < 1 || *p.N > maxChoices) {
		return sample.Options{}, nil, 0, badRequest("n", "n: from 1 to %d choices, got %d", maxChoices, *p.N)
	}
	if p.StreamOptions != nil && !p.Stream {
		return sample.Options{}, nil, 0, badRequest("stream_options", "stream_options: only allowed when stream is true")
	}
	if !isNull(p.LogitBias) {
		var lb map[string]float64
		if err := json.Unmarshal(p.LogitBias, &lb); err != nil {
			return sample.Options{}, nil, 0, badRequest("logit_bias", "logit_bias: expected an object of token ids to numbers")
		}
		if len(lb) > 0 {
			return sample.Options{}, nil, 0, badRequest("logit_bias", "logit_bias: not supported")
		}
	}
	opt, err := p.options(2)
	if err != nil {
		return sample.Options{}, nil, 0, err
	}
	stops, err := stringList("stop", p.Stop, maxStops)
	if err != nil {
		return sample.Options{}, nil, 0, err
	}
	n := 0
	if maxTokens != nil {
		if *maxTokens < 1 {
			return sample.Options{}, nil, 0, badRequest(maxTokensField, "%s: must be at least 1, got %d", maxTokensField, *maxTokens)
		}
		n = *maxTokens
	}
	return opt, stops, n, nil
}

// maxChoices bounds n: the choices of one request decode together where
// the runner batches, else one after another (choices.go).
const maxChoices = 16

// choices is n, 1 when unset.
func (p *openAIParams) choices() int {
	if p.N == nil {
		return 1
	}
	return *p.N
}

// choiceRequest is req for choice i of n: with a seed, choice i samples
// with seed+i, so that the choices differ and each is reproducible.
func choiceRequest(req engine.Request, i int) engine.Request {
	if i > 0 && req.Sample.Seed != nil {
		seed := *req.Sample.Seed + uint64(i)
		req.Sample.Seed = &seed
	}
	return req
}

// addUsage adds choice u to the usage of the choices before it: the
// prompt counts once, the generated tokens of every choice add up.
func addUsage(total, u engine.Usage, i int) engine.Usage {
	if i == 0 {
		return u
	}
	total.CompletionTokens += u.CompletionTokens
	total.ReasoningTokens += u.ReasoningTokens
	total.Drafted += u.Drafted
	total.Accepted += u.Accepted
	total.DecodeDuration += u.DecodeDuration
	return total
}

// includeUsage reports whether a stream ends with a usage chunk.
func (p *openAIParams) includeUsage() bool {
	return p.Stream && p.StreamOptions != nil && p.StreamOptions.IncludeUsage
}
