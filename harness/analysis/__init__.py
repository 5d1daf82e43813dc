"""What the stored cells mean for a recipe: $/MTok (``cost``; ``estimate`` before a run), frontiers at matched
interactivity (``frontier``), each lever against the seeds' claims (``cost_levers``), speculation against its
``off`` twin (``speculation_effect``), and the ship recipe (``recommend``); every comparison among them carries its
margin against the launch-to-launch noise (``noise``). Pure functions of stored results.
"""
