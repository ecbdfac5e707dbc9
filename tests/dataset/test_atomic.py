"""atomic.py: a file is written whole or not at all, and a failure is one line naming the file."""

from __future__ import annotations

import os

import pytest
from jitterscope.dataset import write_atomically
from jitterscope.errors import DatasetError, JitterscopeError


def test_written_file_replaces_the_old_one_and_no_tmp_is_left(tmp_path):
    out = tmp_path / "a.parquet"
    out.write_text("old")
    with write_atomically(out) as tmp:
        assert tmp == tmp_path / f".a.parquet.{os.getpid()}.tmp"  # hidden, per process: a killed run's is found
        assert out.read_text() == "old"  # untouched until the write is complete
        tmp.write_text("new")
    assert out.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet"]


def test_failed_write_keeps_the_old_file_removes_tmp_and_says_one_line(tmp_path):
    out = tmp_path / "a.parquet"
    out.write_text("old")
    with pytest.raises(DatasetError) as info, write_atomically(out) as tmp:
        tmp.write_text("half")
        raise OSError(28, "No space left on device")
    assert str(info.value) == f"{out}: cannot write (No space left on device)"
    assert out.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet"]


def test_what_and_error_class_shape_the_message(tmp_path):
    out = tmp_path / "missing-dir" / "r.pdf"
    writing = write_atomically(out, what="the report", error=JitterscopeError)
    with pytest.raises(JitterscopeError) as info, writing as tmp:
        tmp.write_text("x")  # the folder does not exist
    assert type(info.value) is JitterscopeError
    assert str(info.value) == f"{out}: cannot write the report (No such file or directory)"


def test_other_errors_pass_through(tmp_path):
    with pytest.raises(ValueError), write_atomically(tmp_path / "x") as tmp:
        tmp.write_text("x")
        raise ValueError("not an I/O problem")
    assert not (tmp_path / "x").exists()
