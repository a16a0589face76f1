"""stdout as a protocol: the NDJSON events, their log, progress, and the lines a person reads
on stderr."""
