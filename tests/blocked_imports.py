"""A prelude for `python -c` that makes the rover side's forbidden imports fail."""

BLOCKER = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "av", "click", "rich", "safetensors"}:
            raise ImportError(f"blocked: {name}")
        return None
sys.meta_path.insert(0, Block())
"""
