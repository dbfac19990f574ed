"""The off-by-default reports' overlays (cli/support/overlays.py, `modern-gpt reproduce`): what an overlay does to
params.yaml, and the committed ones against the committed params."""

from pathlib import Path

import pytest

from fakes import default, plan_files
from modern_gpt.cli.support import overlays
from modern_gpt.config.params import parse_yaml
from modern_gpt.core.errors import ConfigError
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
    assert parse_yaml(text, "params") == {"beyond": {"ladder": ["mlp"], "model": {"mlp": "relu2"}},
                                          "settle": {"looks": [5, 8, 12], "runs": {"bias-5": {"slug": "bias", "seed": 5},
                                                                                   "mlp-5": {"slug": "mlp", "seed": 5}}}}
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
