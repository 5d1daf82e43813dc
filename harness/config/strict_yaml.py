"""Read YAML the way a config file should be read: a key written twice in one mapping is an error, not a silent
"the later one wins".

YAML's spec says mapping keys are unique, but PyYAML (like most loaders) keeps the last value of a repeated key
without a word. In a matrix that is a copied block whose second ``axes:`` or ``parity:`` replaces the first and a
week of results measured against the wrong matrix. The file is composed into PyYAML's node tree first, every
mapping checked with the path to it, and only then constructed into Python values.
"""

from __future__ import annotations

from typing import Any

import yaml

MERGE_TAG = "tag:yaml.org,2002:merge"
"""The tag of YAML's merge key ``<<``, which a mapping may hold more than once."""


class DuplicateKeyError(ValueError):
    """A key written twice in one mapping: ``path`` to it (``axes.concurrency``), the lines of both writings."""

    def __init__(self, path: str, line: int, first_line: int) -> None:
        super().__init__(f"{path} is written twice (line {first_line} and line {line})")
        self.path, self.line, self.first_line = path, line, first_line


def _join(path: str, part: str) -> str:
    if part.startswith("["):
        return f"{path}{part}"
    return f"{path}.{part}" if path else part


def _check(node: yaml.Node, path: str, seen_nodes: set[int]) -> None:
    if id(node) in seen_nodes:  # an alias names a node already checked where it was anchored
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first: dict[str, int] = {}
        for key_node, value_node in node.value:
            # a merge key (<<) may repeat by design; a mapping or sequence as a key has no name to repeat
            named = isinstance(key_node, yaml.ScalarNode) and key_node.tag != MERGE_TAG
            key = key_node.value if named else None
            if key is not None:
                line = key_node.start_mark.line + 1
                if key in first:
                    raise DuplicateKeyError(_join(path, key), line, first[key])
                first[key] = line
            _check(value_node, _join(path, str(key) if key is not None else "?"), seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _check(item, _join(path, f"[{index}]"), seen_nodes)


def load_yaml(text: str) -> Any:
    """The document in ``text`` as Python values (``yaml.safe_load``'s), after checking that no mapping repeats a
    key. Raises DuplicateKeyError, or yaml.YAMLError for text that is not YAML."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()  # parsed once: the checked node tree is the one constructed
        if node is None:
            return None
        _check(node, "", set())
        return loader.construct_document(node)
    finally:
        loader.dispose()
