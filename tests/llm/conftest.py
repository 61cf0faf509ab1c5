"""The LLM tests use the fixtures of the root conftest (fake Claude server, real-API guard)."""
