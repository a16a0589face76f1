"""Stable session ids for imported recordings: the same source gives the same id, always.

An id names where the data came from (a readable prefix) and a digest of what identifies the
source session (its creation time and own ids, not the folder it was copied to), so importing
the same tub or dataset again, from anywhere, finds the recording it wrote the first time.
"""

from __future__ import annotations

import hashlib
import json
import re

from rovertrain.contracts.identifiers import valid_identifier

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
DIGEST_CHARS = 12
LABEL_CHARS = 60


def slug(text: str) -> str:
    """`text` reduced to identifier characters (runs of others become `-`), at most 60 long."""
    cleaned = _UNSAFE.sub("-", text).strip("-._")
    return cleaned[:LABEL_CHARS].rstrip("-._")


def derive_session_id(kind: str, label: str, identity: list[object]) -> str:
    """`<kind>-<label>-<digest>`: `identity` (JSON-serialisable) decides the digest."""
    digest = hashlib.sha256(
        json.dumps([kind, *identity], sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()[:DIGEST_CHARS]
    parts = [kind, slug(label), digest]
    session_id = "-".join(part for part in parts if part)
    assert valid_identifier(session_id), session_id
    return session_id
