// OpenInference for JavaScript: a plain OpenAI-client tool loop (../openai_loop.mjs) whose client is traced by
// @arizeai/openinference-instrumentation-openai (LLM spans, `llm.*` attributes), the run wrapped in
// openinference-core's `traceAgent` and each tool in `traceTool` (AGENT and TOOL spans), as OpenInference's docs
// show for code without an agent framework. The instrumentation patches the ESM client by `manuallyInstrument`;
// the Node SDK of common.mjs exports to the receiver. Run by gen_openinference_openai_js.py.
//
// Per run key: retries uses a client with maxRetries 2; streaming streams with usage; tool_error_fatal re-raises
// the tool's error (the loop feeds it back by default); turn_limit is the loop's maxTurns 3; multi_agent runs a
// translator traceAgent inside the ask_translator traceTool.
import * as h from '../common.mjs';
import * as loop from '../openai_loop.mjs';
import { OpenAIInstrumentation } from '@arizeai/openinference-instrumentation-openai';
import { traceAgent, traceTool } from '@arizeai/openinference-core';
import OpenAI from 'openai';

const instrumentation = new OpenAIInstrumentation();
await h.startTelemetry({ instrumentations: [instrumentation] });
instrumentation.manuallyInstrument(OpenAI);

const client = new OpenAI({ baseURL: h.env.server, apiKey: h.DUMMY_KEY, maxRetries: 0, timeout: 30000 });
const retryClient = new OpenAI({ baseURL: h.env.server, apiKey: h.DUMMY_KEY, maxRetries: h.RETRIES,
  timeout: 30000 });

// each tool a TOOL span around the plain function
function toolSet(key) {
  const wrapped = {};
  for (const [name, f] of Object.entries(h.tools(key))) wrapped[name] = traceTool(f, { name });
  return wrapped;
}

const translator = traceAgent((text) => loop.toolLoop(client, text, {}, { model: 'gpt-4o', system: loop.TRANSLATOR }),
  { name: 'translator' });

function askTranslator(key) {
  return traceTool(async ({ text }) => {
    await h.logTool(key, 'ask_translator', { text });
    await h.logSubAgent(key, 'translator');
    return translator(text);
  }, { name: 'ask_translator' });
}

const assistant = traceAgent((key, tools) => {
  const use = key.startsWith('retries') ? retryClient : client;
  return loop.toolLoop(use, h.prompt(key), tools, loop.options(key));
}, { name: 'assistant' });

async function runAgent(key) {
  const tools = toolSet(key);
  if (key === 'multi_agent') tools.ask_translator = askTranslator(key);
  await assistant(key, tools);
}

await h.main(runAgent);
