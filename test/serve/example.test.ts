/** examples/serve/client.mjs against a server over the fake engine: it streams a completion or a chat reply and sums up; refusals and a dead server are one line. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderChat } from '../../src/serve/chat.js';
import { closedPort, expectedText, withServer } from './helpers.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const client = join(root, 'examples', 'serve', 'client.mjs');

/** Runs the client (asynchronously: the server answering it is in this process). */
function runClient(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [client, ...args]);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (t: string) => (stdout += t));
    child.stderr.setEncoding('utf8').on('data', (t: string) => (stderr += t));
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

test('the example client streams a completion and prints a summary', { timeout: 30_000 }, async () => {
  await withServer({ engine: { delayMs: 1 }, server: { maxTokensLimit: 20 } }, async ({ url }) => {
    const r = await runClient(['Hello there', '--max-tokens', '12', '--url', url]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, expectedText('Hello there', 12).text);
    assert.match(r.stderr, /\[length: 12 tokens in [\d.]+ s, first after \d+ ms, \d+ tokens\/s\]\n$/);
    const refused = await runClient(['x', '--max-tokens', '21', '--url', url]);
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /^client: HTTP 400: max_tokens must be an integer from 1 to 20, got 21\n$/);
    // --chat: the text is a user message; the reply is what the rendered conversation continues with.
    const chat = await runClient(['Hello there', '--chat', '--max-tokens', '12', '--url', url]);
    assert.equal(chat.status, 0, chat.stderr);
    assert.equal(chat.stdout, expectedText(renderChat([{ role: 'user', content: 'Hello there' }]), 12).text);
    assert.match(chat.stderr, /\[length: 12 tokens in [\d.]+ s, first after \d+ ms, \d+ tokens\/s\]\n$/);
    const chatRefused = await runClient(['x', '--chat', '--max-tokens', '21', '--url', url]);
    assert.equal(chatRefused.status, 1);
    assert.match(chatRefused.stderr, /^client: HTTP 400: max_completion_tokens must be an integer from 1 to 20, got 21\n$/);
  });
  const port = await closedPort();
  const down = await runClient(['x', '--url', `http://127.0.0.1:${port}`]);
  assert.equal(down.status, 1);
  assert.equal(down.stderr, `client: cannot reach http://127.0.0.1:${port} (ECONNREFUSED); is \`cudagraph serve\` running?\n`);
});
