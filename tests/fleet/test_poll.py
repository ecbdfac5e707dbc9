"""A fleet of busy-poll runs: groups ranked by the CPU lost, histories flagged by the poll comparison, on Dask."""

from __future__ import annotations

import json

import pytest
from jitterscope.cli import main
from jitterscope.errors import JitterscopeError
from jitterscope.fleet import GroupKey, run_fleet

from ..poll.conftest import hand_dataset

SECONDS = 4


def _night(path, host: str, per_second: int, length_ns: int):
    """``per_second`` gaps of ``length_ns`` a second, evenly spread, for 4 s on CPU 1 of ``host``."""
    step = 10**9 // per_second
    rows = [(1, w * 10**9 + i * step + 1000, length_ns) for w in range(SECONDS) for i in range(per_second)]
    return hand_dataset(path, rows, runtime_s=SECONDS, environment={"hostname": host, "kernel_release": "6.1"})


@pytest.fixture(scope="module")
def poll_fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("pollfleet")
    return [str(_night(root / "quiet-1", "quiet", 100, 2000)), str(_night(root / "quiet-2", "quiet", 100, 2000)),
            str(_night(root / "noisy-1", "noisy", 100, 2000)), str(_night(root / "noisy-2", "noisy", 100, 20_000))]


@pytest.fixture(scope="module")
def serial(poll_fleet):
    return run_fleet(poll_fleet, scheduler="serial")


def test_groups_ranked_by_cpu_lost_and_the_regressed_night_flagged(poll_fleet, serial):
    fleet = serial
    assert fleet.kind == "poll" and fleet.runs == 4 and fleet.threshold_ns == (1000,)
    noisy, quiet = fleet.groups
    assert (noisy.value, quiet.value) == ("noisy", "quiet")
    # noisy: 4 s of 100 x 2 µs and 4 s of 100 x 20 µs over 8 CPU-seconds = (0.8 ms + 8 ms) / 8 s
    assert noisy.lost_percent == pytest.approx(100 * (0.0008 + 0.008) / 8)
    assert noisy.per_second == pytest.approx(100) and noisy.max_ns == 20_000
    assert dict(noisy.classes_per_second) == {"1 µs – 10 µs": 50, "10 µs – 100 µs": 50, "100 µs – 1 ms": 0,
                                              ">= 1 ms": 0}
    histories = {h.host: h for h in fleet.histories}
    flagged = histories["noisy"].flagged
    assert [p.path for p in flagged] == [poll_fleet[3]]
    assert "CPU 1 10–100 µs/s" in flagged[0].change.regressed and "CPU 1 CPU lost %" in flagged[0].change.regressed
    assert histories["quiet"].flagged == ()


def test_dask_gives_what_serial_gives(poll_fleet, serial):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=50) as cluster, distributed.Client(cluster) as client:
        on_dask = run_fleet(poll_fleet, by=GroupKey("host"), client=client)
    assert on_dask.groups == serial.groups and on_dask.histories == serial.histories
    assert on_dask.execution["workers"] == 1


def test_poll_and_timer_datasets_together_are_refused(poll_fleet, tmp_path, capsys):
    timer = tmp_path / "t.parquet"
    assert main(["simulate", "-o", str(timer), "-D", "1s"]) == 0
    with pytest.raises(JitterscopeError, match="mixes busy-poll datasets"):
        run_fleet([*poll_fleet[:2], str(timer)], scheduler="serial")
    capsys.readouterr()
    assert main(["fleet", poll_fleet[0], str(timer), "--scheduler", "serial"]) == 1
    assert capsys.readouterr().err.count("\n") == 1


def test_cli_text_json_and_pdf(poll_fleet, tmp_path, capsys):
    capsys.readouterr()
    assert main(["fleet", *poll_fleet, "--scheduler", "serial"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("4 busy-poll runs (interruptions >= 1 µs), grouped by host: 2 group(s)")
    assert "most CPU lost: host noisy" in out and "1 run(s) regressed against the machine's previous run" in out
    assert main(["fleet", *poll_fleet, "--scheduler", "serial", "--json", "--by", "kernel"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["kind"] == "poll" and document["groups"][0]["value"] == "6.1" and document["groups"][0]["runs"] == 4
    assert main(["fleet", *poll_fleet, "--scheduler", "serial", "-o", str(tmp_path / "f.pdf")]) == 0
    assert "f.pdf: 3 pages" in capsys.readouterr().err and (tmp_path / "f.pdf").read_bytes().startswith(b"%PDF")


def test_the_pdf_ranking_figure_passes_the_caption_and_layout_checks(serial):
    import matplotlib
    from jitterscope.fleet import poll_fleet_pages
    from jitterscope.render import REPORT_RC, caption_problems, layout_problems

    with matplotlib.rc_context(REPORT_RC):
        figures = [p for p in poll_fleet_pages(serial) if p.kind == "figure"]
        assert [p.name for p in figures] == ["fleet-poll-ranking"]
        for page in figures:
            assert caption_problems(page.figure, name=page.name) == []
            assert layout_problems(page.figure, name=page.name) == []
