// Streams a completion from `cudagraph serve` and prints the text as it comes, then a summary line
// on stderr. Plain Node (20+), fetch and the event stream read by hand: no dependency. With
// --chat, the text is a user message to /v1/chat/completions and the reply is printed instead.
//
//   node examples/serve/client.mjs "Once upon a time" [--chat] [--max-tokens 64] [--url http://127.0.0.1:8000]

const args = process.argv.slice(2);
let prompt = 'Once upon a time';
let maxTokens = 64;
let url = 'http://127.0.0.1:8000';
let chat = false;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--max-tokens') maxTokens = Number(args[++i]);
  else if (args[i] === '--url') url = args[++i];
  else if (args[i] === '--chat') chat = true;
  else prompt = args[i];
}

// The two endpoints take the same fields but the text: a prompt, or the messages of a conversation.
const stream = { stream: true, stream_options: { include_usage: true } };
const request = chat
  ? { path: '/v1/chat/completions', body: { messages: [{ role: 'user', content: prompt }], max_completion_tokens: maxTokens, ...stream } }
  : { path: '/v1/completions', body: { prompt, max_tokens: maxTokens, ...stream } };

const start = performance.now();
let res;
try {
  res = await fetch(`${url}${request.path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(request.body),
  });
} catch (e) {
  console.error(`client: cannot reach ${url} (${e.cause?.code ?? e.cause?.message ?? e.message}); is \`cudagraph serve\` running?`);
  process.exit(1);
}
if (!res.ok) {
  // Refusals are JSON: { error: { message, type, param, code } }.
  const body = await res.json().catch(() => null);
  console.error(`client: HTTP ${res.status}: ${body?.error?.message ?? res.statusText}`);
  process.exit(1);
}

let firstToken = null;
let finishReason = null;
let usage = null;
let done = false;

/** One event's data: a JSON chunk, or [DONE]. */
function handle(data) {
  if (data === '[DONE]') {
    done = true;
    return;
  }
  const chunk = JSON.parse(data);
  if (chunk.error) {
    console.error(`\nclient: the server stopped the stream: ${chunk.error.message}`);
    process.exit(1);
  }
  if (chunk.usage) usage = chunk.usage;
  const choice = chunk.choices[0];
  if (choice === undefined) return;
  // A completion's chunk carries `text`; a chat's carries `delta.content` (its first only the role).
  const text = chat ? choice.delta?.content : choice.text;
  if (text) {
    firstToken ??= performance.now();
    process.stdout.write(text);
  }
  finishReason = choice.finish_reason ?? finishReason;
}

// Server-sent events: `data: …` lines, each event ended by a blank line.
const decoder = new TextDecoder();
let buffer = '';
for await (const bytes of res.body) {
  buffer += decoder.decode(bytes, { stream: true });
  let end;
  while ((end = buffer.indexOf('\n\n')) >= 0) {
    const event = buffer.slice(0, end);
    buffer = buffer.slice(end + 2);
    for (const line of event.split('\n')) if (line.startsWith('data: ')) handle(line.slice(6));
  }
}
if (!done) {
  console.error('\nclient: the stream ended without [DONE]');
  process.exit(1);
}

const seconds = (performance.now() - start) / 1000;
const ttft = firstToken === null ? 'none' : `${(firstToken - start).toFixed(0)} ms`;
const tokens = usage?.completion_tokens ?? 0;
console.error(`\n[${finishReason}: ${tokens} tokens in ${seconds.toFixed(2)} s, first after ${ttft}, ${(tokens / seconds).toFixed(0)} tokens/s]`);
