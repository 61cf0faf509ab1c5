"""The built-in stages; importing this package registers them."""

from wikigr.retrieval.stages import (  # noqa: F401
    bridge,
    cross_encoder,
    dedup,
    few_shot,
    gate,
    graph_rerank,
    keyword,
    literals,
    multi_query,
    multidoc,
    openml_tools,
    page_score,
    pair,
    ppr,
    quality,
    router,
    synthesize,
    title_match,
    vector,
    vector_cypher,
)
