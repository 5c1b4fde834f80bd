// A plain OpenAI-client tool loop, as hand-written agents do it (the counterpart of openai_loop.py for Node), for
// the dialects that instrument the client or wrap functions rather than an agent framework.
//
// The model is called with the tools' JSON schemas; every tool call of a reply is executed in order and its result
// (or the error text, when the tool throws) appended; the loop ends at the first answer without tool calls, and
// throws MaxTurnsExceeded after `maxTurns` model calls that all asked for tools (the loop's turn limit). With
// `fatalToolErrors` a tool's exception ends the run instead of going back to the model. With `stream` the client
// streams (stream_options.include_usage) and the loop assembles the reply from the chunks.
import { TURN_LIMIT } from './common.mjs';

export const SYSTEM = '[agent:assistant] You answer with the tools.';
export const TRANSLATOR = '[agent:translator] You translate to French.';

export class MaxTurnsExceeded extends Error {
  constructor(maxTurns) {
    super(`max turns (${maxTurns}) reached`);
    this.name = 'MaxTurnsExceeded';
  }
}

const fn = (name, description, properties) => ({
  type: 'function',
  function: { name, description, parameters: { type: 'object', properties, required: Object.keys(properties) } },
});
// the JSON schemas of the tools every fixture has (common.mjs `tools`) and of ask_translator
export const SPECS = {
  get_weather: fn('get_weather', 'Current weather for a city.', { city: { type: 'string' } }),
  get_time: fn('get_time', 'Local time in a city.', { city: { type: 'string' } }),
  lookup_order: fn('lookup_order', 'Status of an order.', { order_id: { type: 'string' } }),
  charge_card: fn('charge_card', "Charge the customer's card (always fails in the fixtures).",
    { amount: { type: 'integer' } }),
  ask_translator: fn('ask_translator', 'Ask the translator agent.', { text: { type: 'string' } }),
};

// The assistant message of a streamed chat completion (content and tool calls from the deltas).
async function assemble(stream) {
  let content = '';
  const calls = new Map();
  for await (const chunk of stream) {
    for (const choice of chunk.choices ?? []) {
      const d = choice.delta ?? {};
      if (d.content) content += d.content;
      for (const tc of d.tool_calls ?? []) {
        const c = calls.get(tc.index) ?? { id: null, name: '', arguments: '' };
        c.id = tc.id ?? c.id;
        c.name += tc.function?.name ?? '';
        c.arguments += tc.function?.arguments ?? '';
        calls.set(tc.index, c);
      }
    }
  }
  const toolCalls = [...calls.entries()].sort(([a], [b]) => a - b)
    .map(([, c]) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
  return { content: content || null, tool_calls: toolCalls.length ? toolCalls : undefined };
}

// Runs to the final answer. `tools`: name -> async (args) => result.
export async function toolLoop(client, user, tools, { model = 'gpt-4o-mini', maxTurns = 8, stream = false,
  fatalToolErrors = false, system = SYSTEM } = {}) {
  const messages = [{ role: 'system', content: system }, { role: 'user', content: user }];
  const specs = Object.keys(tools).map((name) => SPECS[name]);
  const extra = stream ? { stream: true, stream_options: { include_usage: true } } : {};
  for (let turn = 0; turn < maxTurns; turn += 1) {
    const resp = await client.chat.completions.create({
      model, messages, temperature: 0, ...(specs.length ? { tools: specs } : {}), ...extra });
    const msg = stream ? await assemble(resp) : resp.choices[0].message;
    if (!msg.tool_calls?.length) return msg.content ?? '';
    messages.push({ role: 'assistant', content: msg.content ?? null, tool_calls: msg.tool_calls.map((c) => ({
      id: c.id, type: 'function', function: { name: c.function.name, arguments: c.function.arguments } })) });
    for (const c of msg.tool_calls) {
      let out;
      try {
        out = String(await tools[c.function.name](JSON.parse(c.function.arguments || '{}')));
      } catch (e) {   // the model is told, as frameworks do, unless tool errors are fatal
        if (fatalToolErrors) throw e;
        out = `error: ${e.message}`;
      }
      messages.push({ role: 'tool', tool_call_id: c.id, content: out });
    }
  }
  throw new MaxTurnsExceeded(maxTurns);
}

// The loop's options per run key (the retries runs use a client with retries: the driver's).
export function options(key) {
  return { streaming: { stream: true }, tool_error_fatal: { fatalToolErrors: true },
    turn_limit: { maxTurns: TURN_LIMIT } }[key] ?? {};
}
