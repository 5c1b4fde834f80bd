"""Every attribute, span, event and metric name agentobs emits, pinned in one place.

Standard names follow the OpenTelemetry GenAI semantic conventions, release ``GENAI_SEMCONV_VERSION`` of
open-telemetry/semantic-conventions-genai (their first standalone release, which builds on the core semantic
conventions ``SEMCONV_VERSION``). Names the conventions do not define live under ``agentobs.``. The attribute
reference with types is in docs/telemetry.md; ``ATTRIBUTE_TYPES`` below is what tests check exported values against,
and tests/unit/contract/test_contract.py compares the standard names with the ``opentelemetry-semantic-conventions``
package. Standard library only: the analysis reads these names without loading OpenTelemetry.
"""
from __future__ import annotations

GENAI_SEMCONV_VERSION = "0.1.0"          # open-telemetry/semantic-conventions-genai, the version we follow
SEMCONV_VERSION = "1.45.0"               # the core semantic conventions that release builds on
# The GenAI repository publishes no schema URL of its own yet: resources and scopes name the core one.
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
SCOPE = "agentobs"

# -- span names, operations and span kinds (names of opentelemetry.trace.SpanKind members) ----------
OP_INVOKE_AGENT, OP_CHAT, OP_EXECUTE_TOOL = "invoke_agent", "chat", "execute_tool"
STEP_SPAN = "agentobs.step"
KIND_INVOKE_AGENT = "INTERNAL"           # an in-process agent (a remote agent's client span would be CLIENT)
KIND_STEP = "INTERNAL"
KIND_CHAT = "CLIENT"
KIND_EXECUTE_TOOL = "INTERNAL"

# -- GenAI attributes ----------------------------------------------------------------------------
OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
# parts of the input and output tokens, when the provider reports them (never added to the totals again)
USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOKEN_TYPE = "gen_ai.token.type"
TOKEN_TYPE_INPUT, TOKEN_TYPE_OUTPUT = "input", "output"      # its values
TOOL_TYPE_FUNCTION = "function"                              # the gen_ai.tool.type of every tool we run
ERROR_TYPE = "error.type"
# opt-in content (JSON strings), only when capture is on
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
CONTENT_KEYS = (INPUT_MESSAGES, OUTPUT_MESSAGES, SYSTEM_INSTRUCTIONS, TOOL_DEFINITIONS, TOOL_CALL_ARGUMENTS,
                TOOL_CALL_RESULT)
# event carrying content when capture is EVENT_ONLY or SPAN_AND_EVENT
EVENT_INFERENCE_DETAILS = "gen_ai.client.inference.operation.details"

# -- agentobs attributes -------------------------------------------------------------------------
TASK_ID = "agentobs.task.id"
STOP_REASON = "agentobs.stop_reason"
STATUS = "agentobs.status"
OUTCOME = "agentobs.outcome"
STEPS = "agentobs.steps"
TOOL_CALLS = "agentobs.tool_calls"
TOKENS = "agentobs.tokens"
COST_USD = "agentobs.cost_usd"
UNPRICED_CALLS = "agentobs.unpriced_calls"
ELAPSED_S = "agentobs.elapsed_s"
BUDGET_PREFIX = "agentobs.budget."
PLAN_STEPS = "agentobs.plan.steps"
PLAN_OPEN_STEPS = "agentobs.plan.open_steps"
PLAN_VERSION = "agentobs.plan.version"
UNKNOWN_WRITES = "agentobs.unknown_writes"
MAX_STALLS = "agentobs.stalls.max"
RESUMED = "agentobs.resumed"
MEMORY_NOTES = "agentobs.memory.notes"
STEP_INDEX = "agentobs.step.index"
STEP_STALLS = "agentobs.step.stalls"
STEP_PROGRESS = "agentobs.step.progress"
STEP_REPLY_TYPE = "agentobs.step.reply_type"
STEP_OUTCOME = "agentobs.step.outcome"
USAGE_SOURCE = "agentobs.usage.source"
CALL_COST_USD = "agentobs.call.cost_usd"
REPLY_ERROR = "agentobs.reply.error"
TOOL_ARGS_DIGEST = "agentobs.tool.args_digest"
TOOL_EFFECT = "agentobs.tool.effect"
TOOL_RESULT_STATUS = "agentobs.tool.result_status"
TOOL_REPLAYED = "agentobs.tool.replayed"
TOOL_ATTEMPTS = "agentobs.tool.attempts"
TOOL_PLAN_STEP = "agentobs.tool.plan_step"
TOOL_HELD = "agentobs.tool.held"

BUDGET_LIMITS = ("max_steps", "max_tool_calls", "max_tokens", "max_output_tokens", "max_usd", "deadline_s",
                 "max_repeat", "max_stalls", "max_plan_steps")

# -- span links ----------------------------------------------------------------------------------
LINK_KIND = "agentobs.link"              # on the link from a resumed run to the segment it continues
LINK_RESUMED_FROM = "resumed_from"

# -- span events ---------------------------------------------------------------------------------
EV_PLAN_REJECTED = "agentobs.plan.rejected"
EV_PLAN_ACCEPTED = "agentobs.plan.accepted"
EV_GUARD = "agentobs.guard.fired"
EV_FINAL_REFUSED = "agentobs.final.refused"
EV_RETRY = "agentobs.tool.retry"
EV_APPROVAL_REQUESTED = "agentobs.approval.requested"
EV_APPROVAL_GRANTED = "agentobs.approval.granted"
EV_APPROVAL_DENIED = "agentobs.approval.denied"
EV_CHECKPOINT = "agentobs.checkpoint.saved"
EV_RESUME = "agentobs.resume"
# event attributes
GUARD_LIMIT = "agentobs.guard.limit"
GUARD_LIMIT_VALUE = "agentobs.guard.limit_value"
GUARD_OBSERVED = "agentobs.guard.observed"
PLAN_PROBLEMS = "agentobs.plan.problems"
RETRY_ATTEMPT = "agentobs.retry.attempt"
RETRY_BACKOFF_S = "agentobs.retry.backoff_s"
APPROVAL_BY = "agentobs.approval.by"
CHECKPOINT_VERSION = "agentobs.checkpoint.version"

# -- metrics -------------------------------------------------------------------------------------
M_TOKEN_USAGE = "gen_ai.client.token.usage"
M_OPERATION_DURATION = "gen_ai.client.operation.duration"
M_AGENT_DURATION = "gen_ai.invoke_agent.duration"
M_AGENT_INFERENCE_CALLS = "gen_ai.invoke_agent.inference_calls"
M_AGENT_TOOL_CALLS = "gen_ai.invoke_agent.tool_calls"
M_TOOL_DURATION = "gen_ai.execute_tool.duration"
M_RUNS = "agentobs.runs"
M_RUN_TOKENS = "agentobs.run.tokens"
M_RUN_COST = "agentobs.run.cost_usd"
M_BUDGET_UTILISATION = "agentobs.budget.utilisation"
BUDGET_LIMIT_ATTR = "agentobs.budget.limit"

TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
AGENT_DURATION_BUCKETS = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6)
CALLS_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)
COST_BUCKETS = (0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
UTILISATION_BUCKETS = (0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 1.0)

# The contract's attribute types ("string", "int", "double", "bool", "string[]"), checked on export.
ATTRIBUTE_TYPES: dict[str, str] = {
    OPERATION_NAME: "string", PROVIDER_NAME: "string", AGENT_NAME: "string", AGENT_ID: "string",
    CONVERSATION_ID: "string", REQUEST_MODEL: "string", RESPONSE_MODEL: "string", REQUEST_MAX_TOKENS: "int",
    USAGE_INPUT_TOKENS: "int", USAGE_OUTPUT_TOKENS: "int", USAGE_CACHE_READ_INPUT_TOKENS: "int",
    USAGE_CACHE_CREATION_INPUT_TOKENS: "int", USAGE_REASONING_OUTPUT_TOKENS: "int", RESPONSE_FINISH_REASONS: "string[]",
    TOOL_NAME: "string", TOOL_CALL_ID: "string", TOOL_TYPE: "string", ERROR_TYPE: "string",
    **{k: "string" for k in CONTENT_KEYS},
    TASK_ID: "string", STOP_REASON: "string", STATUS: "string", OUTCOME: "string", STEPS: "int", TOOL_CALLS: "int",
    TOKENS: "int", COST_USD: "double", UNPRICED_CALLS: "int", ELAPSED_S: "double", PLAN_STEPS: "int",
    PLAN_OPEN_STEPS: "int", PLAN_VERSION: "int", UNKNOWN_WRITES: "int", MAX_STALLS: "int", RESUMED: "bool",
    MEMORY_NOTES: "int", STEP_INDEX: "int", STEP_STALLS: "int", STEP_PROGRESS: "bool", STEP_REPLY_TYPE: "string",
    STEP_OUTCOME: "string", USAGE_SOURCE: "string", CALL_COST_USD: "double", REPLY_ERROR: "string",
    TOOL_ARGS_DIGEST: "string", TOOL_EFFECT: "string", TOOL_RESULT_STATUS: "string", TOOL_REPLAYED: "bool",
    TOOL_ATTEMPTS: "int", TOOL_PLAN_STEP: "string", TOOL_HELD: "bool",
    **{BUDGET_PREFIX + k: "double" if k in ("max_usd", "deadline_s") else "int" for k in BUDGET_LIMITS},
    GUARD_LIMIT: "string", GUARD_LIMIT_VALUE: "double", GUARD_OBSERVED: "double", PLAN_PROBLEMS: "string[]",
    RETRY_ATTEMPT: "int", RETRY_BACKOFF_S: "double", APPROVAL_BY: "string", CHECKPOINT_VERSION: "int",
}
