"""A request the review server answers with an error: its HTTP status, a stable code, words."""

from __future__ import annotations


class Refusal(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
