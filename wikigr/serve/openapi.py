"""The OpenAPI 3.1 description of ``/api/v1``, served at ``/api/v1/openapi.json``.

Written by hand, next to the routes it describes (wikigr/serve/app.py); a test checks that the
two list the same paths and methods.
"""

from __future__ import annotations

from typing import Any

from wikigr.retrieval.profiles import DEFAULT_PROFILE, PROFILES


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    why = {
        400: "A usage error: a bad field, an empty or too long question, an unknown profile or stage, "
        "a path where a pack name belongs.",
        401: "A token is required (Authorization: Bearer TOKEN) and was missing or wrong.",
        403: "A write refused: from another origin, or the server is read-only.",
        404: "No such pack, trace, chunk, entity, job or cache.",
        409: "A job of that kind and key (a build of that pack name, a comparison on that pack) is "
        "running already, or a build holds the pack.",
        413: "The request body is too large.",
        415: "The body is not sent as application/json.",
        500: "A runtime failure (a pack that cannot be read...).",
        502: "Claude failed (without fallback).",
    }
    return {str(code): _json(_ref("Error"), why[code]) for code in codes}


PACK_PARAM = {
    "name": "pack",
    "in": "path",
    "required": True,
    "description": "A pack name (as /api/v1/packs lists it).",
    "schema": {"type": "string"},
}

ASK_FIELDS: dict[str, Any] = {
    "pack": {
        "description": "A pack name, several as 'a,b' or a list, or 'all' (every pack served).",
        "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
    },
    "profile": {
        "type": "string",
        "enum": list(PROFILES),
        "description": f"Retrieval profile (default: the pack's, else {DEFAULT_PROFILE}).",
    },
    "top_k": {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "description": "Passages to retrieve (default: the pack's kg_config.json top_k, else 5); "
        "passages of related pages may follow them (sources with related: true).",
    },
    "enable": {"type": "array", "items": {"type": "string"}, "description": "Stages to add."},
    "disable": {"type": "array", "items": {"type": "string"}, "description": "Stages to remove."},
}


def document(version: str, max_question: int) -> dict[str, Any]:
    query_body = {
        "type": "object",
        "required": ["pack", "question"],
        "additionalProperties": False,
        "properties": {
            **ASK_FIELDS,
            "question": {"type": "string", "minLength": 1, "maxLength": max_question},
            "fallback": {
                "type": "boolean",
                "default": False,
                "description": "If Claude fails, answer extractively instead of failing (502).",
            },
        },
    }
    search_body = {
        "type": "object",
        "required": ["pack", "query"],
        "additionalProperties": False,
        "properties": {
            **ASK_FIELDS,
            "query": {"type": "string", "minLength": 1, "maxLength": max_question},
        },
    }
    described: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "wikigr",
            "version": version,
            "description": "Knowledge packs over HTTP: ask, search, explore the graph, read the "
            'evaluations. Errors are JSON {"error": "one line"}: 4xx for usage errors, 5xx for '
            "runtime failures (as the CLI's exit codes 2 and 1). See docs/serve.md.",
        },
        "servers": [{"url": "/"}],
        "components": {
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "Only when the server was started with --token or --token-file.",
                }
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {"error": {"type": "string"}},
                },
                "Source": {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string"},
                        "section": {"type": "string"},
                        "url": {"type": "string"},
                        "score": {"type": "number"},
                        "pack": {"type": "string"},
                        "chunk_id": {"type": "string"},
                        "origin": {"type": "string"},
                        "related": {
                            "type": "boolean",
                            "description": "A passage of a page linked to the top sources, listed "
                            "after the top_k passages (the multidoc stage).",
                        },
                        "text": {"type": "string"},
                    },
                },
                "Answer": {
                    "type": "object",
                    "description": "The JSON of `wikigr query --json` (each source also carries its "
                    "chunk_id, origin and text), with the id of its trace.",
                    "properties": {
                        "answer": {"type": "string"},
                        "sources": {"type": "array", "items": _ref("Source")},
                        "profile": {"type": "string"},
                        "confidence": {"type": "number"},
                        "low_confidence": {"type": "boolean"},
                        "facts": {"type": "array", "items": {"type": "string"}},
                        "trace": {"type": "object", "description": "Per-stage timings and details."},
                        "trace_id": {"type": "string"},
                    },
                },
                "Graph": {
                    "type": "object",
                    "properties": {
                        "nodes": {"type": "array", "items": {"type": "object"}},
                        "edges": {"type": "array", "items": {"type": "object"}},
                        "truncated": {"type": "boolean"},
                        "entity_graph": {"type": "boolean"},
                        "star": {
                            "type": "object",
                            "description": "An OpenML pack's picture: view (schema, answer or member), "
                            "measure, facts, member; why (the schema drawn for an answer that "
                            "aggregated nothing).",
                        },
                    },
                },
            },
        },
        "security": [{}, {"bearer": []}],
        "paths": {
            "/api/v1/health": {
                "get": {
                    "summary": "Is the server up; version, packs served, whether Claude is configured.",
                    "responses": {"200": _json({"type": "object"}, "Health.")},
                }
            },
            "/api/v1/openapi.json": {
                "get": {
                    "summary": "This description.",
                    "responses": {"200": _json({"type": "object"}, "OpenAPI 3.1.")},
                }
            },
            "/api/v1/profiles": {
                "get": {
                    "summary": "The retrieval profiles (their stages) and every stage with what it does.",
                    "responses": {"200": _json({"type": "object"}, "Profiles and stages.")},
                }
            },
            "/api/v1/packs": {
                "get": {
                    "summary": "The packs served (as `wikigr pack list --json`).",
                    "responses": {"200": _json({"type": "object"}, "Packs.")},
                }
            },
            "/api/v1/packs/{pack}": {
                "get": {
                    "summary": "A pack's manifest (without its source list), statistics, default "
                    "profile and stages, titles and categories.",
                    "parameters": [PACK_PARAM],
                    "responses": {"200": _json({"type": "object"}, "Pack info.")} | _errors(400, 404, 500),
                }
            },
            "/api/v1/packs/{pack}/eval": {
                "get": {
                    "summary": "The pack's evaluation runs (eval/results/), the latest per profile, and "
                    "the manifest's eval_scores.",
                    "parameters": [PACK_PARAM],
                    "responses": {"200": _json({"type": "object"}, "Evaluations.")} | _errors(400, 404),
                }
            },
            "/api/v1/packs/{pack}/graph": {
                "get": {
                    "summary": "What the page's Graph tab draws, as nodes and edges. A pack of passages: "
                    "the neighbourhood of chunks and/or entities (passages, pages, entities, relations and "
                    "links). A pack without passages, its kind's picture: an OpenML pack's Kimball star "
                    "(its schema; the facts and members behind an answer, trace=ID; a member's runs, "
                    "member=KIND:ID).",
                    "parameters": [
                        PACK_PARAM,
                        {
                            "name": "chunk",
                            "in": "query",
                            "description": "A chunk id (a source's chunk_id); repeatable.",
                            "schema": {"type": "array", "items": {"type": "string"}},
                            "explode": True,
                        },
                        {
                            "name": "entity",
                            "in": "query",
                            "description": "An entity id; repeatable.",
                            "schema": {"type": "array", "items": {"type": "string"}},
                            "explode": True,
                        },
                        *STAR_PARAMS,
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {"type": "integer", "minimum": 1, "maximum": 200, "default": 60},
                        },
                    ],
                    "responses": {"200": _json(_ref("Graph"), "The picture.")} | _errors(400, 404),
                }
            },
            "/api/v1/query": {
                "post": {
                    "summary": "Answer a question from one or more packs, citing its sources.",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": query_body}},
                    },
                    "responses": {"200": _json(_ref("Answer"), "The answer.")}
                    | _errors(400, 404, 413, 415, 500, 502),
                }
            },
            "/api/v1/query/stream": {
                "post": {
                    "summary": "The same, as server-sent events: `sources` (after retrieval, one pack), "
                    "`delta` {text} as Claude writes, `restart` (a retry voids the deltas so far), then "
                    "`result` (the Answer) or `error` {error, status}.",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": query_body}},
                    },
                    "responses": {
                        "200": {"description": "An event stream.", "content": {"text/event-stream": {}}}
                    }
                    | _errors(400, 404, 413, 415, 500),
                }
            },
            "/api/v1/search": {
                "get": {
                    "summary": "Retrieval only (no synthesis, never Claude): the passages with their text.",
                    "parameters": [
                        {"name": "pack", "in": "query", "required": True, "schema": {"type": "string"}},
                        {"name": "q", "in": "query", "required": True, "schema": {"type": "string"}},
                        {"name": "top_k", "in": "query", "schema": ASK_FIELDS["top_k"]},
                        {"name": "profile", "in": "query", "schema": {"type": "string"}},
                    ],
                    "responses": {"200": _json({"type": "object"}, "Passages.")} | _errors(400, 404, 500),
                },
                "post": {
                    "summary": "The same, with a JSON body.",
                    "requestBody": _body(search_body),
                    "responses": {"200": _json({"type": "object"}, "Passages.")}
                    | _errors(400, 404, 413, 415, 500),
                },
            },
            "/api/v1/traces": {
                "get": {
                    "summary": "The most recent traces kept in memory, newest first.",
                    "responses": {"200": _json({"type": "object"}, "Trace summaries.")},
                }
            },
            "/api/v1/traces/{trace_id}": {
                "get": {
                    "summary": "A trace by id: the request and its full answer with per-stage timings.",
                    "parameters": [
                        {"name": "trace_id", "in": "path", "required": True, "schema": {"type": "string"}}
                    ],
                    "responses": {"200": _json({"type": "object"}, "The trace.")} | _errors(404),
                }
            },
            **JOB_PATHS,
            **COMPARE_PATHS,
            **SETTINGS_PATHS,
        },
    }
    for path, item in BUILD_PATHS.items():  # beside a path's other methods (GET /packs/{pack})
        described["paths"].setdefault(path, {}).update(item)
    return described


STAR_PARAMS: list[dict[str, Any]] = [
    {
        "name": "trace",
        "in": "query",
        "description": "The trace id of an answer of the pack: the graph behind it (a pack of passages: "
        "around its sources; an OpenML pack: one fact per group it aggregated, with its runs, and the "
        "algorithms, families, datasets, tasks and dates of those runs).",
        "schema": {"type": "string"},
    },
    {
        "name": "member",
        "in": "query",
        "description": "A pack without passages: a node to explore around (an OpenML pack: algorithm:ID, "
        "family:NAME, dataset:ID, task:ID or date:YYYYMMDD, its runs as one fact and what they used).",
        "schema": {"type": "string"},
    },
    {
        "name": "measure",
        "in": "query",
        "description": "With member: the measure its runs are counted and scored with (accuracy, auc, "
        "f1, log_loss, runtime_s; default the pack's).",
        "schema": {"type": "string"},
    },
]
JOB_PARAM = {"name": "job", "in": "path", "required": True, "schema": {"type": "string"}}
JOB_PATHS: dict[str, Any] = {
    "/api/v1/jobs": {
        "get": {
            "summary": "The jobs started from the page (builds, comparisons), newest first.",
            "responses": {"200": _json({"type": "object"}, "Jobs.")},
        }
    },
    "/api/v1/jobs/{job}": {
        "get": {
            "summary": "A job: kind, key, state (running, done, failed, cancelled), result, error.",
            "parameters": [JOB_PARAM],
            "responses": {"200": _json({"type": "object"}, "The job.")} | _errors(404),
        }
    },
    "/api/v1/jobs/{job}/events": {
        "get": {
            "summary": "A job's events as Server-Sent Events, from the first, until it ends "
            "(progress, then done, failed or cancelled).",
            "parameters": [JOB_PARAM],
            "responses": {
                "200": {"description": "Events.", "content": {"text/event-stream": {}}},
            }
            | _errors(404),
        }
    },
    "/api/v1/jobs/{job}/cancel": {
        "post": {
            "summary": "Cancel a job: it stops at its next event and undoes what it began.",
            "parameters": [JOB_PARAM],
            "responses": {"202": _json({"type": "object"}, "The job, cancelling.")} | _errors(403, 404),
        }
    },
}


COMPARE_PATHS: dict[str, Any] = {
    "/api/v1/packs/{pack}/compare": {
        "get": {
            "summary": "What a comparison of profiles on the pack can run (the profiles that apply, "
            "the eval questions, the judges) and the last run of each profile (eval/results/, "
            "written by `wikigr eval` or a comparison) with its per-question rows; `running`: the "
            "comparison job running on the pack, if any.",
            "parameters": [PACK_PARAM],
            "responses": {"200": _json({"type": "object"}, "The comparison's state.")} | _errors(400, 404),
        },
        "post": {
            "summary": "Start a comparison (a job of kind compare): each profile in turn through "
            "`wikigr eval`'s runner, writing its results file. Events: `profile` {profile, total}, "
            "`question` {profile, n, total, row} per question scored, `summary` {profile, file, "
            "summary} per profile, then done {pack, runs}.",
            "parameters": [PACK_PARAM],
            "requestBody": _body(
                {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "profiles": {
                            "type": "array",
                            "items": {"type": "string", "enum": list(PROFILES)},
                            "description": "Default: every profile that applies to the pack's kind.",
                        },
                        "judge": {"type": "string", "enum": ["none", "offline", "claude"]},
                        "ks": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 100}},
                        "limit": {"type": "integer", "minimum": 1, "description": "The first N questions."},
                        "fresh": {"type": "boolean", "description": "Ignore an interrupted run's progress."},
                        "generate": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": 200,
                            "description": "First add N questions Claude writes (`wikigr eval generate`).",
                        },
                    },
                }
            ),
            "responses": {"202": _json({"type": "object"}, "The job, started.")}
            | _errors(400, 403, 404, 409, 413, 415),
        },
    },
}

SETTINGS_PATHS: dict[str, Any] = {
    "/api/v1/settings": {
        "get": {
            "summary": "Whether Claude is configured (never the key), the model that answers, and the "
            "caches under $WIKIGR_HOME/cache/ (name, files, bytes).",
            "responses": {"200": _json({"type": "object"}, "Settings.")},
        }
    },
    "/api/v1/packs/{pack}/config": {
        "get": {
            "summary": "The pack's kg_config.json (`config`), what it sets in effect (profile, top_k, "
            "model), the profiles that apply, the pack's embedder.",
            "parameters": [PACK_PARAM],
            "responses": {"200": _json({"type": "object"}, "The pack's configuration.")} | _errors(400, 404),
        },
        "put": {
            "summary": "Replace the pack's kg_config.json (the body is the file): checked as `wikigr "
            "pack validate` checks it, written atomically; the next answer uses it.",
            "parameters": [PACK_PARAM],
            "requestBody": _body({"type": "object"}),
            "responses": {"200": _json({"type": "object"}, "The configuration saved.")}
            | _errors(400, 403, 404, 409, 413, 415),
        },
    },
    "/api/v1/caches/{cache}": {
        "delete": {
            "summary": "Clear one cache of $WIKIGR_HOME/cache/ (a name /api/v1/settings lists).",
            "parameters": [{"name": "cache", "in": "path", "required": True, "schema": {"type": "string"}}],
            "responses": {"200": _json({"type": "object"}, "What was cleared.")} | _errors(403, 404),
        }
    },
}

UPLOAD_PARAM = {"name": "upload", "in": "path", "required": True, "schema": {"type": "string"}}
_strings_or_lines = {
    "oneOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}],
}
BUILD_BODY: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "description": "The new pack's name (as pack create takes it)."},
        "urls": {**_strings_or_lines, "description": "http(s) URLs, a list or lines (# comments)."},
        "crawl": {**_strings_or_lines, "description": "Crawl seeds: http(s) URLs (docs/crawl.md)."},
        "max_pages": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 1000},
        "depth": {"type": "integer", "minimum": 0, "maximum": 20, "default": 5},
        "include": {**_strings_or_lines, "description": "Crawl these URLs too: prefixes or * patterns."},
        "exclude": {**_strings_or_lines, "description": "Never crawl these: prefixes or * patterns."},
        "delay": {"type": "number", "minimum": 0, "maximum": 60, "default": 0},
        "description": {"type": "string", "maxLength": 300},
        "graph": {"type": "boolean", "default": True, "description": "Build the entity graph."},
        "upload": {"type": "string", "description": "An upload's id: its files are sources too."},
        "replace": {"type": "boolean", "default": False, "description": "Rebuild a pack that exists."},
    },
}
_job = _json({"type": "object"}, "The job started (follow /api/v1/jobs/{job}/events).")
BUILD_PATHS: dict[str, Any] = {
    "/api/v1/builds": {
        "post": {
            "summary": "Build a pack (as pack create) from http(s) URLs, a crawl and uploaded files, as a "
            "job: progress events, cancellable; 409 while a build of that name runs or when it exists.",
            "requestBody": _body(BUILD_BODY),
            "responses": {"202": _job} | _errors(400, 403, 404, 409, 413, 415),
        }
    },
    "/api/v1/packs/{pack}/update": {
        "post": {
            "summary": "Update a pack (as pack update) as a job.",
            "parameters": [PACK_PARAM],
            "responses": {"202": _job} | _errors(400, 403, 404, 409),
        }
    },
    "/api/v1/packs/{pack}": {
        "delete": {
            "summary": "Remove a pack of the packs home (as pack remove) as a job.",
            "parameters": [PACK_PARAM],
            "responses": {"202": _job} | _errors(400, 403, 404, 409),
        }
    },
    "/api/v1/uploads": {
        "post": {
            "summary": "Start an upload of files to build from; answers its id and caps.",
            "responses": {"201": _json({"type": "object"}, "The upload.")} | _errors(403),
        }
    },
    "/api/v1/uploads/{upload}": {
        "delete": {
            "summary": "Drop an upload no build took.",
            "parameters": [UPLOAD_PARAM],
            "responses": {"204": {"description": "Dropped."}} | _errors(403, 404, 409),
        }
    },
    "/api/v1/uploads/{upload}/{file}": {
        "put": {
            "summary": "One file of an upload, its bytes as the body; the name a plain file name of a "
            "document format the build reads.",
            "parameters": [
                UPLOAD_PARAM,
                {"name": "file", "in": "path", "required": True, "schema": {"type": "string"}},
            ],
            "responses": {"201": _json({"type": "object"}, "The file kept.")}
            | _errors(400, 403, 404, 409, 413),
        }
    },
}
