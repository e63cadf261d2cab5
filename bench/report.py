"""Turn benchmark results into the table, the rota/peer and rota/bare-SQL ratios and the chart."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from bench.common import Result


def _label(result: Result) -> str:
    keys = ("processes", "concurrency", "batch", "rate", "finished_jobs", "replicas", "log")
    shown = [f"{key}={result.params[key]}" for key in keys if key in result.params]
    return ", ".join(shown)


def table(results: Iterable[Result]) -> str:
    lines = [
        "| scenario | system | backend | metric | value | unit | parameters |",
        "|---|---|---|---|---:|---|---|",
    ]
    for r in results:
        value = f"{r.value:,.1f}" if abs(r.value) >= 10 else f"{r.value:.3f}"
        lines.append(
            f"| {r.scenario} | {r.system} | {r.backend} | {r.metric} | {value} | {r.unit} | "
            f"{_label(r)} |"
        )
    return "\n".join(lines)


def ratios(results: list[Result]) -> str:
    """rota ÷ peer for each peer figure that rota measured under the same name and settings."""
    rota = {_key(r): r for r in results if r.system == "rota"}
    best_rota = {}
    for r in results:
        if r.system == "rota":
            key = (r.scenario, r.backend, r.metric)
            best_rota[key] = max(best_rota.get(key, r.value), r.value)
    lines = [
        "| peer | backend | scenario | metric | settings | peer | rota | rota/peer |",
        "|---|---|---|---|---|---:|---:|---:|",
    ]
    for peer in results:
        if peer.system in ("rota", "bare") or peer.value <= 0 or peer.unit not in ("jobs/s",):
            continue
        same = rota.get(_key(peer))
        mine = same.value if same else best_rota.get((peer.scenario, peer.backend, peer.metric))
        if mine is None:
            continue
        settings = _label(peer) + ("" if same else " (rota: its best)")
        lines.append(
            f"| {peer.system} | {peer.backend} | {peer.scenario} | {peer.metric} | {settings} | "
            f"{peer.value:,.0f} | {mine:,.0f} | {mine / peer.value:.2f}x |"
        )
    return "\n".join(lines)


BARE_COUNTERPARTS = {
    "throughput": ({"processes": 1, "concurrency": 50}, {"processes": 1, "concurrency": 200})
}
"""The rota runs each bare figure is set against: for the claim loop, one worker process at
concurrency 50 and 200 (issue 18's target 1); enqueue figures are compared as they are."""


def baselines(results: list[Result]) -> str:
    """rota ÷ bare SQL, each pair measured in the same run on the same backend."""
    lines = [
        "| backend | scenario | metric | rota settings | bare SQL | rota | rota/bare |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for bare in results:
        if bare.system != "bare" or bare.value <= 0:
            continue
        for wanted in BARE_COUNTERPARTS.get(bare.scenario, ({},)):
            for mine in results:
                same = (mine.scenario, mine.backend, mine.metric) == (
                    bare.scenario,
                    bare.backend,
                    bare.metric,
                )
                if mine.system != "rota" or not same:
                    continue
                if any(mine.params.get(key) != value for key, value in wanted.items()):
                    continue
                lines.append(
                    f"| {bare.backend} | {bare.scenario} | {bare.metric} | {_label(mine)} | "
                    f"{bare.value:,.0f} | {mine.value:,.0f} | {mine.value / bare.value:.2f} |"
                )
    return "\n".join(lines)


def _key(r: Result) -> tuple[object, ...]:
    return (r.scenario, r.backend, r.metric, r.params.get("processes"), r.params.get("concurrency"))


def chart(results: list[Result], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("throughput", "noop", "no-op jobs/s (best setting)"),
        ("enqueue", "batch", "bulk enqueue jobs/s"),
        ("enqueue", "single", "single enqueue jobs/s"),
    ]
    figure, axes = plt.subplots(1, len(panels), figsize=(15, 4.5))
    for axis, (scenario, metric, title) in zip(axes, panels, strict=True):
        best: dict[str, float] = {}
        for r in results:
            if r.scenario == scenario and r.metric == metric:
                label = f"{r.system}\n{r.backend}"
                best[label] = max(best.get(label, 0.0), r.value)
        names = sorted(best, key=lambda name: (not name.startswith("rota"), name))
        colours = ["#2a7" if name.startswith("rota") else "#999" for name in names]
        axis.bar(names, [best[name] for name in names], color=colours)
        axis.set_title(title)
        axis.tick_params(axis="x", labelsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
