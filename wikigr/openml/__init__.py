"""OpenML packs: experiment results as a Kimball star in the pack's store, and an agent that
answers from the data (docs/openml.md).

- :mod:`wikigr.openml.model` — the star's rows (runs, algorithms, datasets, tasks, dates), buckets;
- :mod:`wikigr.openml.families` — the rule table that puts a flow into an algorithm family;
- :mod:`wikigr.openml.exports` — offline import of result exports (CSV, ARFF) and qualities;
- :mod:`wikigr.openml.client` — a small client of OpenML's REST API (paging, retries, cache);
- :mod:`wikigr.openml.fetch` — the fetch of a star from that API (what to fetch, the runs, details);
- :mod:`wikigr.openml.build` — atomic, resumable builds of OpenML packs;
- :mod:`wikigr.openml.tools` — ``graph_query``, ``semantic_search``, ``aggregate_measures``;
- :mod:`wikigr.openml.tool_specs` — their JSON schemas, the attributes they take, JSON-ready values;
- :mod:`wikigr.openml.rules` and :mod:`wikigr.openml.answer` — which tools answer a question, and
  the answer from their results (run by the ``openml_tools`` stage: the wikigr router's strategy
  for OpenML packs).
"""
