"""Which packs a server serves, and how a request names one.

A request names packs by name only (never by path): ``pydocs``, ``pydocs,notes``, a list, or
``all``. Without packs on the command line, a name is a folder of the packs home
(``$WIKIGR_HOME/packs``), looked up when the request comes (a pack installed later is served
too); with packs on the command line, only those are served, by their manifest names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wikigr.errors import PackNotFoundError, UsageError, WikigrError
from wikigr.pack.pack import Pack, list_packs, open_pack, pack_row, pack_rows, packs_home

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
MAX_PACKS_PER_REQUEST = 32


class ServedPacks:
    """The packs home, or the packs named on the command line."""

    def __init__(self, refs: Sequence[str | Path] = ()) -> None:
        self.fixed: dict[str, Path] | None = None
        if refs:
            self.fixed = {}
            for ref in refs:
                pack = open_pack(ref)
                if pack.name in self.fixed and self.fixed[pack.name] != pack.path:
                    raise UsageError(
                        f"two packs named '{pack.name}': {self.fixed[pack.name]} and {pack.path}"
                    )
                self.fixed[pack.name] = pack.path

    @property
    def home(self) -> Path:
        return packs_home()

    def names(self) -> list[str]:
        """The names of the packs served now (the packs home's readable ones, or the fixed)."""
        if self.fixed is not None:
            return list(self.fixed)
        return [item.path.name for item in list_packs() if isinstance(item, Pack)]

    def rows(self) -> list[dict[str, Any]]:
        """A summary row per pack (as ``wikigr pack list --json``), named as requests name them."""
        if self.fixed is None:  # a request names the folder: the name a row shows
            rows = pack_rows()
            for row in rows:
                folder = Path(row.pop("path")).name
                if row["name"] != folder:
                    row["manifest_name"], row["name"] = row["name"], folder
                if "error" in row:
                    row["error"] = self.redact(row["error"])
            return rows
        rows = []
        for name, path in self.fixed.items():
            try:
                row = pack_row(open_pack(path))
                row.pop("path", None)
            except WikigrError as exc:  # a pack broken or removed since the start: listed with why
                row = {"name": name, "ok": False, "error": self.redact(exc.message)}
            rows.append(row)
        return rows

    def redact(self, text: str) -> str:
        """``text`` with the folders of this machine a client has no business knowing replaced:
        a served pack's folder by its name, the packs home by "the packs home"."""
        folders: dict[str, str] = {}
        for name, path in (self.fixed or {}).items():
            folders[str(path)] = folders[str(path.resolve())] = name
        home = packs_home()
        folders[str(home)] = folders[str(home.resolve())] = "the packs home"
        for folder in sorted(folders, key=len, reverse=True):  # a pack's folder before its home
            text = text.replace(folder, folders[folder])
        return text

    def path(self, name: str) -> Path:
        """The folder of the pack ``name`` (a name, never a path)."""
        if not isinstance(name, str) or not NAME.fullmatch(name):
            shown = ascii(name[:80])[1:-1] if isinstance(name, str) else type(name).__name__
            raise UsageError(f"a pack is named by its name, not a path: '{shown}'")
        if self.fixed is not None:
            if name not in self.fixed:
                served = ", ".join(self.fixed)
                raise PackNotFoundError(f"unknown pack '{name}' (this server serves {served})")
            return self.fixed[name]
        folder = packs_home() / name
        if not folder.is_dir():
            raise PackNotFoundError(f"unknown pack '{name}' (not in this server's packs home)")
        return folder

    def resolve(self, ref: object) -> list[str]:
        """The folders of the packs ``ref`` names: a name, ``a,b``, a list of names, or ``all``."""
        if isinstance(ref, str):
            names = [part.strip(" ") for part in ref.split(",")]  # "a, b"; "small\n" is no name
        elif isinstance(ref, list) and all(isinstance(item, str) for item in ref):
            names = [item.strip(" ") for item in ref]
        else:
            raise UsageError("pack must be a name, a comma-separated list of names, a list, or 'all'")
        if not names or not any(names):
            raise UsageError("no pack given")
        if "" in names:
            raise UsageError("an empty pack name in the list")
        from wikigr.packset import ALL  # loaded with the answering stack, which a request waits for

        if ALL in names:
            if len(names) > 1:
                raise UsageError("'all' already names every pack; give it alone")
            names = self.names()
            if not names:
                raise PackNotFoundError("no pack is served, so 'all' names none")
        unique = list(dict.fromkeys(names))
        if len(unique) > MAX_PACKS_PER_REQUEST:
            raise UsageError(f"at most {MAX_PACKS_PER_REQUEST} packs in one request")
        return [str(self.path(name)) for name in unique]
