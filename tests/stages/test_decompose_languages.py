"""decompose over languages: ``domain_column``, temperature sampling (``alpha``) and a
per-document weight (``weight_column``: near_dedup's rehydration), phase by phase (no Ray)."""

import pyarrow as pa
import pytest
import yaml

from datacurate.configs.pipeline import ConfigError, load_config
from datacurate.core.temperature import temperature
from datacurate.stages import mixture
from datacurate.stages.decompose import DecomposeConfig, count_part, write_part
from tests.stages.test_decompose import U32, docs_table, read_back


def test_temperature_weights_follow_the_power_law():
    tokens = {"en": 1_000_000, "fr": 100_000, "sw": 1_000}
    w = temperature(tokens, 0.3)
    share = {d: n / sum(tokens.values()) for d, n in tokens.items()}
    assert w == {d: pytest.approx(s ** 0.3) for d, s in share.items()}
    plan = mixture.plan(tokens, w, None)["domains"]
    assert sum(p["weight"] for p in plan.values()) == pytest.approx(1.0)
    # 1000x fewer tokens is 1000^0.3 ~ 7.9x less weight: Swahili up-sampled, English cut
    assert plan["en"]["weight"] / plan["sw"]["weight"] == pytest.approx(1000 ** 0.3)
    assert plan["sw"]["rate"] > 1 > plan["en"]["rate"]
    natural = mixture.plan(tokens, temperature(tokens, 1.0), None)["domains"]
    assert all(p["rate"] == pytest.approx(1.0) for p in natural.values())
    assert temperature({"xx": 0}, 0.3) == {}


def test_domain_column_and_weight_column(tmp_path):
    lengths = [64, 64, 128, 64]
    table = docs_table(lengths).append_column("lang", pa.array(["fr", "fr", "de", "de"])) \
        .append_column("upsampling_weight", pa.array([1, 3, None, 0], pa.int32()))
    cfg = DecomposeConfig(min_log2=6, max_log2=7, domain_column="lang", weight_column="upsampling_weight")
    counts, decisions = count_part(table, cfg)
    assert decisions.num_rows == 0
    assert {d: (c["tokens_in_buckets"], c["weighted_tokens"]) for d, c in counts.items()} == \
        {"fr": (128, 64 + 3 * 64), "de": (192, 128)}  # a null weight counts 1, weight 0 drops
    pieces, written = write_part(table, cfg, "p0", str(tmp_path), {"fr": 1.0, "de": 1.0}, {"de": 0, "fr": 1}, U32)
    assert written == {"fr": {"sequences": 4, "tokens": 256}, "de": {"sequences": 1, "tokens": 128}}
    got = read_back(str(tmp_path), pieces)
    docs = sorted(int(s[0]) >> 16 for s in got[64][0])
    assert docs == [0, 1, 1, 1]  # document 1 three times, document 3 (weight 0) never
    assert list(got[128][1]) == [0]  # domain ids follow the languages' order


@pytest.mark.parametrize("stage,msg", [
    ({"alpha": 0.3, "mixture": {"fr": 1.0}}, "alpha (temperature sampling) or mixture"),
    ({"alpha": 0.0}, "alpha must be within (0, 1]"),
    ({"alpha": 1.5}, "alpha must be within (0, 1]"),
    ({"weight_column": "upsampling_weight", "mode": "pack"}, "weight_column needs mode: decompose"),
])
def test_bad_mixture_config_is_one_error(tmp_path, stage, msg):
    yml = tmp_path / "p.yaml"
    yml.write_text(yaml.safe_dump({"input": {"path": str(tmp_path)}, "output": str(tmp_path / "out"),
                                   "stages": [{"tokenize": {}}, {"decompose": stage}]}))
    with pytest.raises(ConfigError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        load_config(yml)


def test_weights_scale_with_rate(tmp_path):
    """A weight multiplies the domain's rate: at rate 0.5 a weight-2 document is written
    once per sequence in expectation (over many documents, within a few per cent)."""
    n = 2000
    table = docs_table([64] * n).append_column("lang", pa.array(["fr"] * n)) \
        .append_column("w", pa.array([2] * n, pa.int32()))
    cfg = DecomposeConfig(min_log2=6, max_log2=6, domain_column="lang", weight_column="w", seed=3)
    _, written = write_part(table, cfg, "p0", str(tmp_path), {"fr": 0.5}, {"fr": 0}, U32)
    assert abs(written["fr"]["sequences"] - n) < 0.05 * n
    assert written["fr"]["tokens"] == 64 * written["fr"]["sequences"]
