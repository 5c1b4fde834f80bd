"""The kernel's budget for agents that run on a framework, through the framework's public extension points.

``agentobs.guards.pydantic_ai.BudgetGuard`` (a Pydantic AI capability) and
``agentobs.guards.openai_agents.BudgetGuard`` (OpenAI Agents SDK hooks, model wrapper and run config) check
the same ``Budget`` before each model request and each tool call, stop with the same closed stop reasons
(``BudgetExceeded`` subclasses that are also the framework's own limit errors) and write them on the agent
span. Import the module you need: this package imports no framework.
"""
