"""Answers, not only retrieval: each question replayed through a chat model under several
conditions (no memory, the raw memories, the B-format block at a spec), the replies judged per
question kind, and the time of a whole turn.

- ``chat``: the OpenAI-compatible chat endpoint (streaming: time to first token and total);
- ``cache``: replies cached by the request (the prompt, the model, the parameters);
- ``conditions``: what each condition sends (``CONDITIONS``);
- ``replay``: every question under every condition, repeated;
- ``judge``: the protocol per question kind and the LLM judge;
- ``phrases``: the checkable judge (phrases a reply holds or must not);
- ``f1``: LoCoMo's token F1, ported from its evaluation code;
- ``rates``: rates per condition and kind with bootstrap intervals;
- ``timing``: the time per turn (question embedding, the store's query, the chat);
- ``local_server``: llama-cpp-python's server on a packaged GGUF model, for the tests.
"""
