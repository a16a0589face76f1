"""The contracts every layer shares: what crosses a boundary, and nothing else.

Command schema and roles, the observation layout, the runtime specification an export writes
and the rover reads, strict JSON, error and exit codes, identifiers. This package imports
nothing of the project (a layers contract in pyproject.toml checks it) and nothing beyond the
standard library, so the rover's runtime distribution can ship it as it is.
"""
