"""List the sha256 and the size of every file of a pack folder in its manifest, as `wikigr pack
export` lists them in an archive, so that `wikigr pack install FOLDER` checks them ("checksums
verified"). The shipped packs get them from their build scripts (scripts/build_example_pack.py,
scripts/build_openml_pack.py); run it by hand after changing a file of a shipped pack:

    uv run python scripts/pack_checksums.py packs/pydocs packs/amlb2019
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from wikigr.errors import WikigrError
from wikigr.pack.files import MANIFEST_FILE
from wikigr.pack.manifest import load_manifest
from wikigr.share.export import checkpoint_store
from wikigr.share.files import pack_files, sha256_file


def list_checksums(folder: Path) -> int:
    """Write the checksums and sizes of the pack's files (all but the manifest) into its manifest;
    return how many files it lists. A pending write-ahead log is folded into the store first."""
    checkpoint_store(folder)
    manifest = load_manifest(folder / MANIFEST_FILE)
    _, files = pack_files(folder)
    listed = {rel: sha256_file(folder / rel) for rel in files if rel != MANIFEST_FILE}
    manifest = replace(
        manifest,
        files={rel: digest for rel, (digest, _) in listed.items()},
        sizes={rel: size for rel, (_, size) in listed.items()},
    )
    manifest.dump(folder / MANIFEST_FILE)
    return len(listed)


def main() -> int:
    parser = argparse.ArgumentParser(description="list a pack folder's file checksums in its manifest")
    parser.add_argument("packs", type=Path, nargs="+", help="pack folders")
    for folder in parser.parse_args().packs:
        try:
            print(f"{folder}: {list_checksums(folder)} files listed")
        except WikigrError as exc:
            print(f"Error: {exc.message}", file=sys.stderr)
            return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
