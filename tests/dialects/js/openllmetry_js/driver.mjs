// OpenLLMetry for Node (@traceloop/node-server-sdk): a plain OpenAI-client tool loop (../openai_loop.mjs) whose run
// is a withWorkflow around a withAgent, each tool a withTool, the client traced by Traceloop's OpenAI
// instrumentation (instrumentModules: the ESM way). Traceloop starts the OpenTelemetry Node SDK itself, exporting
// over OTLP/HTTP protobuf to its baseUrl, here the receiver (no API key, no prompt-registry sync; its Node SDK
// has no telemetry of its own, TRACELOOP_TELEMETRY=false is set all the same). Run by gen_openllmetry_js.py.
//
// Per run key: retries uses a client with maxRetries 2; streaming streams with usage; tool_error_fatal re-raises
// the tool's error (the loop feeds it back by default); turn_limit is the loop's maxTurns 3; multi_agent runs a
// translator withAgent inside the ask_translator withTool.
import * as h from '../common.mjs';
import * as loop from '../openai_loop.mjs';
import * as traceloop from '@traceloop/node-server-sdk';
import OpenAI from 'openai';

traceloop.initialize({
  appName: `dialect-${h.env.name}`,
  baseUrl: h.env.otlp.replace(/\/v1\/traces$/, ''),   // Traceloop appends /v1/traces
  headers: {},
  instrumentModules: { openAI: OpenAI },
  traceloopSyncEnabled: false,
  silenceInitializationMessage: true,
});
h.useFrameworkTelemetry({ flush: () => traceloop.forceFlush(), shutdown: () => traceloop.forceFlush() });

const client = new OpenAI({ baseURL: h.env.server, apiKey: h.DUMMY_KEY, maxRetries: 0, timeout: 30000 });
const retryClient = new OpenAI({ baseURL: h.env.server, apiKey: h.DUMMY_KEY, maxRetries: h.RETRIES,
  timeout: 30000 });

// each tool a withTool span around the plain function
function toolSet(key) {
  const wrapped = {};
  for (const [name, f] of Object.entries(h.tools(key))) {
    wrapped[name] = (args) => traceloop.withTool({ name }, () => f(args));
  }
  return wrapped;
}

function translator(text) {
  return traceloop.withAgent({ name: 'translator' }, () => loop.toolLoop(client, text, {}, {
    model: 'gpt-4o', system: loop.TRANSLATOR }));
}

function askTranslator(key) {
  return ({ text }) => traceloop.withTool({ name: 'ask_translator' }, async () => {
    await h.logTool(key, 'ask_translator', { text });
    await h.logSubAgent(key, 'translator');
    return translator(text);
  });
}

async function runAgent(key) {
  const tools = toolSet(key);
  if (key === 'multi_agent') tools.ask_translator = askTranslator(key);
  const use = key.startsWith('retries') ? retryClient : client;
  await traceloop.withWorkflow({ name: 'support' }, () => traceloop.withAgent({ name: 'assistant' },
    () => loop.toolLoop(use, h.prompt(key), tools, loop.options(key))));
}

await h.main(runAgent);
