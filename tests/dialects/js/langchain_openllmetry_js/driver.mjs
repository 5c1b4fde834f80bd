// LangChain.js agents (langchain 1.x `createAgent`, ChatOpenAI from @langchain/openai on Chat Completions at the
// scripted server) traced by OpenLLMetry for Node (@traceloop/node-server-sdk): its LangChain instrumentation
// (always on: a callback handler patched into @langchain/core's CallbackManager, CJS and ESM) and its OpenAI
// instrumentation (instrumentModules: the ESM way; ChatOpenAI's client is the same `openai` module). Traceloop starts
// the Node SDK itself, exporting to the receiver (its baseUrl). Run by gen_langchain_openllmetry_js.py.
//
// Per run key: retries sets ChatOpenAI maxRetries 2 (LangChain's AsyncCaller retries around the OpenAI client,
// whose own retries stay off); streaming sets streaming with streamUsage and consumes agent.stream; tool_error_fatal
// adds toolErrorMiddleware whose onError returns nothing (the error propagates: createAgent feeds tool errors back by
// default); turn_limit is modelCallLimitMiddleware({runLimit: 3}) (its default exit ends the run without an error);
// multi_agent invokes a translator agent from a tool.
import * as h from '../common.mjs';
import * as traceloop from '@traceloop/node-server-sdk';
import OpenAI from 'openai';
import { createAgent, modelCallLimitMiddleware, tool, toolErrorMiddleware } from 'langchain';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';

traceloop.initialize({
  appName: `dialect-${h.env.name}`,
  baseUrl: h.env.otlp.replace(/\/v1\/traces$/, ''),   // Traceloop appends /v1/traces
  headers: {},
  instrumentModules: { openAI: OpenAI, langchain: true },
  traceloopSyncEnabled: false,
  silenceInitializationMessage: true,
});
h.useFrameworkTelemetry({ flush: () => traceloop.forceFlush(), shutdown: () => traceloop.forceFlush() });
// the LangChain instrumentation patches the ESM CallbackManager after a dynamic import: let it land first
await new Promise((resolve) => setTimeout(resolve, 200));

const SYSTEM = '[agent:assistant] You answer with the tools.';

function chat(options = {}) {
  return new ChatOpenAI({
    model: 'gpt-4o-mini', apiKey: h.DUMMY_KEY, configuration: { baseURL: h.env.server, maxRetries: 0 },
    maxRetries: 0, timeout: 30000, temperature: 0, ...options,
  });
}

function toolSet(key) {
  const t = h.tools(key);
  const city = z.object({ city: z.string() });
  return [
    tool(t.get_weather, { name: 'get_weather', description: 'Current weather for a city.', schema: city }),
    tool(t.get_time, { name: 'get_time', description: 'Local time in a city.', schema: city }),
    tool(t.lookup_order, { name: 'lookup_order', description: 'Status of an order.',
      schema: z.object({ order_id: z.string() }) }),
    tool(t.charge_card, { name: 'charge_card', description: "Charge the customer's card (always fails in the "
      + 'fixtures).', schema: z.object({ amount: z.number().int() }) }),
  ];
}

const translator = createAgent({ model: chat({ model: 'gpt-4o' }), tools: [], name: 'translator',
  systemPrompt: '[agent:translator] You translate to French.' });

function askTranslator(key) {
  return tool(async ({ text }) => {
    await h.logTool(key, 'ask_translator', { text });
    await h.logSubAgent(key, 'translator');
    const out = await translator.invoke({ messages: [{ role: 'user', content: text }] });
    return String(out.messages.at(-1).content);
  }, { name: 'ask_translator', description: 'Ask the translator agent.', schema: z.object({ text: z.string() }) });
}

function agentFor(key) {
  let tools = toolSet(key);
  let model = chat();
  const middleware = [];
  if (key.startsWith('retries')) model = chat({ maxRetries: h.RETRIES });
  if (key === 'streaming') model = chat({ streaming: true, streamUsage: true });
  if (key === 'multi_agent') tools = [...tools, askTranslator(key)];
  if (key === 'tool_error_fatal') middleware.push(toolErrorMiddleware({ onError: () => undefined }));
  if (key === 'turn_limit') middleware.push(modelCallLimitMiddleware({ runLimit: h.TURN_LIMIT }));
  return createAgent({ model, tools, systemPrompt: SYSTEM, name: 'assistant', middleware });
}

async function runAgent(key) {
  const agent = agentFor(key);
  const input = { messages: [{ role: 'user', content: h.prompt(key) }] };
  // the run in a withWorkflow span, as OpenLLMetry's docs show: its LangChain callback handler starts every span in
  // the active context (it does not parent a span on its LangChain parent run), so without one each span is a
  // trace of its own
  await traceloop.withWorkflow({ name: 'support' }, async () => {
    if (key === 'streaming') {
      for await (const _ of await agent.stream(input, { streamMode: 'messages' })) { /* consume */ }
      return;
    }
    await agent.invoke(input);
  });
}

await h.main(runAgent);
