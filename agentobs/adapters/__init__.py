"""Kernel models on real providers' official SDKs, as optional extras.

``agentobs.adapters.openai_chat.OpenAIChatModel`` (``pip install agentobs[openai]``; any OpenAI-compatible
server through ``base_url``) and ``agentobs.adapters.anthropic_messages.AnthropicMessagesModel``
(``pip install agentobs[anthropic]``). Import the module you need: this package imports no SDK.
"""
