// check.mjs drives a running Hearth server with the official OpenAI,
// Anthropic and Ollama JavaScript clients, the way an application would,
// and fails (exit 1) when anything does not behave like the real APIs.
//
//   node check.mjs [BASE_URL] [MODEL] [TOOL_MODEL] [THINK_MODEL] [WHISPER_MODEL] [AUDIO_MODEL] [EMBED_MODEL]
//
// MODEL defaults to hearth/starter. TOOL_MODEL, when given, is a model in
// the cache whose chat template has a tool-call format: the function-tool
// round trip runs on it, and at the end it is DELETED (clientcheck_test.go
// pulls a throwaway one); leave it out against a server with models you
// keep. THINK_MODEL, when given, is a model whose replies are thinking (a
// chat template that opens a <think> block): the reasoning fields are
// checked on it, whole and through each SDK's stream accumulator.
// WHISPER_MODEL, when given, is a Whisper checkpoint: audio.transcriptions
// and audio.translations run on it, in every response format. AUDIO_MODEL,
// when given, is a chat model that takes audio: an input_audio part is
// answered, and audio.transcriptions runs on it too. EMBED_MODEL, when
// given, is an embedding model (sentence-transformers pooling):
// embeddings.create (base64, the SDK's default, and float, with dimensions),
// ollama.embed and ollama.embeddings run on it. It prints one line
// per check and a JSON summary on the last line.

import OpenAI, { toFile } from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { Ollama } from "ollama";

const base = process.argv[2] ?? process.env.HEARTH_URL ?? "http://127.0.0.1:11435";
const model = process.argv[3] ?? "hearth/starter";
const toolModel = process.argv[4];
const thinkModel = process.argv[5];
const whisperModel = process.argv[6];
const audioModel = process.argv[7];
const embedModel = process.argv[8];

const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: "not-needed", maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: base, apiKey: "not-needed", maxRetries: 0 });
const ollama = new Ollama({ host: base });

const summary = {};
let failed = 0;

function check(name, ok, detail) {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${detail ? ": " + detail : ""}`);
  if (!ok) failed++;
}

const messages = [{ role: "user", content: "Say hello in one word." }];

// GET /v1/models
const models = [];
for await (const m of openai.models.list()) models.push(m.id);
check("models.list", models.includes(model), JSON.stringify(models));

// Structured output: the clients' parse helpers read the answer as JSON of
// the schema, constrained while it was generated.
const city = {
  type: "object",
  properties: { city: { type: "string", maxLength: 12 }, people: { type: "integer", minimum: 0, maximum: 99 } },
  required: ["city", "people"],
  additionalProperties: false,
};
const fits = (v) => v && typeof v.city === "string" && v.city.length <= 12 && Number.isInteger(v.people) && Object.keys(v).length === 2;
const parsedChat = await openai.chat.completions.parse({
  model, messages: [{ role: "user", content: "Name a city." }], max_tokens: 80,
  response_format: { type: "json_schema", json_schema: { name: "city", strict: true, schema: city } },
});
check("chat.completions.parse (json_schema)", fits(parsedChat.choices[0].message.parsed), parsedChat.choices[0].message.content);
const parsedResp = await openai.responses.parse({
  model, input: "Name a city.", max_output_tokens: 80,
  text: { format: { type: "json_schema", name: "city", strict: true, schema: city } },
});
check("responses.parse (json_schema)", fits(parsedResp.output_parsed), parsedResp.output_text);
const formatted = await ollama.chat({ model, messages: [{ role: "user", content: "Name a city." }], format: city, options: { num_predict: 80 } });
let ollamaParsed = null;
try { ollamaParsed = JSON.parse(formatted.message.content); } catch {}
check("ollama.chat format (schema)", fits(ollamaParsed), formatted.message.content);

// Chat, whole.
const whole = await openai.chat.completions.create({ model, messages, temperature: 0, max_tokens: 8 });
const text = whole.choices[0].message.content;
check("chat.completions.create", typeof text === "string" && whole.object === "chat.completion",
  JSON.stringify({ text, finish: whole.choices[0].finish_reason, usage: whole.usage }));
check("usage adds up", whole.usage.total_tokens === whole.usage.prompt_tokens + whole.usage.completion_tokens);
summary.chat = text;

// Chat, streamed, with the usage chunk.
const stream = await openai.chat.completions.create({
  model, messages, temperature: 0, max_tokens: 8, stream: true, stream_options: { include_usage: true },
});
let streamed = "";
let finish = null;
let usage = null;
for await (const chunk of stream) {
  for (const c of chunk.choices) {
    streamed += c.delta?.content ?? "";
    finish = c.finish_reason ?? finish;
  }
  if (chunk.usage) usage = chunk.usage;
}
check("chat stream text", streamed === text, JSON.stringify(streamed));
check("chat stream finish_reason", finish === whole.choices[0].finish_reason, finish);
check("chat stream usage", usage && usage.completion_tokens === whole.usage.completion_tokens, JSON.stringify(usage));

// The SDK's stream helper accumulates the same message.
const runner = openai.chat.completions.stream({ model, messages, temperature: 0, max_tokens: 8 });
const final = await runner.finalChatCompletion();
check("chat.completions.stream helper", final.choices[0].message.content === text);

// GET /v1/models/{id}: the SDK percent-encodes the slash of "org/name".
const retrieved = await openai.models.retrieve(model);
check("models.retrieve", retrieved.id === model && retrieved.object === "model", JSON.stringify({ id: retrieved.id, object: retrieved.object }));

// The Responses API, whole: the same greedy answer and counts as chat.
const wantStatus = whole.choices[0].finish_reason === "length" ? "incomplete" : "completed";
const resp = await openai.responses.create({ model, input: messages[0].content, temperature: 0, max_output_tokens: 8 });
check("responses.create", resp.object === "response" && resp.output_text === text && resp.output[0]?.type === "message" &&
  resp.output[0].content[0]?.type === "output_text" && resp.status === wantStatus &&
  resp.usage.input_tokens === whole.usage.prompt_tokens && resp.usage.output_tokens === whole.usage.completion_tokens,
  JSON.stringify({ text: resp.output_text, status: resp.status, usage: resp.usage }));
summary.responses = resp.output_text;

// Streamed: the raw events in the order the SDK's accumulator needs,
// numbered from 0.
const rstream = await openai.responses.create({ model, input: messages, temperature: 0, max_output_tokens: 8, stream: true });
const types = [];
let rdeltas = "";
let seqOK = true;
let rlast = null;
for await (const ev of rstream) {
  if (ev.sequence_number !== types.length) seqOK = false;
  types.push(ev.type);
  if (ev.type === "response.output_text.delta") rdeltas += ev.delta;
  rlast = ev;
}
const opening = ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"];
const closing = ["response.output_text.done", "response.content_part.done", "response.output_item.done", `response.${wantStatus}`];
check("responses stream events", seqOK && opening.every((t, i) => types[i] === t) && closing.every((t, i) => types.at(i - closing.length) === t) &&
  rdeltas === text && rlast.response.output_text === undefined && rlast.response.usage.output_tokens === resp.usage.output_tokens,
  JSON.stringify({ types: [...new Set(types)], rdeltas }));
// The SDK's stream helper checks the event order as it accumulates. (Its
// final response has no output_text unless a text format is parsed, and
// keeps the accumulated snapshot unless the stream ends with
// response.completed, as OpenAI's response.incomplete also leaves it.)
const outputText = (r) => r.output.filter((o) => o.type === "message").flatMap((o) => o.content)
  .filter((c) => c.type === "output_text").map((c) => c.text).join("");
const rhelper = openai.responses.stream({ model, input: messages[0].content, temperature: 0, max_output_tokens: 8 });
let helperDeltas = "";
rhelper.on("response.output_text.delta", (e) => { helperDeltas += e.delta; });
const rhfinal = await rhelper.finalResponse();
check("responses.stream helper", outputText(rhfinal) === text && helperDeltas === text, JSON.stringify({ text: outputText(rhfinal), deltas: helperDeltas }));

// What Hearth cannot do is a 400 naming the field.
try {
  await openai.responses.create({ model, input: "hi", previous_response_id: "resp_123" });
  check("responses previous_response_id refused", false, "no error");
} catch (e) {
  check("responses previous_response_id refused", e instanceof OpenAI.BadRequestError && e.param === "previous_response_id", e.message);
}
const weather = {
  type: "function", name: "get_weather", description: "The weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
try {
  await openai.responses.create({ model, input: "hi", tools: [{ type: "web_search_preview" }] });
  check("responses built-in tool refused", false, "no error");
} catch (e) {
  check("responses built-in tool refused", e instanceof OpenAI.BadRequestError && e.param === "tools[0].type", e.message);
}

// Text completion with logprobs.
const comp = await openai.completions.create({ model, prompt: "Once upon a time", max_tokens: 4, temperature: 0, logprobs: 2 });
check("completions.create logprobs", comp.choices[0].logprobs.tokens.length === comp.usage.completion_tokens,
  JSON.stringify(comp.choices[0].logprobs.tokens));

// Errors arrive as the SDK's typed errors.
try {
  await openai.chat.completions.create({ model, messages, n: 17 });
  check("n=17 is refused", false, "no error");
} catch (e) {
  check("n=17 is refused", e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "n", e.message);
}
try {
  await openai.chat.completions.create({ model: "no-such/model", messages });
  check("unknown model", false, "no error");
} catch (e) {
  check("unknown model", e instanceof OpenAI.NotFoundError, e.message);
}

// Anthropic Messages, whole and streamed.
const msg = await anthropic.messages.create({ model, max_tokens: 8, temperature: 0, messages });
const msgText = msg.content.filter((b) => b.type === "text").map((b) => b.text).join("");
check("messages.create", msgText === text && msg.usage.output_tokens === whole.usage.completion_tokens,
  JSON.stringify({ text: msgText, stop: msg.stop_reason, usage: msg.usage }));
// count_tokens: what messages.create reports, without generating.
const counted = await anthropic.messages.countTokens({ model, messages });
check("messages.countTokens", counted.input_tokens === msg.usage.input_tokens, JSON.stringify({ counted, usage: msg.usage }));
const countedSystem = await anthropic.messages.countTokens({ model, system: "Answer in one word.", messages });
check("messages.countTokens with system", countedSystem.input_tokens > 0 && countedSystem.input_tokens !== counted.input_tokens, JSON.stringify(countedSystem));
const mstream = anthropic.messages.stream({ model, max_tokens: 8, temperature: 0, messages });
let deltas = "";
mstream.on("text", (t) => { deltas += t; });
const mfinal = await mstream.finalMessage();
const mfinalText = mfinal.content.filter((b) => b.type === "text").map((b) => b.text).join("");
check("messages.stream", deltas === text && mfinalText === text && mfinal.stop_reason === msg.stop_reason,
  JSON.stringify({ deltas, stop: mfinal.stop_reason, usage: mfinal.usage }));
try {
  await anthropic.messages.create({ model, max_tokens: 8, temperature: 1.5, messages });
  check("anthropic error", false, "no error");
} catch (e) {
  check("anthropic error", e instanceof Anthropic.BadRequestError && e.error?.error?.type === "invalid_request_error", e.message);
}

// Ollama's native routes through the ollama client: the same greedy answer.
const options = { temperature: 0, num_predict: 8 };
const ochat = await ollama.chat({ model, messages, options });
check("ollama.chat", ochat.done && ochat.message.content === text && ochat.eval_count === whole.usage.completion_tokens &&
  ochat.prompt_eval_count === whole.usage.prompt_tokens && ochat.done_reason === (whole.choices[0].finish_reason === "length" ? "length" : "stop"),
  JSON.stringify(ochat));
let ostreamed = "";
let olast = null;
for await (const part of await ollama.chat({ model, messages, options, stream: true })) {
  ostreamed += part.message.content;
  olast = part;
}
check("ollama.chat stream", ostreamed === text && olast.done && olast.eval_count === ochat.eval_count && olast.total_duration > 0,
  JSON.stringify({ ostreamed, last: olast }));
const ogen = await ollama.generate({ model, prompt: messages[0].content, options });
check("ollama.generate", ogen.done && ogen.response === text, JSON.stringify(ogen));
const tags = await ollama.list();
check("ollama.list", tags.models.some((m) => m.name === model), JSON.stringify(tags.models.map((m) => m.name)));
check("ollama.list digests", tags.models.length > 0 && tags.models.every((m) => typeof m.digest === "string" && m.digest.length > 0),
  JSON.stringify(tags.models.map((m) => [m.name, m.digest])));
const shown = await ollama.show({ model });
check("ollama.show", typeof shown.template === "string" && shown.template.length > 0 && typeof shown.details.parameter_size === "string" &&
  Object.keys(shown.model_info).some((k) => k.endsWith(".context_length")), JSON.stringify(shown.details));
const listed = tags.models.find((m) => m.name === model);
check("ollama details agree", listed && JSON.stringify(listed.details) === JSON.stringify(shown.details) && shown.details.family !== "universal",
  JSON.stringify({ list: listed?.details, show: shown.details }));
const unload = await ollama.generate({ model, prompt: "", keep_alive: 0 });
const psAfterUnload = await ollama.ps();
check("ollama unload", unload.done_reason === "unload" && psAfterUnload.models.length === 0, JSON.stringify({ unload, ps: psAfterUnload.models.length }));
const load = await ollama.chat({ model, messages: [], keep_alive: "1m" });
const psAfterLoad = await ollama.ps();
check("ollama load", load.done_reason === "load" && psAfterLoad.models.length === 1, JSON.stringify({ load, ps: psAfterLoad.models.length }));
const running = psAfterLoad.models[0];
check("ollama.ps fields", running?.name === model && running.model === model && running.digest === listed?.digest && running.size > 0 &&
  typeof running.size_vram === "number" && JSON.stringify(running.details) === JSON.stringify(shown.details) && typeof running.expires_at === "string",
  JSON.stringify(running));
try {
  await ollama.chat({ model: "no-such/model", messages });
  check("ollama unknown model", false, "no error");
} catch (e) {
  check("ollama unknown model", e.name === "ResponseError" && e.status_code === 404 && /no-such\/model/.test(e.error), e.message);
}
summary.ollama = ochat.message.content;

// Ollama's copy makes an alias, listed beside its model and usable on
// every route; deleting it leaves the model.
const alias = "clientcheck-copy";
await ollama.copy({ source: model, destination: alias });
const afterCopy = await ollama.list();
const copied = afterCopy.models.find((m) => m.name === alias);
check("ollama.copy", copied && copied.digest === listed?.digest && copied.details.parent_model === model, JSON.stringify(copied));
const viaAlias = await ollama.chat({ model: alias, messages, options });
const aliasResp = await openai.responses.create({ model: alias, input: messages[0].content, temperature: 0, max_output_tokens: 8 });
check("copy works on every route", viaAlias.message.content === text && aliasResp.output_text === text, JSON.stringify({ ollama: viaAlias.message.content, responses: aliasResp.output_text }));
await ollama.delete({ model: alias });
const afterDelete = await ollama.list();
check("ollama.delete the copy", !afterDelete.models.some((m) => m.name === alias) && afterDelete.models.some((m) => m.name === model),
  JSON.stringify(afterDelete.models.map((m) => m.name)));
if (model === "hearth/starter") {
  try {
    await ollama.delete({ model });
    check("ollama.delete the built-in model is refused", false, "no error");
  } catch (e) {
    check("ollama.delete the built-in model is refused", e.name === "ResponseError" && e.status_code === 400 && /built into hearth/.test(e.error), e.message);
  }
}

if (thinkModel) {
  // The same greedy thinking on every route, whole and as each SDK
  // accumulates a stream of it, and never as the answer.
  const q = [{ role: "user", content: "Why is the sky blue?" }];
  const tc = await openai.chat.completions.create({ model: thinkModel, messages: q, temperature: 0, max_tokens: 8 });
  const thinking = tc.choices[0].message.reasoning_content;
  check("chat reasoning_content", typeof thinking === "string" && thinking.length > 0 && tc.choices[0].message.content === "" &&
    tc.usage.completion_tokens_details?.reasoning_tokens > 0, JSON.stringify({ message: tc.choices[0].message, usage: tc.usage }));
  let tstreamed = "";
  for await (const chunk of await openai.chat.completions.create({ model: thinkModel, messages: q, temperature: 0, max_tokens: 8, stream: true })) {
    for (const c of chunk.choices) tstreamed += c.delta?.reasoning_content ?? "";
  }
  check("chat stream reasoning_content", tstreamed === thinking, JSON.stringify(tstreamed));
  const rw = await openai.responses.create({ model: thinkModel, input: q[0].content, temperature: 0, max_output_tokens: 8 });
  check("responses.create reasoning item", rw.output[0]?.type === "reasoning" && rw.output[0].content?.[0]?.text === thinking &&
    rw.output_text === "" && rw.usage.output_tokens_details.reasoning_tokens > 0, JSON.stringify({ output: rw.output, usage: rw.usage }));
  const rs = openai.responses.stream({ model: thinkModel, input: q[0].content, temperature: 0, max_output_tokens: 8 });
  const rsFinal = await rs.finalResponse();
  const reasoningItem = rsFinal.output[0];
  check("responses.stream reasoning item", reasoningItem?.type === "reasoning" && reasoningItem.content?.[0]?.type === "reasoning_text" &&
    reasoningItem.content[0].text === thinking && outputText(rsFinal) === "",
    JSON.stringify(rsFinal.output));
  const am = await anthropic.messages.stream({ model: thinkModel, max_tokens: 8, temperature: 0, messages: q }).finalMessage();
  check("messages.stream thinking block", am.content.length === 1 && am.content[0].type === "thinking" && am.content[0].thinking === thinking,
    JSON.stringify(am.content));
  const oc = await ollama.chat({ model: thinkModel, messages: q, options: { temperature: 0, num_predict: 8 } });
  let othink = "";
  for await (const part of await ollama.chat({ model: thinkModel, messages: q, stream: true, options: { temperature: 0, num_predict: 8 } })) {
    othink += part.message.thinking ?? "";
  }
  check("ollama.chat thinking", oc.message.thinking === thinking && oc.message.content === "" && othink === thinking,
    JSON.stringify({ whole: oc.message, streamed: othink }));
}

if (toolModel) {
  // A function tool on a model whose template has a tool-call format: the
  // request is accepted and the answer is shaped right (a small model's
  // answer is a message or a call, whichever it makes); then the round
  // trip, with a call and its output sent back as input items.
  const first = await openai.responses.create({ model: toolModel, input: "Weather in Paris?", tools: [weather], temperature: 0, max_output_tokens: 8 });
  const shaped = first.object === "response" && first.output.length > 0 && first.output.every((o) =>
    (o.type === "message" && o.content.every((c) => c.type === "output_text")) ||
    (o.type === "function_call" && typeof o.call_id === "string" && typeof o.name === "string" && typeof o.arguments === "string"));
  check("responses.create with a function tool", shaped, JSON.stringify(first.output));
  const call = first.output.find((o) => o.type === "function_call") ??
    { type: "function_call", call_id: "call_1", name: "get_weather", arguments: JSON.stringify({ city: "Paris" }) };
  const input = [{ role: "user", content: "Weather in Paris?" }, ...first.output.filter((o) => o !== call), call,
    { type: "function_call_output", call_id: call.call_id, output: "22C and sunny" }];
  const second = await openai.responses.create({ model: toolModel, input, tools: [weather], temperature: 0, max_output_tokens: 8 });
  check("responses function tool round trip", second.object === "response" && second.status !== "failed" && second.usage.input_tokens > first.usage.input_tokens,
    JSON.stringify({ first: first.usage, second: second.usage, output: second.output }));
  const tstream = openai.responses.stream({ model: toolModel, input, tools: [weather], temperature: 0, max_output_tokens: 8 });
  let terminal = null;
  tstream.on("event", (e) => { if (/^response\.(completed|incomplete|failed)$/.test(e.type)) terminal = e.response; });
  const tfinal = await tstream.finalResponse();
  const kinds = (r) => r.output.map((o) => o.type).join();
  check("responses.stream with a function tool", terminal?.usage?.input_tokens === second.usage.input_tokens && tfinal.output.length > 0 &&
    kinds(tfinal) === kinds(terminal) && outputText(tfinal) === outputText(terminal),
    JSON.stringify({ usage: terminal?.usage, output: tfinal.output }));
  try {
    await openai.responses.create({ model, input: "Weather in Paris?", tools: [weather] });
    check("function tools on a model without tool calls refused", false, "no error");
  } catch (e) {
    check("function tools on a model without tool calls refused", e instanceof OpenAI.BadRequestError && e.param === "tools", e.message);
  }

  // Deleting a downloaded model unloads it and removes it from the cache.
  await ollama.delete({ model: toolModel });
  const afterRepoDelete = await ollama.list();
  const psAfterRepoDelete = await ollama.ps();
  check("ollama.delete a downloaded model", !afterRepoDelete.models.some((m) => m.name === toolModel) && !psAfterRepoDelete.models.some((m) => m.name === toolModel),
    JSON.stringify({ list: afterRepoDelete.models.map((m) => m.name), ps: psAfterRepoDelete.models.map((m) => m.name) }));
  try {
    await ollama.delete({ model: toolModel });
    check("ollama.delete an unknown model", false, "no error");
  } catch (e) {
    check("ollama.delete an unknown model", e.name === "ResponseError" && e.status_code === 404, e.message);
  }
}

{
  const several = await openai.chat.completions.create({ model, messages, n: 3, seed: 5, temperature: 1, max_tokens: 4 });
  check("chat.completions n 3", several.choices.length === 3 && several.choices.every((c, i) => c.index === i && typeof c.message.content === "string"),
    JSON.stringify(several.choices));
  const streamed = await openai.chat.completions.create({ model, messages, n: 2, seed: 5, temperature: 1, max_tokens: 4, stream: true });
  const texts = ["", ""];
  for await (const chunk of streamed) for (const c of chunk.choices) texts[c.index] += c.delta?.content ?? "";
  check("chat.completions n 2 streamed by index", texts[0] === several.choices[0].message.content && texts[1] === several.choices[1].message.content, JSON.stringify(texts));
}

// A 1.5 s 16 kHz 16-bit mono WAV of a wobbling tone.
const wav = (() => {
  const rate = 16000, n = 24000;
  const b = Buffer.alloc(44 + 2 * n);
  b.write("RIFF", 0); b.writeUInt32LE(36 + 2 * n, 4); b.write("WAVEfmt ", 8);
  b.writeUInt32LE(16, 16); b.writeUInt16LE(1, 20); b.writeUInt16LE(1, 22); b.writeUInt32LE(rate, 24);
  b.writeUInt32LE(2 * rate, 28); b.writeUInt16LE(2, 32); b.writeUInt16LE(16, 34); b.write("data", 36); b.writeUInt32LE(2 * n, 40);
  for (let i = 0; i < n; i++) {
    const t = i / rate;
    b.writeInt16LE(Math.round(0.4 * 32767 * Math.sin(2 * Math.PI * (220 + 80 * Math.sin(3 * t)) * t)), 44 + 2 * i);
  }
  return b;
})();
const file = () => toFile(wav, "clip.wav", { type: "audio/wav" });

if (whisperModel) {
  const listed = [];
  for await (const m of openai.models.list()) listed.push(m);
  const wm = listed.find((m) => m.id === whisperModel);
  check("models.list has the Whisper model, able to transcribe", wm && (wm.capabilities ?? []).includes("transcription"), JSON.stringify(wm));
  const plain = await openai.audio.transcriptions.create({ model: whisperModel, file: await file(), language: "en" });
  check("audio.transcriptions.create (json)", typeof plain.text === "string", JSON.stringify(plain));
  const text = await openai.audio.transcriptions.create({ model: whisperModel, file: await file(), language: "en", response_format: "text" });
  check("audio.transcriptions.create (text)", typeof text === "string" && text.trim() === plain.text, JSON.stringify(text));
  const verbose = await openai.audio.transcriptions.create({ model: whisperModel, file: await file(), language: "en", response_format: "verbose_json", timestamp_granularities: ["segment"] });
  check("audio.transcriptions.create (verbose_json)", verbose.language === "english" && Math.abs(verbose.duration - 1.5) < 1e-6 &&
    Array.isArray(verbose.segments) && verbose.segments.every((s, i) => s.id === i && typeof s.start === "number" && typeof s.end === "number"),
    JSON.stringify(verbose));
  for (const fmt of ["srt", "vtt"]) {
    const sub = await openai.audio.transcriptions.create({ model: whisperModel, file: await file(), language: "en", response_format: fmt });
    check(`audio.transcriptions.create (${fmt})`, typeof sub === "string" && (fmt === "srt" || sub.startsWith("WEBVTT")), JSON.stringify(sub));
  }
  const tr = await openai.audio.translations.create({ model: whisperModel, file: await file() });
  check("audio.translations.create", typeof tr.text === "string", JSON.stringify(tr));
  try {
    await openai.audio.transcriptions.create({ model, file: await file() });
    check("transcription with a chat model refused", false, "no error");
  } catch (e) {
    check("transcription with a chat model refused", e instanceof OpenAI.BadRequestError && e.param === "model", e.message);
  }
  try {
    await openai.chat.completions.create({ model: whisperModel, messages });
    check("chat with a Whisper model refused", false, "no error");
  } catch (e) {
    check("chat with a Whisper model refused", e instanceof OpenAI.BadRequestError && /audio\/transcriptions/.test(e.message), e.message);
  }
}

if (audioModel) {
  const listed = [];
  for await (const m of openai.models.list()) listed.push(m);
  const am = listed.find((m) => m.id === audioModel);
  check("models.list has the audio model, able to hear", am && (am.capabilities ?? []).includes("audio"), JSON.stringify(am));
  const heard = await openai.chat.completions.create({ model: audioModel, temperature: 0, max_tokens: 8, messages: [{ role: "user", content: [
    { type: "input_audio", input_audio: { data: wav.toString("base64"), format: "wav" } },
    { type: "text", text: "What is this sound?" },
  ] }] });
  const reply = heard.choices[0]?.message?.content;
  check("chat.completions with an input_audio part", typeof reply === "string" && reply.length > 0 && heard.usage.prompt_tokens > 10, JSON.stringify(heard));
  const tx = await openai.audio.transcriptions.create({ model: audioModel, file: await file(), temperature: 0 });
  check("audio.transcriptions.create with a chat model that hears", typeof tx.text === "string" && tx.text.length > 0, JSON.stringify(tx));
  try {
    await openai.audio.transcriptions.create({ model: audioModel, file: await file(), response_format: "srt" });
    check("srt from a chat model refused", false, "no error");
  } catch (e) {
    check("srt from a chat model refused", e instanceof OpenAI.BadRequestError && e.param === "response_format", e.message);
  }
  try {
    await openai.chat.completions.create({ model, messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: wav.toString("base64"), format: "wav" } }] }] });
    check("input_audio to a model that does not hear refused", false, "no error");
  } catch (e) {
    check("input_audio to a model that does not hear refused", e instanceof OpenAI.BadRequestError && /takes no audio/.test(e.message), e.message);
  }
}

if (embedModel) {
  const texts = ["hello world", "hi"];
  const close = (a, b) => a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) < 1e-6);
  const unit = (v) => Math.abs(v.reduce((s, x) => s + x * x, 0) - 1) < 1e-5;
  // The SDK asks for base64 and decodes it when encoding_format is unset.
  const b64 = await openai.embeddings.create({ model: embedModel, input: texts });
  const vecs = b64.data.map((d) => d.embedding);
  check("embeddings.create (base64)", b64.object === "list" && b64.data.length === 2 && b64.data.every((d, i) => d.index === i && d.object === "embedding") &&
    vecs.every((v) => Array.isArray(v) && v.length > 0 && unit(v)) && !close(vecs[0], vecs[1]) &&
    b64.usage.prompt_tokens > 0 && b64.usage.total_tokens === b64.usage.prompt_tokens, JSON.stringify({ usage: b64.usage, dims: vecs.map((v) => v.length) }));
  const fl = await openai.embeddings.create({ model: embedModel, input: texts, encoding_format: "float" });
  check("embeddings.create (float) agrees", fl.data.every((d, i) => close(d.embedding, vecs[i])), JSON.stringify(fl.usage));
  const ids = await openai.embeddings.create({ model: embedModel, input: [[1, 2, 3], [4]], encoding_format: "float" });
  check("embeddings.create (token ids)", ids.data.length === 2 && ids.usage.prompt_tokens === 4, JSON.stringify(ids.usage));
  const short = await openai.embeddings.create({ model: embedModel, input: texts[0], dimensions: 16 });
  check("embeddings.create dimensions", short.data[0].embedding.length === 16 && unit(short.data[0].embedding) && close(short.data[0].embedding.slice(0, 4),
    (() => { const c = vecs[0].slice(0, 16); const n = Math.hypot(...c); return c.slice(0, 4).map((x) => x / n); })()), JSON.stringify(short.data[0].embedding.length));
  const oe = await ollama.embed({ model: embedModel, input: texts });
  check("ollama.embed", oe.embeddings.length === 2 && oe.embeddings.every((v, i) => close(v, vecs[i])) && oe.prompt_eval_count === b64.usage.prompt_tokens && oe.total_duration > 0,
    JSON.stringify({ n: oe.embeddings.length, prompt_eval_count: oe.prompt_eval_count }));
  const legacy = await ollama.embeddings({ model: embedModel, prompt: texts[0] });
  check("ollama.embeddings (legacy)", close(legacy.embedding, vecs[0]), String(legacy.embedding?.length));
  try {
    await openai.embeddings.create({ model, input: "hi" });
    check("embeddings from a chat model refused", false, "no error");
  } catch (e) {
    check("embeddings from a chat model refused", e instanceof OpenAI.BadRequestError && e.param === "model" && /does not support embeddings/.test(e.message), e.message);
  }
}

summary.failed = failed;
console.log(JSON.stringify(summary));
process.exit(failed ? 1 : 0);
