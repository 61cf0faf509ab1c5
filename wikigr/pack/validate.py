"""``pack validate``: check that a folder is a sound pack, without changing it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from wikigr.embed import embedder_info
from wikigr.errors import WikigrError
from wikigr.pack import pack as layout
from wikigr.pack.manifest import Manifest, load_manifest
from wikigr.pack.store import Store

MAX_QUESTIONS_BYTES = 64 * 1024 * 1024


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""


@dataclass
class ValidationReport:
    path: Path
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def add(self, name: str, ok: bool, detail: str = "") -> None:
        self.checks.append(Check(name, ok, detail))

    def to_json(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "ok": self.ok,
            "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in self.checks],
        }


def _check_questions(path: Path) -> str | None:
    if not path.is_file():
        return f"missing {layout.QUESTIONS_FILE}"
    if path.stat().st_size > MAX_QUESTIONS_BYTES:
        return "too large"
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            return f"line {number}: not JSON ({exc.msg})"
        if not isinstance(row, dict) or not isinstance(row.get("question"), str):
            return f"line {number}: not an object with a 'question' string"
    return None


def validate_pack(path: Path) -> ValidationReport:
    """Run every check; never raises for a broken pack (the report says what is wrong)."""
    report = ValidationReport(path)
    manifest: Manifest | None = None
    try:
        manifest = load_manifest(path / layout.MANIFEST_FILE)
        report.add("manifest", True, f"format_version {manifest.format_version}")
    except WikigrError as exc:
        report.add("manifest", False, str(exc))

    for rel in (layout.URLS_FILE, layout.SKILL_FILE, layout.CONFIG_FILE, layout.RESULTS_DIR):
        target = path / rel
        if target.is_symlink():
            report.add(rel, False, "is a symbolic link")
        elif rel == layout.RESULTS_DIR and not target.exists():
            # An empty folder does not survive git or some archivers; `wikigr eval` creates it.
            report.add(rel, True, "absent (created by the first evaluation)")
        else:
            report.add(rel, target.exists(), "" if target.exists() else "missing")

    config = path / layout.CONFIG_FILE
    if config.is_file():
        try:
            data = json.loads(config.read_text(encoding="utf-8"))
            ok = isinstance(data, dict)
            report.add("kg_config", ok, "" if ok else "not a JSON object")
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            report.add("kg_config", False, f"not JSON: {exc}")

    problem = _check_questions(path / layout.QUESTIONS_FILE)
    report.add("questions", problem is None, problem or "")

    if manifest is not None:
        try:
            info = embedder_info(manifest.embedder.name)
            same = info.dimension in (None, manifest.embedder.dimension)  # None: known once loaded
            report.add("embedder", same, info.name if same else "dimension differs")
        except WikigrError as exc:
            report.add("embedder", False, str(exc))

    store_path = path / layout.STORE_FILE
    if store_path.is_symlink():
        report.add("store", False, f"{layout.STORE_FILE} is a symbolic link")
        return report
    try:
        store = Store.open(store_path, read_only=True, kind=manifest.source_kind if manifest else None)
    except WikigrError as exc:
        report.add("store", False, str(exc))
        return report
    try:
        stats = store.stats()
        report.add("store", True, f"vector search: {store.vector_path}")
        if manifest is not None:
            recorded = asdict(manifest.stats)
            wrong = [k for k, v in recorded.items() if stats.get(k) != v]
            detail = ", ".join(f"{k}: manifest {recorded[k]}, store {stats.get(k)}" for k in wrong)
            report.add("stats", not wrong, detail)
            if manifest.stats.chunks:
                dim = store.rows("MATCH (c:Chunk) RETURN size(c.embedding) LIMIT 1")
                ok = bool(dim) and dim[0][0] == manifest.embedder.dimension
                report.add("embeddings", ok, "" if ok else "dimension differs from the manifest")
    except WikigrError as exc:
        report.add("store", False, str(exc))
    finally:
        store.close()
    return report
