// Firebase Genkit (genkit + @genkit-ai/compat-oai's OpenAI plugin, Chat Completions) and its own OpenTelemetry
// spans (genkit:* attributes), run by gen_genkit.py. Each run is a flow (`ai.defineFlow('support')`) that calls
// `ai.generate` with the tools: Genkit's own tool loop. Genkit's own OpenTelemetry setup is turned off
// (`disableGenkitOTelInitialization`: it would start a Node SDK exporting to its dev telemetry server); its
// tracer is then the global one, which common.mjs's Node SDK exports to the receiver. Genkit starts a new trace at
// its outermost span by default; `disableOTelRootSpanDetection` keeps a flow run inside a request in its trace.
//
// Per run key: retries uses Genkit's `retry` model middleware (maxRetries 2) over a client with no retries of its
// own; streaming is `generateStream`; tool_error_fed_back catches the tool's exception in the tool and returns its
// message to the model (Genkit ends the run on a tool's exception by default); turn_limit is `maxTurns: 3`
// (Genkit throws); multi_agent runs a translator `ai.generate` inside the ask_translator tool.
import * as h from '../common.mjs';
import { genkit, z } from 'genkit';
import { disableGenkitOTelInitialization, disableOTelRootSpanDetection } from 'genkit/tracing';
import { retry } from 'genkit/model/middleware';
import { openAI } from '@genkit-ai/compat-oai/openai';

disableGenkitOTelInitialization();
disableOTelRootSpanDetection();   // a flow inside a request span is its child (by default Genkit starts a trace)
await h.startTelemetry();

const SYSTEM = '[agent:assistant] You answer with the tools.';
const TRANSLATOR = '[agent:translator] You translate to French.';

const ai = genkit({
  plugins: [openAI({ apiKey: h.DUMMY_KEY, baseURL: h.env.server, maxRetries: 0, timeout: 30000 })],
});

let current = null;   // the run key of the run in progress (runs are made one after the other)
const impl = () => h.tools(current);

const city = z.object({ city: z.string() });
const TOOLS = [
  ai.defineTool({ name: 'get_weather', description: 'Current weather for a city.', inputSchema: city,
    outputSchema: z.string() }, (args) => impl().get_weather(args)),
  ai.defineTool({ name: 'get_time', description: 'Local time in a city.', inputSchema: city,
    outputSchema: z.string() }, (args) => impl().get_time(args)),
  ai.defineTool({ name: 'lookup_order', description: 'Status of an order.',
    inputSchema: z.object({ order_id: z.string() }), outputSchema: z.string() }, (args) => impl().lookup_order(args)),
  ai.defineTool({ name: 'charge_card', description: "Charge the customer's card (always fails in the fixtures).",
    inputSchema: z.object({ amount: z.number() }), outputSchema: z.string() }, async (args) => {
    if (current !== 'tool_error_fed_back') return impl().charge_card(args);
    try {
      return await impl().charge_card(args);
    } catch (e) {   // the app's choice: the model is told
      return `error: ${e.message}`;
    }
  }),
];
const askTranslator = ai.defineTool({ name: 'ask_translator', description: 'Ask the translator agent.',
  inputSchema: z.object({ text: z.string() }), outputSchema: z.string() }, async ({ text }) => {
  await h.logTool(current, 'ask_translator', { text });
  await h.logSubAgent(current, 'translator');
  const r = await ai.generate({ model: 'openai/gpt-4o', system: TRANSLATOR, prompt: text, config: { temperature: 0 } });
  return r.text;
});

const support = ai.defineFlow({ name: 'support', inputSchema: z.string(), outputSchema: z.string() }, async (key) => {
  const req = {
    model: 'openai/gpt-4o-mini', system: SYSTEM, prompt: h.prompt(key), config: { temperature: 0 },
    tools: key === 'multi_agent' ? [...TOOLS, askTranslator] : TOOLS,
    ...(key.startsWith('retries') ? { use: [retry({ maxRetries: h.RETRIES, initialDelayMs: 10, noJitter: true })] }
      : {}),
    ...(key === 'turn_limit' ? { maxTurns: h.TURN_LIMIT } : {}),
  };
  if (key === 'streaming') {
    const { stream, response } = ai.generateStream(req);
    for await (const _chunk of stream) { /* the chunks, as an app shows them */ }
    return (await response).text;
  }
  return (await ai.generate(req)).text;
});

async function runAgent(key) {
  current = key;
  await support(key);
}

await h.main(runAgent);
