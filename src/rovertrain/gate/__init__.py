"""What a candidate must show to be promoted, as pure rules over measured figures:
`imitation` (the held-out gate), `publication` (footage and steps since the last model),
`canary` (a published canary against the current model in the field), and `settings` (their
knobs: the job file's `gate`, and `config`'s publication)."""
