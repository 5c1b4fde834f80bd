// LangGraph.js's prebuilt ReAct agent (createReactAgent from @langchain/langgraph/prebuilt, ChatOpenAI from
// @langchain/openai on Chat Completions at the scripted server) traced by OpenInference's LangChain.js
// instrumentation (@arizeai/openinference-instrumentation-langchain). Run by gen_langgraph_js.py.
//
// Per run key: retries sets ChatOpenAI maxRetries (2: LangChain's own AsyncCaller retries, not the OpenAI
// client's); streaming sets streaming (with streamUsage) and consumes agent.stream; tool_error_fatal passes a
// ToolNode with handleToolErrors: false (LangGraph.js hands tool errors back to the model by default);
// turn_limit sets recursionLimit 3 (graph supersteps); multi_agent calls a translator ReAct agent from a tool.
//
// gen_langgraph_js.py sets LANGCHAIN_CALLBACKS_BACKGROUND=false (the spans end before invoke returns) and LangSmith
// tracing off.
import * as h from '../common.mjs';
import { LangChainInstrumentation } from '@arizeai/openinference-instrumentation-langchain';
import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { tool } from '@langchain/core/tools';
// the main entry point sets up the AsyncLocalStorage that carries a run's callbacks (and so its trace) into an
// agent invoked inside a tool, as in any app that imports from it
import '@langchain/langgraph';
import { createReactAgent, ToolNode } from '@langchain/langgraph/prebuilt';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';

await h.startTelemetry();
// @langchain/core has no single module to patch on import: the instrumentation patches its callback manager
new LangChainInstrumentation().manuallyInstrument(CallbackManagerModule);

const SYSTEM = '[agent:assistant] You answer with the tools.';

function chat(options = {}) {
  return new ChatOpenAI({
    model: 'gpt-4o-mini', apiKey: h.DUMMY_KEY, configuration: { baseURL: h.env.server }, maxRetries: 0,
    timeout: 30000, temperature: 0, ...options,
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

const translator = createReactAgent({
  llm: chat({ model: 'gpt-4o' }), tools: [], name: 'translator',
  prompt: '[agent:translator] You translate to French.',
});

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
  let llm = chat();
  if (key.startsWith('retries')) llm = chat({ maxRetries: h.RETRIES });
  if (key === 'streaming') llm = chat({ streaming: true, streamUsage: true });
  if (key === 'multi_agent') tools = [...tools, askTranslator(key)];
  if (key === 'tool_error_fatal') tools = new ToolNode(tools, { handleToolErrors: false });
  return createReactAgent({ llm, tools, prompt: SYSTEM, name: 'assistant' });
}

async function runAgent(key) {
  const agent = agentFor(key);
  const input = { messages: [{ role: 'user', content: h.prompt(key) }] };
  const config = { recursionLimit: key === 'turn_limit' ? h.TURN_LIMIT : 25 };
  if (key === 'streaming') {
    for await (const _ of await agent.stream(input, { ...config, streamMode: 'messages' })) { /* consume */ }
    return;
  }
  await agent.invoke(input, config);
}

await h.main(runAgent);
