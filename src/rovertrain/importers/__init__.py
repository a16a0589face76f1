"""Importers: other people's driving data (Donkeycar tubs, LeRobot datasets) as recordings v1.

The decisions (which records are human, which commands a stream of control values becomes,
stable session ids, action maps) are pure functions in `commands`, `identity`, `donkey_format`
and `actionmap`; `donkey` and `lerobot` read their sources and `writer` writes recordings.
docs/importing.md describes the mapping.
"""
