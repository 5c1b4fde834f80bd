// The OpenAI Agents SDK for JavaScript (@openai/agents, on its default Responses API, with an OpenAI client at the
// scripted server) traced by OpenInference's processor for it (@arizeai/openinference-instrumentation-openai-agents):
// a TracingProcessor that turns the SDK's own trace events into OpenTelemetry spans. Registered exclusively, it
// replaces the SDK's default exporter to OpenAI, so the SDK's traces go to OpenTelemetry only. Run by
// gen_openai_agents_js.py.
//
// Per run key: retries sets the SDK's own runner-managed retries (modelSettings.retry: maxRetries 2 on HTTP 5xx;
// the OpenAI client has none); streaming runs with stream: true; tool_error_fatal builds the tools with
// errorFunction: null (the SDK hands tool errors back to the model by default); turn_limit sets maxTurns 3;
// multi_agent gives the orchestrator the translator agent as a tool (Agent.asTool); sub-handoff hands off from
// triage to billing.
import * as h from '../common.mjs';
import { OpenAIAgentsInstrumentation } from '@arizeai/openinference-instrumentation-openai-agents';
import * as agents from '@openai/agents';
import { Agent, handoff, retryPolicies, run, setDefaultOpenAIClient, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';

await h.startTelemetry();
new OpenAIAgentsInstrumentation().manuallyInstrument(agents);   // exclusive: the only trace processor

setDefaultOpenAIClient(new OpenAI({ baseURL: h.env.server, apiKey: h.DUMMY_KEY, maxRetries: 0, timeout: 30000 }));

const SETTINGS = { temperature: 0 };
const RETRY = {
  ...SETTINGS,
  retry: { maxRetries: h.RETRIES, policy: retryPolicies.httpStatus([500, 502, 503, 504]),
    backoff: { initialDelayMs: 20, maxDelayMs: 100, jitter: false } },
};

function toolSet(key, fatal = false) {
  const t = h.tools(key);
  const extra = fatal ? { errorFunction: null } : {};
  const city = z.object({ city: z.string() });
  return [
    tool({ name: 'get_weather', description: 'Current weather for a city.', parameters: city,
      execute: t.get_weather, ...extra }),
    tool({ name: 'get_time', description: 'Local time in a city.', parameters: city, execute: t.get_time, ...extra }),
    tool({ name: 'lookup_order', description: 'Status of an order.', parameters: z.object({ order_id: z.string() }),
      execute: t.lookup_order, ...extra }),
    tool({ name: 'charge_card', description: "Charge the customer's card (always fails in the fixtures).",
      parameters: z.object({ amount: z.number().int() }), execute: t.charge_card, ...extra }),
  ];
}

const translator = new Agent({ name: 'translator', instructions: '[agent:translator] You translate to French.',
  model: 'gpt-4o', modelSettings: SETTINGS });

// the translator as a tool: the SDK runs it as a nested agent run when the orchestrator calls ask_translator;
// the input builder (awaited when the tool executes) logs the execution
function askTranslator(key) {
  return translator.asTool({
    toolName: 'ask_translator', toolDescription: 'Ask the translator agent.',
    parameters: z.object({ text: z.string() }),
    inputBuilder: async ({ params }) => {
      await h.logTool(key, 'ask_translator', params);
      await h.logSubAgent(key, 'translator');
      return params.text;
    },
  });
}

function agentFor(key) {
  if (key === 'sub-handoff') {
    const billing = new Agent({ name: 'billing', instructions: '[agent:billing] You handle billing.',
      tools: toolSet(key), model: 'gpt-4o-mini', modelSettings: SETTINGS });
    return new Agent({ name: 'triage', instructions: '[agent:triage] You route the customer.', model: 'gpt-4o-mini',
      modelSettings: SETTINGS, handoffs: [handoff(billing, { toolNameOverride: 'transfer_to_billing',
        onHandoff: () => h.logSubAgent(key, 'billing', 'handoff') })] });
  }
  if (key === 'multi_agent') {
    return new Agent({ name: 'orchestrator', instructions: '[agent:orchestrator] You delegate translations.',
      tools: [askTranslator(key)], model: 'gpt-4o-mini', modelSettings: SETTINGS });
  }
  return new Agent({
    name: 'assistant', instructions: '[agent:assistant] You answer with the tools.', model: 'gpt-4o-mini',
    tools: toolSet(key, key === 'tool_error_fatal'), modelSettings: key.startsWith('retries') ? RETRY : SETTINGS,
  });
}

async function runAgent(key) {
  const agent = agentFor(key);
  const text = key === 'sub-handoff' ? 'My order C-3, billing question.' : 'Please help.';
  const options = { maxTurns: key === 'turn_limit' ? h.TURN_LIMIT : 8 };
  if (key === 'streaming') {
    const result = await run(agent, h.prompt(key, text), { ...options, stream: true });
    for await (const _ of result) { /* consume the events */ }
    await result.completed;
    if (result.error) throw result.error;
    return;
  }
  await run(agent, h.prompt(key, text), options);
}

await h.main(runAgent);
