// Mastra agents (@mastra/core, its OpenAI-compatible model config at the scripted server) with Mastra's AI tracing
// exported over OpenTelemetry by @mastra/otel-exporter (OTLP/HTTP protobuf to the receiver; its legacy OTel
// telemetry off and given no global tracer provider). Run by gen_mastra.py.
//
// Mastra's AI tracing keeps its own trace and span ids; a run inside the HTTP request joins the request's trace
// through tracingOptions {traceId, parentSpanId} taken from the active OpenTelemetry span (Mastra's documented
// way to attach to an outside trace). Per run key: retries sets modelSettings.maxRetries 2; streaming consumes
// agent.stream; turn_limit sets maxSteps 3; tool_error_fatal adds an app stop condition on a failed tool (Mastra
// hands tool errors back to the model by default); multi_agent calls a translator agent from a tool (Mastra's
// "agent as a tool", the tool's tracingContext passed on so that its spans nest under the tool call).
import * as h from '../common.mjs';
import { trace } from '@opentelemetry/api';
import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { createTool } from '@mastra/core/tools';
import { OtelExporter } from '@mastra/otel-exporter';
import { z } from 'zod';

// Mastra 0.24's legacy telemetry decorators trace through whatever global tracer provider exists, whatever
// telemetry.enabled says: no provider is registered globally, so only the AI tracing (OtelExporter) exports
await h.startTelemetry({ global: false });

const model = (id) => ({ id: `openai/${id}`, url: h.env.server, apiKey: h.DUMMY_KEY });

function toolSet(key) {
  const t = h.tools(key);
  const city = z.object({ city: z.string() });
  return {
    get_weather: createTool({ id: 'get_weather', description: 'Current weather for a city.', inputSchema: city,
      execute: ({ context }) => t.get_weather(context) }),
    get_time: createTool({ id: 'get_time', description: 'Local time in a city.', inputSchema: city,
      execute: ({ context }) => t.get_time(context) }),
    lookup_order: createTool({ id: 'lookup_order', description: 'Status of an order.',
      inputSchema: z.object({ order_id: z.string() }), execute: ({ context }) => t.lookup_order(context) }),
    charge_card: createTool({ id: 'charge_card', description: "Charge the customer's card (always fails in the "
      + 'fixtures).', inputSchema: z.object({ amount: z.number().int() }), execute: ({ context }) => t.charge_card(context) }),
  };
}

const translator = new Agent({ name: 'translator', instructions: '[agent:translator] You translate to French.',
  model: model('gpt-4o') });

function askTranslator(key) {
  return createTool({
    id: 'ask_translator', description: 'Ask the translator agent.', inputSchema: z.object({ text: z.string() }),
    execute: async ({ context, tracingContext }) => {
      await h.logTool(key, 'ask_translator', context);
      await h.logSubAgent(key, 'translator');
      const out = await translator.generate(context.text, { tracingContext, modelSettings: { maxRetries: 0 } });
      return out.text;
    },
  });
}

function agentFor(key) {
  const tools = toolSet(key);
  if (key === 'multi_agent') tools.ask_translator = askTranslator(key);
  return new Agent({ name: 'assistant', instructions: '[agent:assistant] You answer with the tools.',
    model: model('gpt-4o-mini'), tools });
}

const otel = new OtelExporter({ provider: { custom: { endpoint: h.env.otlp, protocol: 'http/protobuf' } },
  timeout: 10000 });
const agents = {};
for (const key of h.env.plan.flatMap((step) => step.keys)) agents[key] = agentFor(key);
agents.translator = translator;
const mastra = new Mastra({
  agents,
  telemetry: { enabled: false },   // the legacy OTel telemetry; AI tracing below is the current one
  logger: false,                   // no console logging of the scripted failures
  observability: { configs: { otel: { serviceName: `dialect-${h.env.name}`, exporters: [otel] } } },
});
// the exporter's batch processor is made on its first span; flushed at every run boundary
h.addFlush(async () => otel.processor?.forceFlush());

// the app's stop condition for tool_error_fatal: the last step holds a failed tool call (Mastra hands a tool's
// exception back to the model as a tool-result whose value is a MastraError with id TOOL_EXECUTION_FAILED)
const failed = (part) => part.type === 'tool-error'
  || (part.type === 'tool-result' && part.output?.value?.id === 'TOOL_EXECUTION_FAILED');
const toolFailed = ({ steps }) => steps.at(-1).content.some(failed);

async function runAgent(key) {
  const agent = mastra.getAgent(key);
  const sc = trace.getActiveSpan()?.spanContext();
  const options = {
    // a stop condition is read only without maxSteps (maxSteps becomes stepCountIs(maxSteps) and wins)
    ...(key === 'tool_error_fatal' ? { stopWhen: [({ steps }) => steps.length >= 8, toolFailed] }
      : { maxSteps: key === 'turn_limit' ? h.TURN_LIMIT : 8 }),
    modelSettings: { temperature: 0, maxRetries: key.startsWith('retries') ? h.RETRIES : 0 },
    ...(sc ? { tracingOptions: { traceId: sc.traceId, parentSpanId: sc.spanId } } : {}),
  };
  if (key === 'streaming') {
    const out = await agent.stream(h.prompt(key), options);
    for await (const _ of out.fullStream) { /* consume */ }
    if (out.error) throw out.error;
    return;
  }
  await agent.generate(h.prompt(key), options);   // throws when the model call fails
}

await h.main(async (key) => {
  await runAgent(key);
});
