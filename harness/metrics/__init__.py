"""The declared metrics and a cell's summary (``summary``), its repeats combined (``repeats``) with their spread
(``spread``): records in, statistics out, nothing measured here.
"""
