"""rovertrain: recorded rover drives in, a checked driving policy out."""

from pkgutil import extend_path

# `rovertrain.runtime` and `rovertrain.contracts` come from the `rovertrain-runtime`
# distribution, which may be installed on another path entry than this package.
__path__ = extend_path(__path__, __name__)

__version__ = "0.1.0"
