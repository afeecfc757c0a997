"""The calibration harness (``python -m bench.integrity``, ``make integrity-calibration``) in a
bounded form: it runs end to end, fair streams raise nothing at the configured budget, the
looser budget stays within its bound, every biased case is detected, and the report renders
into docs/integrity.md's markers. The full figures are in docs/integrity.md."""

from __future__ import annotations

from pathlib import Path

from bench import integrity


def test_the_harness_runs_and_its_figures_render(tmp_path: Path) -> None:
    results = integrity.run(rounds=4_000, replications=3, seed=2, pool_hands=2_000,
                            throughput_rounds=300)
    for fa in results["false_alarms"]:
        assert fa["rounds"] >= 4_000
        assert fa["false_alarms"] == {}, fa
        for monitor, count in fa["loose_false_alarms"].items():
            # at most the bound, with room for chance (a Poisson count)
            allowed = fa["loose_allowed"][monitor]
            assert count <= allowed + 4 * allowed ** 0.5 + 3, (fa["game"], monitor)
    for case in results["delays"]:
        assert case["detected"] == case["replications"] == 3, case
    for row in results["throughput"]:
        assert row["messages_per_s"] > 0 and row["command_lines_per_s"] > 0
    doc = tmp_path / "integrity.md"
    doc.write_text(f"# before\n\n{integrity.BEGIN}\nold\n{integrity.END}\n\nafter\n")
    integrity.write_docs(results, doc)
    text = doc.read_text()
    assert text.startswith("# before") and text.endswith("after\n") and "old" not in text
    assert "| craps | 4,000 | dice | 0 |" in text
    assert "a die with one face at 1/4" in text


def test_the_documented_figures_are_the_full_run() -> None:
    text = integrity.DOC.read_text()
    section = text.split(integrity.BEGIN)[1].split(integrity.END)[0]
    for game in ("craps", "baccarat", "qpoker"):
        assert f"| {game} | 1,000,000 |" in section, game


def test_the_documented_thresholds_are_what_the_code_computes() -> None:
    text = integrity.DOC.read_text()
    begin, end = integrity.THRESHOLDS
    documented = begin + text.split(begin)[1].split(end)[0] + end
    assert documented == integrity.thresholds_markdown()
