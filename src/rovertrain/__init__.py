"""rovertrain: recorded rover drives in, a checked driving policy out."""

__version__ = "0.1.0"
