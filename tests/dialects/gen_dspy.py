"""DSPy ``ReAct`` (``dspy.LM("openai/gpt-4o-mini", api_base=<scripted server>)``), traced by OpenInference's DSPy
instrumentation together with its LiteLLM instrumentation: the pair Phoenix's DSPy page installs ("DSPy uses
LiteLLM under the hood ... token counts").

Two fixtures from this driver: ``dspy`` (the LM's default engine, ``"auto"``: DSPy 3.4 sends an OpenAI-compatible
request through its bundled lm15 engine, not LiteLLM, so the LiteLLM instrumentation records nothing and no span
carries token counts) and ``dspy_litellm`` (``engine="litellm"``, DSPy's compatibility backend: each DSPy ``LM``
LLM span holds LiteLLM's ``completion`` LLM span, which has the tokens).

ReAct speaks a text protocol, not the API's tool calls: each reply is DSPy's ChatAdapter fields
(``next_thought``, ``next_tool_name``, ``next_tool_args``); the run ends when the model picks the ``finish`` tool,
then one more request (the ``extract`` ChainOfThought, no tool fields) produces the answer. The scripted server
logs the tool a reply names as that reply's tool call (``finish`` is the answer, not a tool call), and whether a
request offered tools (its system prompt asks for ``next_tool_name``). DSPy's response cache is off
(``dspy.configure_cache`` and ``cache=False``), the cost-map and model-metadata downloads are off
(``LITELLM_LOCAL_MODEL_COST_MAP=True``).

Shapes: plain, http, two_runs, retries (``dspy.LM(num_retries=2)``), streaming (``dspy.streamify``),
turn_limit (``max_iters=3``: after the third tool DSPy asks for the answer anyway) and multi_agent (a translator
ReAct run inside the ask_translator tool). Not possible: parallel (ReAct names one tool per step),
tool_error_fatal (ReAct catches every exception a tool raises and hands it back as the observation).
"""
from __future__ import annotations

import json
import os
import sys
import warnings

import common
import limits
from common import PLAIN, SHAPE_OF, HttpApp, MemoryCapture, Recorder, Reply, ScriptedServer, prompt

PACKAGES = ("dspy", "litellm", "openinference-instrumentation-dspy", "openinference-instrumentation-litellm",
            "openinference-semantic-conventions", "opentelemetry-sdk", "opentelemetry-instrumentation-wsgi")
EXTRAS = ("retries", "retries_exhausted", "streaming", "turn_limit", "multi_agent")
ANSWER_TOOL = "finish"


def react_text(tool: str, args: dict, thought: str = "I need a tool.") -> str:
    return (f"[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n"
            f"[[ ## next_tool_args ## ]]\n{json.dumps(args)}\n\n[[ ## completed ## ]]")


def answer_text(answer: str) -> str:
    return (f"[[ ## reasoning ## ]]\nThe observations answer it.\n\n[[ ## answer ## ]]\n{answer}\n\n"
            "[[ ## completed ## ]]")


class TextTool(Reply):
    """A reply that names a tool in DSPy's text fields: sent as content, logged as the reply's tool call."""


def as_react(replies: list[Reply]) -> list[Reply]:
    """A shared script in ReAct's protocol: a tool-call reply names the tool in text; a final answer becomes the
    ``finish`` step (its own request) and the extract step's answer (same tokens as the shared answer)."""
    out: list[Reply] = []
    for r in replies:
        if r.status != 200:
            out.append(r)
        elif r.tool_calls:
            (name, args), = r.tool_calls
            out.append(TextTool(content=react_text(name, args), tool_calls=[(name, args)], model=r.model,
                                prompt_tokens=r.prompt_tokens, completion_tokens=r.completion_tokens))
        else:
            out.append(Reply(content=react_text(ANSWER_TOOL, {}, "I can answer now."), model=r.model,
                             prompt_tokens=r.prompt_tokens, completion_tokens=12))
            out.append(Reply(content=answer_text(r.content or ""), model=r.model,
                             prompt_tokens=r.prompt_tokens + 40, completion_tokens=r.completion_tokens,
                             cached_tokens=r.cached_tokens, reasoning_tokens=r.reasoning_tokens))
    return out


def scripts() -> dict[str, list[Reply]]:
    shared = {**common.standard_script(), **common.shape_script(),
              **common.extra_script("retries", "retries_exhausted", "streaming")}
    out = {k: as_react(v) for k, v in shared.items()}
    turns = [common._turn(i) for i in range(common.TURN_LIMIT)]
    out["turn_limit"] = [*as_react(turns), Reply(content=answer_text("I could not finish within the step limit."),
                                                 prompt_tokens=100 + 30 * len(turns), completion_tokens=10)]
    text = "[run:multi_agent] Translate 'good morning'"
    out["multi_agent"] = [
        *as_react([Reply(tool_calls=[("ask_translator", {"text": text})], prompt_tokens=125, completion_tokens=20)]),
        *as_react([Reply(content="bonjour", model="gpt-4o-2024-08-06", prompt_tokens=40, completion_tokens=3)]),
        *as_react([Reply(content="In French: bonjour.", prompt_tokens=170, completion_tokens=8)])]
    return out


def react_offers_tools(body: dict) -> bool:
    """A ReAct step offers tools: its system prompt asks for ``next_tool_name`` (the extract step does not)."""
    return any("next_tool_name" in str(m.get("content")) for m in body.get("messages") or []
               if m.get("role") == "system")


class ReactScript(limits.OfferedScript):
    """A TextTool reply's tool call is sent as text only (and logged as the reply's tool call)."""

    def __init__(self, runs: dict):
        super().__init__(runs, react_offers_tools)

    def next(self, key, agent, endpoint, body):
        r, seq = super().next(key, agent, endpoint, body)
        if isinstance(r, TextTool):
            r = Reply(**{**r.__dict__, "tool_calls": []})
        return r, seq


class ReactRecorder(Recorder):
    """ReAct's limit: after ``max_iters`` tool steps the extract step asks for the answer with no tool fields
    (``limits.apply(forced=True)``)."""

    def truth(self) -> dict:
        return limits.apply(super().truth(), self.script.log, self.tools, forced=True)


def main(name: str) -> None:
    common.quiet_environment()
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"    # no cost-map or model-metadata download
    warnings.simplefilter("ignore")
    engine = "litellm" if name == "dspy_litellm" else "auto"
    cap = MemoryCapture(f"dialect-{name}")
    from openinference.instrumentation.dspy import DSPyInstrumentor
    from openinference.instrumentation.litellm import LiteLLMInstrumentor
    DSPyInstrumentor().instrument(tracer_provider=cap.provider)
    LiteLLMInstrumentor().instrument(tracer_provider=cap.provider)
    import dspy

    script = ReactScript(scripts())
    rec = ReactRecorder(name, cap, script, packages=PACKAGES, records_tokens=engine == "litellm", notes=(
        f"dspy.LM engine={engine!r}" + (": DSPy's bundled lm15 engine sends the requests, LiteLLM is not called, so "
                                         "the LiteLLM instrumentation records nothing and no span has token counts"
                                         if engine == "auto" else ": each DSPy LM span (LLM) holds LiteLLM's "
                                         "completion span (LLM, with the token counts): two LLM spans per call"),
        "ReAct is a text protocol: a reply names its tool in the next_tool_name field (the truth logs it as the "
        "reply's tool call); 'finish' is the answer step, then the extract ChainOfThought request gives the answer "
        "(a plain answer costs two model calls); OpenInference gives 'finish' a TOOL span like any tool",
        "a tool that raises is always handed back as the observation (ReAct catches every exception): no "
        "tool_error_fatal run; ReAct names one tool per step: no parallel run",
        "retries: dspy.LM(num_retries=2), the engine's own retries inside one LM call",
        f"turn_limit: ReAct(max_iters={common.TURN_LIMIT}); after the third tool DSPy runs the extract step anyway "
        "(no tool fields) and returns normally: stop_reason turn_limit because the last request offered no tools "
        "after a reply that named one",
        "multi_agent: a translator ReAct (no tools of its own) runs inside the ask_translator tool"))
    tools = common.make_tools(rec)
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)

    def make_signature(agent: str, instructions: str) -> type:
        class Ask(dspy.Signature):
            question: str = dspy.InputField()
            answer: str = dspy.OutputField()
        return Ask.with_instructions(f"[agent:{agent}] {instructions}")

    with ScriptedServer(script) as srv:
        def lm(model: str = "gpt-4o-mini", retries: int = 0) -> dspy.LM:
            return dspy.LM(f"openai/{model}", api_base=srv.base_url, api_key=common.DUMMY_KEY, cache=False,
                           num_retries=retries, timeout=30, temperature=0, engine=engine)
        dspy.configure(lm=lm())
        assistant_sig = make_signature("assistant", "You answer with the tools.")
        translator = dspy.ReAct(make_signature("translator", "You translate to French."), tools=[], max_iters=5)
        translator_lm = lm("gpt-4o")

        def ask_translator(text: str) -> str:
            """Ask the translator agent."""
            rec.tool("ask_translator", {"text": text})
            rec.sub_agent("translator")
            with dspy.context(lm=translator_lm):
                return str(translator(question=text).answer)

        assistant = dspy.ReAct(assistant_sig, tools=list(tools.values()), max_iters=8)
        agents = {"turn_limit": dspy.ReAct(assistant_sig, tools=list(tools.values()), max_iters=common.TURN_LIMIT),
                  "multi_agent": dspy.ReAct(assistant_sig, tools=[*tools.values(), ask_translator], max_iters=8)}
        retrying = lm(retries=common.RETRIES)

        def run(key: str) -> None:
            agent = agents.get(key, assistant)
            question = prompt(key, "Say good morning in French." if key == "multi_agent" else "Please help.")
            if key == "streaming":
                import asyncio

                async def consume() -> None:
                    async for _ in dspy.streamify(agent)(question=question):
                        pass
                asyncio.run(consume())
            elif key.startswith("retries"):
                with dspy.context(lm=retrying):
                    agent(question=question)
            else:
                agent(question=question)

        for key in PLAIN:
            with rec.run(key, "plain"):
                run(key)
        with HttpApp(rec, run, cap.provider) as app:
            app.get("/run", ["http"])
            app.get("/two", ["two-a", "two-b"])
        for key in EXTRAS:
            with rec.run(key, SHAPE_OF[key]):
                run(key)
    rec.write()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "dspy")
