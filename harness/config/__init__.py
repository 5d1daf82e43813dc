"""The matrix a user writes, as strict models validated once (``matrix.load_matrix``): the schema only.

Nothing here imports another stage; every other package may import this one. A typo or an impossible value is a
``ConfigError`` naming the file, the key and the fix (``errors``).
"""
