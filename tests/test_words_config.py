"""A word segmenter that a pipeline's languages need and cannot load is a config error before
any work (issue 47, item 8): ``datacurate run`` exits 2 with one line naming the language,
the package and the pip command, and writes nothing. The package is made unimportable for
the run's process by a ``sitecustomize`` on its path (as if it were not installed)."""

from __future__ import annotations

import json

import pytest

from datacurate.configs.pipeline import ConfigError, check_words, load_config
from datacurate.text import segmenters as seg
from tests.cli_run import REPO, clean_env, run

BLOCK = """
import sys

class _Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}")
        return None

sys.meta_path.insert(0, _Absent())
"""


def _pipeline(tmp_path, languages, stage="near_dedup"):
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps({"id": f"d{i}", "text": t}, ensure_ascii=False) + "\n" for i, t in
                            enumerate(["日本語の文章を単語に分割するのは難しいです。", "An English sentence."])))
    p = tmp_path / "p.yaml"
    p.write_text(f"input: {{path: {data}}}\noutput: {tmp_path / 'out'}\nstages:\n"
                 f"  - langid: {{languages: {json.dumps(languages)}}}\n  - {stage}: {{}}\n")
    return p


def test_run_with_a_missing_segmenter_stops_in_one_line(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCK.format(blocked={"sudachidict_core", "sudachipy"}))
    env = clean_env()
    env["PYTHONPATH"] = f"{site}:{REPO}"
    res = run(_pipeline(tmp_path, ["en", "ja"]), tmp_path / "out", env=env, timeout=300)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2, res.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert "'ja'" in lines[0] and "sudachipy" in lines[0] and "pip install sudachipy sudachidict-core" in lines[0]
    assert not (tmp_path / "out").exists()


def test_check_words_follows_the_kept_languages(tmp_path, monkeypatch):
    monkeypatch.setitem(seg.SEGMENTERS, "absent", seg.Spec("datacurate_no_such_segmenter", "no-such-pkg", lambda: None))
    monkeypatch.setitem(seg.DEFAULT, "km", "absent")
    check_words(load_config(_pipeline(tmp_path, ["en", "ja"])).stages)  # Khmer is not kept: fine
    with pytest.raises(ConfigError, match=r"'km'.*pip install no-such-pkg"):
        check_words(load_config(_pipeline(tmp_path, ["en", "km"])).stages)
    with pytest.raises(ConfigError, match=r"'km'"):  # no keep-list: every language may come
        check_words(load_config(_pipeline(tmp_path, None)).stages)
    check_words(load_config(_pipeline(tmp_path, None, stage="pii")).stages)  # no stage cuts words
