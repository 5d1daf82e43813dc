"""The tool-calling candidate that ``docs/studies/parity/tool_fixture.py`` trains and measures: not a registered
fixture.

``recipe`` is ``tiny-qwen3-tools`` (its ``RECIPE`` builds as ``harness fixtures`` would build one), ``synth`` its
synthetic exercises. Kept out of ``harness.fixtures`` so that editing the experiment changes no fixture's cache key;
it imports the harness (the recall instrument's architecture and BFCL training data), never the reverse.
"""
