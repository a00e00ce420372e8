"""The public API is what ``__all__`` says, and every name in it exists."""

from __future__ import annotations

import chunkdedup


def test_all_names_exist_and_are_sorted() -> None:
    assert chunkdedup.__all__ == sorted(chunkdedup.__all__)
    for name in chunkdedup.__all__:
        assert hasattr(chunkdedup, name), name


def test_public_members_are_all_exported() -> None:
    public = {
        name
        for name, value in vars(chunkdedup).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith("chunkdedup")
    }
    assert public <= set(chunkdedup.__all__), public - set(chunkdedup.__all__)
