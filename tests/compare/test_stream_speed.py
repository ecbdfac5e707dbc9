"""compare on small runs (issue 26): two 20,000-wake-up runs took 4.3 s and 1.25 GB; the bootstrap draw of a
group now adds its replicates as one sparse product per chunk of replicates instead of row by row.

The new draw must give exactly the replicates of the former one (the same random block choices, the same sums):
:func:`_reference_draw` is the former ``CompareStream._draw``, kept here as the reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from jitterscope.compare import CompareStream

REFERENCE_CHUNK_ROWS = 1 << 22


def _reference_draw(self, thread: int, group: int) -> None:
    """Add group ``group`` of ``thread`` to the replicates: each block with a Poisson weight per replicate."""
    pieces = self._pending.pop((thread, group))
    offset = np.concatenate([p[0] for p in pieces])
    columns = np.concatenate([p[1] for p in pieces])
    if len(pieces) > 1:
        order = np.argsort(offset, kind="stable")
        offset, columns = offset[order], columns[order]
    # blocks past the group's last wake-up hold none: drawing weights for them would change nothing, and
    # the group's content alone decides how many are drawn, so the draw is the same however it was batched
    blocks = int(offset.max()) + 1
    sizes = np.bincount(offset, minlength=blocks)
    starts = np.cumsum(sizes) - sizes
    rng = np.random.default_rng([self.seed, self.run, group])  # as the stream: the same weights for every thread
    # independent Poisson(f) weights for the G blocks of each replicate, drawn as a Poisson(f G) number of
    # uniform block choices (the same law, and cost in proportion to the weights, not to n_boot x G)
    per_replicate = rng.poisson(self.resample_fraction * blocks, self.n_boot)
    chosen = rng.integers(0, blocks, int(per_replicate.sum()))
    replicate = np.repeat(np.arange(self.n_boot, dtype=np.int64), per_replicate)
    size = sizes[chosen]
    keep = size > 0
    chosen, replicate, size = chosen[keep], replicate[keep], size[keep]
    if size.size == 0:
        return
    flat = self._replicates.reshape(-1)  # a view: the array is C-contiguous
    width = self._replicates.shape[1]
    longest = int(size.max())
    full = bool(np.all(size == longest))  # the usual case: whole blocks, no dropped wake-ups
    step = max(1, REFERENCE_CHUNK_ROWS // longest)
    within = np.arange(longest)
    for lo in range(0, size.size, step):
        # (chosen blocks, rows of a block): the rows of each chosen block, masked where a block is short
        position = starts[chosen[lo:lo + step], None] + within[None, :]
        row = replicate[lo:lo + step, None] * width
        if full:
            cells = (row + columns[position]).ravel()
        else:
            valid = within[None, :] < size[lo:lo + step, None]
            cells = (row + columns[np.minimum(position, columns.size - 1)])[valid]
        if cells.size > flat.size // 8:
            flat += np.bincount(cells, minlength=flat.size)
        else:
            np.add.at(flat, cells, 1)


def _stream(seed: int, *, block: int, fraction: float, drops: bool, n_boot: int = 97) -> np.ndarray:
    rng = np.random.default_rng(seed)
    stream = CompareStream(n_boot=n_boot, block_length=block, resample_fraction=fraction, seed=seed, run=1)
    for thread in (0, 3):
        seq = np.arange(30_000)
        if drops:  # missing wake-ups: blocks of unequal size, some empty
            seq = np.sort(rng.choice(70_000, 30_000, replace=False))
        latency = rng.lognormal(9, 0.8, seq.size).astype(np.int64) + rng.integers(0, 2, seq.size) * 200_000
        for part in np.array_split(np.arange(seq.size), 3):
            stream.update(thread, seq[part], latency[part])
    return stream.result().replicates


@pytest.mark.parametrize(("block", "fraction", "drops"), [(1, 1.0, False), (7, 1.0, True), (64, 0.3, False),
                                                          (3, 0.8, True)])
def test_the_sparse_draw_gives_the_former_replicates(monkeypatch, block, fraction, drops) -> None:
    new = _stream(11, block=block, fraction=fraction, drops=drops)
    monkeypatch.setattr(CompareStream, "_draw", _reference_draw)
    old = _stream(11, block=block, fraction=fraction, drops=drops)
    assert new.shape == old.shape and new.sum() > 0
    assert np.array_equal(new, old)
