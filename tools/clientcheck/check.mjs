// check.mjs drives a running Hearth server with the official OpenAI,
// Anthropic and Ollama JavaScript clients, the way an application would,
// and fails (exit 1) when anything does not behave like the real APIs.
//
//   node check.mjs [BASE_URL] [MODEL]     (default http://127.0.0.1:11435, chat-tiny)
//
// It prints one line per check and a JSON summary on the last line.

import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { Ollama } from "ollama";

const base = process.argv[2] ?? process.env.HEARTH_URL ?? "http://127.0.0.1:11435";
const model = process.argv[3] ?? "chat-tiny";

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

// Text completion with logprobs.
const comp = await openai.completions.create({ model, prompt: "Once upon a time", max_tokens: 4, temperature: 0, logprobs: 2 });
check("completions.create logprobs", comp.choices[0].logprobs.tokens.length === comp.usage.completion_tokens,
  JSON.stringify(comp.choices[0].logprobs.tokens));

// Errors arrive as the SDK's typed errors.
try {
  await openai.chat.completions.create({ model, messages, n: 2 });
  check("n=2 is refused", false, "no error");
} catch (e) {
  check("n=2 is refused", e instanceof OpenAI.BadRequestError && e.status === 400 && /n: only 1/.test(e.message), e.message);
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
const shown = await ollama.show({ model });
check("ollama.show", typeof shown.template === "string" && shown.template.length > 0 && typeof shown.details.parameter_size === "string" &&
  Object.keys(shown.model_info).some((k) => k.endsWith(".context_length")), JSON.stringify(shown.details));
const unload = await ollama.generate({ model, prompt: "", keep_alive: 0 });
const psAfterUnload = await ollama.ps();
check("ollama unload", unload.done_reason === "unload" && psAfterUnload.models.length === 0, JSON.stringify({ unload, ps: psAfterUnload.models.length }));
const load = await ollama.chat({ model, messages: [], keep_alive: "1m" });
const psAfterLoad = await ollama.ps();
check("ollama load", load.done_reason === "load" && psAfterLoad.models.length === 1, JSON.stringify({ load, ps: psAfterLoad.models.length }));
try {
  await ollama.chat({ model: "no-such/model", messages });
  check("ollama unknown model", false, "no error");
} catch (e) {
  check("ollama unknown model", e.name === "ResponseError" && e.status_code === 404 && /no-such\/model/.test(e.error), e.message);
}
summary.ollama = ochat.message.content;

summary.failed = failed;
console.log(JSON.stringify(summary));
process.exit(failed ? 1 : 0);
