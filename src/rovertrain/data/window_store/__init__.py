"""The window store: each ingested session's decoded tick frames, kept between jobs.

`entries` holds one entry per session (its frames and their metadata), `manifest` the
store's table of contents (one row per ingested session), `upkeep` what a job does to the
store at its edges (survey before reading, the manifest and the budget after). On disk it is
`training/cache/` and its budget the `cacheMaxMegabytes` knob: names that existing roots and
job files use, kept.
"""
