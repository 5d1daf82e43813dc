"""The declared metrics and a cell's summary (``summary``), its repeats and server launches combined (``repeats``)
with their spread (``spread``), and how sure a comparison of launches is (``intervals``): records in, statistics
out, nothing measured here.
"""
