"""Retrieval: the stage seam, the pipeline, profiles and the built-in stages."""
