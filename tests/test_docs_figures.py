"""The performance page's figures (tools/docs_figures.py) plot the data files' numbers, and bad data
stops the docs build. The figures need matplotlib (docs/requirements.txt): tools/build_docs.sh runs
this file in the docs environment; without matplotlib only the data checks run."""
from __future__ import annotations

import json
import math
import pathlib
import sys

import pytest

TOOLS = pathlib.Path(__file__).resolve().parent.parent / "tools"
sys.path.insert(0, str(TOOLS))
import docs_figures  # noqa: E402

sys.path.remove(str(TOOLS))


def read(name: str) -> dict:
    return json.loads((docs_figures.DATA / name).read_text())


def test_the_data_files_say_when_and_where_and_are_well_formed():
    for name in (docs_figures.CPU_FILE, docs_figures.GPU_FILE):
        data = docs_figures.load(name)
        assert data["date"][:4].isdigit() and data["machine"]
    labels, ratios, rss = docs_figures.cpu_series(read(docs_figures.CPU_FILE))
    assert len(labels) >= 8 and set(ratios) == set(docs_figures.PEERS.values())
    assert "torchcodec-cython" in rss
    decoders, series = docs_figures.gpu_series(read(docs_figures.GPU_FILE))
    assert decoders == [1, 2, 4, 8] and len(series) == 6


@pytest.mark.parametrize("damage", ["no date", "a ratio of zero", "a string", "a GPU row too short", "not JSON"])
def test_malformed_data_is_refused_with_the_file_and_field(tmp_path, damage):
    cpu, gpu = read(docs_figures.CPU_FILE), read(docs_figures.GPU_FILE)
    text = None
    if damage == "no date":
        del gpu["date"]
    elif damage == "a ratio of zero":
        cpu["workloads"][0]["ratios"]["PyAV"] = 0
    elif damage == "a string":
        cpu["workloads"][1]["peak_rss_mb"]["torchcodec-cython"] = "lots"
    elif damage == "a GPU row too short":
        next(iter(gpu["series"].values())).pop()
    else:
        text = "{not json"
    (tmp_path / docs_figures.CPU_FILE).write_text(json.dumps(cpu))
    (tmp_path / docs_figures.GPU_FILE).write_text(text or json.dumps(gpu))

    def check():
        for name, series in ((docs_figures.CPU_FILE, docs_figures.cpu_series),
                             (docs_figures.GPU_FILE, docs_figures.gpu_series)):
            series(docs_figures.load(name, tmp_path))

    with pytest.raises(docs_figures.DataError, match=r"(cpu_benchmarks|gpu_throughput)\.json"):
        check()
    assert docs_figures.main(["plot", str(tmp_path / "out"), "--data", str(tmp_path)]) == 1
    assert not list((tmp_path / "out").glob("*.svg"))


def same(plotted, expected):
    assert len(plotted) == len(expected)
    for a, b in zip(plotted, expected):
        assert (math.isnan(a) and b is None) or a == pytest.approx(b, rel=1e-12), (plotted, expected)


def test_the_figures_plot_the_json_values(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    figures = docs_figures.figures()
    assert set(figures) == {"speed_ratios.svg", "peak_rss.svg", "gpu_throughput.svg"}
    cpu, gpu = read(docs_figures.CPU_FILE), read(docs_figures.GPU_FILE)

    ax = figures["speed_ratios.svg"].axes[0]
    bars = {container.get_label(): [rect.get_x() + rect.get_width() for rect in container]
            for container in ax.containers}
    assert set(bars) == set(docs_figures.PEERS.values())
    for peer, widths in bars.items():
        same(widths, [w["ratios"].get(peer) for w in cpu["workloads"]])
    assert [" ".join(t.get_text().split()) for t in ax.get_yticklabels()] == [
        f"{w['label']}, {w['file']}, threads={w['threads']}" for w in cpu["workloads"]]

    ax = figures["peak_rss.svg"].axes[0]
    bars = {container.get_label(): [rect.get_x() + rect.get_width() for rect in container]
            for container in ax.containers}
    for peer, widths in bars.items():
        same(widths, [w["peak_rss_mb"].get(peer) for w in cpu["workloads"]])
    assert set(bars) == {peer for w in cpu["workloads"] for peer in w["peak_rss_mb"]}

    ax = figures["gpu_throughput.svg"].axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == set(gpu["series"])
    for name, values in gpu["series"].items():
        assert list(lines[name].get_xdata()) == gpu["decoders"]
        assert list(lines[name].get_ydata()) == values
    assert docs_figures.where(gpu) in ax.get_title() and gpu["date"] in ax.get_title()

    for figure in figures.values():
        plt.close(figure)
    written = docs_figures.plot(tmp_path)
    assert sorted(p.name for p in written) == sorted(figures)
    assert all(p.read_text().lstrip().startswith("<?xml") and "<svg" in p.read_text() for p in written)
