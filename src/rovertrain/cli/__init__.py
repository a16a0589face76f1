"""Commands and human output: the click group and what people read on stderr."""

from rovertrain.cli.main import cli, main

__all__ = ["cli", "main"]
