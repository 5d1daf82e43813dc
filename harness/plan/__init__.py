"""The plan: a matrix expanded into cells grouped by the server each needs (``expand``, pure), and the recipe rules
that decide at plan time what cannot run (``rules``, with ``findings``). Launches nothing, imports no engine.
"""
