"""What reads a parameter's value from a magic's line, by kind (``_operations.KINDS``): each
takes the word as typed and returns the value, or raises ``ValueError`` saying what to write
(the magics' parser makes it a one-line ``UsageError`` naming the option). Kept apart from the
declarations so that they stay one screen each."""

from collections.abc import Callable
from typing import Any

Converter = Callable[[str], Any]


def choice(*allowed: str) -> Converter:
    """A converter accepting only ``allowed`` values."""

    def convert(value: str) -> str:
        if value not in allowed:
            raise ValueError(f"use one of {', '.join(allowed)}")
        return value

    return convert


def positive_int(value: str) -> int:
    """An integer ≥ 1."""
    try:
        number = int(value)
    except ValueError:
        raise ValueError("use a whole number of at least 1") from None
    if number < 1:
        raise ValueError("must be at least 1")
    return number


def count_between(least: int, most: int) -> Converter:
    """A converter accepting whole numbers from ``least`` to ``most``."""

    def convert(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise ValueError(f"use a whole number from {least} to {most}") from None
        if not least <= number <= most:
            raise ValueError(f"use a whole number from {least} to {most}")
        return number

    return convert


def fraction(value: str) -> float:
    """A number from 0 to 1."""
    try:
        number = float(value)
    except ValueError:
        raise ValueError("use a number from 0 to 1") from None
    if not 0.0 <= number <= 1.0:
        raise ValueError("use a number from 0 to 1")
    return number


def tag_list(value: str) -> tuple[str, ...]:
    """Comma-separated tags, blanks dropped."""
    tags = tuple(t.strip() for t in value.split(",") if t.strip())
    if not tags:
        raise ValueError("give at least one tag")
    return tags


def identifier(value: str) -> str:
    """A Python variable name."""
    if not value.isidentifier():
        raise ValueError("not a valid Python variable name")
    return value
