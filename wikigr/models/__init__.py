"""Model files and optional model backends.

``minilm/`` holds the built-in embedder's WordPiece tokenizer (wikigr/embed.py); :mod:`wikigr.models.st`
is the sentence-transformers backend (the optional ``models`` extra), imported only when a pack or
a stage names a sentence-transformers model.
"""
