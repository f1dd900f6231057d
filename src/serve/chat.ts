/**
 * The chat template of the byte-level model, and the checks on the messages it renders. The
 * vocabulary has no special tokens besides `BOS` and `EOS`, so the template is plain text, in the
 * layout of Phi-3's: each message is its role's marker and a newline, its content, the
 * end-of-turn marker and a newline; the prompt ends with the assistant's marker and a newline,
 * where the model's reply begins. The reply ends where the model writes the end-of-turn marker
 * (the server stops there, as at `EOS`).
 *
 *   [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }]
 *   → "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n"
 *
 * A marker inside a message's content is refused: the model sees the markers as the same bytes as
 * any text, so a content that held one could end its turn or open another one's, and the rendered
 * prompt would no longer say who said what.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { describe, isWellFormed } from '../util/validate.js';

/** The roles a message may have, in the order the refusals list them. */
export const CHAT_ROLES = Object.freeze(['system', 'user', 'assistant'] as const);

/** Who says a message. */
export type ChatRole = (typeof CHAT_ROLES)[number];

/** One message of a conversation. */
export interface ChatMessage {
  readonly role: ChatRole;
  readonly content: string;
}

/** The template's markers: each role's, and the end of a turn. */
export const CHAT_MARKERS: Readonly<Record<ChatRole | 'end', string>> = Object.freeze({
  system: '<|system|>',
  user: '<|user|>',
  assistant: '<|assistant|>',
  end: '<|end|>',
});

/** Where an assistant's turn ends: the server treats it as a stop string of every chat request. */
export const END_OF_TURN = CHAT_MARKERS.end;

const MARKERS = Object.values(CHAT_MARKERS);

/**
 * `value` checked as a conversation: a non-empty list of `{ role, content }` objects, each role
 * one of `CHAT_ROLES`, each content a string without the template's markers, no other field.
 * Messages may come in any order (a system message anywhere, an assistant message last).
 * @throws InvalidArgumentError naming `op` and the field at fault (`messages`, `messages[2].role`…).
 */
export function checkMessages(op: string, value: unknown): ChatMessage[] {
  if (value === undefined || value === null) throw new InvalidArgumentError(op, 'messages', 'messages is required (a list of { role, content } objects)');
  if (!Array.isArray(value)) throw new InvalidArgumentError(op, 'messages', `messages must be a list of { role, content } objects, got ${describe(value)}`);
  if (value.length === 0) throw new InvalidArgumentError(op, 'messages', 'messages must hold at least one message');
  const out: ChatMessage[] = [];
  for (const [i, m] of (value as unknown[]).entries()) {
    const at = `messages[${i}]`;
    if (typeof m !== 'object' || m === null || Array.isArray(m)) throw new InvalidArgumentError(op, at, `${at} must be an object { role, content }, got ${describe(m)}`);
    const o = m as Record<string, unknown>;
    for (const key of Object.keys(o)) {
      if (key !== 'role' && key !== 'content') {
        const shown = JSON.stringify(key.length > 60 ? `${key.slice(0, 60)}…` : key);
        throw new InvalidArgumentError(op, `${at}.${key.slice(0, 60)}`, `${at} has an unknown field ${shown}: a message takes only role and content`);
      }
    }
    const roles = CHAT_ROLES.map((r) => JSON.stringify(r)).join(', ');
    if (o.role === undefined) throw new InvalidArgumentError(op, `${at}.role`, `${at}.role is required (one of ${roles})`);
    if (typeof o.role !== 'string' || !(CHAT_ROLES as readonly string[]).includes(o.role)) {
      throw new InvalidArgumentError(op, `${at}.role`, `${at}.role must be one of ${roles}, got ${describe(o.role)}`);
    }
    if (typeof o.content !== 'string') {
      throw new InvalidArgumentError(op, `${at}.content`, `${at}.content must be a string (lists of content parts are not taken), got ${describe(o.content)}`);
    }
    const content = o.content;
    // Refused rather than encoded with U+FFFD in its place: the model would read other text than the one sent.
    if (!isWellFormed(content)) {
      throw new InvalidArgumentError(op, `${at}.content`, `${at}.content must be well-formed Unicode (it holds a lone surrogate, such as an unpaired \\ud800 escape)`);
    }
    const marker = MARKERS.find((k) => content.includes(k));
    if (marker !== undefined) {
      throw new InvalidArgumentError(op, `${at}.content`, `${at}.content must not contain the chat template's marker ${JSON.stringify(marker)}: the model could not tell it from the template's own`);
    }
    out.push({ role: o.role as ChatRole, content });
  }
  return out;
}

/**
 * The prompt of a conversation: every message rendered by the template, then the assistant's
 * marker and a newline (the header of the reply to generate). The same messages always give the
 * same text.
 * @throws InvalidArgumentError naming `renderChat` for messages `checkMessages` refuses.
 */
export function renderChat(messages: readonly ChatMessage[]): string {
  const checked = checkMessages('renderChat', messages);
  let text = '';
  for (const m of checked) text += `${CHAT_MARKERS[m.role]}\n${m.content}${END_OF_TURN}\n`;
  return `${text}${CHAT_MARKERS.assistant}\n`;
}
