"""extract's ``records: text``: rows not read from a WARC pass unchanged, so one pipeline
(pipelines/multilingual.yaml) takes WARC captures and JSONL / Parquet text alike."""

import pyarrow as pa

from datacurate.stages.extract import Extract

PAGE = ("<html><head><title>t</title></head><body><nav>Home | About</nav><article><p>"
        + "Une phrase assez longue pour un vrai paragraphe de texte. " * 8 + "</p></article></body></html>")


def test_records_text_pass_unchanged_warc_pages_are_extracted():
    table = pa.table({"text": [PAGE, "Déjà du texte.\nDeux lignes.", PAGE],
                      "warc_type": ["response", None, None],
                      "content_type": ["text/html", None, None]})
    as_text = Extract(engine="native", timeout=None, records="text")(table)
    assert as_text.column("reject_reason").to_pylist() == [None, None, None]
    out = as_text.column("text").to_pylist()
    assert "<" not in out[0] and "Une phrase" in out[0]  # the WARC capture was extracted
    assert out[1:] == ["Déjà du texte.\nDeux lignes.", PAGE]  # records: as they came
    as_html = Extract(engine="native", timeout=None)(table).column("text").to_pylist()
    assert "<" not in as_html[2]  # the default reads a record as a page


def test_records_text_without_a_warc_type_column():
    table = pa.table({"text": ["plain text, no WARC here"]})
    out = Extract(engine="native", timeout=None, records="text")(table)
    assert out.column("text").to_pylist() == ["plain text, no WARC here"]
    assert out.column("reject_reason").to_pylist() == [None]
