"""The off-by-default reports' overlays (review/overlays.py, `modern-gpt reproduce`): what an overlay does to
params.yaml, and the committed ones against the committed params."""

from pathlib import Path

import pytest
import yaml

from fakes import default, plan_files
from modern_gpt.review import overlays
from modern_gpt.config.params import parse_yaml
from modern_gpt.core.errors import ConfigError, DataError
from modern_gpt.reporting import outputs

ROOT = Path(__file__).resolve().parents[1]
PARAMS = """beyond:                   # a comment kept
  ladder: []              # on: [...]
  model:
    mlp: relu2
settle:
  looks: [5, 8]
  runs:
    bias-5: {slug: bias, seed: 5}
"""


def test_an_overlay_merges_mappings_replaces_the_rest_keeps_the_comments_and_an_empty_section_adds_nothing():
    text = overlays.apply(PARAMS, [{"beyond": {"ladder": ["mlp"]}, "settle": {"runs": {"mlp-5": {"slug": "mlp",
                                                                                                  "seed": 5}}}},
                                   {"settle": {"runs": None, "looks": [5, 8, 12]}}])
    runs = {"bias-5": {"slug": "bias", "seed": 5}, "mlp-5": {"slug": "mlp", "seed": 5}}
    assert parse_yaml(text, "params") == {"beyond": {"ladder": ["mlp"], "model": {"mlp": "relu2"}},
                                          "settle": {"looks": [5, 8, 12], "runs": runs}}
    assert "# a comment kept" in text and "  ladder: [mlp]" in text and "    mlp-5: {slug: mlp, seed: 5}" in text
    after = parse_yaml(text, "params")
    assert overlays.added_runs(parse_yaml(PARAMS, "params"), after) == {"mlp-5": {"slug": "mlp", "seed": 5}}


def test_a_bad_overlay_is_one_line_naming_it(tmp_path):
    (tmp_path / overlays.FOLDER).mkdir(parents=True)
    (tmp_path / overlays.FOLDER / "beyond.yaml").write_text("beyonde:\n  ladder: [mlp]\n")
    with pytest.raises(ConfigError, match="params.beyonde: unknown section"):
        overlays.read("beyond", tmp_path)
    with pytest.raises(ConfigError, match=r"report 'nope': no reports/overlays/nope.yaml; allowed: beyond$"):
        overlays.read("nope", tmp_path)


@pytest.mark.parametrize("name", overlays.names(ROOT))
def test_each_committed_overlay_plans_on_the_committed_params_and_names_a_report(name):
    """Each committed overlay on the committed params passes every check of the plan stage, its settled runs
    included (each a planned row's next seeds up to a look), and names a report the report stage writes."""
    assert set(overlays.FILES) == set(overlays.names(ROOT)) and overlays.FILES[name][0] in (
        outputs.BEYOND, outputs.SCALE, outputs.CATALOGUE)
    layer = overlays.read(name, ROOT)
    text = overlays.apply((ROOT / "params.yaml").read_text(encoding="utf-8"), [layer])
    _, planned = plan_files(parse_yaml(text, "params"))
    added = {a.slug: a.seeds for a in planned.added}
    for run in layer["settle"]["runs"].values():
        assert run["seed"] in added[run["slug"]]
    assert default()["settle"]["runs"].keys() <= parse_yaml(text, "params")["settle"]["runs"].keys()


def test_reproduce_stopped_keeps_the_overlays_and_the_same_command_goes_on_then_puts_everything_back(tmp_path,
                                                                                                     monkeypatch,
                                                                                                     capsys):
    """Stopped (here: the pipeline interrupted), reproduce leaves params.yaml with the overlays on and says how to
    go on; the same command then takes that as an interrupted run (not a changed params.yaml), runs the pipeline and
    puts params.yaml, dvc.lock and configs/ back, keeping the report it made. The pipeline is a stand-in here."""
    import argparse
    import subprocess
    from modern_gpt.cli import repro, reproduce
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    files = {"dvc.yaml": "stages: {}\n", "dvc.lock": "schema: '2.0'\n", "configs/plan.json": "{}\n",
             "params.yaml": (ROOT / "params.yaml").read_text(), "reports/ablation.md": "x\n",   # checked first
             "reports/overlays/beyond.yaml": (ROOT / "reports/overlays/beyond.yaml").read_text()}
    applied = overlays.apply(files["params.yaml"], [overlays.read("beyond", ROOT)])
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "c"]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True,
                       env={**env, "PATH": "/usr/bin:/bin"})
    monkeypatch.chdir(tmp_path)

    def stopped(_):
        (tmp_path / "dvc.lock").write_text("schema: '2.0'\nstages: {run: {}}\n")     # a finished run recorded
        raise KeyboardInterrupt
    args = argparse.Namespace(reports=["beyond"], jobs="1", settle=False, remote=None)
    monkeypatch.setattr(repro, "cmd_repro", stopped)
    with pytest.raises(KeyboardInterrupt):
        reproduce.cmd_reproduce(args)
    assert (tmp_path / "params.yaml").read_text() == applied and "run" in (tmp_path / "dvc.lock").read_text()
    assert "the same command goes on from here" in capsys.readouterr().out

    def finished(_):
        (tmp_path / "reports" / "beyond.md").write_text("the report\n")
    monkeypatch.setattr(repro, "cmd_repro", finished)
    reproduce.cmd_reproduce(args)
    out = capsys.readouterr().out
    assert "(already: going on from an interrupted run)" in out and "reproduce: beyond: new" in out
    assert (tmp_path / "params.yaml").read_text() == files["params.yaml"]
    assert (tmp_path / "dvc.lock").read_text() == files["dvc.lock"]
    (tmp_path / "params.yaml").write_text(files["params.yaml"] + "# edited\n")
    with pytest.raises(DataError, match="params.yaml: changed since HEAD"):
        reproduce.cmd_reproduce(args)


def assigned_runs(planned, report: str) -> set[tuple[str, int]]:
    """The runs (slug, seed) that a plan assigns to an off-by-default report's own rows: row 0 (the main ladder's
    last row) and the report's ladder, each on the seeds the plan gives it (the base seeds and those settle.runs
    added), its own rows' cells of the learning-rate grid; a scale report, every size's ladder, the default size's
    being the main ladder's rows."""
    from modern_gpt.records.stages import LadderName
    main = planned.ladders[0]
    if report == "scale":
        slugs = [r.slug for r in main.rows] + [r.slug for x in planned.ladders if x.name == LadderName.SCALE
                                                for r in x.rows]
    else:
        own = planned.ladder(LadderName(report))
        slugs = [main.rows[-1].slug] + [r.slug for r in own.rows[1:]]
        slugs += [run.slug for g in planned.sweep.rows if g.slug in slugs[1:] for run in g.runs]
    return {(slug, seed) for slug in slugs for seed in planned.seeds_of(slug)}


def run_set_problems(report: str, assigned: set[tuple[str, int]], listed: set[tuple[str, int]]) -> list[str]:
    """One line per run that one of the two sets lacks, naming the report, the run and the side that lacks it."""
    name = overlays.FILES[report][-1]
    return ([f"{report}: {slug} seed {seed} is in reports/{name} but params.yaml and its overlay assign it to no row"
             for slug, seed in sorted(listed - assigned)]
            + [f"{report}: {slug} seed {seed} is assigned by params.yaml and its overlay but not in reports/{name}"
               for slug, seed in sorted(assigned - listed)])


@pytest.mark.parametrize("name", overlays.names(ROOT))
def test_each_committed_reports_run_list_is_exactly_the_runs_its_params_and_overlay_assign_to_its_rows(name):
    """`modern-gpt reproduce <report>` alone trains what params.yaml plus the report's overlay assign: those runs
    (its ladder, row 0's seeds, its own grid rows) are exactly the ones its committed run list holds, so the
    report rebuilt alone from them is the committed one. A run missing from either side is named."""
    from modern_gpt.reporting.runs_csv import from_csv
    layer = overlays.read(name, ROOT)
    _, planned = plan_files(parse_yaml(overlays.apply((ROOT / "params.yaml").read_text(encoding="utf-8"), [layer]),
                                       "params"))
    listed = {(x.run, x.seed) for x in from_csv((ROOT / "reports" / overlays.FILES[name][-1]).read_text())}
    assert run_set_problems(name, assigned_runs(planned, name), listed) == []


def test_the_run_set_check_names_a_missing_and_an_extra_run():
    """params.yaml without qk_norm's seeds 8-11 (as before it held them: only beyond's and the catalogue's overlays
    did) leaves them in scale_runs.csv with no row assigning them; a run list lacking one is named the other way."""
    from modern_gpt.reporting.runs_csv import from_csv
    params = parse_yaml((ROOT / "params.yaml").read_text(encoding="utf-8"), "params")
    params["settle"]["runs"] = {k: v for k, v in params["settle"]["runs"].items()
                                if not (v["slug"] == "qk_norm" and v["seed"] >= 8)}
    _, planned = plan_files(parse_yaml(overlays.apply(yaml.safe_dump(params, sort_keys=False),
                                                      [overlays.read("scale", ROOT)]), "params"))
    listed = {(x.run, x.seed) for x in from_csv((ROOT / "reports" / "scale_runs.csv").read_text())}
    problems = run_set_problems("scale", assigned_runs(planned, "scale"), listed)
    assert problems == [f"scale: qk_norm seed {s} is in reports/scale_runs.csv but params.yaml and its overlay assign "
                        f"it to no row" for s in (8, 9, 10, 11)]
    problems = run_set_problems("scale", assigned_runs(planned, "scale") | {("scale_xs_pos", 5)}, listed - {("pos", 0)})
    assert problems[-2:] == ["scale: pos seed 0 is assigned by params.yaml and its overlay but not in "
                             "reports/scale_runs.csv",
                             "scale: scale_xs_pos seed 5 is assigned by params.yaml and its overlay but not in "
                             "reports/scale_runs.csv"]


def shown_twice(root: Path) -> list[str]:
    """One line per configuration (config md5) that two committed reports show on different seeds or with
    different mean val losses, read from each report's run list (runs.csv for ablation.md)."""
    from collections import defaultdict
    from statistics import fmean
    from modern_gpt.review.check import run_lists
    shown: dict[str, dict[str, tuple]] = defaultdict(dict)
    for report, (_, lines) in run_lists(root).items():
        by_md5: dict[str, list] = defaultdict(list)
        for x in lines:
            by_md5[x.config_md5].append(x)
        for md5, runs in by_md5.items():
            losses = [x.val_loss for x in runs if x.val_loss is not None]
            shown[md5][report] = (runs[0].run, tuple(sorted(x.seed for x in runs)), fmean(losses) if losses else None)
    return [f"config {md5} ({next(iter(by.values()))[0]}): " + "; ".join(
                f"{report} on seeds {','.join(map(str, seeds))}, mean {mean}" for report, (_, seeds, mean) in by.items())
            for md5, by in shown.items() if len({v[1:] for v in by.values()}) > 1]


def test_every_committed_report_shows_one_configuration_with_one_value():
    """One value per row: the book's design is ablation.md's last row, beyond.md's and catalogue.md's row 0 and
    scale.md's default size, and every configuration two reports show is shown on the same seeds with the same mean
    (params.yaml holds qk_norm's seeds 8-11, which settling added for the second ladder and the catalogue, so the
    main table shows them too). No report marks a row as shown on other seeds, so none may be."""
    assert shown_twice(ROOT) == []


def test_a_configuration_shown_on_other_seeds_by_two_reports_is_named(tmp_path):
    """The main table's run list without qk_norm's seeds 8-11 (as before params.yaml held them): the book's design
    is named, with each report's seeds."""
    for name in ("reports/runs.csv", "reports/ablation.md", "reports/catalogue.md", "reports/catalogue_runs.csv"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    runs = tmp_path / "reports" / "runs.csv"
    runs.write_text("".join(line for line in runs.read_text().splitlines(keepends=True)
                            if not any(line.startswith(f"run,qk_norm,,1.0,{s},") for s in (8, 9, 10, 11))))
    (found,) = shown_twice(tmp_path)
    assert "(qk_norm): ablation.md on seeds 0,1,2,3,4,5,6,7, mean" in found
    assert "catalogue.md on seeds 0,1,2,3,4,5,6,7,8,9,10,11, mean" in found
