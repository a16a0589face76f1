"""Video decoding: a recording's video into the frames of its 100 ms ticks, in isolated
children, and the container and codec checks that come first. Imports nothing of `data`."""
