"""Stable session ids (pure)."""

from __future__ import annotations

from rovertrain.contracts.identifiers import valid_identifier
from rovertrain.importers.identity import derive_session_id, slug


def test_the_same_source_gives_the_same_id_and_another_source_another() -> None:
    first = derive_session_id("donkey", "26-11-30_0", [1764500000.25, "26-11-30_0", 0, 1.0])
    assert first == derive_session_id("donkey", "26-11-30_0", [1764500000.25, "26-11-30_0", 0, 1.0])
    assert first != derive_session_id("donkey", "26-11-30_0", [1764500000.5, "26-11-30_0", 0, 1.0])
    assert first.startswith("donkey-26-11-30_0-")
    assert valid_identifier(first)


def test_labels_become_identifier_characters() -> None:
    assert slug("my tub/é 2") == "my-tub-2"
    assert "/" not in slug("../../etc")
    assert slug("...") == ""
    assert len(slug("x" * 500)) == 60
    session_id = derive_session_id("lerobot", "☃☃☃", ["a"])
    assert valid_identifier(session_id) and session_id.startswith("lerobot-")
