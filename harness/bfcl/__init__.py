"""BFCL as a library: the ``bfcl-eval`` wheel's data, conversion and checkers made importable without its vendor
SDKs (``package``), and BFCL's own conversion of function docs to OpenAI tools (``tools``).

A low layer of its own because two stages need it: the parity stage scores with it, and the fixture builder trains
the tool-calling fixture on prompts rendered exactly as a parity run sends them.
"""
